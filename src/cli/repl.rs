//! `cellbox repl`: an interactive session on one retained kernel.
//!
//! Line editing and history (rustyline); a line is sent when the kernel says
//! the cell is complete (`for x in y:` continues, `%%bash` ends on a blank
//! line; in JavaScript an open bracket, string or template continues, as in
//! Node's REPL). Ctrl-C at the prompt clears the line; during a cell it interrupts
//! the cell and keeps the kernel. Ctrl-D (or `:quit`) exits and stops the kernel.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use cellbox::render::{CardRenderer, RenderOptions, redrawing};
use cellbox_engine::tool::{CallContext, EvalEngine, EvalEvent, EvalParams, Language};
use rustyline::DefaultEditor;
use rustyline::error::ReadlineError;
use tokio_util::sync::CancellationToken;

use super::KernelArgs;

#[derive(Debug, clap::Args)]
pub struct ReplArgs {
    #[command(flatten)]
    kernel: KernelArgs,
    /// Check cells before running them: `syntax` runs none if a cell does not parse (the error
    /// shows its caret); `lint` also adds `ruff check` findings on Python cells as notes [default: off].
    #[arg(long, value_name = "off|syntax|lint")]
    check: Option<cellbox_engine::tool::CheckMode>,
    /// Timeout of each cell in seconds (1..3600).
    #[arg(long, value_name = "SECONDS", default_value_t = 3600.0)]
    timeout: f64,
    /// Show every line of output, not the last 20.
    #[arg(long)]
    expand: bool,
    /// Language of the session: py, js, ts or bash [default: py, or js where Python is not available].
    #[arg(long, value_name = "LANG", value_parser = super::run_args::parse_language)]
    lang: Option<Language>,
}

const HELP: &str = "\
:help   this help
:reset  restart the kernel (all state cleared); %reset clears names but keeps the kernel
:last   print the full output of the last cell (its artifact)
:save FILE.ipynb  save the cells run so far, with their outputs, as a Jupyter notebook
:quit   leave (also Ctrl-D)
Python magics work as in cells: %pip, !cmd, %%bash, %time, ... Ctrl-C interrupts a running cell.";

fn history_path() -> Option<PathBuf> {
    let dir = dirs::state_dir().or_else(dirs::data_local_dir)?.join("cellbox");
    std::fs::create_dir_all(&dir).ok()?;
    Some(dir.join("repl_history"))
}

enum Input {
    Cell(String),
    Command(String),
    Quit,
}

pub async fn repl(args: ReplArgs, env: &cellbox_settings::Environment) -> ExitCode {
    let mut config = match args.kernel.engine_config_with_bridge(env) {
        Ok(config) => config,
        Err(message) => {
            eprintln!("cellbox: {message}");
            return ExitCode::from(2);
        }
    };
    config.pool.idle_timeout = None;
    if env.get(&cellbox_settings::CHECKPOINTS).is_none() {
        config.checkpoints.count = super::repl_branches::DEFAULT_CHECKPOINTS;
    }
    config.check = args.check.unwrap_or(config.check);
    let engine = Arc::new(EvalEngine::new(config));
    let mut sessions = super::repl_branches::Sessions::new(format!("repl-{}", std::process::id()));
    let context = sessions.current();
    // The kernel starts now, so the first prompt answers at once.
    let language = args.lang.unwrap_or_else(|| {
        let available = engine.available_languages();
        if available.contains(&Language::Py) || available.is_empty() { Language::Py } else { Language::Js }
    });
    if let Err(error) = engine.check_complete_in(&context, Some(language), "").await {
        eprintln!("cellbox: {error}");
        return ExitCode::from(2);
    }
    let mut editor = match DefaultEditor::new() {
        Ok(editor) => editor,
        Err(error) => {
            eprintln!("cellbox: cannot start line editing: {error}");
            return ExitCode::from(2);
        }
    };
    let history = history_path();
    if let Some(path) = &history {
        let _ = editor.load_history(path);
    }
    println!(
        "cellbox repl · {} kernel in {} · :help for commands, Ctrl-D to leave",
        language.runtime(),
        engine.config().default_cwd.display()
    );
    let mut last_artifact: Option<String> = None;
    loop {
        let context = sessions.current();
        let (returned, input) = read_cell(editor, engine.clone(), context.clone(), language).await;
        editor = returned;
        match input {
            Input::Quit => break,
            Input::Command(command) => match command.as_str() {
                ":help" => println!("{HELP}\n{}", super::repl_branches::HELP),
                ":reset" => {
                    engine.reset_session(&context.session).await;
                    println!("kernel restarted");
                }
                ":last" => match &last_artifact {
                    Some(uri) => match engine.read_artifact(uri, 0, 64 * 1024 * 1024) {
                        Ok((text, _)) => print!("{text}"),
                        Err(error) => eprintln!("cellbox: {error}"),
                    },
                    None => println!("no output yet"),
                },
                ":quit" | ":q" | ":exit" => break,
                save if save == ":save" || save.starts_with(":save ") => {
                    save_notebook(&engine, &context, save[":save".len()..].trim())
                }
                other => {
                    if !sessions.run(&engine, other).await {
                        println!("unknown command {other}; :help lists them");
                    }
                }
            },
            Input::Cell(code) => {
                let _ = editor.add_history_entry(code.trim_end());
                if let Some(path) = &history {
                    let _ = editor.save_history(path);
                }
                if let Some(uri) = run_cell(&engine, &context, &code, language, args.timeout, args.expand).await {
                    last_artifact = Some(uri);
                }
            }
        }
    }
    engine.dispose_all().await;
    ExitCode::SUCCESS
}

/// `:save FILE.ipynb`: the session's cells so far (kept across :reset), relative to the session's
/// directory (`--cwd`, else where the REPL started).
fn save_notebook(engine: &EvalEngine, context: &CallContext, file: &str) {
    if file.is_empty() {
        println!("usage: :save FILE.ipynb");
        return;
    }
    let path = engine.config().default_cwd.join(file);
    match engine.export_notebook(&context.session) {
        Ok(notebook) => match notebook.write(&path) {
            Ok(()) => println!("saved {} cell(s) to {}", notebook.cells.len(), path.display()),
            Err(error) => eprintln!("cellbox: {error}"),
        },
        Err(error) => eprintln!("cellbox: {error}"),
    }
}

/// Read lines until the kernel says the cell is complete.
async fn read_cell(
    editor: DefaultEditor,
    engine: Arc<EvalEngine>,
    context: CallContext,
    language: Language,
) -> (DefaultEditor, Input) {
    let mut editor = editor;
    let mut buffer = String::new();
    let mut indent = String::new();
    loop {
        let prompt = if buffer.is_empty() { ">>> " } else { "... " };
        let initial = std::mem::take(&mut indent);
        let (returned, line) = tokio::task::spawn_blocking(move || {
            let line = editor.readline_with_initial(prompt, (&initial, ""));
            (editor, line)
        })
        .await
        .expect("line editing does not panic");
        editor = returned;
        match line {
            Ok(line) => {
                if buffer.is_empty() && line.trim_start().starts_with(':') && !line.trim().is_empty() {
                    return (editor, Input::Command(line.trim().to_string()));
                }
                if buffer.is_empty() && line.trim().is_empty() {
                    continue;
                }
                buffer.push_str(&line);
                buffer.push('\n');
                match engine.check_complete_in(&context, Some(language), &buffer).await {
                    Ok(answer) if answer.status == "incomplete" => indent = answer.indent,
                    // complete, invalid (the kernel shows the error), or no answer
                    _ => return (editor, Input::Cell(buffer)),
                }
            }
            Err(ReadlineError::Interrupted) => {
                buffer.clear();
            }
            Err(ReadlineError::Eof) => {
                if buffer.is_empty() {
                    return (editor, Input::Quit);
                }
                buffer.clear();
            }
            Err(error) => {
                eprintln!("cellbox: {error}");
                return (editor, Input::Quit);
            }
        }
    }
}

/// Run one cell with the interactive renderer; Ctrl-C interrupts it.
async fn run_cell(
    engine: &EvalEngine,
    context: &CallContext,
    code: &str,
    language: Language,
    timeout: f64,
    expand: bool,
) -> Option<String> {
    let mut params = EvalParams::code(code);
    params.cells[0].language = Some(language);
    params.timeout = Some(timeout);
    let mut options = RenderOptions::detect(expand);
    options.preview_lines = 20;
    options.headers = false;
    let renderer = Mutex::new(CardRenderer::new(std::io::stdout(), std::io::stderr(), options, vec![code.to_string()]));
    let on_event = |event: EvalEvent| renderer.lock().unwrap().event(&event);
    let cancel = CancellationToken::new();
    let interrupter = {
        let cancel = cancel.clone();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                cancel.cancel();
            }
        })
    };
    let outcome = redrawing(&renderer, engine.eval(&params, context, &cancel, &on_event)).await;
    interrupter.abort();
    match outcome {
        Ok(mut result) => {
            for note in &mut result.notes {
                *note = note.replace("via { reset: true }", "with :reset");
            }
            renderer.lock().unwrap().finish(&result);
            result.artifact
        }
        Err(error) => {
            eprintln!("cellbox: {error}");
            None
        }
    }
}
