//! The host bridge: what answers a cell's `completion()`, `agent()` and
//! `tool()` calls, and the limits every call obeys.
//!
//! Cells call back into the host over the runner's own pipes (no port, no
//! secret in the kernel; see [`crate::kernel::bridge_relay`]). The embedder decides
//! who answers by putting a [`Bridge`] into the engine's configuration
//! ([`BridgeConfig`]); without one, every call fails in the cell with "no
//! bridge configured". The [`Dispatcher`] turns a raw call into a typed
//! request, enforces [`BridgeLimits`], pauses the cell's time budget while
//! the call is in flight and describes the call for the cell's status line.
//!
//! - [`openai`]: `completion()` through an OpenAI-compatible `/chat/completions`.
//! - [`command`]: `agent()` through a configured command line (`claude -p`, …).
//! - [`cli`]: the bridge `cellbox run`/`repl` build from `CELLBOX_LLM_*` / `CELLBOX_AGENT_COMMAND`.

pub mod cli;
pub mod command;
pub mod openai;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};
use tokio::sync::Semaphore;

use crate::output::artifacts::{AGENT_SCHEME, ArtifactStore};
use crate::settings::{self, EnvVar, Environment, SettingError};

pub use crate::kernel::bridge_relay::BridgeFailure as BridgeError;
use crate::kernel::bridge_relay::{BridgeCall, BridgeFuture, BridgeHandler, BridgeReply, NO_BRIDGE};

/// A boxed future, as the [`Bridge`] methods return (object-safe without a macro crate).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// `completion(prompt, *, model, system, schema, max_tokens, temperature)`.
#[derive(Debug, Clone, PartialEq)]
pub struct CompletionRequest {
    pub prompt: String,
    pub model: Option<String>,
    pub system: Option<String>,
    /// A JSON Schema the answer must match (the cell validates it again).
    pub schema: Option<Value>,
    pub max_tokens: Option<u64>,
    pub temperature: Option<f64>,
}

/// A model's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Completion {
    pub text: String,
    /// The model that answered, for the status line.
    pub model: Option<String>,
}

/// `agent(prompt, *, agent, model, label, schema, handle)`.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentRequest {
    pub prompt: String,
    /// Which kind of agent ("task" by default).
    pub agent: String,
    pub model: Option<String>,
    pub label: Option<String>,
    pub schema: Option<Value>,
    /// The cell wants a node dict with an `agent://` handle.
    pub handle: bool,
}

/// What a sub-agent produced.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentOutput {
    /// Its final text.
    pub text: String,
    /// Its full output or transcript, when it differs from the final text.
    pub output: Option<String>,
    pub model: Option<String>,
}

/// `tool(name, **args)`.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolRequest {
    pub name: String,
    pub args: Value,
}

/// Who answers bridge calls. Implemented by the embedder (library), by the
/// CLI ([`cli::CliBridge`]) and by the MCP server. Errors reach the cell as
/// a `BridgeError` exception with their message.
pub trait Bridge: Send + Sync {
    /// Ask the model once.
    fn completion(&self, request: CompletionRequest) -> BoxFuture<'_, Result<Completion, BridgeError>>;

    /// Run one sub-agent to its final answer. Default: not offered.
    fn agent(&self, request: AgentRequest) -> BoxFuture<'_, Result<AgentOutput, BridgeError>> {
        let _ = request;
        Box::pin(async {
            Err(BridgeError::new("unavailable", "this host does not run sub-agents: agent() is not available"))
        })
    }

    /// Call a host tool by name. Default: none exposed.
    fn tool(&self, request: ToolRequest) -> BoxFuture<'_, Result<Value, BridgeError>> {
        Box::pin(async move {
            Err(BridgeError::new("unavailable", format!("this host exposes no tool named {:?}", request.name)))
        })
    }

    /// [`Bridge::completion`] for a cell of engine session `session`: a bridge
    /// that serves several clients (the MCP server) answers through the one
    /// whose call runs the cell. Default: the session does not matter.
    fn completion_for(
        &self,
        session: &str,
        request: CompletionRequest,
    ) -> BoxFuture<'_, Result<Completion, BridgeError>> {
        let _ = session;
        self.completion(request)
    }

    /// [`Bridge::agent`] for a cell of engine session `session` (see [`Bridge::completion_for`]).
    fn agent_for(&self, session: &str, request: AgentRequest) -> BoxFuture<'_, Result<AgentOutput, BridgeError>> {
        let _ = session;
        self.agent(request)
    }

    /// How many calls this bridge serves at once (the engine-wide cap is the
    /// smaller of this and [`BridgeLimits::max_concurrency`]).
    fn concurrency(&self) -> usize {
        4
    }
}

/// Caps on bridge calls.
#[derive(Debug, Clone, PartialEq)]
pub struct BridgeLimits {
    /// Calls one cell may make (`CELLBOX_BRIDGE_MAX_CALLS`, default 256).
    pub max_calls_per_cell: u32,
    /// Calls served at once across the engine (`CELLBOX_BRIDGE_CONCURRENCY`, default 8).
    pub max_concurrency: usize,
    /// How long one call may take (`CELLBOX_BRIDGE_CALL_TIMEOUT` seconds, default 600).
    pub call_timeout: Duration,
    /// How deep bridges may nest: an agent started by a bridge call that runs
    /// cellbox again is one level deeper (`CELLBOX_BRIDGE_MAX_DEPTH`, default 2).
    pub max_depth: u32,
    /// This host's own depth (`CELLBOX_BRIDGE_DEPTH`, set for agent commands; 0 at the top).
    pub depth: u32,
}

impl Default for BridgeLimits {
    fn default() -> Self {
        BridgeLimits {
            max_calls_per_cell: 256,
            max_concurrency: 8,
            call_timeout: Duration::from_secs(600),
            max_depth: 2,
            depth: 0,
        }
    }
}

impl BridgeLimits {
    /// The defaults, changed by the `CELLBOX_BRIDGE_*` variables that are set; a value that is
    /// not a number is an error naming the variable.
    pub fn from_environment(env: &Environment) -> Result<Self, SettingError> {
        let number = |var: EnvVar| env.parse::<u64>(&var);
        let mut limits = BridgeLimits::default();
        if let Some(n) = number(settings::BRIDGE_MAX_CALLS)? {
            limits.max_calls_per_cell = n.min(u32::MAX as u64) as u32;
        }
        if let Some(n) = number(settings::BRIDGE_CONCURRENCY)? {
            limits.max_concurrency = (n as usize).max(1);
        }
        if let Some(n) = number(settings::BRIDGE_CALL_TIMEOUT)? {
            limits.call_timeout = Duration::from_secs(n.max(1));
        }
        if let Some(n) = number(settings::BRIDGE_MAX_DEPTH)? {
            limits.max_depth = n.min(100) as u32;
        }
        if let Some(n) = number(settings::BRIDGE_DEPTH)? {
            limits.depth = n.min(1000) as u32;
        }
        Ok(limits)
    }
}

/// The bridge part of the engine's configuration.
#[derive(Clone, Default)]
pub struct BridgeConfig {
    /// Who answers; `None`: calls fail with "no bridge configured".
    pub bridge: Option<Arc<dyn Bridge>>,
    pub limits: BridgeLimits,
}

impl BridgeConfig {
    /// A configuration answered by `bridge`, within `limits`.
    pub fn new(bridge: Arc<dyn Bridge>, limits: BridgeLimits) -> Self {
        BridgeConfig { bridge: Some(bridge), limits }
    }
}

impl std::fmt::Debug for BridgeConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BridgeConfig")
            .field("bridge", &self.bridge.as_ref().map(|_| "configured"))
            .field("limits", &self.limits)
            .finish()
    }
}

/// Answers one kernel's calls through a [`Bridge`], within the limits.
pub struct Dispatcher {
    config: BridgeConfig,
    permits: Arc<Semaphore>,
    /// Where `agent(..., handle=True)` output is kept, and for which session.
    handles: Option<(Arc<ArtifactStore>, String)>,
    /// The engine session whose kernel makes the calls (for routing).
    session: String,
}

impl Dispatcher {
    /// `permits` is shared by every kernel of an engine (the concurrency cap).
    /// The cell's budget waits while a call is in flight: the kernel says so
    /// with [`crate::kernel::ExecEvent::Budget`] events around every call.
    pub fn new(config: BridgeConfig, permits: Arc<Semaphore>) -> Self {
        Dispatcher { config, permits, handles: None, session: String::new() }
    }

    /// Name the engine session whose kernel this dispatcher serves, so a
    /// bridge serving several clients answers through the right one.
    pub fn for_session(mut self, session: &str) -> Self {
        self.session = session.to_string();
        self
    }

    /// Keep sub-agents' output asked for with `handle=True` in `store`, as
    /// `agent://<id>` (readable like `artifact://<id>`).
    pub fn with_handles(mut self, store: Arc<ArtifactStore>, session: &str) -> Self {
        self.handles = Some((store, session.to_string()));
        self
    }

    /// The engine-wide permits for `config`.
    pub fn permits_for(config: &BridgeConfig) -> Arc<Semaphore> {
        let bridge = config.bridge.as_ref().map_or(usize::MAX, |b| b.concurrency().max(1));
        Arc::new(Semaphore::new(config.limits.max_concurrency.min(bridge).max(1)))
    }
}

impl BridgeHandler for Dispatcher {
    fn call(&self, call: BridgeCall) -> BridgeFuture {
        let config = self.config.clone();
        let permits = self.permits.clone();
        let handles = self.handles.clone();
        let session = self.session.clone();
        Box::pin(async move {
            let Some(bridge) = config.bridge.clone() else {
                return Err(BridgeError::new("unavailable", NO_BRIDGE));
            };
            let limits = &config.limits;
            if call.seq > limits.max_calls_per_cell {
                return Err(BridgeError::new(
                    "limit",
                    format!(
                        "this cell reached its cap of {} bridge calls (CELLBOX_BRIDGE_MAX_CALLS); split the work \
                         over several cells",
                        limits.max_calls_per_cell
                    ),
                ));
            }
            if limits.depth >= limits.max_depth {
                return Err(BridgeError::new(
                    "limit",
                    format!(
                        "bridge calls are nested {} deep, the limit (CELLBOX_BRIDGE_MAX_DEPTH={}); an agent started \
                         by a bridge call cannot start further ones",
                        limits.depth, limits.max_depth
                    ),
                ));
            }
            let _permit = permits.acquire_owned().await.map_err(|_| BridgeError::new("cancelled", "shutting down"))?;
            let started = Instant::now();
            let op = call.op.clone();
            let work = dispatch(bridge.as_ref(), &session, call);
            let (mut value, model) = match tokio::time::timeout(limits.call_timeout, work).await {
                Ok(result) => result?,
                Err(_) => {
                    return Err(BridgeError::new(
                        "limit",
                        format!(
                            "the {op} call took longer than {}s (CELLBOX_BRIDGE_CALL_TIMEOUT) and was stopped",
                            limits.call_timeout.as_secs()
                        ),
                    ));
                }
            };
            if value.get("handle") == Some(&Value::Bool(true)) {
                store_handle(&mut value, handles.as_ref());
            }
            let mut status = Map::new();
            status.insert("op".into(), json!("bridge"));
            status.insert("call".into(), json!(op));
            if let Some(model) = model {
                status.insert("model".into(), json!(model));
            }
            status.insert("ms".into(), json!(started.elapsed().as_secs_f64() * 1000.0));
            Ok(BridgeReply { value, status: Some(status) })
        })
    }
}

/// Parse the call's arguments, run it, and shape the answer for the cell.
async fn dispatch(
    bridge: &dyn Bridge,
    session: &str,
    call: BridgeCall,
) -> Result<(Value, Option<String>), BridgeError> {
    let args = call.args;
    let text = |name: &str| args.get(name).and_then(Value::as_str).map(String::from);
    match call.op.as_str() {
        "completion" => {
            let request = CompletionRequest {
                prompt: text("prompt").ok_or_else(|| invalid("completion() needs a prompt"))?,
                model: text("model"),
                system: text("system"),
                schema: args.get("schema").filter(|s| !s.is_null()).cloned(),
                max_tokens: args.get("max_tokens").and_then(Value::as_u64),
                temperature: args.get("temperature").and_then(Value::as_f64),
            };
            let answer = bridge.completion_for(session, request).await?;
            Ok((json!({"text": answer.text, "model": answer.model}), answer.model))
        }
        "agent" => {
            let request = AgentRequest {
                prompt: text("prompt").ok_or_else(|| invalid("agent() needs a prompt"))?,
                agent: text("agent").unwrap_or_else(|| "task".into()),
                model: text("model"),
                label: text("label"),
                schema: args.get("schema").filter(|s| !s.is_null()).cloned(),
                handle: args.get("handle").and_then(Value::as_bool).unwrap_or(false),
            };
            let agent = request.agent.clone();
            let handle = request.handle;
            let answer = bridge.agent_for(session, request).await?;
            let value = json!({
                "text": answer.text,
                "output": answer.output.clone().unwrap_or_else(|| answer.text.clone()),
                "agent": agent,
                "model": answer.model,
                "handle": handle,
            });
            Ok((value, answer.model))
        }
        "tool" => {
            let request = ToolRequest {
                name: text("name").ok_or_else(|| invalid("tool() needs a name"))?,
                args: args.get("args").cloned().unwrap_or_else(|| json!({})),
            };
            let name = request.name.clone();
            Ok((bridge.tool(request).await?, Some(name)))
        }
        other => Err(invalid(&format!("unknown bridge call {other:?}; this host knows completion, agent and tool"))),
    }
}

/// Write a sub-agent's output where `agent://<id>` finds it; set `handle` and `id`.
fn store_handle(value: &mut Value, handles: Option<&(Arc<ArtifactStore>, String)>) {
    value["handle"] = Value::Null;
    let Some((store, session)) = handles else { return };
    let output = value["output"].as_str().unwrap_or_default().to_string();
    let mut writer = store.create_now(session);
    writer.write(if output.is_empty() { "\n" } else { &output });
    writer.finish();
    if writer.failure().is_none() && writer.exists() {
        value["id"] = json!(writer.id());
        value["handle"] = json!(format!("{AGENT_SCHEME}{}", writer.id()));
    }
}

fn invalid(message: &str) -> BridgeError {
    BridgeError::new("invalid", message)
}
