//! The engine inside the SDK's own Python process (the wheel's `cellbox._engine`
//! extension): the same JSON-RPC lines as `cellbox sdk-server` speaks, handed
//! over in memory instead of through pipes.
//!
//! A caller that waits for its own call ([`InProcess::call`]) gets that call's
//! messages straight from the engine's task: no pipe, no thread in between,
//! which is what brings a warm `run_code` close to the library's own call
//! (docs/benchmarks.md). A `run_code` goes further: its caller runs it on its
//! own thread, so its request reaches the kernel without waking the engine's
//! thread first. Every other message (those of calls whose outputs stream to
//! callbacks) is read by one reader ([`InProcess::receive`]).
//!
//! The engine runs on a thread of its own, with its own async runtime, which
//! drives every kernel's pipes (a caller's `run_code` included). It is
//! stopped by [`InProcess::close`] or when dropped; in a process forked from
//! the one that started it (where that thread does not exist) it is never
//! touched again.

use std::collections::{BTreeMap, HashMap};
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, TryRecvError, channel};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::runtime::Handle;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::link::call_of;
use super::wire::{Call, RawRequest};
use super::{CallerRun, EngineArgs, Outbox, Server};
use crate::tool::EvalEngine;

/// How long closing waits for the engine to stop its kernels before it lets the runtime go.
const CLOSE_GRACE: Duration = Duration::from_secs(10);

/// How long a waiting caller keeps its CPU awake (yielding it to any thread that
/// wants it) before it sleeps. A warm `1+1` is answered within this; a caller
/// that slept instead waits for its CPU to wake from idle, which on a virtual
/// machine was most of what a warm call cost over the library's own
/// (docs/benchmarks.md). A longer call costs this much CPU once.
const AWAKE_FOR: Duration = Duration::from_micros(500);

/// An SDK engine running in this process.
pub struct InProcess {
    /// The process that started the engine: only it may touch the engine's state
    /// when it ends. A forked child leaves it alone (see [`Drop`]).
    owner: u32,
    /// Present until dropped.
    shared: Option<Shared>,
}

/// What the caller's side and the engine's thread share.
struct Shared {
    input: Mutex<Option<mpsc::UnboundedSender<std::io::Result<String>>>>,
    routes: Arc<Routes>,
    /// The messages no caller waits for, in order; `null` ends them.
    general: Mutex<Receiver<Value>>,
    /// Ends (or gets a message) when the engine's thread has stopped its kernels and its runtime.
    done: Mutex<Receiver<()>>,
    /// Why the engine stopped by itself (its idle timeout), once it has.
    stopped: Arc<Mutex<Option<String>>>,
    /// The engine's runtime, in which a caller runs its own `run_code`.
    runtime: Handle,
    /// The connection's server while it serves: the callers' `run_code` calls run with it.
    server: Arc<Mutex<Option<Arc<Server>>>>,
}

/// Where each message of the engine goes: to the caller waiting for its call, else to the reader.
struct Routes {
    waiting: Mutex<Waiting>,
    general: Sender<Value>,
}

#[derive(Default)]
struct Waiting {
    calls: HashMap<i64, Sender<Value>>,
    /// The engine's output has ended: nothing more will come.
    ended: bool,
}

impl Routes {
    fn deliver(&self, message: Value) -> bool {
        let mut waiting = self.waiting.lock().unwrap();
        if message.is_null() {
            waiting.ended = true;
            waiting.calls.clear(); // each waiting caller sees its channel end
        } else if let Some(caller) = call_of(&message).and_then(|call| waiting.calls.get(&call)) {
            return caller.send(message).is_ok();
        }
        drop(waiting);
        self.general.send(message).is_ok()
    }
}

/// How far a waited-for call has come.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// Its answer has come (the last of its lines).
    Answered,
    /// Not yet, within the time given.
    Pending,
    /// The engine stopped before answering it.
    Ended,
}

/// A call whose messages come to its caller; it stops waiting when dropped.
pub struct Waiter {
    call: i64,
    messages: Receiver<Value>,
    routes: Arc<Routes>,
    /// When the call was sent: the caller stays awake until [`AWAKE_FOR`] after it.
    sent: Instant,
    /// A `run_code` the caller runs itself, until it has answered.
    own: Option<OwnRun>,
}

/// A `run_code` run on its caller's thread, in the engine's runtime.
struct OwnRun {
    run: CallerRun,
    runtime: Handle,
    /// Where its answer goes if its caller stops waiting: to the reader, as the engine's would.
    out: Outbox,
    /// Cancelled when the engine stops: the call's answer is then not given (see `serve_lines`).
    stopping: CancellationToken,
}

/// Wakes the thread that runs its own call when that call can go on.
struct Wakeup {
    woken: AtomicBool,
    thread: std::thread::Thread,
}

impl Wake for Wakeup {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.store(true, Ordering::Release);
        self.thread.unpark();
    }
}

impl Waiter {
    /// Add the call's messages to `lines` (one line of JSON each) until its
    /// answer, for at most `limit` (once awake, see [`AWAKE_FOR`]).
    pub fn collect(&mut self, lines: &mut Vec<String>, limit: Duration) -> Progress {
        if self.own.is_some() {
            return self.run_own(lines, limit);
        }
        loop {
            let next = if self.sent.elapsed() < AWAKE_FOR {
                match self.messages.try_recv() {
                    Ok(message) => Ok(message),
                    Err(TryRecvError::Empty) => {
                        std::thread::yield_now();
                        continue;
                    }
                    Err(TryRecvError::Disconnected) => Err(RecvTimeoutError::Disconnected),
                }
            } else {
                self.messages.recv_timeout(limit)
            };
            match next {
                Ok(message) => {
                    let answer = message.get("method").is_none();
                    lines.push(message.to_string());
                    if answer {
                        return Progress::Answered;
                    }
                }
                Err(RecvTimeoutError::Timeout) => return Progress::Pending,
                Err(RecvTimeoutError::Disconnected) => return Progress::Ended,
            }
        }
    }

    /// [`Waiter::collect`] for a call its caller runs: polled on this thread
    /// (the engine's thread drives the kernel's pipes and wakes this one),
    /// awake as long as a caller waiting for a message would be. Once the
    /// engine stops, the call is dropped unpolled and its caller waits, as
    /// others do, for the end of the engine's messages (which comes after
    /// why it stopped is known).
    fn run_own(&mut self, lines: &mut Vec<String>, limit: Duration) -> Progress {
        let until = Instant::now() + limit;
        let own = self.own.as_mut().expect("a call run by its caller");
        let _runtime = own.runtime.enter();
        let wakeup = Arc::new(Wakeup { woken: AtomicBool::new(false), thread: std::thread::current() });
        let waker = Waker::from(wakeup.clone());
        let mut context = Context::from_waker(&waker);
        let answer = loop {
            if own.stopping.is_cancelled() {
                // Not polled again: its runtime may be gone (see `run_for_caller`).
                break None;
            }
            let polled = match std::panic::catch_unwind(AssertUnwindSafe(|| own.run.as_mut().poll(&mut context))) {
                Ok(polled) => polled,
                Err(panic) => {
                    self.own = None; // not to be polled again
                    std::panic::resume_unwind(panic)
                }
            };
            // Its outputs came through the engine's router while it ran, before its answer.
            while let Ok(message) = self.messages.try_recv() {
                lines.push(message.to_string());
            }
            if let Poll::Ready(answer) = polled {
                break answer.filter(|_| !own.stopping.is_cancelled());
            }
            while !wakeup.woken.swap(false, Ordering::Acquire) {
                if self.sent.elapsed() < AWAKE_FOR {
                    std::thread::yield_now();
                    continue;
                }
                let now = Instant::now();
                if now >= until {
                    return Progress::Pending;
                }
                std::thread::park_timeout(until - now);
            }
        };
        self.own = None;
        match answer {
            Some(answer) => {
                lines.push(answer.to_string());
                Progress::Answered
            }
            // Stopping ended it: no answer is given (see `serve_lines`).
            None => self.collect(lines, until.saturating_duration_since(Instant::now())),
        }
    }
}

impl Drop for Waiter {
    fn drop(&mut self) {
        self.routes.waiting.lock().unwrap().calls.remove(&self.call);
        // A caller that stopped waiting (Ctrl-C) leaves its call running, as
        // the engine's own calls are left: the engine's thread finishes it,
        // and its answer goes to the reader like theirs.
        if let Some(OwnRun { run, runtime, out, .. }) = self.own.take() {
            runtime.spawn(async move {
                if let Some(answer) = run.await {
                    out.send(answer);
                }
            });
        }
    }
}

impl InProcess {
    /// Start an engine configured by `flags` (those of `cellbox sdk-server`), with
    /// `env` set in every kernel it starts; a bad flag or working folder is an error.
    pub fn start(flags: &[String], env: BTreeMap<String, String>) -> Result<Self, String> {
        // The environment is read and checked first: a bad variable is an error naming it, before
        // the flags bound to the variables are parsed.
        let settings = crate::settings::Environment::from_process().map_err(|e| e.to_string())?;
        let (mut config, idle) = EngineArgs::parse(flags)?.engine_config(&settings)?;
        config.extra_env.extend(env);
        // One thread drives the engine: a call's request, its cell's frames and its
        // answer are handled there without waking another worker for each.
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|error| format!("could not start the engine's async runtime: {error}"))?;
        let (input, lines) = mpsc::unbounded_channel();
        let (general_out, general) = channel();
        let routes = Arc::new(Routes { waiting: Mutex::default(), general: general_out });
        // The engine's own `null` (nothing more will be written) is not the end yet:
        // the end comes once its kernels are stopped and why it stopped is known.
        let out = {
            let routes = routes.clone();
            Outbox::new(move |message| message.is_null() || routes.deliver(message))
        };
        let last = routes.clone();
        let stopped = Arc::new(Mutex::new(None));
        let why = stopped.clone();
        let (finished, done) = channel();
        let runtime_handle = runtime.handle().clone();
        let server = Arc::new(Mutex::new(None));
        let serving = server.clone();
        std::thread::Builder::new()
            .name("cellbox-engine".into())
            .spawn(move || {
                runtime.block_on(async move {
                    let root = config.default_cwd.clone();
                    let engine = Arc::new(EvalEngine::new(config));
                    let warm = engine.clone();
                    tokio::spawn(async move { warm.prewarm().await });
                    let started = |server: &Arc<Server>| *serving.lock().unwrap() = Some(server.clone());
                    let ending = super::serve_connection(engine, root, idle, lines.into(), out, started).await;
                    serving.lock().unwrap().take();
                    *why.lock().unwrap() = match ending {
                        Ok(ending) => ending.why(),
                        Err(error) => Some(error.to_string()),
                    };
                    last.deliver(Value::Null);
                });
                runtime.shutdown_timeout(Duration::from_millis(200));
                let _ = finished.send(());
            })
            .map_err(|error| format!("could not start the engine's thread: {error}"))?;
        Ok(InProcess {
            owner: std::process::id(),
            shared: Some(Shared {
                input: Mutex::new(Some(input)),
                routes,
                general: Mutex::new(general),
                done: Mutex::new(done),
                stopped,
                runtime: runtime_handle,
                server,
            }),
        })
    }

    fn shared(&self) -> &Shared {
        self.shared.as_ref().expect("present until dropped")
    }

    /// Hand the engine one request line; false once the engine no longer reads.
    pub fn send(&self, line: String) -> bool {
        self.shared().input.lock().unwrap().as_ref().is_some_and(|input| input.send(Ok(line)).is_ok())
    }

    /// Send the request `line`, whose id is `call`, and take its messages
    /// (outputs, then the answer) from the returned waiter; `None` when the
    /// engine no longer reads.
    pub fn call(&self, line: String, call: i64) -> Option<Waiter> {
        let (sender, messages) = channel();
        {
            let mut waiting = self.shared().routes.waiting.lock().unwrap();
            if waiting.ended {
                return None;
            }
            waiting.calls.insert(call, sender);
        }
        let mut waiter =
            Waiter { call, messages, routes: self.shared().routes.clone(), sent: Instant::now(), own: None };
        match self.own_run(&line) {
            None => self.send(line).then_some(waiter),
            Some(Ok(own)) => {
                waiter.own = Some(own);
                Some(waiter)
            }
            Some(Err(refused)) => {
                self.shared().routes.deliver(refused);
                Some(waiter)
            }
        }
    }

    /// `line` as a `run_code` its caller runs (or the answer refusing it);
    /// `None` for any other request, or once the engine no longer serves.
    fn own_run(&self, line: &str) -> Option<Result<OwnRun, Value>> {
        let server = self.shared().server.lock().unwrap().clone().filter(|server| !server.stopping.is_cancelled())?;
        let RawRequest { id: Some(id), method, params } = serde_json::from_str(line).ok()? else { return None };
        let Ok(Call::RunCode(params)) = Call::parse(&method, params) else { return None };
        let run = server.run_for_caller(id, params, line.len());
        let runtime = self.shared().runtime.clone();
        Some(run.map(|run| OwnRun { run, runtime, out: server.out.clone(), stopping: server.stopping.clone() }))
    }

    /// The next message no caller waits for, as one line of JSON, waiting for
    /// it; `None` at the end of the engine's output. One reader at a time.
    pub fn receive(&self) -> Option<String> {
        match self.shared().general.lock().unwrap().recv() {
            Err(_) | Ok(Value::Null) => None,
            Ok(message) => Some(message.to_string()),
        }
    }

    /// Why the engine stopped by itself, once it has (`None` while it runs or when it was closed).
    pub fn stopped(&self) -> Option<String> {
        self.shared().stopped.lock().unwrap().clone()
    }

    /// End the engine's input: it stops its kernels and leaves. Waits for that
    /// (at most a few seconds); does not wait in a forked child, where the
    /// engine's thread does not exist.
    pub fn close(&self) {
        if std::process::id() != self.owner {
            return;
        }
        drop(self.shared().input.lock().unwrap().take());
        let _ = self.shared().done.lock().unwrap().recv_timeout(CLOSE_GRACE);
    }
}

impl Drop for InProcess {
    fn drop(&mut self) {
        if std::process::id() != self.owner {
            // A forked child: its copy of the engine's state may hold locks and
            // channels the parent's threads were using at the fork. Touching it
            // could hang, or wake the parent's engine; it is left as it is.
            std::mem::forget(self.shared.take());
            return;
        }
        self.close();
    }
}
