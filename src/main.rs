//! The `cellbox` command line.

mod cli;

use std::process::ExitCode;

fn main() -> ExitCode {
    // The environment is read and checked once, before the command line: a variable set to a
    // value it does not take is an error naming it, in every command, rather than a flag's
    // error or a setting silently ignored.
    let env = match cellbox_settings::Environment::from_process() {
        Ok(env) => env,
        Err(error) => {
            eprintln!("cellbox: {error}");
            return ExitCode::from(2);
        }
    };
    forget_blank_settings(&env);
    let args = <cli::Cli as clap::Parser>::parse();
    cli::init_logging();
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("cellbox: could not start the async runtime: {error}");
            return ExitCode::from(2);
        }
    };
    let code = runtime.block_on(cli::dispatch(args, &env));
    // A blocking read of stdin (the MCP transport) would otherwise hold the
    // runtime open after the work is done.
    runtime.shutdown_timeout(std::time::Duration::from_millis(200));
    code
}

/// A setting set to nothing means "not given"; the flags bound to variables would read it as an
/// empty value, so a blank one is taken out of this process's environment before they are parsed.
fn forget_blank_settings(env: &cellbox_settings::Environment) {
    for var in cellbox_settings::ENV_VARS {
        let blank = std::env::var_os(var.name).is_some_and(|value| value.to_string_lossy().trim().is_empty());
        if blank && env.get(var).is_none() {
            // SAFETY: `main` has started no thread yet (the async runtime comes later), so nothing
            // reads the environment while it changes.
            unsafe { std::env::remove_var(var.name) };
        }
    }
}
