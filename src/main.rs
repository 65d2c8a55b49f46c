//! The `cellbox` command line.

mod cli;

use std::process::ExitCode;

fn main() -> ExitCode {
    let args = cli::Cli::parse_with_env_help();
    cli::init_logging();
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("cellbox: could not start the async runtime: {error}");
            return ExitCode::from(2);
        }
    };
    let code = runtime.block_on(cli::dispatch(args));
    // A blocking read of stdin (the MCP transport) would otherwise hold the
    // runtime open after the work is done.
    runtime.shutdown_timeout(std::time::Duration::from_millis(200));
    code
}
