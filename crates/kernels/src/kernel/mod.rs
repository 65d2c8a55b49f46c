//! One kernel process of any runtime: the runner subprocess and the host's
//! side of the NDJSON protocol, shared by Python and Node.
//!
//! [`Kernel::start`] spawns the runtime's runner (`<python> -u runner.py`,
//! `<node> --expose-internals runner.js`; see [`crate::runtime`]) in its own
//! session, waits for the `ready` handshake, then runs the init request (the
//! cwd) and the runtime's prelude, if any. [`Kernel::execute`] sends a request and
//! returns an [`Execution`] that yields the request's events as they arrive.
//! One reader task owns every pipe from the runner ([`channel`]): it routes
//! frames by request id and turns the raw bytes of fd 1/2 into `Stdout`/
//! `Stderr` events of the running request. When the runner dies, what it wrote
//! is delivered first, then every pending execution receives
//! [`KernelError::Died`] with the exit status.

mod began;
pub mod bridge_relay;
pub mod channel;
pub mod control;
mod crash_dump;
pub mod extensions;
pub mod fork;
mod launch;
pub mod lifecycle;
pub mod pipe;
pub mod process;
pub mod progress;
mod queries;
mod reader;
mod snapshot;
mod types;
/// The preloading fork server (Unix; Windows has no `fork()` and spawns every kernel).
#[cfg(unix)]
pub mod zygote;
#[cfg(windows)]
#[path = "zygote/unsupported.rs"]
pub mod zygote;

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::sync::{mpsc, oneshot, watch};

use crate::protocol::{self, ExecuteRequest};
use crate::runtime::Runtime;
pub use process::ExitInfo;
use process::Signal;
pub use progress::{StartObserver, StartStage};
use reader::Reader;
pub use types::{
    CellDone, CellError, CellOutput, CheckReport, Completeness, ExecEvent, ExecuteOptions, Execution, KernelError,
    KernelOptions, ReadyInfo,
};
pub(crate) use types::{HandshakeError, execution_from};

/// Default bound on spawn → ready → init → prelude.
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(30);
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

type EventSender = mpsc::Sender<Result<ExecEvent, KernelError>>;

/// State shared by the handle and the background tasks.
struct Shared {
    pid: u32,
    runtime: Runtime,
    routes: Mutex<Routes>,
    exit: watch::Receiver<Option<ExitInfo>>,
    stderr_tail: Mutex<String>,
    trace: bool,
    /// The request pipe; also written by bridge answers while a cell runs.
    stdin: tokio::sync::Mutex<Option<pipe::Sender>>,
    /// Where the runner writes which request it began, read once it died.
    started_page: Option<began::StartedPage>,
    /// Who answers the cells' bridge calls ([`Kernel::set_bridge`]); `None`:
    /// they fail with "no bridge configured".
    bridge: Mutex<Option<bridge_relay::BridgeHook>>,
    bridge_state: Mutex<bridge_relay::BridgeState>,
    /// The kernel's temp dir and cgroups, kept while it lives; they also
    /// tell a death by the memory limit from any other.
    sandbox: crate::sandbox::SandboxGuard,
    /// The fork server this kernel came from, which reports its exit; let go
    /// once the kernel has ended (a retired fork server then ends too).
    zygote: Mutex<Option<Arc<zygote::Zygote>>>,
    /// That fork server's pid, or the kernel's this one is a fork of.
    forked_from: Option<u32>,
    /// The host's end of the control socket, which forks of this kernel go
    /// through (Python on Linux).
    #[cfg(unix)]
    control: Option<fork::Control>,
    /// How the kernel was started, for its forks (runtime, cwd, sandbox limits).
    options: KernelOptions,
    /// The runner's file, for crash dumps of its forks.
    #[cfg_attr(not(unix), allow(dead_code, reason = "kernels are forked on Unix only"))]
    runner: PathBuf,
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
    ready: Option<oneshot::Sender<Result<ReadyInfo, HandshakeError>>>,
}

/// A running Python kernel. Dropping it kills the process group.
pub struct Kernel {
    shared: Arc<Shared>,
    next_id: AtomicU64,
    ready: ReadyInfo,
    cwd: PathBuf,
    /// Where the kernel sees its workspace, when elsewhere than on the host:
    /// the folders it is sent are given as it sees them.
    view: Option<crate::sandbox::HomeView>,
}

impl Kernel {
    /// Start the runner (spawned, or forked from the fork server when
    /// `preload` is set: see [`launch`]), wait for it to be ready, run init and prelude.
    pub async fn start(options: KernelOptions) -> Result<Kernel, KernelError> {
        validate_cwd(&options.cwd)?;
        let cache = options.cache_dir.clone().unwrap_or_else(crate::paths::cache_root);
        let runtime = options.runtime;
        let Some(files) = runtime.runner() else {
            return Err(KernelError::StartupFailed {
                runtime,
                reason: "a Jupyter kernel is started from its kernelspec (crate::jupyter), not as a runner".into(),
                stderr_tail: String::new(),
            });
        };
        let runner = files
            .ensure_in(&cache)
            .map_err(|e| KernelError::RunnerInstall { path: cache.clone(), message: e.to_string() })?;

        let (child_ends, host_ends) = channel::create().map_err(|e| KernelError::Spawn {
            runtime,
            program: options.program.clone(),
            message: e.to_string(),
        })?;
        let launched = launch::launch(&options, &runner, child_ends).await?;
        let forked_from = launched.zygote.as_ref().map(|zygote| zygote.pid);
        let kernel = Kernel::attach(options, runner, launched, host_ends, forked_from).await?;
        let startup_timeout = kernel.shared.options.startup_timeout;
        let setup = async {
            kernel.run_internal(None, Some(kernel.seen(&kernel.cwd.display().to_string()))).await?;
            match runtime.prelude() {
                Some(prelude) => kernel.run_internal(Some(prelude), None).await,
                None => Ok(()),
            }
        };
        match tokio::time::timeout(startup_timeout, setup).await {
            Ok(Ok(())) => Ok(kernel),
            Ok(Err(e)) => Err(e),
            Err(_) => Err(KernelError::StartupTimeout {
                runtime,
                seconds: startup_timeout.as_secs(),
                stderr_tail: kernel.stderr_tail(),
            }),
        }
    }

    /// Read a launched (or forked) runner's pipes and wait for its `ready`.
    async fn attach(
        options: KernelOptions,
        runner: PathBuf,
        launched: launch::Launched,
        host_ends: channel::HostEnds,
        forked_from: Option<u32>,
    ) -> Result<Kernel, KernelError> {
        let runtime = options.runtime;
        let pid = launched.pid;
        let (ready_tx, ready_rx) = oneshot::channel();
        let roots = crash_dump::runner_roots(&runner);
        #[cfg(not(unix))]
        let _ = launched.control;
        let shared = Arc::new(Shared {
            pid,
            runtime,
            routes: Mutex::new(Routes { ready: Some(ready_tx), ..Default::default() }),
            exit: launched.exit,
            stderr_tail: Mutex::new(String::new()),
            trace: options.trace,
            stdin: tokio::sync::Mutex::new(Some(launched.requests)),
            started_page: launched.started_page,
            bridge: Mutex::new(None),
            bridge_state: Mutex::new(bridge_relay::BridgeState::default()),
            sandbox: launched.guard,
            forked_from,
            zygote: Mutex::new(launched.zygote),
            #[cfg(unix)]
            control: launched.control.map(fork::Control::new),
            cells: Mutex::default(),
            runner,
            options,
        });
        let options = &shared.options;
        let stderr_task = tokio::spawn(Reader::new(shared.clone(), roots).run(host_ends));

        let kill_guard = KillGuard(pid);
        let ready = match tokio::time::timeout(options.startup_timeout, ready_rx).await {
            Ok(Ok(Ok(ready))) => ready,
            Ok(Ok(Err(refused))) => {
                return Err(KernelError::StartupFailed {
                    runtime,
                    reason: refused.to_string(),
                    stderr_tail: shared.tail_after(stderr_task).await,
                });
            }
            Ok(Err(_)) => {
                let reason = match shared.wait_exit(Duration::from_secs(2)).await {
                    Some(exit) => format!("it exited before the handshake ({exit})"),
                    None => "it closed its output before the handshake".to_string(),
                };
                return Err(KernelError::StartupFailed {
                    runtime,
                    reason,
                    stderr_tail: shared.tail_after(stderr_task).await,
                });
            }
            Err(_) => {
                drop(kill_guard);
                return Err(KernelError::StartupTimeout {
                    runtime,
                    seconds: options.startup_timeout.as_secs(),
                    stderr_tail: shared.tail_after(stderr_task).await,
                });
            }
        };
        std::mem::forget(kill_guard);
        let cwd = options.cwd.clone();
        let view = crate::sandbox::home_view(&options.sandbox, &cwd);
        Ok(Kernel { shared, next_id: AtomicU64::new(1), ready, cwd, view })
    }

    /// Run host-internal code (init, prelude); a Python error fails startup.
    async fn run_internal(&self, code: Option<&str>, cwd: Option<String>) -> Result<(), KernelError> {
        let options = ExecuteOptions { silent: true, internal: true, cwd, ..Default::default() };
        let output = self.execute_with(code.unwrap_or(""), options).await?.collect().await?;
        match output.errors().first() {
            None => Ok(()),
            Some(error) => Err(KernelError::StartupFailed {
                runtime: self.shared.runtime,
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
            cwd: options.cwd.map(|cwd| self.seen(&cwd)),
            env: options.env,
            typescript: options.typescript,
            restore_env: options.restore_env,
            json_results: options.json_results,
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
        Ok(execution_from(id, events))
    }

    /// The error to report once the runner is gone.
    async fn death_error(&self) -> KernelError {
        let exit = self.shared.wait_exit(Duration::from_secs(2)).await;
        if let Some(error) = self.shared.routes.lock().unwrap().dead.clone() {
            return error;
        }
        match exit {
            Some(exit) => KernelError::Died {
                runtime: self.shared.runtime,
                exit: self.shared.describe_exit(exit),
                stderr_tail: self.stderr_tail(),
            },
            None => KernelError::Closed,
        }
    }

    /// Interrupt the running cell: SIGINT to the process group on Unix; on
    /// Windows, which has no such signal, an `interrupt` frame on the request
    /// pipe. Between cells the runner ignores either.
    pub fn interrupt(&self) -> Result<(), KernelError> {
        if !self.is_alive() {
            return Err(KernelError::Closed);
        }
        #[cfg(unix)]
        let _ = process::signal_group(self.shared.pid, Signal::SIGINT);
        #[cfg(windows)]
        {
            let shared = self.shared.clone();
            tokio::spawn(async move { shared.write_line(&protocol::HostRequest::Interrupt.encode()).await });
        }
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
                let _ = pipe.write_all(protocol::HostRequest::Exit.encode().as_bytes()).await;
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
    pub fn set_bridge(&self, hook: bridge_relay::BridgeHook) {
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

    /// The working directory the kernel started in (its path on the host).
    pub fn cwd(&self) -> &std::path::Path {
        &self.cwd
    }

    /// A folder on the host as the kernel sees it (see [`crate::sandbox::HomeView`]).
    fn seen(&self, path: &str) -> String {
        match &self.view {
            Some(view) => view.seen(std::path::Path::new(path)).display().to_string(),
            None => path.to_string(),
        }
    }

    /// The last lines the runner process wrote to its own stderr.
    pub fn stderr_tail(&self) -> String {
        self.shared.stderr_tail.lock().unwrap().clone()
    }

    /// The hosts its network proxy refused since the last time this was
    /// asked (one each), and the connections it allowed and refused meanwhile.
    pub fn network_decisions(&self) -> (Vec<crate::sandbox::Refusal>, u64, u64) {
        match self.shared.sandbox.network_log() {
            Some(log) => {
                let (allowed, refused) = log.take_counts();
                (log.take_refusals(), allowed, refused)
            }
            None => (Vec::new(), 0, 0),
        }
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
        process::release(self.shared.pid);
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
        bridge_relay::cancel(self, cell, why);
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

impl bridge_relay::CallSink for Shared {
    fn calls(&self) -> &Mutex<bridge_relay::BridgeState> {
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
    if process::group_exists(pid) {
        let _ = process::signal_group(pid, Signal::SIGTERM);
        let deadline = tokio::time::Instant::now() + process::SWEEP_GRACE;
        while process::group_exists(pid) && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let _ = process::signal_group(pid, Signal::SIGKILL);
    }
    process::release(pid);
}
