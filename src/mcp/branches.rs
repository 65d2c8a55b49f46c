//! The tools that branch a session: `eval_fork` copies a session's live
//! Python kernel into a new named session (see [`EvalEngine::fork_session`](crate::tool::EvalEngine::fork_session)),
//! and `eval_undo` puts a session back to a checkpoint taken before one of
//! its calls (see [`EvalEngine::undo`](crate::tool::EvalEngine::undo)).

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
