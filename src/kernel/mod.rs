//! One kernel process of any backend: the runner subprocess and the host's
//! side of the NDJSON protocol, shared by Python and Node.
//!
//! [`Kernel::start`] spawns the backend's runner (`<python> -u runner.py`,
//! `<node> --expose-internals runner.js`; see [`crate::backend`]) in its own
//! session, waits for the `ready` handshake, then runs the init request (the
//! cwd) and the backend's prelude, if any. [`Kernel::execute`] sends a request and
//! returns an [`Execution`] that yields the request's events as they arrive.
//! One reader task owns every pipe from the runner ([`channel`]): it routes
//! frames by request id and turns the raw bytes of fd 1/2 into `Stdout`/
//! `Stderr` events of the running request. When the runner dies, what it wrote
//! is delivered first, then every pending execution receives
//! [`KernelError::Died`] with the exit status.

pub mod bridge;
pub mod channel;
mod crash_dump;
pub mod extensions;
mod launch;
pub mod process;
pub mod progress;
pub mod zygote;

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nix::sys::signal::Signal;
use serde_json::{Map, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::unix::pipe;
use tokio::sync::{mpsc, oneshot, watch};

use crate::backend::{Backend, Runtime};
use crate::protocol::{self, DoneStatus, ExecuteRequest, MimeBundle, RunnerFrame};
pub use process::ExitInfo;
pub use progress::{StartObserver, StartStage};

/// Default bound on spawn → ready → init → prelude.
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(30);
/// Set to `1` to log every frame both ways (target `cellbox::ipc`).
pub const IPC_TRACE_VAR: &str = "CELLBOX_PYTHON_IPC_TRACE";
/// How much of the runner's own diagnostics is kept for error messages.
const STDERR_TAIL_BYTES: usize = 16 * 1024;
/// How much of them the reader keeps to quote at its death: enough for
/// faulthandler's dump of a process with many threads.
const DIAGNOSTICS_BYTES: usize = 4 << 20;
/// How many lines of it an error message quotes.
const TAIL_LINES: usize = 20;
/// Output written while no request runs (a background thread or child) is
/// held for the next request, up to this much; the rest is counted and dropped.
const MAX_PENDING_OUTPUT: usize = 1 << 20;
/// One read from the frame pipe.
const READ_CHUNK: usize = 1 << 16;
/// Events buffered per execution before the reader waits for the consumer
/// (which in turn makes the runner wait: memory stays bounded). An output
/// event holds up to one read (64 KiB), so this is at most ~2 MiB a kernel:
/// the host reads pipes faster than a busy consumer takes events.
const EXECUTION_BUFFER: usize = 32;

/// Everything needed to start a kernel. Two equal options start equivalent
/// kernels, which is what lets a warm spare stand in for a fresh start (so
/// every field that shapes the process belongs here and takes part in `==`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelOptions {
    /// Which runtime runs the cells.
    pub backend: Backend,
    /// The interpreter to run (a resolved real executable, ideally).
    pub program: PathBuf,
    /// Working directory; must exist and be a directory.
    pub cwd: PathBuf,
    /// The kernel's complete environment (see [`crate::runtime::env::kernel_env`]).
    pub env: BTreeMap<String, String>,
    pub startup_timeout: Duration,
    /// Log every frame (env values redacted).
    pub trace: bool,
    /// Where the runner files are written [default: [`crate::paths::cache_root`]].
    pub cache_dir: Option<PathBuf>,
    /// What the OS enforces around the kernel and everything it starts
    /// (default: nothing). Applied inside every spawn.
    pub sandbox: crate::sandbox::SandboxPolicy,
    /// Modules imported once in a fork server that new Python kernels are
    /// forked from (empty: every kernel is spawned). See [`zygote`].
    pub preload: Vec<String>,
}

impl KernelOptions {
    /// Options for a Python kernel on `python`.
    pub fn new(python: impl Into<PathBuf>, cwd: impl Into<PathBuf>, env: BTreeMap<String, String>) -> Self {
        KernelOptions::for_backend(Backend::Python, python, cwd, env)
    }

    /// Options for a kernel of `runtime`'s backend on its executable.
    pub fn for_runtime(runtime: &Runtime, cwd: impl Into<PathBuf>, env: BTreeMap<String, String>) -> Self {
        KernelOptions::for_backend(runtime.backend, &runtime.executable, cwd, env)
    }

    /// Options for a kernel of `backend` run by `program`.
    pub fn for_backend(
        backend: Backend,
        program: impl Into<PathBuf>,
        cwd: impl Into<PathBuf>,
        env: BTreeMap<String, String>,
    ) -> Self {
        KernelOptions {
            backend,
            program: program.into(),
            cwd: cwd.into(),
            env,
            startup_timeout: DEFAULT_STARTUP_TIMEOUT,
            trace: std::env::var(IPC_TRACE_VAR).is_ok_and(|v| v == "1"),
            cache_dir: None,
            sandbox: crate::sandbox::SandboxPolicy::default(),
            preload: Vec::new(),
        }
    }
}

/// What can go wrong with a kernel. Every message says what to do next.
#[derive(Debug, Clone, thiserror::Error)]
pub enum KernelError {
    #[error("working directory {path} {reason}; pass an existing directory")]
    InvalidCwd { path: PathBuf, reason: String },
    #[error(
        "could not write the runner to the cache folder {path}: {message} (set CELLBOX_CACHE_DIR to a writable folder)"
    )]
    RunnerInstall { path: PathBuf, message: String },
    #[error("could not start {program}: {message}. Check it with `cellbox setup {} --check`", .backend.setup_name())]
    Spawn { backend: Backend, program: PathBuf, message: String },
    #[error("the {backend} kernel did not become ready within {seconds}s{}", tail_note(.stderr_tail))]
    StartupTimeout { backend: Backend, seconds: u64, stderr_tail: String },
    #[error("the {backend} kernel failed to start: {reason}{}", tail_note(.stderr_tail))]
    StartupFailed { backend: Backend, reason: String, stderr_tail: String },
    #[error("the {backend} kernel died ({exit}); its state is lost{}", tail_note(.stderr_tail))]
    Died { backend: Backend, exit: String, stderr_tail: String },
    #[error("the kernel has been shut down; start a new one")]
    Closed,
    /// The requested sandbox cannot be enforced on this host: the kernel was
    /// not started (never a silent downgrade).
    #[error("{0}")]
    Sandbox(#[from] crate::sandbox::SandboxError),
}

fn tail_note(tail: &str) -> String {
    let tail = tail.trim();
    if tail.is_empty() {
        return String::new();
    }
    let lines: Vec<&str> = tail.lines().collect();
    let start = lines.len().saturating_sub(TAIL_LINES);
    format!(". Its stderr ended with:\n{}", lines[start..].join("\n"))
}

/// What the runner told us in its handshake.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadyInfo {
    pub pid: u32,
    pub python_version: String,
    pub executable: String,
}

/// A traceback-carrying error raised by a cell.
#[derive(Debug, Clone, PartialEq)]
pub struct CellError {
    pub ename: String,
    pub evalue: String,
    pub traceback: Vec<String>,
}

/// How a request finished.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CellDone {
    pub status: DoneStatus,
    pub execution_count: u64,
    /// True when a SIGINT interrupted the cell.
    pub cancelled: bool,
}

/// One thing a running request produced.
#[derive(Debug, Clone, PartialEq)]
pub enum ExecEvent {
    Started,
    Stdout(String),
    Stderr(String),
    Display {
        bundle: MimeBundle,
        metadata: Map<String, Value>,
    },
    Result {
        bundle: MimeBundle,
        metadata: Map<String, Value>,
    },
    Error(CellError),
    Done(CellDone),
    /// The answer to [`Kernel::check_complete`].
    Completeness(Completeness),
    /// The answer to [`Kernel::check`].
    Checked(CheckReport),
    /// The host started or finished work on the cell's behalf (a bridge
    /// call): the cell's time budget waits meanwhile. Only the host makes
    /// these; nothing a cell prints or displays can.
    Budget(bridge::BudgetControl),
    /// The Python runner crashed in C code during this cell: faulthandler's
    /// whole dump, every thread with the runner's own frames, for the record
    /// (the call's full output), not for display. The cell's part of it came
    /// just before as [`ExecEvent::Stderr`] (see [`crash_dump`]).
    CrashDump(String),
}

/// Whether some code is a whole cell yet, as a REPL asks after each line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Completeness {
    /// "complete", "incomplete" or "invalid".
    pub status: String,
    /// The indent to offer on the next line when incomplete.
    pub indent: String,
}

/// What a pre-run check found: one entry per cell asked about, in order,
/// and notes about the check itself (the linter was not found, ...).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CheckReport {
    pub cells: Vec<protocol::CheckedCell>,
    pub notes: Vec<String>,
}

impl CheckReport {
    /// Whether any cell failed to compile.
    pub fn has_errors(&self) -> bool {
        self.cells.iter().any(|cell| cell.error.is_some())
    }
}

type EventSender = mpsc::Sender<Result<ExecEvent, KernelError>>;

/// Request options beyond the code.
#[derive(Debug, Clone, Default)]
pub struct ExecuteOptions {
    pub silent: bool,
    /// `false` keeps the request out of `executionCount` (host-internal work).
    pub internal: bool,
    pub cwd: Option<String>,
    pub env: Option<BTreeMap<String, Option<String>>>,
    /// The code is TypeScript (JavaScript kernels strip its types).
    pub typescript: bool,
}

/// A request in flight: its events, in order, ending with `Done` or an error.
pub struct Execution {
    id: String,
    events: mpsc::Receiver<Result<ExecEvent, KernelError>>,
    finished: bool,
}

impl Execution {
    /// The request id on the wire.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The next event; `None` once `Done` or an error has been returned.
    pub async fn next(&mut self) -> Option<Result<ExecEvent, KernelError>> {
        if self.finished {
            return None;
        }
        let item = self.events.recv().await.unwrap_or(Err(KernelError::Closed));
        if matches!(item, Ok(ExecEvent::Done(_) | ExecEvent::Completeness(_) | ExecEvent::Checked(_)) | Err(_)) {
            self.finished = true;
        }
        Some(item)
    }

    /// Wait for the end and return everything it produced.
    pub async fn collect(mut self) -> Result<CellOutput, KernelError> {
        let mut events = Vec::new();
        while let Some(item) = self.next().await {
            match item? {
                ExecEvent::Started => {}
                ExecEvent::Done(done) => return Ok(CellOutput { events, done }),
                event => events.push(event),
            }
        }
        Err(KernelError::Closed)
    }
}

/// An [`Execution`] fed by another transport through `events`.
pub(crate) fn execution_from(id: String, events: mpsc::Receiver<Result<ExecEvent, KernelError>>) -> Execution {
    Execution { id, events, finished: false }
}

/// Everything one request produced, for callers that do not stream.
#[derive(Debug, Clone, PartialEq)]
pub struct CellOutput {
    pub events: Vec<ExecEvent>,
    pub done: CellDone,
}

impl CellOutput {
    pub fn stdout(&self) -> String {
        self.events.iter().filter_map(|e| if let ExecEvent::Stdout(t) = e { Some(t.as_str()) } else { None }).collect()
    }
    pub fn stderr(&self) -> String {
        self.events.iter().filter_map(|e| if let ExecEvent::Stderr(t) = e { Some(t.as_str()) } else { None }).collect()
    }
    /// `text/plain` of each `result` frame.
    pub fn results(&self) -> Vec<String> {
        self.events
            .iter()
            .filter_map(|e| match e {
                ExecEvent::Result { bundle, .. } => bundle.get("text/plain").and_then(Value::as_str).map(String::from),
                _ => None,
            })
            .collect()
    }
    pub fn errors(&self) -> Vec<&CellError> {
        self.events.iter().filter_map(|e| if let ExecEvent::Error(err) = e { Some(err) } else { None }).collect()
    }
    pub fn displays(&self) -> Vec<&MimeBundle> {
        self.events
            .iter()
            .filter_map(|e| if let ExecEvent::Display { bundle, .. } = e { Some(bundle) } else { None })
            .collect()
    }
    pub fn is_ok(&self) -> bool {
        self.done.status == DoneStatus::Ok
    }
}

/// State shared by the handle and the background tasks.
struct Shared {
    pid: u32,
    backend: Backend,
    routes: Mutex<Routes>,
    exit: watch::Receiver<Option<ExitInfo>>,
    stderr_tail: Mutex<String>,
    trace: bool,
    /// The request pipe; also written by bridge answers while a cell runs.
    stdin: tokio::sync::Mutex<Option<pipe::Sender>>,
    /// Who answers the cells' bridge calls ([`Kernel::set_bridge`]); `None`:
    /// they fail with "no bridge configured".
    bridge: Mutex<Option<bridge::BridgeHook>>,
    bridge_state: Mutex<bridge::BridgeState>,
    /// The kernel's temp dir and cgroups, kept while it lives; they also
    /// tell a death by the memory limit from any other.
    sandbox: crate::sandbox::SandboxGuard,
    /// The fork server this kernel came from, which reports its exit; let go
    /// once the kernel has ended (a retired fork server then ends too).
    zygote: Mutex<Option<Arc<zygote::Zygote>>>,
    /// That fork server's pid.
    forked_from: Option<u32>,
    /// The cells' code, quoted in a crash dump.
    cells: Mutex<crash_dump::CellSources>,
}

#[derive(Default)]
struct Routes {
    pending: HashMap<String, EventSender>,
    /// Execute requests in the order they were written: the runner runs them
    /// one at a time in that order, so output belongs to the first.
    running: VecDeque<String>,
    /// Set once the runner's stdout has closed: the error every new request gets.
    dead: Option<KernelError>,
    ready: Option<oneshot::Sender<Result<ReadyInfo, String>>>,
}

/// A running Python kernel. Dropping it kills the process group.
pub struct Kernel {
    shared: Arc<Shared>,
    next_id: AtomicU64,
    ready: ReadyInfo,
    cwd: PathBuf,
}

impl Kernel {
    /// Start the runner (spawned, or forked from the fork server when
    /// `preload` is set: see [`launch`]), wait for it to be ready, run init and prelude.
    pub async fn start(options: KernelOptions) -> Result<Kernel, KernelError> {
        validate_cwd(&options.cwd)?;
        let cache = options.cache_dir.clone().unwrap_or_else(crate::paths::cache_root);
        let backend = options.backend;
        let runner = backend
            .runner()
            .ensure_in(&cache)
            .map_err(|e| KernelError::RunnerInstall { path: cache.clone(), message: e.to_string() })?;

        let (child_ends, host_ends) = channel::create().map_err(|e| KernelError::Spawn {
            backend,
            program: options.program.clone(),
            message: e.to_string(),
        })?;
        let launched = launch::launch(&options, &runner, child_ends).await?;
        let pid = launched.pid;
        let (ready_tx, ready_rx) = oneshot::channel();
        let shared = Arc::new(Shared {
            pid,
            backend,
            routes: Mutex::new(Routes { ready: Some(ready_tx), ..Default::default() }),
            exit: launched.exit,
            stderr_tail: Mutex::new(String::new()),
            trace: options.trace,
            stdin: tokio::sync::Mutex::new(Some(launched.requests)),
            bridge: Mutex::new(None),
            bridge_state: Mutex::new(bridge::BridgeState::default()),
            sandbox: launched.guard,
            forked_from: launched.zygote.as_ref().map(|zygote| zygote.pid),
            zygote: Mutex::new(launched.zygote),
            cells: Mutex::default(),
        });
        let stderr_task = tokio::spawn(Reader::new(shared.clone(), crash_dump::runner_roots(&runner)).run(host_ends));

        let kill_guard = KillGuard(pid);
        let ready = match tokio::time::timeout(options.startup_timeout, ready_rx).await {
            Ok(Ok(Ok(ready))) => ready,
            Ok(Ok(Err(reason))) => {
                return Err(KernelError::StartupFailed {
                    backend,
                    reason,
                    stderr_tail: shared.tail_after(stderr_task).await,
                });
            }
            Ok(Err(_)) => {
                let reason = match shared.wait_exit(Duration::from_secs(2)).await {
                    Some(exit) => format!("it exited before the handshake ({exit})"),
                    None => "it closed its output before the handshake".to_string(),
                };
                return Err(KernelError::StartupFailed {
                    backend,
                    reason,
                    stderr_tail: shared.tail_after(stderr_task).await,
                });
            }
            Err(_) => {
                drop(kill_guard);
                return Err(KernelError::StartupTimeout {
                    backend,
                    seconds: options.startup_timeout.as_secs(),
                    stderr_tail: shared.tail_after(stderr_task).await,
                });
            }
        };
        std::mem::forget(kill_guard);
        let kernel = Kernel { shared, next_id: AtomicU64::new(1), ready, cwd: options.cwd.clone() };
        let setup = async {
            kernel.run_internal(None, Some(kernel.cwd.display().to_string())).await?;
            match backend.prelude() {
                Some(prelude) => kernel.run_internal(Some(prelude), None).await,
                None => Ok(()),
            }
        };
        match tokio::time::timeout(options.startup_timeout, setup).await {
            Ok(Ok(())) => Ok(kernel),
            Ok(Err(e)) => Err(e),
            Err(_) => Err(KernelError::StartupTimeout {
                backend,
                seconds: options.startup_timeout.as_secs(),
                stderr_tail: kernel.stderr_tail(),
            }),
        }
    }

    /// Run host-internal code (init, prelude); a Python error fails startup.
    async fn run_internal(&self, code: Option<&str>, cwd: Option<String>) -> Result<(), KernelError> {
        let options = ExecuteOptions { silent: true, internal: true, cwd, env: None, typescript: false };
        let output = self.execute_with(code.unwrap_or(""), options).await?.collect().await?;
        match output.errors().first() {
            None => Ok(()),
            Some(error) => Err(KernelError::StartupFailed {
                backend: self.shared.backend,
                reason: format!("{}: {}", error.ename, error.evalue),
                stderr_tail: self.stderr_tail(),
            }),
        }
    }

    /// Run a user cell.
    pub async fn execute(&self, code: &str) -> Result<Execution, KernelError> {
        self.execute_with(code, ExecuteOptions::default()).await
    }

    /// Send a request; its events arrive on the returned [`Execution`].
    pub async fn execute_with(&self, code: &str, options: ExecuteOptions) -> Result<Execution, KernelError> {
        let id = format!("r{}", self.next_id.fetch_add(1, Ordering::Relaxed));
        let request = ExecuteRequest {
            id: id.clone(),
            code: code.to_string(),
            silent: options.silent,
            store_history: !options.internal,
            cwd: options.cwd,
            env: options.env,
            typescript: options.typescript,
        };
        if self.shared.trace {
            tracing::info!(target: "cellbox::ipc", "host → runner {}", protocol::redacted(&request));
        }
        if !request.silent && request.store_history {
            self.shared.cells.lock().unwrap().sent(&id, code);
        }
        self.send(id, protocol::encode_request(&request), EXECUTION_BUFFER, true).await
    }

    /// Register a route for `id`, then write `line`; its frames arrive on the result.
    /// `execute` marks a request that runs code (its output is attributed to it).
    async fn send(&self, id: String, line: String, buffer: usize, execute: bool) -> Result<Execution, KernelError> {
        let (sender, events) = mpsc::channel(buffer);
        {
            let mut routes = self.shared.routes.lock().unwrap();
            if let Some(error) = &routes.dead {
                return Err(error.clone());
            }
            routes.pending.insert(id.clone(), sender);
        }
        let written = {
            let mut stdin = self.shared.stdin.lock().await;
            if execute {
                // Queued under the stdin lock: the queue's order is the write order.
                self.shared.routes.lock().unwrap().running.push_back(id.clone());
            }
            match stdin.as_mut() {
                Some(pipe) => pipe.write_all(line.as_bytes()).await.is_ok(),
                None => false,
            }
        };
        if !written {
            {
                let mut routes = self.shared.routes.lock().unwrap();
                routes.pending.remove(&id);
                routes.running.retain(|queued| *queued != id);
            }
            return Err(self.death_error().await);
        }
        Ok(Execution { id, events, finished: false })
    }

    /// Ask whether `code` is a whole cell yet (codeop rules, magics understood).
    pub async fn check_complete(&self, code: &str) -> Result<Completeness, KernelError> {
        let id = format!("c{}", self.next_id.fetch_add(1, Ordering::Relaxed));
        let request = protocol::CompleteRequest { kind: "complete", id: id.clone(), code: code.to_string() };
        let mut line = serde_json::to_string(&request).expect("requests serialize");
        line.push('\n');
        let mut execution = self.send(id, line, 4, false).await?;
        while let Some(item) = execution.next().await {
            if let ExecEvent::Completeness(answer) = item? {
                return Ok(answer);
            }
        }
        Err(KernelError::Closed)
    }

    /// Check `cells` without running anything: the Python runner compiles
    /// each after its magic transform (and with `lint` runs `ruff check` when
    /// it finds it); the Node runner parses each as it would run it. The
    /// kernel's state is untouched.
    pub async fn check(&self, cells: Vec<protocol::CheckCell>, lint: bool) -> Result<CheckReport, KernelError> {
        let id = format!("k{}", self.next_id.fetch_add(1, Ordering::Relaxed));
        let request = protocol::CheckRequest { kind: "check", id: id.clone(), cells, lint };
        let mut line = serde_json::to_string(&request).expect("requests serialize");
        if self.shared.trace {
            tracing::info!(target: "cellbox::ipc", "host → runner {line}");
        }
        line.push('\n');
        let mut execution = self.send(id, line, 4, false).await?;
        while let Some(item) = execution.next().await {
            if let ExecEvent::Checked(report) = item? {
                return Ok(report);
            }
        }
        Err(KernelError::Closed)
    }

    /// The error to report once the runner is gone.
    async fn death_error(&self) -> KernelError {
        let exit = self.shared.wait_exit(Duration::from_secs(2)).await;
        if let Some(error) = self.shared.routes.lock().unwrap().dead.clone() {
            return error;
        }
        match exit {
            Some(exit) => KernelError::Died {
                backend: self.shared.backend,
                exit: self.shared.describe_exit(exit),
                stderr_tail: self.stderr_tail(),
            },
            None => KernelError::Closed,
        }
    }

    /// Interrupt the running cell: SIGINT to the process group. Between cells
    /// the runner ignores it.
    pub fn interrupt(&self) -> Result<(), KernelError> {
        if !self.is_alive() {
            return Err(KernelError::Closed);
        }
        let _ = process::signal_group(self.shared.pid, Signal::SIGINT);
        // Host work done for the cell stops with it; its waiting callers get an answer.
        self.shared.cancel_bridge_calls(None, "the cell was interrupted");
        Ok(())
    }

    /// Whether the runner process is still running and talking.
    pub fn is_alive(&self) -> bool {
        self.shared.exit.borrow().is_none() && self.shared.routes.lock().unwrap().dead.is_none()
    }

    /// Stop the kernel: `exit` frame → [`process::EXIT_GRACE`] → SIGTERM to the
    /// group → [`process::TERM_GRACE`] → SIGKILL, then sweep what is left of the
    /// group (children started by cells). Idempotent; returns how it ended.
    pub async fn shutdown(&self) -> Option<ExitInfo> {
        let pid = self.shared.pid;
        self.shared.routes.lock().unwrap().dead = Some(KernelError::Closed);
        if self.shared.exit.borrow().is_none() {
            if let Some(mut pipe) = self.shared.stdin.lock().await.take() {
                let _ = pipe.write_all(protocol::EXIT_FRAME.as_bytes()).await;
                let _ = pipe.write_all(b"\n").await;
                drop(pipe);
            }
            if self.shared.wait_exit(process::EXIT_GRACE).await.is_none() {
                let _ = process::signal_group(pid, Signal::SIGTERM);
                if self.shared.wait_exit(process::TERM_GRACE).await.is_none() {
                    let _ = process::signal_group(pid, Signal::SIGKILL);
                    self.shared.wait_exit(Duration::from_secs(5)).await;
                }
            }
        } else {
            self.shared.stdin.lock().await.take();
        }
        sweep_group(pid).await;
        self.shared.zygote.lock().unwrap().take();
        *self.shared.exit.borrow()
    }

    /// Stop a runner known to be stuck (it did not answer an interrupt): no
    /// `exit` frame, which it could never read, but SIGTERM to the group →
    /// [`process::STUCK_TERM_GRACE`] → SIGKILL, then the sweep of the group.
    /// Idempotent; returns how it ended.
    pub async fn terminate_stuck(&self) -> Option<ExitInfo> {
        let pid = self.shared.pid;
        self.shared.routes.lock().unwrap().dead = Some(KernelError::Closed);
        self.shared.stdin.lock().await.take();
        if self.shared.exit.borrow().is_none() {
            let _ = process::signal_group(pid, Signal::SIGTERM);
            if self.shared.wait_exit(process::STUCK_TERM_GRACE).await.is_none() {
                let _ = process::signal_group(pid, Signal::SIGKILL);
                self.shared.wait_exit(Duration::from_secs(5)).await;
            }
        }
        sweep_group(pid).await;
        self.shared.zygote.lock().unwrap().take();
        *self.shared.exit.borrow()
    }

    /// Kill the whole group at once (no grace), e.g. after a failed interrupt.
    pub async fn kill(&self) -> Option<ExitInfo> {
        self.shared.routes.lock().unwrap().dead = Some(KernelError::Closed);
        let _ = process::signal_group(self.shared.pid, Signal::SIGKILL);
        self.shared.wait_exit(Duration::from_secs(5)).await;
        self.shared.stdin.lock().await.take();
        self.shared.zygote.lock().unwrap().take();
        *self.shared.exit.borrow()
    }

    /// Who answers this kernel's bridge calls from now on. Set when the kernel
    /// is given to a session, not at start: a warm spare is started before
    /// anyone knows which session will take it.
    pub fn set_bridge(&self, hook: bridge::BridgeHook) {
        *self.shared.bridge.lock().unwrap() = Some(hook);
    }

    /// The pid of the fork server this kernel was forked from (its parent),
    /// or `None` for a spawned kernel.
    pub fn forked_from(&self) -> Option<u32> {
        self.shared.forked_from
    }

    /// The runner's pid, which is also its process group id.
    pub fn pid(&self) -> u32 {
        self.shared.pid
    }

    pub fn ready_info(&self) -> &ReadyInfo {
        &self.ready
    }

    /// The working directory the kernel started in.
    pub fn cwd(&self) -> &std::path::Path {
        &self.cwd
    }

    /// The last lines the runner process wrote to its own stderr.
    pub fn stderr_tail(&self) -> String {
        self.shared.stderr_tail.lock().unwrap().clone()
    }

    /// How the process ended, once it has.
    pub fn exit_info(&self) -> Option<ExitInfo> {
        *self.shared.exit.borrow()
    }
}

impl std::fmt::Debug for Kernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Kernel").field("pid", &self.shared.pid).field("alive", &self.is_alive()).finish()
    }
}

impl Drop for Kernel {
    fn drop(&mut self) {
        if self.shared.exit.borrow().is_none() || process::group_exists(self.shared.pid) {
            let _ = process::signal_group(self.shared.pid, Signal::SIGKILL);
        }
    }
}

/// Kills the group if startup is abandoned half-way.
struct KillGuard(u32);

impl Drop for KillGuard {
    fn drop(&mut self) {
        let _ = process::signal_group(self.0, Signal::SIGKILL);
    }
}

impl Shared {
    /// Write one line on the request pipe (no-op once it is closed).
    async fn write_line(&self, line: &str) {
        if self.trace {
            tracing::info!(target: "cellbox::ipc", "host → runner {}", line.trim_end());
        }
        if let Some(pipe) = self.stdin.lock().await.as_mut() {
            let _ = pipe.write_all(line.as_bytes()).await;
        }
    }

    /// Stop the bridge calls of `cell` (all when `None`) and tell their callers why.
    fn cancel_bridge_calls(self: &Arc<Self>, cell: Option<&str>, why: &str) {
        bridge::cancel(self, cell, why);
    }

    /// How the process ended, naming the memory limit when that is what ended it.
    fn describe_exit(&self, exit: ExitInfo) -> String {
        match self.sandbox.memory_exceeded() {
            Some(reason) => format!("{reason}; {exit}"),
            None => exit.to_string(),
        }
    }

    async fn wait_exit(&self, limit: Duration) -> Option<ExitInfo> {
        let mut exit = self.exit.clone();
        let waited = tokio::time::timeout(limit, exit.wait_for(Option::is_some)).await;
        match waited {
            Ok(Ok(info)) => *info,
            _ => *self.exit.borrow(),
        }
    }

    async fn tail_after(&self, stderr_task: tokio::task::JoinHandle<()>) -> String {
        let _ = process::signal_group(self.pid, Signal::SIGKILL);
        let _ = tokio::time::timeout(Duration::from_secs(2), stderr_task).await;
        self.stderr_tail.lock().unwrap().clone()
    }
}

impl bridge::CallSink for Shared {
    fn calls(&self) -> &Mutex<bridge::BridgeState> {
        &self.bridge_state
    }

    async fn cell_event(&self, cell: &str, event: ExecEvent) {
        let sender = self.routes.lock().unwrap().pending.get(cell).cloned();
        if let Some(sender) = sender {
            let _ = sender.send(Ok(event)).await;
        }
    }

    async fn answer(&self, answer: protocol::BridgeResult) {
        self.write_line(&answer.encode()).await;
    }
}

/// Err unless `cwd` exists and is a directory; checked before any kernel work.
pub fn validate_cwd(cwd: &std::path::Path) -> Result<(), KernelError> {
    match std::fs::metadata(cwd) {
        Ok(meta) if meta.is_dir() => Ok(()),
        Ok(_) => Err(KernelError::InvalidCwd { path: cwd.to_path_buf(), reason: "is not a directory".into() }),
        Err(e) => Err(KernelError::InvalidCwd { path: cwd.to_path_buf(), reason: format!("cannot be used ({e})") }),
    }
}

async fn sweep_group(pid: u32) {
    if !process::group_exists(pid) {
        return;
    }
    let _ = process::signal_group(pid, Signal::SIGTERM);
    let deadline = tokio::time::Instant::now() + process::SWEEP_GRACE;
    while process::group_exists(pid) && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let _ = process::signal_group(pid, Signal::SIGKILL);
}

/// Which output pipe a chunk came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stream {
    Stdout,
    Stderr,
}

impl Stream {
    fn event(self, text: String) -> ExecEvent {
        match self {
            Stream::Stdout => ExecEvent::Stdout(text),
            Stream::Stderr => ExecEvent::Stderr(text),
        }
    }
}

/// The one task that reads every pipe from the runner.
///
/// Order: the runner writes a frame only once the host has read all output
/// written before it, and goes on after a display only once the host has
/// read the frame, so reading the pipes in turn and handling each read in
/// full before the next keeps frames and output in the order they happened.
struct Reader {
    shared: Arc<Shared>,
    stdout: channel::Utf8Stream,
    stderr: channel::Utf8Stream,
    /// The request whose `Started` has been delivered.
    started: Option<String>,
    /// Output written while no request ran, for the next one.
    held: Vec<(Stream, String)>,
    held_bytes: usize,
    dropped_bytes: usize,
    /// A partial frame line.
    line: Vec<u8>,
    /// The runner's own diagnostics (fd 4), quoted when it dies: its failure
    /// messages, faulthandler's dump when it crashed.
    diagnostics: String,
    /// The runner's folder, as its frames may name it (see [`crash_dump`]).
    runner_roots: Vec<String>,
    /// The last of fd 2, quoted when the runner died without diagnostics.
    recent_stderr: String,
}

impl Reader {
    fn new(shared: Arc<Shared>, runner_roots: Vec<String>) -> Self {
        Reader {
            shared,
            stdout: channel::Utf8Stream::default(),
            stderr: channel::Utf8Stream::default(),
            started: None,
            held: Vec::new(),
            held_bytes: 0,
            dropped_bytes: 0,
            line: Vec::with_capacity(1 << 16),
            diagnostics: String::new(),
            runner_roots,
            recent_stderr: String::new(),
        }
    }

    async fn run(mut self, ends: channel::HostEnds) {
        let channel::HostEnds { stdout: mut out, stderr: mut err, mut frames, mut diagnostics } = ends;
        let mut frame_buffer = vec![0u8; READ_CHUNK];
        let mut diagnostics_buffer = vec![0u8; 8192];
        let (mut out_open, mut err_open, mut diagnostics_open) = (true, true, true);
        loop {
            tokio::select! {
                read = frames.read(&mut frame_buffer) => match read {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        // Output written before these frames is in the pipes by now: the
                        // Python runner waits for the host to read it (but only so long,
                        // and a loaded host may not have), Node does not wait at all.
                        let mut events = self.drain(&out, Stream::Stdout);
                        events.extend(self.drain(&err, Stream::Stderr));
                        for (id, event) in events {
                            self.deliver(Some(id), event).await;
                        }
                        self.frame_bytes(&frame_buffer[..n]).await
                    }
                },
                read = out.read_buf(self.stdout.buffer()), if out_open => match read {
                    Ok(0) | Err(_) => out_open = false,
                    Ok(_) => self.output(Stream::Stdout).await,
                },
                read = err.read_buf(self.stderr.buffer()), if err_open => match read {
                    Ok(0) | Err(_) => err_open = false,
                    Ok(_) => {
                        // When both pipes hold output, stdout's goes first: the runner
                        // flushes Python's stdout before its stderr. What was just read
                        // from stderr waits in its buffer meanwhile.
                        let pending = self.stderr.take();
                        for (id, event) in self.drain(&out, Stream::Stdout) {
                            self.deliver(Some(id), event).await;
                        }
                        if let Some((id, event)) = self.route_output(Stream::Stderr, pending) {
                            self.deliver(Some(id), event).await;
                        }
                    }
                },
                read = diagnostics.read(&mut diagnostics_buffer), if diagnostics_open => match read {
                    Ok(0) | Err(_) => diagnostics_open = false,
                    Ok(n) => self.diagnostic(&diagnostics_buffer[..n]),
                },
            }
        }
        // The frame channel closed: the runner exited, or something cut it.
        let shared = self.shared.clone();
        let mut lingering = false;
        if shared.wait_exit(Duration::from_secs(2)).await.is_none() {
            // It can no longer be driven.
            lingering = true;
            let _ = process::signal_group(shared.pid, Signal::SIGKILL);
        }
        let exit = shared.wait_exit(Duration::from_secs(2)).await;
        // Everything the runner wrote is in the pipes now: deliver it before the error.
        let mut events = self.drain(&out, Stream::Stdout);
        events.extend(self.drain(&err, Stream::Stderr));
        let mut total = 0usize;
        while total < 64 << 20 {
            match diagnostics.try_read(&mut diagnostics_buffer) {
                Ok(0) => break,
                Ok(n) => {
                    total += n;
                    self.diagnostic(&diagnostics_buffer[..n]);
                }
                Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            }
        }
        for (id, event) in events {
            self.deliver(Some(id), event).await;
        }
        self.flush_output().await;
        let mut exit = match exit {
            Some(exit) => shared.describe_exit(exit),
            None => "output closed".to_string(),
        };
        if lingering {
            exit = format!(
                "{exit}: it closed its protocol channel while still running, so it was stopped; code \
                 outside Python, such as a C extension, probably closed the runner's private file descriptors"
            );
        }
        let quoted = self.last_words().await;
        let error = KernelError::Died { backend: shared.backend, exit, stderr_tail: quoted };
        shared.bridge_state.lock().unwrap().cancel(None);
        let (error, pending, ready) = {
            let mut routes = shared.routes.lock().unwrap();
            // A deliberate shutdown already recorded `Closed`; keep that.
            let error = routes.dead.get_or_insert(error).clone();
            routes.running.clear();
            (error, std::mem::take(&mut routes.pending), routes.ready.take())
        };
        drop(ready); // startup sees a closed channel and reports the exit itself
        for sender in pending.into_values() {
            let _ = sender.send(Err(error.clone())).await;
        }
    }

    async fn frame_bytes(&mut self, bytes: &[u8]) {
        let mut rest = bytes;
        while let Some(end) = rest.iter().position(|&b| b == b'\n') {
            let (head, tail) = rest.split_at(end + 1);
            rest = tail;
            if self.line.is_empty() {
                self.frame_line(head).await;
            } else {
                let mut line = std::mem::take(&mut self.line);
                line.extend_from_slice(head);
                self.frame_line(&line).await;
                line.clear();
                self.line = line;
            }
        }
        self.line.extend_from_slice(rest);
    }

    async fn frame_line(&mut self, line: &[u8]) {
        if self.shared.trace {
            tracing::info!(target: "cellbox::ipc", "runner → host {}", String::from_utf8_lossy(line).trim_end());
        }
        match protocol::parse_frame(line) {
            Ok(frame) => self.route(frame).await,
            Err(error) => {
                tracing::warn!(target: "cellbox::ipc", "skipping a line the runner sent that is not a frame ({error})")
            }
        }
    }

    fn diagnostic(&mut self, bytes: &[u8]) {
        let text = String::from_utf8_lossy(bytes);
        if self.shared.trace {
            tracing::info!(target: "cellbox::ipc", "runner diagnostics: {}", text.trim_end());
        }
        push_tail(&mut self.diagnostics, &text, DIAGNOSTICS_BYTES);
        push_tail(&mut self.shared.stderr_tail.lock().unwrap(), &text, STDERR_TAIL_BYTES);
    }

    /// What the `Died` error quotes; a crash dump goes to the running
    /// request first (see [`crash_dump::last_words`]).
    async fn last_words(&mut self) -> String {
        let running = self.shared.routes.lock().unwrap().running.front().cloned();
        let words = {
            let cells = self.shared.cells.lock().unwrap();
            let running = running.as_deref().map(|id| (id, &*cells));
            crash_dump::last_words(&self.diagnostics, &self.recent_stderr, running, &self.runner_roots)
        };
        if let Some(id) = running {
            for event in words.events {
                self.deliver(Some(id.clone()), event).await;
            }
        }
        words.quoted
    }

    async fn output(&mut self, stream: Stream) {
        if let Some((id, event)) = self.output_now(stream) {
            self.deliver(Some(id), event).await;
        }
    }

    /// The decoder of `stream`, which owns the buffer its reads fill.
    fn decoder(&mut self, stream: Stream) -> &mut channel::Utf8Stream {
        match stream {
            Stream::Stdout => &mut self.stdout,
            Stream::Stderr => &mut self.stderr,
        }
    }

    /// Read what is left in `pipe` without waiting (bounded: a child of the
    /// kernel may still be writing); the events it makes, in order.
    fn drain(&mut self, pipe: &pipe::Receiver, stream: Stream) -> Vec<(String, ExecEvent)> {
        let mut events = Vec::new();
        let mut total = 0usize;
        while total < 64 << 20 {
            match pipe.try_read_buf(self.decoder(stream).buffer()) {
                Ok(0) => break,
                Ok(n) => {
                    total += n;
                    events.extend(self.output_now(stream));
                }
                Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            }
        }
        events
    }

    /// Decode what was read; hold it when no request runs, else return where it goes.
    fn output_now(&mut self, stream: Stream) -> Option<(String, ExecEvent)> {
        let text = self.decoder(stream).take();
        self.route_output(stream, text)
    }

    /// Where decoded output goes: the running request, else held for the next one.
    fn route_output(&mut self, stream: Stream, text: String) -> Option<(String, ExecEvent)> {
        if text.is_empty() {
            return None;
        }
        if self.shared.trace {
            tracing::info!(target: "cellbox::ipc", "runner {stream:?}: {} bytes", text.len());
        }
        if stream == Stream::Stderr {
            push_tail(&mut self.recent_stderr, &text, STDERR_TAIL_BYTES);
        }
        let current = self.shared.routes.lock().unwrap().running.front().cloned();
        match current {
            Some(id) => Some((id, stream.event(text))),
            None => {
                if stream == Stream::Stderr {
                    // Outside a request: startup failures of the interpreter itself.
                    push_tail(&mut self.shared.stderr_tail.lock().unwrap(), &text, STDERR_TAIL_BYTES);
                }
                self.hold(stream, text);
                None
            }
        }
    }

    fn hold(&mut self, stream: Stream, text: String) {
        if self.held_bytes + text.len() > MAX_PENDING_OUTPUT {
            self.dropped_bytes += text.len();
            return;
        }
        self.held_bytes += text.len();
        match self.held.last_mut() {
            Some((last, held)) if *last == stream => held.push_str(&text),
            _ => self.held.push((stream, text)),
        }
    }

    /// Deliver what the decoders still hold (the end of a request's output).
    async fn flush_output(&mut self) {
        for stream in [Stream::Stdout, Stream::Stderr] {
            let text = match stream {
                Stream::Stdout => self.stdout.finish(),
                Stream::Stderr => self.stderr.finish(),
            };
            if text.is_empty() {
                continue;
            }
            let current = self.shared.routes.lock().unwrap().running.front().cloned();
            match current {
                Some(id) => self.deliver(Some(id), stream.event(text)).await,
                None => self.hold(stream, text),
            }
        }
    }

    /// Before the first event of request `id`: `Started`, then the output held for it.
    async fn ensure_started(&mut self, id: &str) {
        if self.started.as_deref() == Some(id) {
            return;
        }
        self.started = Some(id.to_string());
        self.send(id, ExecEvent::Started, false).await;
        let held = std::mem::take(&mut self.held);
        self.held_bytes = 0;
        for (stream, text) in held {
            self.send(id, stream.event(text), false).await;
        }
        let dropped = std::mem::take(&mut self.dropped_bytes);
        if dropped > 0 {
            let note = format!("[cellbox: {dropped} bytes of background output were dropped]\n");
            self.send(id, ExecEvent::Stderr(note), false).await;
        }
    }

    fn is_running(&self, id: &str) -> bool {
        self.shared.routes.lock().unwrap().running.iter().any(|queued| queued == id)
    }

    async fn route(&mut self, frame: RunnerFrame) {
        let (id, event) = match frame {
            RunnerFrame::Ready { protocol: version, python, pid, executable } => {
                let ready = self.shared.routes.lock().unwrap().ready.take();
                if let Some(ready) = ready {
                    let answer = if version == protocol::PROTOCOL_VERSION {
                        Ok(ReadyInfo { pid, python_version: python, executable })
                    } else {
                        Err(format!("the runner speaks protocol {version}, this host {}", protocol::PROTOCOL_VERSION))
                    };
                    let _ = ready.send(answer);
                }
                return;
            }
            RunnerFrame::Started { id } => (Some(id), ExecEvent::Started),
            RunnerFrame::Stdout { id, data } => (id, ExecEvent::Stdout(data)),
            RunnerFrame::Stderr { id, data } => (id, ExecEvent::Stderr(data)),
            RunnerFrame::Display { id, bundle, metadata } => (id, ExecEvent::Display { bundle, metadata }),
            RunnerFrame::Result { id, bundle, metadata } => (id, ExecEvent::Result { bundle, metadata }),
            RunnerFrame::Error { id, ename, evalue, traceback } => {
                (id, ExecEvent::Error(CellError { ename, evalue, traceback }))
            }
            RunnerFrame::Done { id, status, execution_count, cancelled } => {
                (Some(id), ExecEvent::Done(CellDone { status, execution_count, cancelled }))
            }
            RunnerFrame::Completeness { id, status, indent } => {
                (Some(id), ExecEvent::Completeness(Completeness { status, indent }))
            }
            RunnerFrame::Checked { id, cells, notes } => (Some(id), ExecEvent::Checked(CheckReport { cells, notes })),
            RunnerFrame::BridgeCall { id, cell, op, args } => {
                self.bridge_call(id, cell, op, args).await;
                return;
            }
        };
        if let Some(request) = id.as_deref().filter(|request| self.is_running(request)) {
            let request = request.to_string();
            self.ensure_started(&request).await;
            match event {
                // Synthesized by ensure_started, before any output of the request.
                ExecEvent::Started => return,
                ExecEvent::Done(done) => {
                    self.shared.cells.lock().unwrap().done(&request, done.execution_count);
                    // Whatever its threads still wait for is of no use now.
                    self.shared.cancel_bridge_calls(Some(&request), "its cell has finished");
                    self.shared.bridge_state.lock().unwrap().counts.remove(&request);
                    self.flush_output().await;
                    self.shared.routes.lock().unwrap().running.retain(|queued| *queued != request);
                    self.started = None;
                }
                _ => {}
            }
        }
        self.deliver(id, event).await;
    }

    /// Hand a cell's bridge call to the handler (see [`bridge::dispatch`]).
    async fn bridge_call(&mut self, id: String, cell: Option<String>, op: String, args: Value) {
        let cell = cell.filter(|cell| self.is_running(cell));
        if let Some(cell) = &cell {
            self.ensure_started(cell).await;
        }
        let hook = self.shared.bridge.lock().unwrap().clone();
        bridge::dispatch(&self.shared, hook, id, cell, op, args);
    }

    async fn deliver(&mut self, id: Option<String>, event: ExecEvent) {
        let Some(id) = id else {
            tracing::debug!(target: "cellbox::ipc", "frame for no request: {event:?}");
            return;
        };
        let done = matches!(event, ExecEvent::Done(_) | ExecEvent::Completeness(_) | ExecEvent::Checked(_));
        if !done && self.is_running(&id) {
            self.ensure_started(&id).await;
        }
        self.send(&id, event, done).await;
    }

    /// Hand `event` to request `id`'s consumer (`last` removes its route).
    async fn send(&self, id: &str, event: ExecEvent, last: bool) {
        let sender = {
            let mut routes = self.shared.routes.lock().unwrap();
            if last { routes.pending.remove(id) } else { routes.pending.get(id).cloned() }
        };
        match sender {
            Some(sender) => {
                if sender.send(Ok(event)).await.is_err() {
                    // The caller stopped listening; later events of this request are dropped.
                    self.shared.routes.lock().unwrap().pending.remove(id);
                }
            }
            None => tracing::debug!(target: "cellbox::ipc", "event for no pending request {id}: {event:?}"),
        }
    }
}

/// Append `text` to a tail of at most `limit` bytes.
fn push_tail(tail: &mut String, text: &str, limit: usize) {
    tail.push_str(text);
    if tail.len() > limit {
        let mut cut = tail.len() - limit;
        while !tail.is_char_boundary(cut) {
            cut += 1;
        }
        tail.drain(..cut);
    }
}
