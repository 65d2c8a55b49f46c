//! Runs and named sessions over MCP: `wait` on `eval`, `eval_wait`,
//! `eval_cancel`, the `session` parameter and `eval_sessions`.
//!
//! A client gives up on a tool call after its own timeout; these tools let a
//! long cell go on while the call returns, and let the model come back for
//! it with a wait that blocks on the server (never a polling loop).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rmcp::RoleServer;
use rmcp::model::{CallToolResult, Tool};
use rmcp::service::RequestContext;
use serde_json::{Value, json};
use tokio::sync::watch;

use super::{EvalServer, output, progress_message, report_progress};
use crate::tool::engine::INTERRUPT_ESCALATION;
use crate::tool::{CallContext, RunError, RunReport, WaitFor, is_session_name};

/// The session a call names when it names none.
pub const DEFAULT_SESSION: &str = "default";
/// How long `eval_wait` waits when the call gives no `wait`.
pub const DEFAULT_WAIT_SECS: f64 = 30.0;
/// Longest wait a call may ask for.
const MAX_WAIT_SECS: f64 = 3600.0;

/// Why a call's `session`, `wait` or `run` argument cannot be used, by cause; the text is the
/// tool error the model reads, with an example of what to pass.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RunsError {
    /// `got` is the argument as given, in JSON.
    #[error(
        "session must be a short name of letters, digits, '-', '_' or '.' (such as \"data\" or \"scratch\"), got {got}"
    )]
    BadSession { got: Value },
    #[error("wait must be a number of seconds from 0 to 3600, got {got}")]
    BadWait { got: Value },
    #[error("run must be a run://<id> handle from an eval call, got {got}")]
    BadRun { got: Value },
    #[error(
        "this session has no run to wait for: eval calls that finish within their wait return their result directly"
    )]
    NoRun,
}

/// What the connection knows of each session it used.
#[derive(Debug, Clone, Default)]
pub struct SessionEntry {
    started: Option<SystemTime>,
    /// The title (or first line) of the last cell a call ran.
    last_cell: Option<String>,
    /// Calls running now without a run handle.
    in_flight: usize,
}

/// The sessions of one connection, by name.
#[derive(Debug, Default)]
pub struct Sessions(Mutex<BTreeMap<String, SessionEntry>>);

/// Marks a session busy while a plain call runs in it.
pub struct InFlight<'a> {
    sessions: &'a Sessions,
    name: String,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if let Some(entry) = self.sessions.0.lock().unwrap().get_mut(&self.name) {
            entry.in_flight = entry.in_flight.saturating_sub(1);
        }
    }
}

impl Sessions {
    /// Note a call in `name` that runs `cells` (their titles or first lines).
    pub fn called<'a>(&'a self, name: &str, last_cell: Option<String>) -> InFlight<'a> {
        let mut sessions = self.0.lock().unwrap();
        let entry = sessions.entry(name.to_string()).or_default();
        entry.started.get_or_insert_with(SystemTime::now);
        if last_cell.is_some() {
            entry.last_cell = last_cell;
        }
        entry.in_flight += 1;
        InFlight { sessions: self, name: name.to_string() }
    }

    /// List `target`, a fork of `source`, with what it inherited.
    pub fn forked(&self, source: &str, target: &str) {
        let mut sessions = self.0.lock().unwrap();
        let last_cell = sessions.get(source).and_then(|entry| entry.last_cell.clone());
        let entry = sessions.entry(target.to_string()).or_default();
        entry.started = Some(SystemTime::now());
        entry.last_cell = last_cell;
    }
}

/// `session` from a call's arguments (removed from them): a name of letters,
/// digits, `-`, `_` and `.`, at most 64 characters; `None` for the default.
pub fn take_session(arguments: &mut Value) -> Result<String, RunsError> {
    let name = session_of(arguments);
    if let Some(map) = arguments.as_object_mut() {
        map.remove("session");
    }
    name
}

/// `session` from a call's arguments, left in place.
pub fn session_of(arguments: &Value) -> Result<String, RunsError> {
    match arguments.get("session") {
        None | Some(Value::Null) => Ok(DEFAULT_SESSION.to_string()),
        Some(Value::String(name)) if is_session_name(name) => Ok(name.clone()),
        Some(other) => Err(RunsError::BadSession { got: other.clone() }),
    }
}

/// `wait` from a call's arguments, in seconds (0..3600).
fn take_wait(arguments: &Value, default: f64) -> Result<Duration, RunsError> {
    match arguments.get("wait") {
        None | Some(Value::Null) => Ok(Duration::from_secs_f64(default)),
        Some(Value::Number(n)) if n.as_f64().is_some_and(|s| s.is_finite() && s >= 0.0) => {
            Ok(Duration::from_secs_f64(n.as_f64().unwrap_or(default).min(MAX_WAIT_SECS)))
        }
        Some(other) => Err(RunsError::BadWait { got: other.clone() }),
    }
}

fn session_property() -> Value {
    json!({
        "type": "string",
        "description": "A named session with its own kernels and state (e.g. \"data\", \"scratch\"); default \
                        \"default\". eval_sessions lists them."
    })
}

fn run_property() -> Value {
    json!({
        "type": "string",
        "description": "The run://<id> handle an eval call returned. Default: the session's current run."
    })
}

pub(super) fn object_schema(properties: Value) -> Arc<serde_json::Map<String, Value>> {
    let schema = json!({"type": "object", "properties": properties, "additionalProperties": false});
    Arc::new(schema.as_object().cloned().unwrap_or_default())
}

/// The first line of a cell's title or code, clipped.
fn cell_label(cell: &Value) -> Option<String> {
    let title = cell.get("title").and_then(Value::as_str).filter(|t| !t.trim().is_empty());
    let code = cell.get("code").and_then(Value::as_str);
    let label = title.or_else(|| code.and_then(|code| code.lines().find(|l| !l.trim().is_empty())))?;
    Some(super::clip(label.trim(), 80))
}

impl EvalServer {
    /// The engine's session for a name of this connection.
    pub(super) fn session_context(&self, name: &str) -> CallContext {
        if name == DEFAULT_SESSION {
            return self.context.clone();
        }
        CallContext { session: format!("{}/{name}", self.context.session), owner: self.context.owner.clone() }
    }

    /// Record a call in session `name` (for eval_sessions); busy until dropped.
    pub(super) fn note_call(&self, name: &str, arguments: &Value) -> InFlight<'_> {
        let last = arguments.get("cells").and_then(Value::as_array).and_then(|cells| cells.last()).and_then(cell_label);
        self.sessions.called(name, last)
    }

    /// Add `session` to the eval tool's schema.
    pub(super) fn add_session_property(schema: &mut serde_json::Map<String, Value>) {
        if let Some(Value::Object(properties)) = schema.get_mut("properties") {
            properties.insert("session".into(), session_property());
        }
    }

    pub(super) fn wait_tool() -> Tool {
        let schema = object_schema(json!({
            "run": run_property(),
            "session": session_property(),
            "wait": {
                "type": "number",
                "description": "Seconds to wait, on the server, for a cell or the run to finish (0..3600, default 30)."
            }
        }));
        Tool::new(
            "eval_wait",
            "Wait for a run that an eval call left running (it returned a run://<id> handle): blocks on the server \
             until a cell or the whole run finishes or `wait` seconds pass, then returns the output written since \
             the last read and each cell's state. Use it instead of polling with sleep cells.",
            schema,
        )
        .with_title("Wait for a running eval")
    }

    pub(super) fn cancel_tool() -> Tool {
        let schema = object_schema(json!({"run": run_property(), "session": session_property()}));
        Tool::new(
            "eval_cancel",
            "Stop a run: the running cell is interrupted (KeyboardInterrupt; a kernel that does not respond is \
             restarted) and the cells after it are skipped. The kernel keeps its state. Returns the run's last output.",
            schema,
        )
        .with_title("Cancel a running eval")
    }

    pub(super) fn sessions_tool() -> Tool {
        Tool::new(
            "eval_sessions",
            "List this connection's sessions: languages, working directory, interpreter, when it started, busy or \
             idle, the current run, resident memory and the last cell.",
            object_schema(json!({})),
        )
        .with_title("List sessions")
    }

    /// The run a call names, or the session's current one.
    fn chosen_run(&self, arguments: &Value, context: &CallContext) -> Result<String, RunsError> {
        match arguments.get("run") {
            Some(Value::String(run)) if !run.trim().is_empty() => Ok(run.trim().to_string()),
            None | Some(Value::Null) => {
                self.engine.runs_of(&context.session).into_iter().next().map(|run| run.run).ok_or(RunsError::NoRun)
            }
            Some(other) => Err(RunsError::BadRun { got: other.clone() }),
        }
    }

    pub(super) async fn call_wait(&self, mut arguments: Value, context: RequestContext<RoleServer>) -> CallToolResult {
        let prepared = take_session(&mut arguments).and_then(|name| {
            let session = self.session_context(&name);
            let run = self.chosen_run(&arguments, &session)?;
            let wait = take_wait(&arguments, DEFAULT_WAIT_SECS)?;
            Ok((run, wait))
        });
        let (run, wait) = match prepared {
            Ok(prepared) => prepared,
            Err(error) => return output::error_result(error.to_string()),
        };
        let reporter = self.follow_run(&run, &context);
        let outcome = tokio::select! {
            outcome = self.engine.wait(&run, wait, WaitFor::AnyCell) => outcome,
            // The client gave up on this call: the run goes on; read what there is.
            _ = context.ct.cancelled() => self.engine.output_since(&run),
        };
        if let Some(reporter) = reporter {
            reporter.abort();
        }
        run_result(outcome)
    }

    pub(super) async fn call_cancel(&self, mut arguments: Value) -> CallToolResult {
        let run =
            take_session(&mut arguments).and_then(|name| self.chosen_run(&arguments, &self.session_context(&name)));
        let run = match run {
            Ok(run) => run,
            Err(error) => return output::error_result(error.to_string()),
        };
        if let Err(error) = self.engine.cancel(&run) {
            return output::error_result(error.to_string());
        }
        // The interrupt, then the kill the ladder ends with, then a margin.
        let ladder = INTERRUPT_ESCALATION + Duration::from_secs(5);
        run_result(self.engine.wait(&run, ladder, WaitFor::Run).await)
    }

    pub(super) fn call_sessions(&self) -> CallToolResult {
        let known = self.sessions.0.lock().unwrap().clone();
        let mut names: Vec<String> = known.keys().cloned().collect();
        if !names.iter().any(|name| name == DEFAULT_SESSION) {
            names.insert(0, DEFAULT_SESSION.to_string());
        }
        let mut listed = Vec::new();
        let mut lines = Vec::new();
        for name in names {
            let context = self.session_context(&name);
            let entry = known.get(&name).cloned().unwrap_or_default();
            let kernels = self.engine.session_kernels(&context.session);
            let run = self.engine.current_run(&context.session);
            let busy = run.is_some() || entry.in_flight > 0;
            let memory: u64 = kernels.iter().filter_map(|k| k.resident_bytes).sum();
            let started = entry.started.and_then(|t| t.duration_since(UNIX_EPOCH).ok()).map(|d| d.as_secs());
            let languages: Vec<&str> = kernels.iter().filter(|k| k.pid.is_some()).map(|k| k.runtime.as_str()).collect();
            let mut line = format!("{name}: {}", if busy { "busy" } else { "idle" });
            if let Some(run) = &run {
                line.push_str(&format!(", running {run}"));
            }
            if languages.is_empty() {
                line.push_str(", no kernel running");
            } else {
                line.push_str(&format!(
                    ", {} ({})",
                    languages.join(" + "),
                    crate::output::limiter::human_bytes(memory)
                ));
            }
            if let Some(kernel) = kernels.first() {
                line.push_str(&format!(", cwd {}", kernel.cwd.display()));
            }
            if let Some(last) = &entry.last_cell {
                line.push_str(&format!(", last cell: {last}"));
            }
            lines.push(line);
            listed.push(output::SessionEntry {
                name,
                busy,
                run,
                started_unix: started,
                languages: languages.iter().map(|language| language.to_string()).collect(),
                kernels,
                resident_bytes: memory,
                last_cell: entry.last_cell,
            });
        }
        let text = lines.join("\n") + "\n";
        output::text_result(text.clone(), &output::SessionsOutput { text, sessions: listed }, false)
    }

    /// Progress notifications for a wait on `run`, when the client asked for them.
    fn follow_run(&self, run: &str, context: &RequestContext<RoleServer>) -> Option<tokio::task::JoinHandle<()>> {
        let token = context.meta.get_progress_token()?;
        let mut events = self.engine.watch_run(run)?;
        let (tx, rx) = watch::channel(None::<String>);
        let peer = context.peer.clone();
        Some(tokio::spawn(async move {
            let forward = async move {
                while events.changed().await.is_ok() {
                    let message = events.borrow_and_update().as_ref().and_then(progress_message);
                    if message.is_some() && tx.send(message).is_err() {
                        return;
                    }
                }
                std::future::pending::<()>().await;
            };
            tokio::join!(forward, report_progress(peer, token, rx));
        }))
    }
}

/// A run's read as a tool result: its final result, or the output so far with its handle.
pub(super) fn run_result(outcome: Result<RunReport, RunError>) -> CallToolResult {
    match outcome {
        Ok(RunReport { result: Some(result), run, .. }) => {
            let mut tool_result = output::eval_result(result);
            if let Some(Value::Object(map)) = tool_result.structured_content.as_mut() {
                map.insert("run".into(), json!(run));
                map.insert("running".into(), json!(false));
            }
            tool_result
        }
        Ok(report) => output::running_result(report),
        Err(error) => output::error_result(error.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_names_are_checked() {
        let mut arguments = json!({"cells": [], "session": "data"});
        assert_eq!(take_session(&mut arguments).unwrap(), "data");
        assert!(arguments.get("session").is_none());
        assert_eq!(take_session(&mut json!({})).unwrap(), DEFAULT_SESSION);
        let bad = take_session(&mut json!({"session": "a/b"})).unwrap_err();
        assert_eq!(bad, RunsError::BadSession { got: json!("a/b") });
        assert_eq!(
            bad.to_string(),
            "session must be a short name of letters, digits, '-', '_' or '.' (such as \"data\" or \"scratch\"), \
             got \"a/b\""
        );
    }

    #[test]
    fn waits_are_checked_and_clamped() {
        assert_eq!(take_wait(&json!({}), 30.0).unwrap(), Duration::from_secs(30));
        assert_eq!(take_wait(&json!({"wait": 1e9}), 30.0).unwrap(), Duration::from_secs(3600));
        assert_eq!(take_wait(&json!({"wait": -2}), 30.0), Err(RunsError::BadWait { got: json!(-2) }));
        let soon = take_wait(&json!({"wait": "soon"}), 30.0).unwrap_err();
        assert_eq!(soon.to_string(), "wait must be a number of seconds from 0 to 3600, got \"soon\"");
    }
}
