//! An SDK connection held by Rust code in the same process: the typed calls of
//! [`crate::wire`] in, their outputs and answers out, with no bytes in between.
//!
//! `cellbox serve`'s E2B-compatible API keeps one per E2B sandbox: each of its
//! routes is one SDK call, so a file, a command or a cell goes through exactly
//! the code (and the sandbox boundary) a `from cellbox import Sandbox` call goes
//! through.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::Value;
use tokio::sync::mpsc;

use super::wire::{self, Answer, Call, ErrorCode, Failure, Method, Notification, Output, Request, Response};
use super::{Ending, Outbox};
use crate::tool::EvalEngine;

/// Request lines queued ahead of the engine (a caller waits beyond that).
const LINES_AHEAD: usize = 64;

/// One in-process SDK connection; the engine's kernels stop when it is closed
/// or dropped.
pub struct Link {
    input: mpsc::Sender<std::io::Result<String>>,
    routes: Arc<Mutex<Routes>>,
    next: AtomicI64,
    served: Mutex<Option<tokio::task::JoinHandle<std::io::Result<Ending>>>>,
}

#[derive(Default)]
struct Routes {
    calls: HashMap<i64, mpsc::UnboundedSender<Value>>,
    /// The connection's output has ended: nothing more will come.
    ended: bool,
}

/// What a call in progress sends back: outputs, then its answer (the last).
#[derive(Debug)]
pub enum Event {
    Output(Output),
    Answer(Result<Answer, Failure>),
}

/// A call sent and not yet answered. Dropping it stops listening (the call
/// goes on); [`Pending::cancel`] asks the engine to stop it.
pub struct Pending {
    id: i64,
    method: Method,
    messages: mpsc::UnboundedReceiver<Value>,
    routes: Arc<Mutex<Routes>>,
    input: mpsc::Sender<std::io::Result<String>>,
    answered: bool,
}

impl Link {
    /// Serve an SDK connection on `engine`, its files and commands rooted at `root`.
    pub fn open(engine: Arc<EvalEngine>, root: PathBuf) -> Link {
        let (input, lines) = mpsc::channel(LINES_AHEAD);
        let routes = Arc::new(Mutex::new(Routes::default()));
        let deliver = routes.clone();
        let outbox = Outbox::new(move |message: Value| {
            let mut routes = deliver.lock().unwrap();
            if message.is_null() {
                routes.ended = true;
                routes.calls.clear();
                return false;
            }
            match call_of(&message).and_then(|call| routes.calls.get(&call)) {
                Some(caller) => caller.send(message).is_ok(),
                None => true,
            }
        });
        let served = tokio::spawn(super::serve_lines(engine, root, None, lines, outbox));
        Link { input, routes, next: AtomicI64::new(1), served: Mutex::new(Some(served)) }
    }

    /// Send `call`; its outputs and answer come through the [`Pending`].
    pub async fn start(&self, call: Call) -> Result<Pending, Failure> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let method = call.method();
        let (sender, messages) = mpsc::unbounded_channel();
        {
            let mut routes = self.routes.lock().unwrap();
            if routes.ended {
                return Err(gone());
            }
            routes.calls.insert(id, sender);
        }
        let line = Request { id: Some(id.into()), call }.to_value().to_string();
        let pending =
            Pending { id, method, messages, routes: self.routes.clone(), input: self.input.clone(), answered: false };
        self.input.send(Ok(line)).await.map_err(|_| gone())?;
        Ok(pending)
    }

    /// Send `call` and wait for its answer (its outputs, if any, are dropped).
    pub async fn call(&self, call: Call) -> Result<Answer, Failure> {
        let mut pending = self.start(call).await?;
        loop {
            match pending.next().await {
                Some(Event::Answer(answer)) => return answer,
                Some(Event::Output(_)) => {}
                None => return Err(gone()),
            }
        }
    }

    /// Stop the connection: calls in progress end, then every kernel.
    pub async fn close(&self) {
        let served = self.served.lock().unwrap().take();
        if let Some(served) = served {
            let _ = self.call(Call::Shutdown(wire::NoParams)).await;
            let _ = served.await;
        }
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        // The input's end ends the connection, which stops its kernels.
        if let Some(served) = self.served.lock().unwrap().take() {
            drop(served);
        }
    }
}

impl Pending {
    /// The next output, or the answer; `None` once the connection has ended.
    pub async fn next(&mut self) -> Option<Event> {
        if self.answered {
            return None;
        }
        let message = self.messages.recv().await?;
        if message.get("method").is_some() {
            return match Notification::parse(message) {
                Ok(Notification::Output(params)) => Some(Event::Output(params.output)),
                Err(error) => Some(Event::Answer(Err(Failure::new(ErrorCode::Failed, error)))),
            };
        }
        self.answered = true;
        let answer = match Response::parse(self.method, message) {
            Ok(response) => response.outcome,
            Err(error) => Err(Failure::new(ErrorCode::Failed, error)),
        };
        Some(Event::Answer(answer))
    }

    /// Ask the engine to stop this call (a cell is interrupted); its answer still comes.
    pub async fn cancel(&self) {
        let call = Call::Cancel(wire::Cancel { call: self.id.into() });
        let line = Request { id: None, call }.to_value().to_string();
        let _ = self.input.send(Ok(line)).await;
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        self.routes.lock().unwrap().calls.remove(&self.id);
    }
}

fn gone() -> Failure {
    Failure::new(ErrorCode::Failed, "the sandbox has stopped")
}

/// The request id a message belongs to: an answer's `id`, an `output` notification's `call`.
pub(crate) fn call_of(message: &Value) -> Option<i64> {
    match message.get("method") {
        Some(_) => message.get("params")?.get("call")?.as_i64(),
        None => message.get("id")?.as_i64(),
    }
}
