//! `cellbox run`: run code (or the eval tool's JSON parameters) in a fresh
//! kernel, streaming what it prints.

use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use cellbox::render::{CardRenderer, RenderOptions, redrawing};
use cellbox_engine::tool::{
    CallContext, CellStatus, EvalEngine, EvalEvent, EvalParams, EvalResult, KernelMode, Language,
};
use tokio_util::sync::CancellationToken;

use super::run_args::RunArgs;
use super::signals::watch_signals;

/// Exit codes: 0 ok, 1 a cell failed, 2 cellbox could not run the code,
/// 124 a cell timed out, 130 interrupted (Ctrl-C), 143 terminated (SIGTERM).
pub async fn run(args: RunArgs, env: &cellbox_settings::Environment) -> ExitCode {
    match run_inner(args, env).await {
        Ok(code) => code,
        Err(message) => {
            eprintln!("cellbox: {message}");
            ExitCode::from(2)
        }
    }
}

fn read_source(path: Option<&PathBuf>) -> Result<String, String> {
    match path {
        Some(path) if path.as_os_str() != "-" => {
            std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))
        }
        _ => {
            let mut text = String::new();
            std::io::stdin().read_to_string(&mut text).map_err(|e| format!("cannot read standard input: {e}"))?;
            Ok(text)
        }
    }
}

fn read_params(args: &RunArgs) -> Result<EvalParams, String> {
    let mut params = if let Some(path) = &args.params {
        let text = read_source(Some(path))?;
        let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| format!("--params is not JSON: {e}"))?;
        EvalParams::from_json(value).map_err(|e| e.to_string())?
    } else if let Some(code) = &args.code {
        EvalParams::code(code.clone())
    } else {
        EvalParams::code(read_source(args.file.as_ref())?)
    };
    if args.params.is_none() {
        let from_file = args.file.as_deref().and_then(Language::from_extension);
        params.cells[0].language = args.lang.or(from_file);
    }
    if args.timeout.is_some() {
        params.timeout = args.timeout;
    }
    Ok(params)
}

async fn run_inner(args: RunArgs, env: &cellbox_settings::Environment) -> Result<ExitCode, String> {
    if let Some(path) = args.file.as_ref().filter(|path| super::notebook::is_notebook(path)) {
        let path = path.clone();
        return super::notebook::run_notebook(args, &path, env).await;
    }
    let notebook_only = [
        (args.output.is_some(), "-o/--output"),
        (args.inplace, "--inplace"),
        (args.allow_errors, "--allow-errors"),
        (!args.parameters.is_empty(), "-p/--parameter"),
        (!args.raw_parameters.is_empty(), "-r/--parameter-raw"),
    ];
    if let Some((_, flag)) = notebook_only.iter().find(|(given, _)| *given) {
        return Err(format!(
            "{flag} applies to notebooks only: pass a FILE ending in .ipynb (to save other runs as a notebook, use \
             --save-notebook FILE)"
        ));
    }
    let params = read_params(&args)?;
    let mut config = args.kernel.engine_config_with_bridge(env)?;
    // A snapshot is restored into, or saved from, the call's kernel: it must
    // outlive the call (the engine is disposed at the end either way).
    let keeps_kernel = args.restore.is_some() || args.snapshot.is_some();
    config.mode = if keeps_kernel { KernelMode::Session } else { KernelMode::PerCall };
    // One call: a spare kernel would only take CPU from it.
    config.spare = cellbox_engine::session::SpareLimits::OFF;
    config.extra_env = args.env.iter().cloned().collect();
    config.check = args.check.unwrap_or(config.check);
    let engine = Arc::new(EvalEngine::new(config));
    let cancel = CancellationToken::new();
    let terminated = CancellationToken::new();
    let signals = tokio::spawn(watch_signals(engine.clone(), cancel.clone(), terminated.clone()));

    let json = args.json;
    let codes = params.cells.iter().map(|cell| cell.code.clone()).collect();
    let renderer =
        Mutex::new(CardRenderer::new(std::io::stdout(), std::io::stderr(), RenderOptions::detect(args.expand), codes));
    let printer = |event: EvalEvent| {
        if !json {
            renderer.lock().unwrap().event(&event);
        }
    };
    let context = CallContext::new(format!("run-{}", std::process::id()));
    if let Some(path) = &args.restore
        && let Err(error) = restore(&engine, &context, path).await
    {
        signals.abort();
        engine.dispose_all().await;
        return Err(error);
    }
    let outcome = redrawing(&renderer, engine.eval(&params, &context, &cancel, &printer)).await;
    if let Some(path) = &args.snapshot {
        save(&engine, &context, path).await;
    }
    signals.abort();
    engine.dispose_all().await;
    let result = outcome.map_err(|e| e.to_string())?;
    if let Some(path) = &args.save_notebook {
        match engine.export_notebook(&context.session) {
            Ok(notebook) => notebook.write(path).map_err(|e| e.to_string())?,
            Err(error) => eprintln!("cellbox: {error}"),
        }
    }
    if json {
        let text = serde_json::to_string_pretty(&result).map_err(|e| e.to_string())?;
        println!("{text}");
    } else {
        renderer.lock().unwrap().finish(&result);
    }
    if terminated.is_cancelled() {
        return Ok(ExitCode::from(143));
    }
    Ok(exit_code(&result))
}

/// Restore `path` into the run's session; what could not be restored is told on stderr.
async fn restore(engine: &EvalEngine, context: &CallContext, path: &std::path::Path) -> Result<(), String> {
    let path = std::path::absolute(path).map_err(|e| format!("--restore {}: {e}", path.display()))?;
    let report = engine.restore_session(context, &path).await.map_err(|e| format!("--restore: {e}"))?;
    for (name, reason) in &report.failed {
        eprintln!("cellbox: --restore: {name} was not restored: {reason}");
    }
    Ok(())
}

/// Save the run's session to `path`; what could not be saved, or why nothing was, on stderr.
async fn save(engine: &EvalEngine, context: &CallContext, path: &std::path::Path) {
    let saved = match std::path::absolute(path) {
        Ok(path) => engine.snapshot_session(context, &path).await.map_err(|e| e.to_string()),
        Err(error) => Err(error.to_string()),
    };
    match saved {
        Ok(report) => {
            for (name, reason) in &report.skipped {
                eprintln!("cellbox: --snapshot: {name} was not saved: {reason}");
            }
        }
        Err(error) => eprintln!("cellbox: --snapshot {}: {error}", path.display()),
    }
}

pub(super) fn exit_code(result: &EvalResult) -> ExitCode {
    let statuses: Vec<CellStatus> = result.cells.iter().map(|c| c.status).collect();
    if statuses.contains(&CellStatus::Cancelled) {
        ExitCode::from(130)
    } else if statuses.contains(&CellStatus::Timeout) {
        ExitCode::from(124)
    } else if result.is_error {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
