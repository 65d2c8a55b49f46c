//! The REPL's branch commands: `:fork NAME` copies the session's kernel,
//! `:switch NAME` goes on in another session, `:undo [N]` takes back cells
//! (the REPL takes a checkpoint before each one, see below), `:snapshot
//! FILE` and `:restore FILE` save the variables to a file and bring them back.

use std::path::Path;

use cellbox_engine::tool::{CallContext, EvalEngine, ForkOptions};

/// Checkpoints the REPL keeps when `CELLBOX_CHECKPOINTS` says nothing: a few
/// milliseconds before each cell buy an `:undo` after any mistake.
pub(super) const DEFAULT_CHECKPOINTS: usize = 10;

pub(super) const HELP: &str = "\
:fork NAME       copy this session's kernel, with all its state, into session NAME
:switch NAME     go on in session NAME (`main` is the first one)
:undo [N]        take back the last N cells (default 1): the kernel's state before them
:snapshot FILE   save the variables (functions and classes too) to FILE
:restore FILE    load the variables saved in FILE into this session";

/// The REPL's sessions: `main` is the one it started with.
pub(super) struct Sessions {
    base: String,
    pub(super) current: String,
}

impl Sessions {
    pub(super) fn new(base: String) -> Sessions {
        Sessions { base, current: "main".into() }
    }

    fn context(&self, name: &str) -> CallContext {
        let session = if name == "main" { self.base.clone() } else { format!("{}/{name}", self.base) };
        CallContext { session, owner: self.base.clone() }
    }

    /// The context of the current session.
    pub(super) fn current(&self) -> CallContext {
        self.context(&self.current)
    }

    /// Run a branch command; `false` when `command` is not one.
    pub(super) async fn run(&mut self, engine: &EvalEngine, command: &str) -> bool {
        let (name, argument) = command.split_once(' ').map_or((command, ""), |(n, a)| (n, a.trim()));
        let context = self.current();
        let message = match (name, argument) {
            (":fork" | ":switch", "") => Err(format!("usage: {name} NAME")),
            (":fork", target) => engine
                .fork_session(&context, &self.context(target), target, ForkOptions::default())
                .await
                .map(|report| {
                    let mut text =
                        format!("forked into {target} in {:.1} ms; :switch {target} to use it", ms(report.elapsed));
                    if !report.lost_threads.is_empty() {
                        text.push_str(&format!(" (threads not copied: {})", report.lost_threads.join(", ")));
                    }
                    text
                })
                .map_err(|e| e.to_string()),
            (":switch", target) if cellbox_engine::tool::is_session_name(target) => {
                self.current = target.to_string();
                Ok(format!("now in session {target}"))
            }
            (":switch", target) => Err(format!("{target:?} is not a session name")),
            (":undo", steps) => match if steps.is_empty() { Ok(1) } else { steps.parse::<usize>() } {
                Ok(steps) => engine
                    .undo(&context, steps)
                    .await
                    .map(|report| format!("undid {} cell(s); {} more undo(s) possible", report.steps, report.left))
                    .map_err(|e| e.to_string()),
                Err(_) => Err("usage: :undo [N]".into()),
            },
            (":snapshot" | ":restore", "") => Err(format!("usage: {name} FILE")),
            (":snapshot", file) => engine
                .snapshot_session(&context, Path::new(file))
                .await
                .map(|report| {
                    let mut text = format!("saved {} name(s) to {}", report.saved.len(), report.path.display());
                    for (name, reason) in &report.skipped {
                        text.push_str(&format!("\n  not saved: {name}: {reason}"));
                    }
                    text
                })
                .map_err(|e| e.to_string()),
            (":restore", file) => engine
                .restore_session(&context, Path::new(file))
                .await
                .map(|report| {
                    let mut text = format!("restored {}", report.restored.join(", "));
                    if !report.settings.is_empty() {
                        text.push_str(&format!("\n  settings replayed: {}", report.settings.join(", ")));
                    }
                    for (name, reason) in &report.failed {
                        text.push_str(&format!("\n  not restored: {name}: {reason}"));
                    }
                    text
                })
                .map_err(|e| e.to_string()),
            _ => return false,
        };
        match message {
            Ok(text) => println!("{text}"),
            Err(error) => eprintln!("cellbox: {error}"),
        }
        true
    }
}

fn ms(duration: std::time::Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}
