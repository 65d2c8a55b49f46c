//! `cellbox run`: run code (or the eval tool's JSON parameters) in a fresh
//! kernel, streaming what it prints.

use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use cellbox::render::{CardRenderer, RenderOptions};
use cellbox::tool::{CallContext, CellStatus, EvalEngine, EvalEvent, EvalParams, EvalResult, KernelMode, Language};
use tokio_util::sync::CancellationToken;

use super::KernelArgs;

#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// Code to run.
    #[arg(short = 'c', value_name = "CODE", conflicts_with_all = ["file", "params"])]
    pub(super) code: Option<String>,
    /// File to run; `-` (or no file and no -c) reads standard input. A `.ipynb` notebook runs
    /// cell by cell in its own folder (unless --cwd), see -o, --inplace, --allow-errors, -p, -r.
    #[arg(value_name = "FILE", conflicts_with = "params")]
    pub(super) file: Option<PathBuf>,
    /// The eval tool's JSON parameters ({"cells": [...], ...}) from a file, or `-` for stdin.
    #[arg(long, value_name = "FILE|-")]
    pub(super) params: Option<PathBuf>,
    /// Timeout of each cell in seconds (1..3600) [default: 30].
    #[arg(long, value_name = "SECONDS")]
    pub(super) timeout: Option<f64>,
    /// Print the whole result as JSON at the end instead of streaming.
    #[arg(long)]
    pub(super) json: bool,
    /// Show every line of output, not the last 10 per cell (on a terminal).
    #[arg(long)]
    pub(super) expand: bool,
    /// Language of the code: py, js or ts [default: from the file's extension, else py (js where
    /// Python is not available)].
    #[arg(long, value_name = "LANG", value_parser = parse_language)]
    pub(super) lang: Option<Language>,
    /// Extra environment variable for the kernel (repeatable); passes the filter.
    #[arg(long = "env", value_name = "KEY=VALUE", value_parser = parse_key_value)]
    pub(super) env: Vec<(String, String)>,
    /// Notebook runs: write the executed notebook to this file.
    #[arg(short = 'o', long = "output", value_name = "FILE", conflicts_with = "inplace")]
    pub(super) output: Option<PathBuf>,
    /// Notebook runs: write the executed notebook back over the input.
    #[arg(long)]
    pub(super) inplace: bool,
    /// Notebook runs: keep going after a cell raises (the error is recorded in its outputs).
    #[arg(long)]
    pub(super) allow_errors: bool,
    /// Notebook runs: a parameter, typed as papermill does (int, float, True/False, None, else a string); repeatable.
    #[arg(short = 'p', long = "parameter", num_args = 2, value_names = ["NAME", "VALUE"], action = clap::ArgAction::Append)]
    pub(super) parameters: Vec<String>,
    /// Notebook runs: a parameter kept as a string; repeatable.
    #[arg(short = 'r', long = "parameter-raw", num_args = 2, value_names = ["NAME", "VALUE"], action = clap::ArgAction::Append)]
    pub(super) raw_parameters: Vec<String>,
    /// Also save the cells that ran, with their outputs, as a notebook (.ipynb).
    #[arg(long, value_name = "FILE")]
    pub(super) save_notebook: Option<PathBuf>,
    /// Check cells before running them: `syntax` runs none if a cell does not parse (the error
    /// shows its caret); `lint` also adds `ruff check` findings on Python cells as notes
    /// [env: CELLBOX_CHECK] [default: off].
    #[arg(long, value_name = "off|syntax|lint")]
    pub(super) check: Option<cellbox::tool::CheckMode>,
    #[command(flatten)]
    pub(super) kernel: KernelArgs,
}

pub(super) fn parse_language(text: &str) -> Result<Language, String> {
    serde_json::from_value(serde_json::Value::String(text.to_string()))
        .map_err(|_| format!("unknown language {text:?}; use py, js or ts"))
}

fn parse_key_value(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((key, value)) if !key.is_empty() => Ok((key.to_string(), value.to_string())),
        _ => Err(format!("expected KEY=VALUE, got {text:?}")),
    }
}

/// Exit codes: 0 ok, 1 a cell failed, 2 cellbox could not run the code,
/// 124 a cell timed out, 130 interrupted (Ctrl-C), 143 terminated (SIGTERM).
pub async fn run(args: RunArgs) -> ExitCode {
    match run_inner(args).await {
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

async fn run_inner(args: RunArgs) -> Result<ExitCode, String> {
    if let Some(path) = args.file.as_ref().filter(|path| super::notebook::is_notebook(path)) {
        let path = path.clone();
        return super::notebook::run_notebook(args, &path).await;
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
    let mut config = args.kernel.engine_config_with_bridge()?;
    config.mode = KernelMode::PerCall;
    // One call: a spare kernel would only take CPU from it.
    config.spare = cellbox::session::SpareLimits::OFF;
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
    let outcome = engine.eval(&params, &context, &cancel, &printer).await;
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

/// Ctrl-C cancels the running cell; a second Ctrl-C, or SIGTERM, stops the kernels and exits.
pub(super) async fn watch_signals(engine: Arc<EvalEngine>, cancel: CancellationToken, terminated: CancellationToken) {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut interrupt), Ok(mut terminate)) = (signal(SignalKind::interrupt()), signal(SignalKind::terminate()))
    else {
        return;
    };
    let mut interrupts = 0;
    loop {
        tokio::select! {
            _ = interrupt.recv() => {
                interrupts += 1;
                if interrupts == 1 {
                    eprintln!("\ncellbox: interrupting (press Ctrl-C again to stop the kernel)");
                    cancel.cancel();
                    continue;
                }
                engine.dispose_all().await;
                std::process::exit(130);
            }
            _ = terminate.recv() => {
                terminated.cancel();
                engine.dispose_all().await;
                std::process::exit(143);
            }
        }
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
