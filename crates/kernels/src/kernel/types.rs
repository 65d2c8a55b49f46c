//! What every kernel takes and yields, whichever backend carries its cells: the
//! [`KernelOptions`] it starts with, its [`KernelError`]s, and the [`Execution`] of a cell with its
//! [`ExecEvent`]s.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Map, Value};
use tokio::sync::mpsc;

use super::{DEFAULT_STARTUP_TIMEOUT, TAIL_LINES, bridge_relay};
use crate::protocol::{self, DoneStatus, MimeBundle};
use crate::runtime::{Interpreter, Runtime};

/// Everything needed to start a kernel. Two equal options start equivalent
/// kernels, which is what lets a warm spare stand in for a fresh start (so
/// every field that shapes the process belongs here and takes part in `==`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelOptions {
    /// Which interpreter runs the cells.
    pub runtime: Runtime,
    /// The interpreter to run (a resolved real executable, ideally).
    pub program: PathBuf,
    /// Working directory; must exist and be a directory.
    pub cwd: PathBuf,
    /// The kernel's complete environment (see [`crate::discovery::env::kernel_env`]).
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
        KernelOptions::for_runtime(Runtime::Python, python, cwd, env)
    }

    /// Options for a kernel of `interpreter`'s runtime on its executable.
    pub fn for_interpreter(interpreter: &Interpreter, cwd: impl Into<PathBuf>, env: BTreeMap<String, String>) -> Self {
        KernelOptions::for_runtime(interpreter.runtime, &interpreter.executable, cwd, env)
    }

    /// Options for a kernel of `runtime` run by `program`.
    pub fn for_runtime(
        runtime: Runtime,
        program: impl Into<PathBuf>,
        cwd: impl Into<PathBuf>,
        env: BTreeMap<String, String>,
    ) -> Self {
        KernelOptions {
            runtime,
            program: program.into(),
            cwd: cwd.into(),
            env,
            startup_timeout: DEFAULT_STARTUP_TIMEOUT,
            trace: crate::settings::PYTHON_IPC_TRACE.get().is_some_and(|v| v == "1"),
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
    #[error("could not start {program}: {message}. Check it with `cellbox setup {} --check`", .runtime.setup_name())]
    Spawn { runtime: Runtime, program: PathBuf, message: String },
    #[error("the {runtime} kernel did not become ready within {seconds}s{}", tail_note(.stderr_tail))]
    StartupTimeout { runtime: Runtime, seconds: u64, stderr_tail: String },
    #[error("the {runtime} kernel failed to start: {reason}{}", tail_note(.stderr_tail))]
    StartupFailed { runtime: Runtime, reason: String, stderr_tail: String },
    #[error("the {runtime} kernel died ({exit}); its state is lost{}", tail_note(.stderr_tail))]
    Died { runtime: Runtime, exit: String, stderr_tail: String },
    #[error("the kernel has been shut down; start a new one")]
    Closed,
    /// The runner sent a frame of a known type that the host cannot read: the
    /// two disagree about the wire (a field renamed or of another kind).
    #[error("{0}")]
    Protocol(String),
    /// A kernel budget shared by several engines (a server's users, or one user's sandboxes) is spent.
    #[error(
        "{} its limit of {limit} kernels; retry in a moment, or stop a session you no longer need (eval_reset)",
        if *yours { "you run (over your sessions and sandboxes)" } else { "this server runs (over all its users)" }
    )]
    AtCapacity { limit: usize, yours: bool },
    /// [`crate::kernel::Kernel::fork`] on a kernel that cannot be forked.
    #[error("{0}")]
    ForkUnsupported(String),
    #[error("the kernel could not be forked: {0}")]
    ForkFailed(String),
    /// A snapshot could not be saved or restored: the runner's words (a
    /// corrupt or foreign file, another Python version, a path it cannot write).
    #[error("{0}")]
    Snapshot(String),
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
    /// Threads of the source kernel's cells that a fork did not copy (empty
    /// for a kernel that was started, not forked).
    pub lost_threads: Vec<String>,
}

/// Why the runner's `ready` handshake is refused; the text becomes the reason in
/// [`KernelError::StartupFailed`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum HandshakeError {
    #[error("the runner speaks protocol {runner}, this host {host}")]
    ProtocolMismatch { runner: u32, host: u32 },
    /// A `ready` frame with a field missing or of the wrong kind.
    #[error("{0}")]
    Malformed(String),
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
    /// The answer to [`Kernel::snapshot`] and [`Kernel::restore`]: the
    /// runner's report, or why it could not.
    Snapshot(Result<serde_json::Value, String>),
    /// The host started or finished work on the cell's behalf (a bridge
    /// call): the cell's time budget waits meanwhile. Only the host makes
    /// these; nothing a cell prints or displays can.
    Budget(bridge_relay::BudgetControl),
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

/// Request options beyond the code.
#[derive(Debug, Clone, Default)]
pub struct ExecuteOptions {
    pub silent: bool,
    /// `false` keeps the request out of `executionCount` (host-internal work).
    pub internal: bool,
    pub cwd: Option<String>,
    pub env: Option<BTreeMap<String, Option<String>>>,
    /// `env` holds for this request only (see [`crate::protocol::ExecuteRequest::restore_env`]).
    pub restore_env: bool,
    /// See [`crate::protocol::ExecuteRequest::json_results`].
    pub json_results: bool,
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
        if matches!(
            item,
            Ok(ExecEvent::Done(_) | ExecEvent::Completeness(_) | ExecEvent::Checked(_) | ExecEvent::Snapshot(_))
                | Err(_)
        ) {
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

/// An [`Execution`] fed by another backend through `events`.
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
