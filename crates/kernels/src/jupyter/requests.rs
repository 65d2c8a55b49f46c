//! [`Requests`]: the client side of a Jupyter kernel's channels, whatever
//! carries them (a gateway's websocket, or ZeroMQ sockets of a local kernel):
//! messages made and sent, each request's events handed out as an
//! [`Execution`], interrupts repeated until the cell they aim at ends, and
//! the pending requests failed once the kernel is lost.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::Outgoing;
use super::route::{Pending, Shared};
use crate::kernel::{Completeness, ExecEvent, ExecuteOptions, Execution, KernelError, execution_from};

/// Events buffered per request before the reader waits for the consumer.
const EXECUTION_BUFFER: usize = 32;
/// How often an interrupt is repeated until the cell ends (one sent before
/// the kernel took the cell is lost).
const INTERRUPT_REPEAT: Duration = Duration::from_secs(1);

/// The requests one client makes of one kernel (clones make them of the same kernel).
#[derive(Clone)]
pub(crate) struct Requests {
    pub session_id: String,
    next_id: Arc<AtomicU64>,
    /// Where messages go: the transport's writer takes them from here.
    pub outgoing: mpsc::UnboundedSender<Outgoing>,
    pub shared: Arc<Shared>,
}

/// A random-enough id for the client's session and its message ids.
pub(crate) fn new_session_id() -> String {
    use sha2::Digest;
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos();
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut random = [0u8; 16];
    let _ = getrandom::fill(&mut random);
    let seed = format!("{}-{nanos}-{}-{random:?}", std::process::id(), COUNTER.fetch_add(1, Ordering::Relaxed));
    let digest = sha2::Sha256::digest(seed.as_bytes());
    digest.iter().take(16).map(|b| format!("{b:02x}")).collect()
}

impl Requests {
    pub fn new(session_id: String, outgoing: mpsc::UnboundedSender<Outgoing>, shared: Arc<Shared>) -> Requests {
        Requests { session_id, next_id: Arc::new(AtomicU64::new(1)), outgoing, shared }
    }

    /// A new message of `msg_type` for `channel`, and its id.
    pub fn message(&self, msg_type: &str, channel: &str, content: Value) -> (String, Value) {
        let msg_id = format!("{}_{}", self.session_id, self.next_id.fetch_add(1, Ordering::Relaxed));
        let message = json!({
            "header": {
                "msg_id": msg_id, "msg_type": msg_type, "session": self.session_id,
                "username": "cellbox", "version": "5.3",
            },
            "parent_header": {}, "metadata": {}, "content": content, "channel": channel, "buffers": [],
        });
        (msg_id, message)
    }

    /// Send `message` and hand out the events of the request it makes.
    pub fn send(&self, msg_id: String, message: Value) -> Result<Execution, KernelError> {
        self.send_as(msg_id, message, false)
    }

    /// [`Requests::send`]; an `internal` request (cellbox's own, around a cell)
    /// is never the one an interrupt is aimed at.
    fn send_as(&self, msg_id: String, message: Value, internal: bool) -> Result<Execution, KernelError> {
        let (sender, events) = mpsc::channel(EXECUTION_BUFFER);
        {
            let mut routes = self.shared.routes.lock().unwrap();
            if let Some(error) = &routes.dead {
                return Err(error.clone());
            }
            routes.pending.insert(
                msg_id.clone(),
                Pending {
                    sender,
                    started: false,
                    idle: false,
                    reply: None,
                    stdin_requested: false,
                    stdin_replies: 0,
                    rate_noted: false,
                    interrupted: false,
                    internal,
                },
            );
        }
        if self.outgoing.send(Outgoing::Message(message)).is_err() {
            self.shared.routes.lock().unwrap().pending.remove(&msg_id);
            return Err(self.dead_error());
        }
        Ok(execution_from(msg_id, events))
    }

    fn dead_error(&self) -> KernelError {
        self.shared.routes.lock().unwrap().dead.clone().unwrap_or(KernelError::Closed)
    }

    /// Send an `execute_request`; its events arrive on the returned [`Execution`].
    pub fn execute_with(&self, code: &str, options: ExecuteOptions) -> Result<Execution, KernelError> {
        let content = json!({
            "code": code, "silent": options.silent, "store_history": !options.internal,
            "user_expressions": {}, "allow_stdin": true, "stop_on_error": true,
        });
        let (msg_id, message) = self.message("execute_request", "shell", content);
        self.send_as(msg_id, message, options.internal)
    }

    /// Ask the kernel whether `code` is a whole cell yet (`is_complete_request`).
    pub async fn check_complete(&self, code: &str) -> Result<Completeness, KernelError> {
        let (msg_id, message) = self.message("is_complete_request", "shell", json!({ "code": code }));
        let mut execution = self.send(msg_id, message)?;
        while let Some(item) = execution.next().await {
            if let ExecEvent::Completeness(answer) = item? {
                return Ok(answer);
            }
        }
        Err(KernelError::Closed)
    }

    /// Whether the kernel can still run cells.
    pub fn is_alive(&self) -> bool {
        self.shared.routes.lock().unwrap().dead.is_none()
    }

    /// Why the kernel stopped, once it has.
    pub fn death_reason(&self) -> Option<String> {
        match self.shared.routes.lock().unwrap().dead.as_ref()? {
            KernelError::Died { exit, .. } => Some(exit.clone()),
            other => Some(other.to_string()),
        }
    }

    /// No more requests: every pending one ends with [`KernelError::Closed`].
    pub fn close(&self) {
        let pending = {
            let mut routes = self.shared.routes.lock().unwrap();
            routes.dead.get_or_insert(KernelError::Closed);
            std::mem::take(&mut routes.pending)
        };
        self.shared.progress.notify_waiters();
        for (_, request) in pending {
            let _ = request.sender.try_send(Err(KernelError::Closed));
        }
        if let Some(bridge) = &self.shared.bridge {
            bridge.cancel_all("the kernel was shut down");
        }
    }

    /// Interrupt the running cell: once the kernel has taken it (an interrupt
    /// sent earlier is lost), call `interrupt`, and again every second until it ends.
    pub fn interrupt_with<F, Fut>(&self, interrupt: F) -> Result<(), KernelError>
    where
        F: Fn() -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send,
    {
        if !self.is_alive() {
            return Err(KernelError::Closed);
        }
        let target = {
            let routes = self.shared.routes.lock().unwrap();
            routes.pending.iter().find(|(_, pending)| !pending.internal).map(|(id, _)| id.clone())
        };
        let Some(target) = target else {
            return Ok(());
        };
        // Host work done for the cell stops with it; its waiting callers get an answer.
        if let Some(bridge) = &self.shared.bridge {
            bridge.cancel_all("the cell was interrupted");
        }
        let shared = self.shared.clone();
        tokio::spawn(async move {
            let state = |shared: &Shared| {
                let routes = shared.routes.lock().unwrap();
                if routes.dead.is_some() {
                    return None;
                }
                routes.pending.get(&target).map(|pending| pending.started)
            };
            // Each wait is armed before the state is read, so no change slips in between.
            loop {
                let progress = shared.progress.notified();
                tokio::pin!(progress);
                progress.as_mut().enable();
                match state(&shared) {
                    None => return,
                    Some(true) => break,
                    Some(false) => progress.await,
                }
            }
            loop {
                if let Some(pending) = shared.routes.lock().unwrap().pending.get_mut(&target) {
                    pending.interrupted = true;
                }
                interrupt().await;
                let deadline = tokio::time::Instant::now() + INTERRUPT_REPEAT;
                loop {
                    let progress = shared.progress.notified();
                    tokio::pin!(progress);
                    progress.as_mut().enable();
                    if state(&shared).is_none() {
                        return;
                    }
                    if tokio::time::timeout_at(deadline, progress).await.is_err() {
                        break;
                    }
                }
            }
        });
        Ok(())
    }
}

/// The kernel cannot run cells any more: every pending request ends with `error`.
pub(crate) async fn fail_pending(shared: &Shared, error: KernelError) {
    if let Some(bridge) = &shared.bridge {
        bridge.cancel_all("the kernel's connection ended");
    }
    let pending = {
        let mut routes = shared.routes.lock().unwrap();
        let error = routes.dead.get_or_insert(error).clone();
        std::mem::take(&mut routes.pending).into_values().map(move |p| (p.sender, error.clone())).collect::<Vec<_>>()
    };
    shared.progress.notify_waiters();
    for (sender, error) in pending {
        let _ = sender.send(Err(error)).await;
    }
}
