//! The engine's side of the Python SDK (`from cellbox import Sandbox`):
//! JSON-RPC 2.0, one message per line, to the one SDK process that owns the
//! engine. The engine runs in that process ([`in_process`], the wheel's
//! `cellbox._engine`) or as `cellbox sdk-server` on its stdin and stdout;
//! `cellbox serve` offers the same methods to remote SDKs ([`serve_stream`]).
//! No port is opened locally, and the SDK keeps its transport behind one seam.
//!
//! Methods (declared with their parameters and results in
//! [`cellbox_protocol::sdk`], re-exported as [`wire`]): `initialize`, `run_code`
//! (streams `output` notifications, then answers with the cell's status and
//! execution count), `cancel` (a `run_code` whose caller stopped waiting:
//! its cell is interrupted), `create_context`, `list_contexts`,
//! `restart_context`, `remove_context`, `set_timeout` (the sandbox's idle
//! lifetime, see [`lifetime`]), `shutdown`. End of input is a shutdown too:
//! kernels never outlive the SDK that asked for them.
//!
//! `sandbox.files` and `sandbox.commands` are the `files.*` methods ([`files`],
//! with [`watch`]) and the `commands.*` methods ([`commands`]).

use cellbox_engine::{kernel_args, tool};
use cellbox_kernels::{runtime, sandbox};
use cellbox_settings as settings;

mod args;
mod branches;
mod commands;
mod contexts;
mod files;
pub mod in_process;
mod lifetime;
mod link;
mod stdio;
mod stream;
mod watch;
pub mod wire;

pub use args::EngineArgs;
pub use contexts::SdkLanguage;
pub use link::{Event, Link, Pending};
pub use stream::{StreamLimits, serve_stream};

use std::collections::HashMap;
use std::io::Write as _;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::Duration;

use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::tool::{CallContext, CellParams, EvalEngine, EvalEvent, EvalParams};
use contexts::Contexts;
use wire::{Answer, Call, ErrorCode, Failure};

/// Calls one connection may have in progress at once (`run_code`, files,
/// waits on commands); one more is answered with an error, not queued.
pub const MAX_CALLS_IN_PROGRESS: usize = 256;
/// Bytes of request lines one connection may have in progress at once (each
/// call holds its parameters, a file's chunk among them).
pub const MAX_BYTES_IN_PROGRESS: usize = 128 << 20;

/// The request lines a connection's server reads: from a transport that
/// cannot wait (the SDK's own process), or from a bounded queue that makes a
/// remote client wait while the engine is behind.
pub enum Lines {
    Unbounded(mpsc::UnboundedReceiver<std::io::Result<String>>),
    Bounded(mpsc::Receiver<std::io::Result<String>>),
    /// Read by the runtime itself from a non-blocking pipe ([`stdio`]).
    #[cfg(target_os = "linux")]
    Pipe(tokio::io::Lines<tokio::io::BufReader<tokio::net::unix::pipe::Receiver>>),
}

impl Lines {
    async fn recv(&mut self) -> Option<std::io::Result<String>> {
        match self {
            Lines::Unbounded(lines) => lines.recv().await,
            Lines::Bounded(lines) => lines.recv().await,
            #[cfg(target_os = "linux")]
            Lines::Pipe(lines) => lines.next_line().await.transpose(),
        }
    }
}

impl From<mpsc::UnboundedReceiver<std::io::Result<String>>> for Lines {
    fn from(lines: mpsc::UnboundedReceiver<std::io::Result<String>>) -> Lines {
        Lines::Unbounded(lines)
    }
}

impl From<mpsc::Receiver<std::io::Result<String>>> for Lines {
    fn from(lines: mpsc::Receiver<std::io::Result<String>>) -> Lines {
        Lines::Bounded(lines)
    }
}

/// A call's share of what a connection has in progress (its request's bytes,
/// see [`MAX_BYTES_IN_PROGRESS`], or the call itself), given back when it ends.
struct InProgress(Arc<AtomicUsize>, usize);

impl InProgress {
    fn take(counter: &Arc<AtomicUsize>, bytes: usize) -> InProgress {
        counter.fetch_add(bytes, Ordering::SeqCst);
        InProgress(counter.clone(), bytes)
    }
}

impl Drop for InProgress {
    fn drop(&mut self) {
        self.0.fetch_sub(self.1, Ordering::SeqCst);
    }
}

/// One SDK connection's state.
struct Server {
    engine: Arc<EvalEngine>,
    contexts: Contexts,
    /// Cancelled at shutdown: every call still running stops.
    stopping: CancellationToken,
    /// The running `run_code` and `commands.wait` calls, by request id (as JSON text), for `cancel`.
    running: Mutex<HashMap<String, CancellationToken>>,
    out: Outbox,
    files: Arc<files::Files>,
    commands: commands::Commands,
    lifetime: Arc<lifetime::Lifetime>,
    /// Bytes of the request lines whose calls are in progress.
    in_progress: Arc<AtomicUsize>,
    /// Calls in progress: spawned by the connection, or run by their callers on
    /// their own threads ([`in_process`]).
    calls: Arc<AtomicUsize>,
}

/// Serve the SDK on stdin/stdout until end of input, `shutdown`, or `idle`
/// (the sandbox's timeout) without work; the engine's kernels are stopped
/// before this returns.
pub async fn serve_stdio(engine: Arc<EvalEngine>, root: PathBuf, idle: Option<Duration>) -> std::io::Result<()> {
    let (out, messages) = mpsc::unbounded_channel::<Value>();
    // One writer, so notifications of a call always come before its response.
    // It stops at the first `null` (see `serve_lines`).
    let (lines, writer) = stdio::open(messages);
    // Served by a task, not this thread: the worker that reads a request
    // starts its call without waking another thread.
    let serving = tokio::spawn(serve_lines(engine, root, idle, lines, Outbox::channel(out)));
    // A panic is raised again at once: with no `null` sent, the writer may wait for ever.
    let ending = match serving.await {
        Ok(Err(error)) if error.kind() == std::io::ErrorKind::InvalidData => {
            Err(std::io::Error::new(error.kind(), format!("stopped: a request line is not UTF-8 ({error})")))
        }
        Ok(ending) => ending,
        Err(error) if error.is_panic() => std::panic::resume_unwind(error.into_panic()),
        Err(error) => Err(std::io::Error::other(error)),
    };
    writer.finish().await;
    if let Some(why) = ending.as_ref().ok().and_then(|ending| ending.why()) {
        let _ = writeln!(std::io::stderr(), "cellbox sdk-server: {why}"); // stderr may be gone by now
    }
    ending.map(drop)
}

/// Serve the SDK on request lines from `input`, answering on `out`, until the
/// input ends, `shutdown`, or `idle` without work (the [`Ending`] says which).
/// A `null` sent on `out` is the last message: its writer flushes and stops
/// there. The engine's kernels are stopped before this returns.
pub async fn serve_lines(
    engine: Arc<EvalEngine>,
    root: PathBuf,
    idle: Option<Duration>,
    input: impl Into<Lines>,
    out: Outbox,
) -> std::io::Result<Ending> {
    serve_connection(engine, root, idle, input.into(), out, |_| {}).await
}

/// [`serve_lines`], handing the connection's server to `started` first (the
/// in-process engine's callers run their own `run_code` calls with it).
async fn serve_connection(
    engine: Arc<EvalEngine>,
    root: PathBuf,
    idle: Option<Duration>,
    mut input: Lines,
    out: Outbox,
    started: impl FnOnce(&Arc<Server>),
) -> std::io::Result<Ending> {
    let server = Arc::new(Server {
        files: Arc::new(files::Files::new(engine.host_files())),
        commands: commands::Commands::new(root.clone()),
        engine,
        contexts: Contexts::new(root),
        stopping: CancellationToken::new(),
        running: Mutex::default(),
        out,
        lifetime: lifetime::Lifetime::new(),
        in_progress: Arc::default(),
        calls: Arc::default(),
    });
    server.lifetime.set(idle);
    started(&server);
    let mut spawned = tokio::task::JoinSet::new();
    let mut ending = Ending::Closed;
    let mut unreadable = None;
    loop {
        let line = tokio::select! {
            line = input.recv() => match line.transpose() {
                Ok(line) => line,
                // Stopped as at the end of input, kernels and all; then said.
                Err(error) => {
                    unreadable = Some(error);
                    break;
                }
            },
            limit = server.lifetime.expired() => {
                ending = Ending::Idle(limit);
                break;
            }
        };
        let Some(line) = line else { break };
        if line.trim().is_empty() {
            continue;
        }
        let wire::RawRequest { id, method, params } = match serde_json::from_str(&line) {
            Ok(request) => request,
            Err(error) => {
                let failure = Failure::new(ErrorCode::ParseError, format!("not a JSON-RPC request: {error}"));
                let _ = server.out.send(wire::response(&Value::Null, Err(failure)));
                continue;
            }
        };
        let call = match Call::parse(&method, params) {
            Ok(call) => call,
            Err(error) => {
                if let Some(id) = &id {
                    let _ = server.out.send(wire::response(id, Err(error.failure())));
                }
                continue;
            }
        };
        if let Call::Shutdown(_) = call {
            if let Some(id) = &id {
                server.stopping.cancel();
                server.engine.dispose_all().await;
                let _ = server.out.send(wire::response(id, Ok(Value::Null)));
            }
            break;
        }
        while spawned.try_join_next().is_some() {}
        let size = match server.reserve(line.len()) {
            Ok(size) => size,
            // A cancel is never refused: it is how a client makes room.
            Err(_) if matches!(call, Call::Cancel(_)) => {
                (InProgress::take(&server.calls, 1), InProgress::take(&server.in_progress, line.len()))
            }
            Err(failure) => {
                if let Some(id) = &id {
                    let _ = server.out.send(wire::response(id, Err(failure)));
                }
                continue;
            }
        };
        drop(line);
        let server = server.clone();
        let busy = server.lifetime.busy();
        let runs_code = matches!(call, Call::RunCode(_));
        let mut task = Box::pin(async move {
            let _held = (busy, size);
            let outcome = server.handle(id.as_ref().unwrap_or(&Value::Null), call).await;
            if let Some(id) = &id {
                let _ = server.out.send(wire::response(id, outcome.map(|answer| answer.to_value())));
            }
        });
        // A cell's first steps (finding its kernel, writing its request) are taken
        // here, at once: spawned, they waited for a worker to wake first. The rest
        // of it, waiting for the kernel, goes on in a task of its own.
        if runs_code && std::future::poll_fn(|cx| Poll::Ready(task.as_mut().poll(cx).is_ready())).await {
            continue;
        }
        spawned.spawn(task);
    }
    // What was answered before the input ended is still written; the answers
    // of calls that stopping cuts short are not: the SDK that closed its end
    // (`kill()`) tells a call it left running that the sandbox was killed,
    // and an answer saying the cell was cancelled must not overtake that.
    let _ = server.out.send(Value::Null);
    server.stopping.cancel();
    spawned.abort_all();
    server.engine.dispose_all().await;
    unreadable.map_or(Ok(ending), Err)
}

/// Where a connection's messages go, in the order they are sent: a writer's
/// channel, or (in-process) a router that hands each to the call waiting for it.
#[derive(Clone)]
pub struct Outbox(Arc<dyn Fn(Value) -> bool + Send + Sync>);

impl Outbox {
    /// Messages go to `deliver`, which says whether they still had somewhere to go.
    pub fn new(deliver: impl Fn(Value) -> bool + Send + Sync + 'static) -> Self {
        Outbox(Arc::new(deliver))
    }

    /// Messages go into `sender`'s channel.
    pub fn channel(sender: mpsc::UnboundedSender<Value>) -> Self {
        Outbox::new(move |message| sender.send(message).is_ok())
    }

    /// Send one message; false once nobody reads them.
    fn send(&self, message: Value) -> bool {
        (self.0)(message)
    }
}

/// Why an SDK connection's serving ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// Its input ended, or it asked for `shutdown`.
    Closed,
    /// The sandbox was idle for its timeout.
    Idle(Duration),
}

impl Ending {
    /// What the SDK's user is told when the engine stopped by itself; `None` when it was asked to.
    pub fn why(self) -> Option<String> {
        match self {
            Ending::Closed => None,
            Ending::Idle(limit) => Some(format!(
                "the sandbox was idle for {} s, its timeout: its kernels are stopped. Create a new sandbox, \
                 or give a longer timeout (Sandbox(timeout=...) or set_timeout())",
                limit.as_secs_f64()
            )),
        }
    }
}

/// A `run_code` whose caller runs it on its own thread; its output is the
/// answer's message, or `None` when the connection stopped first.
pub(crate) type CallerRun = std::pin::Pin<Box<dyn Future<Output = Option<Value>> + Send>>;

impl Server {
    /// Take a share of the limits for one more call, `bytes` long, until the
    /// returned shares are dropped; the refusal when over them. The shares are
    /// taken before they are checked, so calls arriving at once on several
    /// threads cannot all pass the last free place.
    fn reserve(&self, bytes: usize) -> Result<(InProgress, InProgress), Failure> {
        let held = (InProgress::take(&self.calls, 1), InProgress::take(&self.in_progress, bytes));
        let calls = self.calls.load(Ordering::SeqCst);
        let total = self.in_progress.load(Ordering::SeqCst);
        if calls <= MAX_CALLS_IN_PROGRESS && total <= MAX_BYTES_IN_PROGRESS {
            return Ok(held);
        }
        Err(Failure::new(
            ErrorCode::Failed,
            format!(
                "this sandbox has {} calls in progress ({} MiB of requests), its limit is \
                 {MAX_CALLS_IN_PROGRESS} calls and {} MiB; wait for one to end (or cancel one) and send this again",
                calls - 1,
                (total - bytes) >> 20,
                MAX_BYTES_IN_PROGRESS >> 20
            ),
        ))
    }

    /// The `run_code` request `id` as a future its caller polls on its own
    /// thread (see [`in_process`]), holding its share of the limits while it
    /// runs; the refusal's message when over them. Its cell's outputs go to
    /// `out` as they come. Once the connection stops it ends without an
    /// answer and is not polled on, as the connection's own calls are aborted
    /// (a kernel it started after the others were disposed of would be left).
    fn run_for_caller(self: &Arc<Self>, id: Value, params: wire::RunCode, bytes: usize) -> Result<CallerRun, Value> {
        let held = self.reserve(bytes).map_err(|failure| wire::response(&id, Err(failure)))?;
        let busy = self.lifetime.busy();
        let server = self.clone();
        Ok(Box::pin(async move {
            let _held = (held, busy);
            tokio::select! {
                biased;
                () = server.stopping.cancelled() => None,
                outcome = server.run_code(&id, params) => {
                    Some(wire::response(&id, outcome.map(|result| Answer::RunCode(result).to_value())))
                }
            }
        }))
    }

    /// Answer one call; `id` is its request's (`output` notifications name it).
    async fn handle(&self, id: &Value, call: Call) -> Result<Answer, Failure> {
        match call {
            Call::Initialize(_) => {
                // A sandbox that cannot run Python says so when it is made, not at its first cell.
                if let Some(problem) = self.engine.python_unavailable().await {
                    return Err(Failure::new(ErrorCode::Failed, problem));
                }
                Ok(Answer::Initialize(wire::InitializeResult {
                    version: env!("CARGO_PKG_VERSION").to_string(),
                    languages: self.engine.available_languages().iter().map(|l| l.as_str().to_string()).collect(),
                }))
            }
            Call::RunCode(params) => self.run_code(id, params).await.map(Answer::RunCode),
            Call::Cancel(params) => {
                if let Some(token) = self.running.lock().unwrap().get(&params.call.to_string()) {
                    token.cancel();
                }
                Ok(Answer::Cancel(()))
            }
            Call::CreateContext(params) => {
                let language = SdkLanguage::parse(params.language.as_deref().unwrap_or("python"))?;
                // A context's folder is a path a call names: it stays in the workspace.
                let cwd = params.cwd.as_deref().map(|dir| self.engine.tool_path("cwd", dir)).transpose();
                let cwd = cwd.map_err(|error| Failure::invalid_params(error.to_string()))?;
                let cwd = cwd.map(|dir| dir.display().to_string());
                let context = self.contexts.create(language, cwd.as_deref(), params.name.as_deref())?;
                Ok(Answer::CreateContext(context.info()))
            }
            Call::ListContexts(_) => Ok(Answer::ListContexts(self.contexts.list().iter().map(|c| c.info()).collect())),
            Call::RestartContext(params) => {
                let context = self.contexts.get(&params.context_id)?;
                self.engine.reset_session(&context.session()).await;
                Ok(Answer::RestartContext(()))
            }
            Call::RemoveContext(params) => {
                let context = self.contexts.remove(&params.context_id)?;
                self.engine.reset_session(&context.session()).await;
                self.engine.forget_history(&context.session());
                Ok(Answer::RemoveContext(()))
            }
            Call::SetTimeout(params) => {
                self.lifetime.set(params.limit()?);
                Ok(Answer::SetTimeout(()))
            }
            // Served by `serve_lines` itself: it ends the connection.
            Call::Shutdown(_) => Ok(Answer::Shutdown(())),
            Call::ForkContext(params) => self.fork_context(params).await.map(Answer::ForkContext),
            Call::Undo(params) => self.undo(params).await.map(Answer::Undo),
            Call::Snapshot(params) => self.snapshot(params).await.map(Answer::Snapshot),
            Call::Restore(params) => self.restore(params).await.map(Answer::Restore),
            call @ (Call::FilesRead(_)
            | Call::FilesWrite(_)
            | Call::FilesList(_)
            | Call::FilesExists(_)
            | Call::FilesGetInfo(_)
            | Call::FilesRemove(_)
            | Call::FilesRename(_)
            | Call::FilesMakeDir(_)
            | Call::FilesWatch(_)
            | Call::FilesWatchEvents(_)
            | Call::FilesUnwatch(_)) => self.files.call(call, &self.stopping).await,
            call @ (Call::CommandsStart(_) | Call::CommandsWait(_) | Call::CommandsKill(_) | Call::CommandsList(_)) => {
                self.command_call(id, call).await
            }
        }
    }

    /// Run one cell in its context, streaming its output as it comes.
    async fn run_code(&self, call: &Value, params: wire::RunCode) -> Result<wire::RunCodeResult, Failure> {
        let language = params.language.as_deref().map(SdkLanguage::parse).transpose()?;
        let context = match (&params.context_id, language) {
            (Some(_), Some(_)) => {
                return Err(Failure::invalid_params("give run_code a language or a context, not both"));
            }
            (Some(id), None) => self.contexts.get(id)?,
            (None, language) => self.contexts.default_for(language.unwrap_or(SdkLanguage::Python)),
        };
        let language = language.unwrap_or(context.language);
        let timeout = match params.timeout {
            None => wire::DEFAULT_TIMEOUT_SECS,
            Some(seconds) if !seconds.is_finite() || seconds < 0.0 => {
                return Err(Failure::invalid_params(format!("timeout must be 0 or more seconds, not {seconds}")));
            }
            // E2B's "no limit": the longest a cell may run here.
            Some(0.0) => crate::tool::params::TIMEOUT_RANGE.1,
            Some(seconds) => seconds,
        };
        let env = params.envs.map(|envs| envs.into_iter().map(|(key, value)| (key, Some(value))).collect());
        let eval = EvalParams {
            cells: vec![CellParams {
                code: language.cell_code(&params.code),
                language: Some(language.cell_language()),
                timeout: Some(timeout),
                env,
                // E2B's `Result.json` for a list or dict value.
                json_results: language == SdkLanguage::Python,
                ..Default::default()
            }],
            cwd: Some(context.cwd.display().to_string()),
            checkpoint: params.checkpoint,
            ..Default::default()
        };
        let out = self.out.clone();
        let sink = move |event: EvalEvent| {
            let output = match event {
                EvalEvent::Stdout { text, .. } => wire::Output::Stdout { text, chunk: None },
                EvalEvent::Stderr { text, .. } => wire::Output::Stderr { text, chunk: None },
                EvalEvent::Display { bundle, is_result, .. } => {
                    wire::Output::Result { bundle: Arc::unwrap_or_clone(bundle), is_main_result: is_result }
                }
                EvalEvent::Error { error, .. } => {
                    wire::Output::Error { name: error.ename, value: error.evalue, traceback: error.traceback.concat() }
                }
                _ => return,
            };
            let _ = out.send(wire::output(call, output));
        };
        let cancel = self.stopping.child_token();
        let key = call.to_string();
        self.running.lock().unwrap().insert(key.clone(), cancel.clone());
        let result = self.engine.eval(&eval, &CallContext::new(context.session()), &cancel, &sink).await;
        self.running.lock().unwrap().remove(&key);
        let result = result.map_err(|error| Failure::new(ErrorCode::Failed, error.to_string()))?;
        let cell = result.cells.first();
        Ok(wire::RunCodeResult {
            status: cell.map_or("error", |cell| cell.status.as_str()).to_string(),
            execution_count: cell.and_then(|cell| cell.execution_count),
            error: cell
                .and_then(|cell| cell.error.as_ref())
                .map(|e| wire::RunError { name: e.ename.clone(), value: e.evalue.clone() }),
            notes: result.notes,
            // The full output, when the model-facing text was clamped (`cellbox artifact URI`).
            artifact: result.artifact.filter(|_| result.truncated),
        })
    }
}
