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
    /// Stop once idle this long, no call in progress and no command running
    /// (the SDK's `timeout=`; 0: never).
    #[arg(long, value_name = "SECONDS", default_value_t = 0.0, value_parser = idle_seconds)]
    idle_timeout: f64,
}

fn idle_seconds(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(seconds) if seconds.is_finite() && seconds >= 0.0 => Ok(seconds),
        _ => Err(format!("expected 0 (never) or more seconds, not {text:?}")),
    }
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
    let idle = (args.idle_timeout > 0.0).then(|| std::time::Duration::from_secs_f64(args.idle_timeout));
    match cellbox::sdk::serve_stdio(engine, root, idle).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("cellbox sdk-server: {error}");
            ExitCode::from(1)
        }
    }
}
