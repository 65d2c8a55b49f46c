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
//! `eval_fork` (copy a session's kernel into a new session), `eval_undo`
//! (back to a checkpoint), `eval_snapshot`/`eval_restore` (variables to a
//! file and back; all in [`branches`]),
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
    Resource, ResourceContents, ResourceTemplate, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt};
use serde_json::Value;
use tokio::sync::watch;

use crate::output::artifacts::SCHEME;
use crate::runtime::Runtime;
use crate::tool::{CallContext, CallOutcome, EvalEngine, EvalEvent, EvalParams, Language};

mod branches;
mod rounds;
mod runs;
pub mod sampling;
mod tasks;
mod tools;
pub mod versions;

pub use tools::{EVAL_DESCRIPTION, INSTRUCTIONS, JS_DESCRIPTION, JS_INSTRUCTIONS};

/// Largest piece of an artifact one `resources/read` returns; larger artifacts
/// end with a line naming the URI of the next page.
pub const RESOURCE_PAGE_BYTES: usize = 1024 * 1024;
/// Progress notifications are sent at most this often while a cell runs.
const PROGRESS_INTERVAL: Duration = Duration::from_millis(250);
/// While a cell is silent, a progress notification still goes out this often,
/// so clients that extend their timeout on progress keep waiting.
pub const PROGRESS_HEARTBEAT: Duration = Duration::from_secs(5);

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
    /// Answers the cells' completion()/agent() through the calling client.
    sampling: Option<Arc<sampling::SamplingBridge>>,
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
        }
    }

    /// Answer this connection's cells' completion()/agent() through `sampling`.
    pub fn with_sampling(mut self, sampling: Option<Arc<sampling::SamplingBridge>>) -> Self {
        self.sampling = sampling;
        self
    }

    fn offers(&self, runtime: Runtime) -> bool {
        self.languages.iter().any(|language| language.runtime() == runtime)
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
                // Written as the session's kernels could write it: inside the workspace (or an
                // --allow-write folder), never through a symlink, confined like them.
                let target = self.engine.tool_path("path", &path).map_err(|error| error.to_string());
                let written = target.and_then(|target| {
                    let files = self.engine.host_files()?;
                    files
                        .replace(&target, notebook.to_json_string().as_bytes())
                        .map(|()| target)
                        .map_err(|error| format!("cannot save the notebook: {error}"))
                });
                match written {
                    Ok(target) => {
                        let text = format!("Saved {} cell(s) to {}", notebook.cells.len(), target.display());
                        let exported = output::ExportOutput {
                            text: text.clone(),
                            path: Some(target.display().to_string()),
                            cells: Some(notebook.cells.len()),
                        };
                        output::text_result(text, &exported, false)
                    }
                    Err(error) => output::error_result(error),
                }
            }
        }
    }

    async fn call_eval(&self, mut arguments: Value, context: RequestContext<RoleServer>) -> CallToolResult {
        let name = match runs::take_session(&mut arguments) {
            Ok(name) => name,
            Err(error) => return output::error_result(error.to_string()),
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
    /// The client making this `eval` call answers its cells' completion()/agent().
    fn answer_sampling_through(&self, arguments: &Value, context: &RequestContext<RoleServer>) {
        let Some(sampling) = &self.sampling else { return };
        // A bad name is refused by the call itself; nothing to route then.
        let Ok(name) = runs::session_of(arguments) else { return };
        sampling.answer_through(&self.session_context(&name).session, context.peer.clone(), context.id.clone());
    }

    /// A tool call, answered as the newest protocol answers it ([`output::for_version`] adapts it).
    async fn dispatch_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let mut arguments = Value::Object(request.arguments.clone().unwrap_or_default());
        if request.name == "eval" {
            self.answer_sampling_through(&arguments, &context);
        }
        match request.name.as_ref() {
            "eval" if Self::runs_as_task(&arguments, &context) => Ok(self.call_eval_task(arguments)),
            "eval" if self.uses_rounds(&context) => Ok(self.call_eval_rounds(request, arguments, &context).await),
            "eval" => Ok(self.call_eval(arguments, context).await.into()),
            "eval_wait" => Ok(self.call_wait(arguments, context).await.into()),
            "eval_cancel" => Ok(self.call_cancel(arguments).await.into()),
            "eval_sessions" => Ok(self.call_sessions().into()),
            "eval_fork" => Ok(self.call_fork(arguments).await.into()),
            "eval_undo" => Ok(self.call_undo(arguments).await.into()),
            "eval_snapshot" => Ok(self.call_snapshot(arguments, false).await.into()),
            "eval_restore" => Ok(self.call_snapshot(arguments, true).await.into()),
            "eval_reset" => {
                let name = match runs::take_session(&mut arguments) {
                    Ok(name) => name,
                    Err(error) => return Ok(output::error_result(error.to_string()).into()),
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
                     \"eval_sessions\", \"eval_fork\", \"eval_undo\", \"eval_snapshot\", \"eval_restore\" or \
                     \"eval_export_notebook\""
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
    // With a state folder the sessions' names stay the same from one start to the next, so each is found again.
    let session = if engine.keeps_sessions() {
        "mcp".to_string()
    } else {
        format!("mcp-{}-{}", std::process::id(), CONNECTIONS.fetch_add(1, Ordering::Relaxed))
    };
    let server = EvalServer::new(engine.clone(), session.clone()).with_sampling(sampling.clone());
    // Pipes (as MCP clients start servers) are read and written without the
    // blocking pool's thread hand-off per message; anything else falls back to it.
    let running = server.serve(rmcp::transport::stdio_pipes()).await?;
    if let Some(sampling) = &sampling {
        sampling.register(&session, running.peer().clone());
    }
    let cancel = running.cancellation_token();
    let signals = tokio::spawn(async move {
        let Ok(mut signals) = crate::stop_signals::StopSignals::listen() else { return };
        signals.next().await;
        cancel.cancel();
    });
    let quit = running.waiting().await;
    signals.abort();
    if let Some(sampling) = &sampling {
        sampling.unregister(&session);
    }
    if engine.keeps_sessions() {
        let count = engine.hibernate_all("cellbox mcp stopped").await;
        tracing::info!("hibernated {count} session kernel(s) for the next start");
    }
    engine.dispose_owner(&session).await;
    engine.dispose_all().await;
    tracing::info!("mcp connection closed: {quit:?}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::tools::restrict_languages;
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
