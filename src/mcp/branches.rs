//! The tools that branch a session: `eval_fork` copies a session's live
//! Python kernel into a new named session (see [`EvalEngine::fork_session`](crate::tool::EvalEngine::fork_session)),
//! and `eval_undo` puts a session back to a checkpoint taken before one of
//! its calls (see [`EvalEngine::undo`](crate::tool::EvalEngine::undo)); `eval_snapshot` and
//! `eval_restore` save a session's variables to a file and bring them back,
//! in another session or after a restart.

use std::time::Duration;

use rmcp::model::{CallToolResult, Tool};
use serde_json::{Value, json};

use super::runs::{DEFAULT_SESSION, object_schema, take_session};
use super::{EvalServer, output};
use crate::tool::{ForkOptions, is_session_name};

/// How long `eval_fork` waits for a cell running in the source session.
const FORK_WAIT: Duration = Duration::from_secs(60);

impl EvalServer {
    pub(super) fn fork_tool() -> Tool {
        Tool::new(
            "eval_fork",
            "Copy a session's Python kernel, with every variable, import and object, into a new named session, in \
             milliseconds. Use it to try something risky on a copy: both sessions then live on independently. \
             Threads started by cells are not copied.",
            object_schema(json!({
                "session": {
                    "type": "string",
                    "description": "The session to copy (default \"default\")."
                },
                "name": {
                    "type": "string",
                    "description": "The new session's name (1-64 letters, digits, '-', '_', '.'); run cells in it \
                                    with eval's \"session\"."
                },
                "wait": {
                    "type": "boolean",
                    "description": "When the session is running a cell: wait up to 60 s for it to end (default \
                                    true), or refuse at once (false)."
                }
            })),
        )
        .with_title("Fork a session")
    }

    pub(super) fn undo_tool() -> Tool {
        Tool::new(
            "eval_undo",
            "Put a session's Python kernel back to its state before its last call(s), in milliseconds: variables, \
             data and imports as they were, even after a crash or a timeout. Needs checkpoints: pass \
             \"checkpoint\": true on the eval calls you may want to undo (or start the server with --checkpoints N). \
             Files written and other effects outside the kernel are not undone.",
            object_schema(json!({
                "session": {
                    "type": "string",
                    "description": "The session to take back (default \"default\")."
                },
                "steps": {
                    "type": "integer",
                    "minimum": 1,
                    "description": "How many calls to undo (default 1)."
                }
            })),
        )
        .with_title("Undo the last call")
    }

    pub(super) async fn call_undo(&self, mut arguments: Value) -> CallToolResult {
        let name = match take_session(&mut arguments) {
            Ok(name) => name,
            Err(error) => return output::error_result(error.to_string()),
        };
        let steps = match arguments.get("steps") {
            None | Some(Value::Null) => 1,
            Some(Value::Number(n)) if n.as_u64().is_some_and(|n| n >= 1) => n.as_u64().unwrap_or(1) as usize,
            Some(other) => {
                return output::error_result(format!("\"steps\" must be a whole number from 1, got {other}"));
            }
        };
        let context = self.session_context(&name);
        let report = match self.engine.undo(&context, steps).await {
            Ok(report) => report,
            Err(error) => return output::error_result(error.to_string()),
        };
        let text = format!(
            "Session \"{name}\" is back to its state before its last {} call(s) ({:.1} ms); {} more undo(s) possible. \
             Files and other effects outside the kernel were not undone.",
            report.steps,
            report.elapsed.as_secs_f64() * 1000.0,
            report.left
        );
        let undone = output::UndoOutput { text: text.clone(), steps: Some(report.steps), left: Some(report.left) };
        output::text_result(text, &undone, false)
    }

    pub(super) fn snapshot_tool() -> Tool {
        Tool::new(
            "eval_snapshot",
            "Save a session's Python variables to a file: data, and functions and classes defined in cells (by \
             value); modules are saved by name and imported again on restore. What cannot be saved (open files, \
             generators, sockets…) is listed with the reason. Restore it with eval_restore, later or elsewhere \
             (same Python minor version).",
            object_schema(json!({
                "session": {"type": "string", "description": "The session to save (default \"default\")."},
                "path": {
                    "type": "string",
                    "description": "The file to write, relative to the server's working directory (e.g. \
                                    \"state.cellbox\"); replaced if it exists."
                }
            })),
        )
        .with_title("Save a session to a file")
    }

    pub(super) fn restore_tool() -> Tool {
        Tool::new(
            "eval_restore",
            "Load the variables saved by eval_snapshot into a session (started if needed): names in the file replace \
             the session's names of the same name. Names that cannot be restored (a module no longer installed) are \
             listed with the reason. Only restore files you trust: loading runs code.",
            object_schema(json!({
                "session": {"type": "string", "description": "The session to restore into (default \"default\")."},
                "path": {"type": "string", "description": "The snapshot file, relative to the server's working directory."}
            })),
        )
        .with_title("Restore a session from a file")
    }

    pub(super) async fn call_snapshot(&self, mut arguments: Value, restore: bool) -> CallToolResult {
        let name = match take_session(&mut arguments) {
            Ok(name) => name,
            Err(error) => return output::error_result(error.to_string()),
        };
        let path = match arguments.get("path") {
            Some(Value::String(path)) if !path.trim().is_empty() => std::path::PathBuf::from(path),
            other => {
                return output::error_result(format!(
                    "\"path\" must name the snapshot file (e.g. \"state.cellbox\"), got {}",
                    other.map_or("nothing".to_string(), Value::to_string)
                ));
            }
        };
        let context = self.session_context(&name);
        let listed = |pairs: &[(String, String)]| {
            pairs.iter().map(|(name, reason)| format!("{name} ({reason})")).collect::<Vec<_>>().join("; ")
        };
        let (text, mut details) = if restore {
            let report = match self.engine.restore_session(&context, &path).await {
                Ok(report) => report,
                Err(error) => return output::error_result(error.to_string()),
            };
            let mut text = format!(
                "Restored {} name(s) into session \"{name}\" from {} (saved by Python {} on {}): {}.",
                report.restored.len(),
                report.path.display(),
                report.python,
                report.created,
                report.restored.join(", ")
            );
            if !report.settings.is_empty() {
                text.push_str(&format!(" Settings replayed: {}.", report.settings.join(", ")));
            }
            if !report.failed.is_empty() {
                text.push_str(&format!(" Not restored: {}.", listed(&report.failed)));
            }
            let details = output::SnapshotOutput {
                path: Some(report.path.display().to_string()),
                names: report.restored,
                left_out: report.failed.into_iter().map(output::LeftOut::from).collect(),
                settings: report.settings,
                ..Default::default()
            };
            (text, details)
        } else {
            let report = match self.engine.snapshot_session(&context, &path).await {
                Ok(report) => report,
                Err(error) => return output::error_result(error.to_string()),
            };
            let mut text = format!(
                "Saved {} name(s) of session \"{name}\" to {} ({}): {}.",
                report.saved.len(),
                report.path.display(),
                crate::output::limiter::human_bytes(report.bytes),
                report.saved.join(", ")
            );
            if !report.skipped.is_empty() {
                text.push_str(&format!(" Not saved: {}.", listed(&report.skipped)));
            }
            let details = output::SnapshotOutput {
                path: Some(report.path.display().to_string()),
                bytes: Some(report.bytes),
                names: report.saved,
                left_out: report.skipped.into_iter().map(output::LeftOut::from).collect(),
                ..Default::default()
            };
            (text, details)
        };
        details.text = text.clone();
        output::text_result(text, &details, false)
    }

    pub(super) async fn call_fork(&self, mut arguments: Value) -> CallToolResult {
        let source_name = match take_session(&mut arguments) {
            Ok(name) => name,
            Err(error) => return output::error_result(error.to_string()),
        };
        let target_name = match arguments.get("name") {
            Some(Value::String(name)) if is_session_name(name) && name != DEFAULT_SESSION => name.clone(),
            other => {
                return output::error_result(format!(
                    "\"name\" must name the new session (1-64 letters, digits, '-', '_', '.', not \"default\"), got {}",
                    other.map_or("nothing".to_string(), Value::to_string)
                ));
            }
        };
        let wait = match arguments.get("wait") {
            None | Some(Value::Null) => true,
            Some(Value::Bool(wait)) => *wait,
            Some(other) => return output::error_result(format!("\"wait\" must be true or false, got {other}")),
        };
        let source = self.session_context(&source_name);
        let target = self.session_context(&target_name);
        let options = ForkOptions { wait, timeout: FORK_WAIT };
        let report = match self.engine.fork_session(&source, &target, &target_name, options).await {
            Ok(report) => report,
            Err(error) => return output::error_result(error.to_string()),
        };
        self.sessions.forked(&source_name, &target_name);
        let mut text = format!(
            "Forked session \"{source_name}\" into \"{target_name}\" in {:.1} ms. Both live on independently; \
             run cells in the copy with \"session\": \"{target_name}\".",
            report.elapsed.as_secs_f64() * 1000.0
        );
        if !report.lost_threads.is_empty() {
            text.push_str(&format!(" Not copied (threads do not survive a fork): {}.", report.lost_threads.join(", ")));
        }
        let forked = output::ForkOutput {
            text: text.clone(),
            session: Some(target_name),
            source: Some(source_name),
            milliseconds: Some(report.elapsed.as_secs_f64() * 1000.0),
            lost_threads: report.lost_threads,
        };
        output::text_result(text, &forked, false)
    }
}
