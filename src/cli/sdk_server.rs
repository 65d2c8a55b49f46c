//! `cellbox sdk-server`: the engine the Python SDK starts and talks to over
//! stdin/stdout (see `cellbox_sdk`). Not meant to be typed by people.

use std::io::Write as _;
use std::process::ExitCode;
use std::sync::Arc;

use cellbox_engine::tool::EvalEngine;
use cellbox_sdk::EngineArgs;

#[derive(Debug, clap::Args)]
pub struct SdkServerArgs {
    #[command(flatten)]
    engine: EngineArgs,
}

pub async fn sdk_server(args: SdkServerArgs, env: &cellbox_settings::Environment) -> ExitCode {
    let (config, idle) = match args.engine.engine_config(env) {
        Ok(chosen) => chosen,
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
    match cellbox_sdk::serve_stdio(engine, root, idle).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            let _ = writeln!(std::io::stderr(), "cellbox sdk-server: {error}"); // stderr may be gone by now
            ExitCode::from(1)
        }
    }
}
