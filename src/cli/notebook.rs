//! `cellbox run NOTEBOOK.ipynb`: run a notebook's code cells in order in one
//! kernel, each cell one eval call, and write the executed notebook.
//!
//! Like papermill: every code cell's outputs are cleared first, parameters
//! (`-p`, `-r`) go into a cell tagged `injected-parameters` after the cell
//! tagged `parameters`, and the first failing cell stops the run (later cells
//! stay unexecuted) unless `--allow-errors` is given or the cell is tagged
//! `raises-exception`. The notebook is written with `-o FILE` or `--inplace`,
//! also after a failure; with neither, nothing is written.
//!
//! A notebook whose kernelspec is not Python's runs in that Jupyter kernel
//! (`ir` for an R notebook); a cell that says its own language in
//! `metadata.cellbox` (as cellbox writes the cells of a mixed session) runs in it.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use cellbox::render::{CardRenderer, RenderOptions, redrawing};
use cellbox_engine::notebook::{Cell, Notebook, ParamValue, parameters};
use cellbox_engine::tool::params::Language;
use cellbox_engine::tool::{CallContext, CellParams, CellStatus, EvalEngine, EvalEvent, EvalParams, KernelMode};
use tokio_util::sync::CancellationToken;

use super::run_args::RunArgs;

/// Cells tagged so may raise without stopping the run (as nbclient does).
const RAISES_TAG: &str = "raises-exception";

/// A path that names a notebook (by its extension).
pub fn is_notebook(path: &Path) -> bool {
    path.extension().is_some_and(|ext| ext.eq_ignore_ascii_case("ipynb"))
}

/// The Jupyter kernel a notebook's kernelspec names, when it is not Python's.
fn notebook_kernel(notebook: &Notebook) -> Option<String> {
    let spec = notebook.metadata.get("kernelspec")?;
    let name = spec.get("name")?.as_str()?;
    let language = spec.get("language").and_then(|l| l.as_str()).unwrap_or_default();
    let python = language.eq_ignore_ascii_case("python") || (language.is_empty() && name.starts_with("python"));
    (!python).then(|| name.to_string())
}

/// What runs `cell`: the language and kernel its `metadata.cellbox` names, else `kernel` (the notebook's).
fn cell_language(cell: &Cell, kernel: Option<&str>) -> Result<(Option<Language>, Option<String>), String> {
    let Some(tag) = cell.metadata().get("cellbox") else { return Ok((None, kernel.map(str::to_string))) };
    let language =
        match tag.get("language") {
            Some(language) => Some(serde_json::from_value::<Language>(language.clone()).map_err(|e| {
                format!("a cell's metadata.cellbox.language ({language}) is not a cellbox language: {e}")
            })?),
            None => None,
        };
    let own_kernel = tag.get("kernel").and_then(|k| k.as_str()).map(str::to_string);
    Ok((language, own_kernel))
}

/// `-p`/`-r` pairs, typed, in order; a later value for a name replaces the earlier one in place.
fn collect_parameters(args: &RunArgs) -> Result<Vec<(String, ParamValue)>, String> {
    let typed = args.parameters.chunks(2).map(|pair| (pair, ParamValue::infer(&pair[1])));
    let raw = args.raw_parameters.chunks(2).map(|pair| (pair, ParamValue::Str(pair[1].clone())));
    let mut out: Vec<(String, ParamValue)> = Vec::new();
    for (pair, value) in typed.chain(raw) {
        let name = pair[0].clone();
        if !parameters::valid_name(&name) {
            return Err(format!("parameter name {name:?} is not a Python identifier; use letters, digits and _"));
        }
        match out.iter_mut().find(|(existing, _)| *existing == name) {
            Some(slot) => slot.1 = value,
            None => out.push((name, value)),
        }
    }
    Ok(out)
}

pub async fn run_notebook(args: RunArgs, path: &Path, env: &cellbox_settings::Environment) -> Result<ExitCode, String> {
    if args.json {
        return Err("--json does not apply to notebooks: the executed notebook (-o FILE) holds every output".into());
    }
    if args.save_notebook.is_some() {
        return Err("--save-notebook does not apply to notebook runs; write the executed notebook with -o FILE or \
                    --inplace"
            .into());
    }
    let target: Option<PathBuf> = match (&args.output, args.inplace) {
        (Some(output), _) => Some(output.clone()),
        (None, true) => Some(path.to_path_buf()),
        (None, false) => None,
    };
    let mut notebook = Notebook::read(path).map_err(|e| e.to_string())?;
    let parameters = collect_parameters(&args)?;
    let kernel_name = notebook_kernel(&notebook);
    if let Some(name) = kernel_name.as_deref().filter(|_| !parameters.is_empty()) {
        return Err(format!(
            "-p and -r write Python assignments, and this notebook runs in the Jupyter kernel {name:?}: set its \
             parameters in the notebook instead"
        ));
    }
    if !parameters.is_empty() {
        parameters::inject(&mut notebook.cells, &parameters);
    }
    for cell in &mut notebook.cells {
        if let Cell::Code(code) = cell {
            code.outputs.clear();
            code.execution_count = None;
        }
    }

    // The notebook's folder is the kernel's working directory unless --cwd says otherwise.
    let mut kernel = args.kernel.clone();
    if kernel.cwd.is_none() {
        let folder = std::fs::canonicalize(path)
            .ok()
            .and_then(|p| p.parent().map(Path::to_path_buf))
            .unwrap_or_else(|| PathBuf::from("."));
        kernel.cwd = Some(folder);
    }
    let mut config = kernel.engine_config_with_bridge(env)?;
    config.mode = KernelMode::Session;
    config.extra_env = args.env.iter().cloned().collect();
    config.check = args.check.unwrap_or(config.check);
    config.history.cell_output_bytes = 32 << 20;
    config.history.session_output_bytes = usize::MAX;
    config.history.total_bytes = usize::MAX;
    // One pass over the notebook: a spare kernel would only take CPU from it.
    config.spare = cellbox_engine::session::SpareLimits::OFF;
    let engine = Arc::new(EvalEngine::new(config));
    let cancel = CancellationToken::new();
    let terminated = CancellationToken::new();
    let signals = tokio::spawn(super::signals::watch_signals(engine.clone(), cancel.clone(), terminated.clone()));

    // Code cells to run: the non-empty ones, as Jupyter skips empty cells.
    let runnable: Vec<usize> = notebook
        .cells
        .iter()
        .enumerate()
        .filter(|(_, cell)| matches!(cell, Cell::Code(_)) && !cell.source().trim().is_empty())
        .map(|(index, _)| index)
        .collect();
    let codes = runnable.iter().map(|&i| notebook.cells[i].source().to_string()).collect();
    let renderer =
        Mutex::new(CardRenderer::new(std::io::stdout(), std::io::stderr(), RenderOptions::detect(args.expand), codes));
    let context = CallContext::new(format!("notebook-{}", std::process::id()));

    let mut executed: Vec<usize> = Vec::new();
    let mut statuses: Vec<(CellStatus, bool)> = Vec::new();
    let mut failure: Option<String> = None;
    for (ordinal, &cell_index) in runnable.iter().enumerate() {
        let cell = &notebook.cells[cell_index];
        let (language, kernel) = match cell_language(cell, kernel_name.as_deref()) {
            Ok(found) => found,
            Err(error) => {
                failure = Some(error);
                break;
            }
        };
        let params = EvalParams {
            cells: vec![CellParams { code: cell.source().to_string(), language, kernel, ..Default::default() }],
            timeout: args.timeout,
            ..Default::default()
        };
        let allowed = args.allow_errors || cell.has_tag(RAISES_TAG);
        let printer = |event: EvalEvent| renderer.lock().unwrap().event(&renumber(event, ordinal));
        let before = engine.history_len(&context.session);
        let outcome = redrawing(&renderer, engine.eval(&params, &context, &cancel, &printer)).await;
        let result = match outcome {
            Ok(result) => result,
            Err(error) => {
                failure = Some(error.to_string());
                break;
            }
        };
        renderer.lock().unwrap().finish(&result);
        if engine.history_len(&context.session) > before {
            executed.push(cell_index);
        }
        let status = result.cells.first().map_or(CellStatus::Error, |c| c.status);
        statuses.push((status, allowed));
        let go_on = status == CellStatus::Ok || (status == CellStatus::Error && allowed);
        if !go_on || terminated.is_cancelled() {
            let left = runnable.len() - ordinal - 1;
            if left > 0 && status != CellStatus::Ok {
                eprintln!(
                    "cellbox: stopped at code cell {} of {}; {left} later cell(s) not run{}",
                    ordinal + 1,
                    runnable.len(),
                    if status == CellStatus::Error { " (--allow-errors keeps going)" } else { "" }
                );
            }
            break;
        }
    }
    signals.abort();
    let recorded = engine.export_notebook(&context.session).map(|nb| nb.cells).unwrap_or_default();
    engine.dispose_all().await;
    if let Some(message) = failure {
        return Err(message);
    }
    for (cell_index, recorded) in executed.iter().zip(recorded) {
        if let (Cell::Code(target), Cell::Code(recorded)) = (&mut notebook.cells[*cell_index], recorded) {
            target.outputs = recorded.outputs;
            target.execution_count = recorded.execution_count;
        }
    }
    match &target {
        Some(target) => notebook.write(target).map_err(|e| e.to_string())?,
        None => eprintln!(
            "cellbox: ran {} of {} code cell(s); the executed notebook was not saved (pass -o FILE or --inplace)",
            statuses.len(),
            runnable.len()
        ),
    }
    if terminated.is_cancelled() {
        return Ok(ExitCode::from(143));
    }
    Ok(exit_code(&statuses))
}

/// As `cellbox run`: 130 interrupted, 124 timed out, 1 a cell failed, else 0 (errors
/// allowed by --allow-errors or a `raises-exception` tag do not count).
fn exit_code(statuses: &[(CellStatus, bool)]) -> ExitCode {
    let has = |wanted: CellStatus| statuses.iter().any(|(status, _)| *status == wanted);
    if has(CellStatus::Cancelled) {
        ExitCode::from(130)
    } else if has(CellStatus::Timeout) {
        ExitCode::from(124)
    } else if statuses
        .iter()
        .any(|(status, allowed)| *status != CellStatus::Ok && !(*allowed && *status == CellStatus::Error))
    {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// The event as cell `index` of the whole notebook run (each call has one cell, index 0).
fn renumber(event: EvalEvent, index: usize) -> EvalEvent {
    match event {
        EvalEvent::CellStarted { title, .. } => EvalEvent::CellStarted { index, title },
        EvalEvent::CellFinished { status, duration_ms, .. } => EvalEvent::CellFinished { index, status, duration_ms },
        EvalEvent::Stdout { text, .. } => EvalEvent::Stdout { cell: index, text },
        EvalEvent::Stderr { text, .. } => EvalEvent::Stderr { cell: index, text },
        EvalEvent::Display { parts, is_result, bundle, .. } => {
            EvalEvent::Display { cell: index, parts, is_result, bundle }
        }
        EvalEvent::Status { event, .. } => EvalEvent::Status { cell: index, event },
        EvalEvent::Error { error, .. } => EvalEvent::Error { cell: index, error },
        EvalEvent::Note { text } => EvalEvent::Note { text },
        EvalEvent::KernelStarting { waiting, elapsed_ms, .. } => {
            EvalEvent::KernelStarting { cell: index, waiting, elapsed_ms }
        }
    }
}
