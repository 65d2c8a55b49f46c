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
    /// Fields of the status event (`application/x-evalkit-status`) emitted
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
     (the CLI answers them once EVALKIT_LLM_BASE_URL or EVALKIT_AGENT_COMMAND is set; a library embedder passes a \
     Bridge in EngineConfig)";

/// Calls in flight and per-cell counts.
#[derive(Default)]
pub(super) struct BridgeState {
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
