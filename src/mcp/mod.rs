//! `cellbox mcp`: the eval tool as a Model Context Protocol server over stdio.
//!
//! stdout carries the protocol and nothing else; logs go to stderr. One
//! connection is one session and one owner: state lasts across the
//! connection's calls, and its kernels are disposed when the client goes
//! away (stdin closes) or the server receives SIGINT/SIGTERM.
//!
//! Tools: `eval` (the eval tool's parameters; its schema and the server's
//! instructions offer only the languages available; `wait` returns a
//! `run://<id>` handle for cells still running, `session` picks a named
//! session), `eval_wait` and `eval_cancel` (runs), `eval_sessions`,
//! `eval_reset` (clear all state) and `eval_export_notebook` (the session's cells as a Jupyter
//! notebook, returned or written to a file). Artifacts are resources: `artifact://<id>`, read in pages of
//! [`RESOURCE_PAGE_BYTES`] with `?offset=N`.
//! Each tool's annotations and result-size hint come from one table in [`manners`].

pub mod manners;
pub mod output;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, InitializeRequestParams, InitializeResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    ProgressNotificationParam, ProtocolVersion, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult,
    Resource, ResourceContents, ResourceTemplate, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Value, json};
use tokio::sync::watch;

use crate::backend::Backend;
use crate::output::artifacts::SCHEME;
use crate::tool::{CallContext, CallOutcome, EvalEngine, EvalEvent, EvalParams, Language};

mod rounds;
mod runs;
pub mod sampling;
mod tasks;
pub mod versions;

/// Largest piece of an artifact one `resources/read` returns; larger artifacts
/// end with a line naming the URI of the next page.
pub const RESOURCE_PAGE_BYTES: usize = 1024 * 1024;
/// Progress notifications are sent at most this often while a cell runs.
const PROGRESS_INTERVAL: Duration = Duration::from_millis(250);
/// While a cell is silent, a progress notification still goes out this often,
/// so clients that extend their timeout on progress keep waiting.
pub const PROGRESS_HEARTBEAT: Duration = Duration::from_secs(5);

/// What a model is told about using the server.
pub const INSTRUCTIONS: &str = "\
cellbox runs Python code for you in a persistent kernel (like a Jupyter notebook without Jupyter).
- Use the `eval` tool with one or more cells. Variables, imports and functions persist across calls.
- The last expression of a cell is shown; print() output and errors (with tracebacks) come back too;
  display(obj) and matplotlib figures come back as images, tables or JSON.
- Output is bounded (50 KB / 3000 lines); the full output is kept as an artifact://<id> resource.
- Each cell has a timeout (default 30 s, up to 3600); a timed-out cell is interrupted and the state is
  kept. If the state looks broken, call `eval_reset` or pass reset: true. There is no input().
- Anything that may take over a minute: pass `wait` (seconds) to eval. If cells still run when it
  elapses you get the output so far and a run://<id> handle; then call `eval_wait` (it blocks on the
  server; never poll with sleep cells) or `eval_cancel`. A call on a busy session queues behind its run.
- `session: \"name\"` gives independent kernels (e.g. to keep working during a long run); see `eval_sessions`.";

/// The `eval` tool's description, written for models.
pub const EVAL_DESCRIPTION: &str = "\
Run Python code cells in a persistent kernel and return their output.

State (variables, imports, functions, open files) persists across calls until reset. Cells run in order
in the same kernel; if one fails, the following cells are skipped and the error says which one failed.
The value of a cell's last expression is shown (end the line with `;` to hide it). Top-level `await` works.
IPython-style magics work in cells: `%pip install pkg`, `!shell command`, `files = !ls`, `%%bash`, `%cd`,
`%time`, `%timeit`, `%env`, `%%writefile`.
Rich output: display(obj), matplotlib plots (returned as images), pandas DataFrames, JSON.
Limits: text output is capped at 50 KB / 3000 lines; longer output keeps its head and tail and the full
output is saved as artifact://<id> (readable as a resource). Per-cell `timeout` in seconds (default 30,
max 3600): on timeout the cell is interrupted (KeyboardInterrupt) and the kernel keeps its state; a kernel
that does not respond is restarted. `reset: true` (top-level or per cell) restarts the kernel first.
For long work pass `wait` (seconds): when it elapses with cells still running, the call returns the output
so far and a run://<id> handle while the cells go on; continue with eval_wait, stop with eval_cancel.
`session` names an independent kernel set (default \"default\").
`check: \"syntax\"` parses every cell before any runs (a syntax error runs none and shows the
caret); `check: \"lint\"` also returns `ruff check` findings as notes, never blocking.
input() is not supported.";

/// What a model is told about JavaScript cells, when they are offered.
pub const JS_INSTRUCTIONS: &str = "\
- JavaScript cells (\"language\": \"js\") run in a persistent Node.js kernel of their own: top-level
  const/let/function/class persist across calls, top-level await works, require() and import() load
  packages from the project's node_modules, and display(value, mime?) shows images, HTML or JSON.";

/// The `eval` tool's description of JavaScript cells, when they are offered.
pub const JS_DESCRIPTION: &str = "\
JavaScript cells (\"language\": \"js\"; \"ts\" for TypeScript where Node can strip types) run in a separate
persistent Node.js kernel: declarations persist, top-level await works, the last expression's value is
shown, require()/import() resolve from the working directory, display(value, mime?) shows rich output.";

/// The MCP server: one per connection.
pub struct EvalServer {
    engine: Arc<EvalEngine>,
    context: CallContext,
    /// The languages offered (enabled, with a runtime found), decided once.
    languages: Vec<Language>,
    /// The named sessions this connection used.
    sessions: runs::Sessions,
    /// `eval` calls running as MCP tasks.
    tasks: rmcp::task_manager::TaskManager,
    /// Answers the cells' completion()/agent() through this connection's client.
    sampling: Option<Arc<sampling::SamplingBridge>>,
    /// `eval` calls waiting for the client's next sampling round, by `requestState`.
    parked: std::sync::Mutex<std::collections::HashMap<String, rounds::Parked>>,
    rounds_seq: AtomicU64,
}

impl EvalServer {
    pub fn new(engine: Arc<EvalEngine>, session: impl Into<String>) -> Self {
        let languages = engine.available_languages();
        EvalServer {
            engine,
            context: CallContext::new(session),
            languages,
            sessions: Default::default(),
            tasks: Default::default(),
            sampling: None,
            parked: Default::default(),
            rounds_seq: AtomicU64::new(0),
        }
    }

    /// Answer this connection's cells' completion()/agent() through `sampling`.
    pub fn with_sampling(mut self, sampling: Option<Arc<sampling::SamplingBridge>>) -> Self {
        self.sampling = sampling;
        self
    }

    fn offers(&self, backend: Backend) -> bool {
        self.languages.iter().any(|language| language.backend() == backend)
    }

    /// What the model is told: the Python text, the JavaScript text, or both,
    /// then what the sandbox lets its code write and whether it has network.
    fn instructions(&self) -> String {
        let config = self.engine.config();
        let sandbox = format!("\n- Sandbox: {}", config.sandbox.describe_for_model(&config.default_cwd));
        let base = match (self.offers(Backend::Python), self.offers(Backend::Node)) {
            (true, true) => format!("{INSTRUCTIONS}\n{JS_INSTRUCTIONS}"),
            (false, true) => format!(
                "cellbox runs JavaScript code for you in a persistent Node.js kernel (Python is not available \
                 here).\n{JS_INSTRUCTIONS}\n- Output is bounded; the full output is kept as an artifact://<id> \
                 resource. Cells have timeouts (default 30 s); there is no interactive input."
            ),
            _ => INSTRUCTIONS.to_string(),
        };
        base + &sandbox
    }

    fn eval_tool(&self) -> Tool {
        let mut schema = EvalParams::json_schema();
        let offered: Vec<&str> = self.languages.iter().map(|language| language.as_str()).collect();
        restrict_languages(&mut schema, &offered);
        let mut schema = schema.as_object().cloned().unwrap_or_default();
        Self::add_session_property(&mut schema);
        let (description, title) = match (self.offers(Backend::Python), self.offers(Backend::Node)) {
            (true, true) => (format!("{EVAL_DESCRIPTION}\n{JS_DESCRIPTION}"), "Run Python or JavaScript code"),
            (false, true) => (
                format!(
                    "Run JavaScript code cells in a persistent Node.js kernel and return their output (Python is \
                     not available here; cells without a language run as JavaScript).\n{JS_DESCRIPTION}"
                ),
                "Run JavaScript code",
            ),
            _ => (EVAL_DESCRIPTION.to_string(), "Run Python code"),
        };
        Tool::new("eval", description, Arc::new(schema)).with_title(title)
    }

    /// Every tool offered, each with its annotations and size hint ([`manners`]).
    fn tools(&self) -> Vec<Tool> {
        let max_text_bytes = self.engine.config().text_limits.max_bytes;
        [
            self.eval_tool(),
            self.reset_tool(),
            Self::export_tool(),
            Self::wait_tool(),
            Self::cancel_tool(),
            Self::sessions_tool(),
        ]
        .into_iter()
        .map(|tool| output::with_output_schema(manners::dress(tool, max_text_bytes)))
        .collect()
    }

    fn reset_tool(&self) -> Tool {
        let schema = json!({"type": "object", "properties": {"session": {
            "type": "string", "description": "The named session to reset (default \"default\")."
        }}, "additionalProperties": false});
        Tool::new(
            "eval_reset",
            "Restart this session's kernels (every language): every variable, import and function is cleared.",
            Arc::new(schema.as_object().cloned().unwrap_or_default()),
        )
        .with_title("Reset the kernels")
    }

    fn export_tool() -> Tool {
        let schema = json!({
            "type": "object",
            "properties": {
                "path": {
                    "type": "string",
                    "description": "Write the notebook to this file (.ipynb), relative to the server's working \
                                    directory. Without it, the notebook's JSON is returned as text."
                }
            },
            "additionalProperties": false
        });
        Tool::new(
            "eval_export_notebook",
            "Save the cells this session has run, with their outputs and execution counts, as a Jupyter notebook \
             (nbformat 4.5). The history survives eval_reset.",
            Arc::new(schema.as_object().cloned().unwrap_or_default()),
        )
        .with_title("Export the session as a notebook")
    }

    fn call_export(&self, arguments: &Value) -> CallToolResult {
        let path = match arguments.get("path") {
            None | Some(Value::Null) => None,
            Some(Value::String(path)) if !path.trim().is_empty() => Some(path.clone()),
            Some(other) => {
                return output::error_result(format!(
                    "path must be a file name such as \"analysis.ipynb\", got {other}"
                ));
            }
        };
        let notebook = match self.engine.export_notebook(&self.context.session) {
            Ok(notebook) => notebook,
            Err(error) => return output::error_result(error.to_string()),
        };
        match path {
            None => {
                let text = notebook.to_json_string();
                let exported =
                    output::ExportOutput { text: text.clone(), path: None, cells: Some(notebook.cells.len()) };
                output::text_result(text, &exported, false)
            }
            Some(path) => {
                let target = self.engine.config().default_cwd.join(path);
                match notebook.write(&target) {
                    Ok(()) => {
                        let text = format!("Saved {} cell(s) to {}", notebook.cells.len(), target.display());
                        let exported = output::ExportOutput {
                            text: text.clone(),
                            path: Some(target.display().to_string()),
                            cells: Some(notebook.cells.len()),
                        };
                        output::text_result(text, &exported, false)
                    }
                    Err(error) => output::error_result(error.to_string()),
                }
            }
        }
    }

    async fn call_eval(&self, mut arguments: Value, context: RequestContext<RoleServer>) -> CallToolResult {
        let name = match runs::take_session(&mut arguments) {
            Ok(name) => name,
            Err(message) => return output::error_result(message),
        };
        let session = self.session_context(&name);
        let _busy = self.note_call(&name, &arguments);
        let params = match EvalParams::from_json(arguments) {
            Ok(params) => params,
            Err(error) => return output::error_result(error.to_string()),
        };
        if params.wait == Some(0.0)
            && let Some(run) = self.engine.current_run(&session.session)
        {
            return output::error_result(format!(
                "Session {name:?} is busy with {run}, and wait: 0 does not queue. Wait for it with eval_wait, \
                 stop it with eval_cancel, or pass another session."
            ));
        }
        let (progress_tx, progress_rx) = watch::channel(None::<String>);
        let reporter = context.meta.get_progress_token().map(|token| {
            let peer = context.peer.clone();
            tokio::spawn(report_progress(peer, token, progress_rx))
        });
        let on_event = move |event: EvalEvent| {
            if let Some(message) = progress_message(&event) {
                let _ = progress_tx.send(Some(message));
            }
        };
        let outcome = self.engine.call(&params, &session, &context.ct, &on_event).await;
        drop(on_event);
        if let Some(reporter) = reporter {
            let _ = reporter.await;
        }
        match outcome {
            Ok(CallOutcome::Finished(result)) => output::eval_result(result),
            Ok(CallOutcome::Running(report)) => output::running_result(report),
            Err(error) => output::error_result(error.to_string()),
        }
    }

    fn read_artifact(&self, uri: &str) -> Result<ReadResourceResult, McpError> {
        let (id, offset) = parse_artifact_uri(uri)
            .ok_or_else(|| McpError::invalid_params(format!("{uri} is not an artifact:// URI"), None))?;
        let (mut text, size) = self
            .engine
            .read_artifact(id, offset, RESOURCE_PAGE_BYTES)
            .map_err(|e| McpError::resource_not_found(e.to_string(), None))?;
        let next = offset + text.len() as u64;
        if next < size {
            text.push_str(&format!(
                "\n[cellbox: {} more bytes; read {SCHEME}{id}?offset={next} for the next page]\n",
                size - next
            ));
        }
        Ok(ReadResourceResult::new(vec![ResourceContents::text(text, uri).with_mime_type("text/plain")]))
    }
}

/// Keep only `offered` among the language values anywhere in the schema
/// (`enum` lists and `oneOf` alternatives naming a language).
fn restrict_languages(schema: &mut Value, offered: &[&str]) {
    const ALL: [&str; 3] = ["py", "js", "ts"];
    let is_language = |value: &Value| value.as_str().is_some_and(|text| ALL.contains(&text));
    let allowed = |value: &Value| value.as_str().is_some_and(|text| offered.contains(&text));
    match schema {
        Value::Object(map) => {
            for value in map.values_mut() {
                restrict_languages(value, offered);
            }
            if let Some(Value::Array(values)) = map.get_mut("enum")
                && !values.is_empty()
                && values.iter().all(is_language)
            {
                values.retain(allowed);
            }
            if let Some(Value::Array(alternatives)) = map.get_mut("oneOf") {
                alternatives.retain(|alternative| {
                    let named_ok = alternative.get("const").is_none_or(|value| !is_language(value) || allowed(value));
                    let enum_left = alternative.get("enum").and_then(Value::as_array).is_none_or(|e| !e.is_empty());
                    named_ok && enum_left
                });
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|item| restrict_languages(item, offered)),
        _ => {}
    }
}

/// `artifact://<id>` or `artifact://<id>?offset=N` (`agent://<id>` alike).
fn parse_artifact_uri(uri: &str) -> Option<(&str, u64)> {
    let rest = uri.strip_prefix(SCHEME).or_else(|| uri.strip_prefix(crate::output::artifacts::AGENT_SCHEME))?;
    match rest.split_once('?') {
        None => Some((rest, 0)),
        Some((id, query)) => {
            let offset = query.split('&').find_map(|pair| pair.strip_prefix("offset="))?.parse().ok()?;
            Some((id, offset))
        }
    }
}

/// The latest output line or status event, as a progress message.
fn progress_message(event: &EvalEvent) -> Option<String> {
    match event {
        EvalEvent::Stdout { text, .. } | EvalEvent::Stderr { text, .. } => {
            text.lines().rev().find(|line| !line.trim().is_empty()).map(|line| clip(line, 200))
        }
        EvalEvent::Status { event, .. } if crate::render::status::is_hidden(event) => None,
        EvalEvent::Status { event, .. } => Some(clip(&event.to_string(), 200)),
        EvalEvent::CellStarted { index, title } => Some(match title {
            Some(title) => format!("cell {} started: {title}", index + 1),
            None => format!("cell {} started", index + 1),
        }),
        EvalEvent::CellFinished { index, status, .. } => Some(format!("cell {}: {}", index + 1, status.as_str())),
        EvalEvent::KernelStarting { .. } => event.waiting_line(),
        _ => None,
    }
}

fn clip(text: &str, max: usize) -> String {
    if text.chars().count() <= max { text.to_string() } else { text.chars().take(max).collect::<String>() + "…" }
}

/// Send the newest progress message at most every [`PROGRESS_INTERVAL`]
/// until the call ends, and the last one again (with the time it has been
/// running) every [`PROGRESS_HEARTBEAT`] while nothing new comes.
async fn report_progress(
    peer: rmcp::Peer<RoleServer>,
    token: rmcp::model::ProgressToken,
    mut messages: watch::Receiver<Option<String>>,
) {
    let mut step = 0.0;
    let started = tokio::time::Instant::now();
    let mut last: Option<String> = None;
    loop {
        let message = match tokio::time::timeout(PROGRESS_HEARTBEAT, messages.changed()).await {
            Ok(Err(_)) => return, // the call is over
            Ok(Ok(())) => {
                let message = messages.borrow_and_update().clone();
                if message.is_some() {
                    last = message.clone();
                }
                message
            }
            Err(_) => Some(heartbeat_message(last.as_deref(), started.elapsed())),
        };
        if let Some(message) = message {
            step += 1.0;
            let notification = ProgressNotificationParam::new(token.clone(), step).with_message(message);
            if peer.notify_progress(notification).await.is_err() {
                return;
            }
        }
        tokio::time::sleep(PROGRESS_INTERVAL).await;
    }
}

/// A progress message for a silent stretch: the last message, and for how long the call has run.
fn heartbeat_message(last: Option<&str>, elapsed: Duration) -> String {
    match last {
        Some(last) => format!("{last} (still running, {} s)", elapsed.as_secs()),
        None => format!("running, {} s", elapsed.as_secs()),
    }
}

impl EvalServer {
    /// A tool call, answered as the newest protocol answers it ([`output::for_version`] adapts it).
    async fn dispatch_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let mut arguments = Value::Object(request.arguments.clone().unwrap_or_default());
        match request.name.as_ref() {
            "eval" if Self::runs_as_task(&arguments, &context) => Ok(self.call_eval_task(arguments)),
            "eval" if self.uses_rounds(&context) => Ok(self.call_eval_rounds(request, arguments, &context).await),
            "eval" => Ok(self.call_eval(arguments, context).await.into()),
            "eval_wait" => Ok(self.call_wait(arguments, context).await.into()),
            "eval_cancel" => Ok(self.call_cancel(arguments).await.into()),
            "eval_sessions" => Ok(self.call_sessions().into()),
            "eval_reset" => {
                let name = match runs::take_session(&mut arguments) {
                    Ok(name) => name,
                    Err(message) => return Ok(output::error_result(message).into()),
                };
                let stopped = self.engine.reset_session(&self.session_context(&name).session).await;
                let text = if stopped == 0 {
                    "No kernel was running; the next eval call starts a fresh one."
                } else {
                    "The kernel was restarted: all variables, imports and functions are cleared."
                };
                let reset = output::ResetOutput { text: text.to_string(), restarted: Some(stopped > 0) };
                Ok(output::text_result(text.to_string(), &reset, false).into())
            }
            "eval_export_notebook" => Ok(self.call_export(&arguments).into()),
            other => Err(McpError::invalid_params(
                format!(
                    "unknown tool {other:?}; use \"eval\", \"eval_wait\", \"eval_cancel\", \"eval_reset\", \
                     \"eval_sessions\" or \"eval_export_notebook\""
                ),
                None,
            )),
        }
    }
}

impl ServerHandler for EvalServer {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder().enable_tools().enable_resources().enable_tasks().build();
        let mut info = ServerConfig::new(capabilities).with_instructions(self.instructions());
        info.server_info.name = "cellbox".into();
        info.server_info.version = env!("CARGO_PKG_VERSION").into();
        info
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, McpError> {
        context.peer.set_peer_info(request.clone());
        let mut result = self.negotiate_initialize(&request)?;
        result.capabilities = versions::capabilities(result.capabilities, &result.protocol_version);
        Ok(result)
    }

    fn supported_protocol_versions(&self) -> std::borrow::Cow<'static, [ProtocolVersion]> {
        std::borrow::Cow::Borrowed(versions::SUPPORTED)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let mut tools = self.tools();
        if !output::has_structured_content(context.protocol_version().as_ref()) {
            for tool in &mut tools {
                tool.output_schema = None;
            }
        }
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let version = context.protocol_version();
        let response = self.dispatch_tool(request, context).await?;
        Ok(match response {
            CallToolResponse::Complete(result) => output::for_version(result, version.as_ref()).into(),
            other => other,
        })
    }

    async fn get_task(
        &self,
        request: rmcp::model::GetTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetTaskResult, McpError> {
        self.tasks.get_task(&request.task_id).map(rmcp::model::GetTaskResult::new)
    }

    async fn cancel_task(
        &self,
        request: rmcp::model::CancelTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.tasks.cancel_task(&request.task_id)
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let resources = self
            .engine
            .artifacts()
            .list(&self.context.session)
            .into_iter()
            .map(|(id, size)| {
                Resource::new(format!("{SCHEME}{id}"), format!("output {id}"))
                    .with_description("Full output of an eval call")
                    .with_mime_type("text/plain")
                    .with_size(size)
            })
            .collect();
        Ok(ListResourcesResult::with_all_items(resources))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        let template = ResourceTemplate::new("artifact://{id}{?offset}", "eval output")
            .with_description("Full output of an eval call; large outputs are read in 1 MiB pages with ?offset=N")
            .with_mime_type("text/plain");
        Ok(ListResourceTemplatesResult::with_all_items(vec![template]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        Ok(self.read_artifact(&request.uri)?.into())
    }
}

/// Serve one connection on stdin/stdout until the client leaves or a signal
/// arrives; every kernel is disposed before returning. With `sampling` (the
/// engine's bridge), the connection's client answers its cells'
/// `completion()`/`agent()` calls.
pub async fn serve_stdio(
    engine: Arc<EvalEngine>,
    sampling: Option<Arc<sampling::SamplingBridge>>,
) -> anyhow::Result<()> {
    static CONNECTIONS: AtomicU64 = AtomicU64::new(0);
    let session = format!("mcp-{}-{}", std::process::id(), CONNECTIONS.fetch_add(1, Ordering::Relaxed));
    let server = EvalServer::new(engine.clone(), session.clone()).with_sampling(sampling.clone());
    let running = server.serve(rmcp::transport::stdio()).await?;
    if let Some(sampling) = &sampling {
        sampling.register(&session, running.peer().clone());
    }
    let cancel = running.cancellation_token();
    let signals = tokio::spawn(async move {
        use tokio::signal::unix::{SignalKind, signal};
        let (Ok(mut interrupt), Ok(mut terminate)) = (signal(SignalKind::interrupt()), signal(SignalKind::terminate()))
        else {
            return;
        };
        tokio::select! {
            _ = interrupt.recv() => {}
            _ = terminate.recv() => {}
        }
        cancel.cancel();
    });
    let quit = running.waiting().await;
    signals.abort();
    if let Some(sampling) = &sampling {
        sampling.unregister(&session);
    }
    engine.dispose_owner(&session).await;
    engine.dispose_all().await;
    tracing::info!("mcp connection closed: {quit:?}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn artifact_uris_with_and_without_offset() {
        assert_eq!(parse_artifact_uri("artifact://abc"), Some(("abc", 0)));
        assert_eq!(parse_artifact_uri("artifact://abc?offset=42"), Some(("abc", 42)));
        assert_eq!(parse_artifact_uri("artifact://abc?offset=x"), None);
        assert_eq!(parse_artifact_uri("file:///etc/passwd"), None);
    }

    #[test]
    fn progress_messages_are_the_last_line() {
        let event = EvalEvent::Stdout { cell: 0, text: "one\ntwo\n\n".into() };
        assert_eq!(progress_message(&event).as_deref(), Some("two"));
        assert_eq!(progress_message(&EvalEvent::Note { text: "x".into() }), None);
    }

    #[test]
    fn every_tool_is_annotated_and_the_instructions_stay_short() {
        let engine = Arc::new(EvalEngine::new(crate::tool::EngineConfig::new(std::env::temp_dir())));
        let server = EvalServer::new(engine, "test");
        for tool in server.tools() {
            let hints = tool.annotations.as_ref().unwrap_or_else(|| panic!("{} has no annotations", tool.name));
            assert!(hints.title.is_some() && hints.read_only_hint.is_some(), "{}", tool.name);
        }
        // Clients put the instructions into every conversation: a few lines, not a manual.
        assert!(format!("{INSTRUCTIONS}\n{JS_INSTRUCTIONS}").len() < 1500);
    }

    #[test]
    fn the_schema_offers_only_available_languages() {
        let mut schema = EvalParams::json_schema();
        assert!(schema.to_string().contains("\"py\""));
        restrict_languages(&mut schema, &["js", "ts"]);
        assert!(schema.to_string().contains("cells"));
        let language = schema["$defs"]["Language"].to_string();
        assert!(!language.contains("\"py\""), "{language}");
        assert!(language.contains("\"js\"") && language.contains("\"ts\""), "{language}");
    }
}
