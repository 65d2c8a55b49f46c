//! The kernel's side of host-bridge calls: a cell asks the host for work
//! (`bridge_call` on the frames pipe), the host answers on the request pipe
//! (`bridge_result`).
//!
//! The kernel only moves calls: it hands each to the [`BridgeHandler`] given
//! in [`super::KernelOptions`] on a task of its own (so many can be in flight
//! at once), writes the answer back, and cancels a cell's calls when the cell
//! ends or is interrupted. What a call does is decided above this layer (see
//! `crate::bridge`).

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde_json::Value;

/// One call a cell made.
#[derive(Debug, Clone, PartialEq)]
pub struct BridgeCall {
    /// The call's id on the wire.
    pub id: String,
    /// The request (cell) that made it.
    pub cell: String,
    /// `completion`, `agent`, `tool`, …
    pub op: String,
    pub args: Value,
    /// 1 for the cell's first call, 2 for its second, … (for per-cell caps).
    pub seq: u32,
}

/// A successful answer, with what the cell's status line shows about it.
#[derive(Debug, Clone, PartialEq)]
pub struct BridgeReply {
    /// What the cell's call returns.
    pub value: Value,
    /// Fields of the status event (`application/x-cellbox-status`) emitted
    /// when the call ends, e.g. `{"op": "bridge", "call": "completion", "model": …}`.
    pub status: Option<serde_json::Map<String, Value>>,
}

/// A failed call: the cell raises an exception with `message`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct BridgeFailure {
    /// A short word: `unavailable`, `limit`, `cancelled`, `invalid`, `host`.
    pub kind: String,
    pub message: String,
}

impl BridgeFailure {
    pub fn new(kind: impl Into<String>, message: impl Into<String>) -> Self {
        BridgeFailure { kind: kind.into(), message: message.into() }
    }
}

/// The future a handler returns for one call.
pub type BridgeFuture = Pin<Box<dyn Future<Output = Result<BridgeReply, BridgeFailure>> + Send>>;

/// Answers the bridge calls of one kernel's cells.
pub trait BridgeHandler: Send + Sync {
    /// Do the work of `call`. Dropping the future cancels it.
    fn call(&self, call: BridgeCall) -> BridgeFuture;
}

/// A handler shared by a kernel's options (cloneable, printable).
#[derive(Clone)]
pub struct BridgeHook(pub Arc<dyn BridgeHandler>);

impl std::fmt::Debug for BridgeHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BridgeHook")
    }
}

/// Suspends or resumes a cell's time budget around one bridge call (see
/// [`super::ExecEvent::Budget`]). Pauses nest: the budget runs again when
/// every paused call has resumed, with a fresh window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BudgetControl {
    /// The host took the call with this id; the cell waits for it.
    Pause { call: String },
    /// The call with this id was answered (or cancelled).
    Resume { call: String },
}

impl BudgetControl {
    /// The call this is about.
    pub fn call(&self) -> &str {
        match self {
            BudgetControl::Pause { call } | BudgetControl::Resume { call } => call,
        }
    }

    /// The status event it is shown as: `{"op": "timeout", "action": "pause"|"resume", "call": id}`.
    pub fn status_fields(&self) -> serde_json::Map<String, Value> {
        let action = match self {
            BudgetControl::Pause { .. } => "pause",
            BudgetControl::Resume { .. } => "resume",
        };
        let mut fields = serde_json::Map::new();
        fields.insert("op".into(), Value::String(BUDGET_STATUS_OP.into()));
        fields.insert("action".into(), Value::String(action.into()));
        fields.insert("call".into(), Value::String(self.call().into()));
        fields
    }
}

/// The `op` of the status events that pause and resume a cell's budget;
/// renderers leave them out (they say nothing a reader needs).
pub const BUDGET_STATUS_OP: &str = "timeout";

/// What the message of a call made without any handler says.
pub const NO_BRIDGE: &str = "no bridge configured: this host does not answer completion()/agent()/tool() calls \
     (the CLI answers them once CELLBOX_LLM_BASE_URL or CELLBOX_AGENT_COMMAND is set; a library embedder passes a \
     Bridge in EngineConfig)";

/// Calls in flight and per-cell counts.
#[derive(Default)]
pub(crate) struct BridgeState {
    /// call id → (cell id, the task doing it).
    pub inflight: HashMap<String, (String, tokio::task::AbortHandle)>,
    /// cell id → calls made so far.
    pub counts: HashMap<String, u32>,
}

impl BridgeState {
    /// Stop the calls of `cell` (every cell when `None`); return their
    /// (call id, cell id) pairs, to answer and resume.
    pub fn cancel(&mut self, cell: Option<&str>) -> Vec<(String, String)> {
        let ids: Vec<String> = self
            .inflight
            .iter()
            .filter(|(_, (owner, _))| cell.is_none_or(|cell| cell == owner))
            .map(|(id, _)| id.clone())
            .collect();
        let mut stopped = Vec::with_capacity(ids.len());
        for id in ids {
            if let Some((owner, task)) = self.inflight.remove(&id) {
                task.abort();
                stopped.push((id, owner));
            }
        }
        stopped
    }
}

/// What each backend's kernel provides so that [`dispatch`] can run its calls:
/// process kernels answer on the request pipe, gateway kernels in an
/// `input_reply`; both share everything else (counts, cancellation, budget
/// and status events), so the two behave alike.
pub(crate) trait CallSink: Send + Sync + 'static {
    /// The kernel's calls in flight and per-cell counts.
    fn calls(&self) -> &std::sync::Mutex<BridgeState>;
    /// Deliver `event` (a status display or a budget event) to the running cell `cell`.
    fn cell_event(&self, cell: &str, event: super::ExecEvent) -> impl Future<Output = ()> + Send;
    /// Send `answer` to the kernel, where the waiting caller wakes up.
    fn answer(&self, answer: crate::protocol::BridgeResult) -> impl Future<Output = ()> + Send;
}

/// The display event a status event is delivered as.
pub(crate) fn status_display(fields: serde_json::Map<String, Value>) -> super::ExecEvent {
    let mut bundle = serde_json::Map::new();
    let op = fields.get("op").and_then(Value::as_str).unwrap_or("bridge").to_string();
    bundle.insert(crate::protocol::STATUS_MIME.into(), Value::Object(fields));
    bundle.insert("text/plain".into(), Value::String(format!("[{op}]")));
    super::ExecEvent::Display { bundle, metadata: serde_json::Map::new() }
}

/// Answer from a task of its own (callers may hold locks the answer needs);
/// with `resume`, first resume the budget of the cell that waited for it.
fn answer_later<S: CallSink>(sink: &Arc<S>, answer: crate::protocol::BridgeResult, resume: Option<String>) {
    let sink = sink.clone();
    if let Ok(runtime) = tokio::runtime::Handle::try_current() {
        runtime.spawn(async move {
            if let Some(cell) = resume {
                let control = BudgetControl::Resume { call: answer.id.clone() };
                sink.cell_event(&cell, super::ExecEvent::Budget(control)).await;
            }
            sink.answer(answer).await
        });
    }
}

/// Hand a cell's call to `hook` on a task of its own, which answers it and
/// emits the call's status event. `cell` is `None` when the call came while
/// no cell of its runs (answered "cancelled" at once); without a hook the
/// call fails with [`NO_BRIDGE`].
pub(crate) fn dispatch<S: CallSink>(
    sink: &Arc<S>,
    hook: Option<BridgeHook>,
    id: String,
    cell: Option<String>,
    op: String,
    args: Value,
) {
    use crate::protocol::BridgeResult;
    let Some(cell) = cell else {
        let message = "bridge calls work only while their cell runs (this one came after its cell had finished)";
        return answer_later(sink, BridgeResult::err(id, "cancelled", message), None);
    };
    let Some(hook) = hook else {
        return answer_later(sink, BridgeResult::err(id, "unavailable", NO_BRIDGE), None);
    };
    let mut state = sink.calls().lock().unwrap();
    let seq = {
        let count = state.counts.entry(cell.clone()).or_insert(0);
        *count += 1;
        *count
    };
    let call = BridgeCall { id: id.clone(), cell: cell.clone(), op, args, seq };
    let task_sink = sink.clone();
    let task_id = id.clone();
    let task_cell = cell.clone();
    // Registered before the task can finish: the state lock is held across the spawn.
    let task = tokio::spawn(async move {
        // The cell waits for the host from here on: so does its budget.
        let pause = BudgetControl::Pause { call: task_id.clone() };
        task_sink.cell_event(&task_cell, super::ExecEvent::Budget(pause)).await;
        let outcome = hook.0.call(call).await;
        if task_sink.calls().lock().unwrap().inflight.remove(&task_id).is_none() {
            return; // cancelled meanwhile, and answered (and resumed) then
        }
        let answer = match outcome {
            Ok(reply) => {
                if let Some(status) = reply.status {
                    task_sink.cell_event(&task_cell, status_display(status)).await;
                }
                BridgeResult::ok(task_id.clone(), reply.value)
            }
            Err(failure) => BridgeResult::err(task_id.clone(), failure.kind, failure.message),
        };
        let resume = BudgetControl::Resume { call: task_id };
        task_sink.cell_event(&task_cell, super::ExecEvent::Budget(resume)).await;
        task_sink.answer(answer).await;
    });
    state.inflight.insert(id, (cell, task.abort_handle()));
}

/// Stop the calls of `cell` (every cell when `None`) and tell their callers
/// why; their cells' budgets resume (a cell that survives an interrupt must
/// not keep a paused budget).
pub(crate) fn cancel<S: CallSink>(sink: &Arc<S>, cell: Option<&str>, why: &str) {
    let stopped = sink.calls().lock().unwrap().cancel(cell);
    for (id, owner) in stopped {
        let message = format!("the bridge call was cancelled: {why}");
        answer_later(sink, crate::protocol::BridgeResult::err(id, "cancelled", message), Some(owner));
    }
}
