//! `cellbox sdk-server`: the engine the Python SDK starts and talks to over
//! stdin/stdout (see `cellbox::sdk`). Not meant to be typed by people.

use std::process::ExitCode;
use std::sync::Arc;

use cellbox::tool::EvalEngine;

use super::KernelArgs;

#[derive(Debug, clap::Args)]
pub struct SdkServerArgs {
    #[command(flatten)]
    kernel: KernelArgs,
    /// Warm spare kernels kept ready per kernel configuration in use (0: none).
    #[arg(long, value_name = "N", default_value_t = 1)]
    spares: usize,
}

pub async fn sdk_server(args: SdkServerArgs) -> ExitCode {
    let config = match args.kernel.engine_config() {
        Ok(mut config) => {
            config.spare.count = args.spares;
            config
        }
        Err(message) => {
            eprintln!("cellbox: {message}");
            return ExitCode::from(2);
        }
    };
    let root = config.default_cwd.clone();
    let engine = Arc::new(EvalEngine::new(config));
    // The first kernel starts now, while the SDK sends its first request.
    let warm = engine.clone();
    tokio::spawn(async move { warm.prewarm().await });
    match cellbox::sdk::serve_stdio(engine, root).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("cellbox sdk-server: {error}");
            ExitCode::from(1)
        }
    }
}
