//! The preloading fork server ("zygote"): one Python process per
//! (interpreter, preload list, environment, runner files, sandbox) that has
//! imported the preload modules once and forks new kernels on request, so a
//! kernel starts with `pandas` already in `sys.modules` for the price of a
//! `fork()`.
//!
//! The host creates each kernel's pipes exactly as for a spawn and hands the
//! child's ends (with the control socket and the started page on Linux) to
//! the zygote over a Unix socket ([`wire`]); the child puts them at fd 0–4
//! (0–6 with those two), applies the kernel's environment, cwd, `sys.path` and
//! `sys.argv`, takes fresh random state and runs the runner's normal main.
//! The zygote is the kernels' parent: it reaps them and reports each exit, so
//! the kernel's exit watcher, its "kernel died" message and the process-group
//! kills work as for a spawned kernel (each child leads its own session).
//!
//! Lifetime: the registry holds each zygote, and every kernel forked from it
//! holds it too (its exit arrives through it). A zygote whose inputs changed
//! is dropped from the registry and ends once its last kernel is gone; one
//! that nobody holds closes its socket, and the zygote exits at end of file.
//! The zygote also exits when the host dies (the socket closes).
//!
//! Where a zygote cannot be used, kernels are spawned as before and the reason
//! is logged once per configuration: not Linux (a fork of a process that has
//! touched macOS system frameworks is unsafe), a preload that fails to import
//! or leaves threads running, a sandbox whose per-kernel part the host cannot
//! apply to a forked process (rlimit fallbacks), or a zygote that would not start.

pub(super) mod wire;

use std::collections::BTreeMap;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nix::sys::socket::{AddressFamily, SockFlag, SockType, socketpair};
use tokio::sync::{OnceCell, oneshot, watch};

use super::KernelOptions;
use super::channel::ChildEnds;
use super::process::ExitInfo;
use crate::notice::warn_once;
use crate::sandbox::{SandboxError, SandboxGuard, SandboxPolicy};

/// The fd the zygote finds its socket on.
const SOCKET_FD: i32 = 3;
/// Zygotes kept at once (the least recently used is retired beyond this).
const MAX_ZYGOTES: usize = 8;
/// How much of the zygote's own stderr is kept for error messages.
const STDERR_TAIL: usize = 4096;

/// Why the fork server could not start or fork a kernel, by cause: the kernel is then spawned
/// instead, and the text is logged (and kept for [`problems`]).
#[derive(Debug, thiserror::Error)]
pub enum ZygoteError {
    /// The fork server's own words: its `failed` or `fork_failed` message.
    #[error("{message}")]
    Said { message: String },
    /// Its socket reached end of file.
    #[error("the fork server exited")]
    Exited,
    #[error("reading from the fork server failed: {source}")]
    Read { source: nix::errno::Errno },
    /// It was gone before a request could be sent, or before it answered.
    #[error("the fork server has exited")]
    Gone,
    /// The fork request could not be encoded.
    #[error(transparent)]
    Encode(serde_json::Error),
    #[error("could not reach the fork server: {source}")]
    Send { source: std::io::Error },
    #[error("the fork server did not answer within {seconds}s")]
    NoAnswer { seconds: u64 },
    #[error("the fork server for --preload {modules} could not start: {source}")]
    Sandbox { modules: String, source: SandboxError },
    #[error("the fork server for --preload {modules} could not start: {source}")]
    Socket { modules: String, source: nix::errno::Errno },
    #[error("the fork server for --preload {modules} could not start: {program}: {source}")]
    Spawn { modules: String, program: PathBuf, source: std::io::Error },
    /// The thread that reads its socket could not be set up.
    #[error("the fork server for --preload {modules} could not start: {source}")]
    Reader { modules: String, source: std::io::Error },
    /// It said it cannot serve, or its socket ended (`why`); `stderr` is the tail of its stderr.
    #[error("the fork server for --preload {modules} could not start: {why}{}", stderr_note(.stderr))]
    Failed {
        modules: String,
        #[source]
        why: Box<ZygoteError>,
        stderr: String,
    },
    #[error(
        "the fork server for --preload {modules} could not start: it ended without a word{}",
        stderr_note(.stderr)
    )]
    Silent { modules: String, stderr: String },
    #[error("the fork server for --preload {modules} could not start: it was not ready within {seconds}s")]
    NotReady { modules: String, seconds: u64 },
}

/// `. Its stderr ended with: …` when the fork server wrote anything to stderr.
fn stderr_note(tail: &str) -> String {
    if tail.trim().is_empty() { String::new() } else { format!(". Its stderr ended with:\n{}", tail.trim_end()) }
}

/// Everything that makes two zygotes interchangeable. The cwd takes part only
/// under a filesystem or network sandbox, whose rules name the workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Key {
    program: PathBuf,
    preload: Vec<String>,
    env: BTreeMap<String, String>,
    runner: PathBuf,
    sandbox: SandboxPolicy,
    cwd: Option<PathBuf>,
}

impl Key {
    fn new(options: &KernelOptions, runner: &Path) -> Key {
        let sandbox = zygote_policy(&options.sandbox);
        let cwd = (!sandbox.is_off()).then(|| options.cwd.clone());
        Key {
            program: options.program.clone(),
            preload: options.preload.clone(),
            env: options.env.clone(),
            runner: runner.to_path_buf(),
            sandbox,
            cwd,
        }
    }

    /// The same interpreter, environment and place with another preload
    /// list, runner or sandbox: when it comes, this one's zygote is retired
    /// (its inputs changed).
    fn same_slot(&self, other: &Key) -> bool {
        self.program == other.program && self.env == other.env && self.cwd == other.cwd
    }
}

/// The part of the policy the zygote itself runs under (and its children
/// inherit): files and network. Memory and process limits are per kernel.
fn zygote_policy(policy: &SandboxPolicy) -> SandboxPolicy {
    SandboxPolicy { memory_limit: None, max_processes: None, ..policy.clone() }
}

/// The per-kernel part: the limits alone.
pub(in crate::kernel) fn limits_policy(policy: &SandboxPolicy) -> SandboxPolicy {
    SandboxPolicy { memory_limit: policy.memory_limit, max_processes: policy.max_processes, ..SandboxPolicy::off() }
}

type Slot = Arc<OnceCell<Result<Arc<Zygote>, ZygoteError>>>;

/// Every zygote of this process, by configuration.
static REGISTRY: Mutex<Vec<(Key, Slot)>> = Mutex::new(Vec::new());
/// Configurations whose zygote could not be had, and why: they are spawned
/// from then on without asking again (the reason is shown once).
static FAILED: Mutex<Vec<(Key, String)>> = Mutex::new(Vec::new());

/// A running fork server.
pub struct Zygote {
    /// The zygote's pid (the parent of every kernel forked from it).
    pub pid: u32,
    socket: Mutex<OwnedFd>,
    routes: Arc<wire::Routes>,
    next_id: AtomicU64,
    /// Variables every child gets on top of the kernel's (the sandbox's TMPDIR, mode).
    child_env: Vec<(String, String)>,
    /// The zygote's sandbox temp dir, kept while it lives.
    _guard: SandboxGuard,
}

impl std::fmt::Debug for Zygote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Zygote").field("pid", &self.pid).finish()
    }
}

impl Drop for Zygote {
    fn drop(&mut self) {
        // End of file for the zygote, which then exits; the reader thread
        // sees it too and reaps the process.
        let socket = self.socket.lock().unwrap();
        let _ = nix::sys::socket::shutdown(socket.as_raw_fd(), nix::sys::socket::Shutdown::Both);
    }
}

/// A kernel forked from a zygote.
pub struct ForkedKernel {
    /// The kernel's pid, which also leads its own session and process group.
    pub pid: u32,
    /// Receives the exit status the zygote reports (it is the parent).
    pub exit: watch::Receiver<Option<ExitInfo>>,
    /// Keeps the zygote (which reports the exit) alive as long as the kernel.
    pub zygote: Arc<Zygote>,
    /// The kernel's own cgroups, when limits are set.
    pub guard: SandboxGuard,
}

/// Why no zygote is used for a start; logged once per configuration.
fn unavailable(options: &KernelOptions) -> Option<String> {
    if !cfg!(target_os = "linux") {
        return Some(format!("{} (kernels are spawned, and import the preload modules themselves)", platform_note()));
    }
    if options.runtime != crate::runtime::Runtime::Python {
        return Some("only Python kernels are forked".into());
    }
    None
}

/// What `cellbox setup python --check` says about preloading on this OS.
pub fn platform_note() -> &'static str {
    if cfg!(target_os = "linux") {
        "preloaded kernels (--preload) are forked from a fork server"
    } else {
        "--preload is not used on this OS: forking a process that has loaded system frameworks is unsafe on \
         macOS, so every kernel is spawned"
    }
}

/// Fork a kernel for `options` from its zygote (started when needed), with
/// `ends` as its pipes and `stdin` as its request pipe. `Ok(None)`: no zygote
/// for these options (the caller spawns; the reason was logged once).
pub async fn fork(
    options: &KernelOptions,
    runner: &Path,
    argv: &[String],
    ends: &ChildEnds,
    stdin: &std::io::PipeReader,
    control: Option<&OwnedFd>,
    started_page: Option<&std::fs::File>,
) -> Option<ForkedKernel> {
    debug_assert!(
        started_page.is_none() || control.is_some(),
        "the started page goes at fd 6, after the control socket"
    );
    if options.preload.is_empty() {
        return None;
    }
    if let Some(reason) = unavailable(options) {
        warn_once(&format!("not preloading {}: {reason}", options.preload.join(",")));
        return None;
    }
    let limits = limits_policy(&options.sandbox);
    let prepared = if limits.is_off() {
        None
    } else {
        match crate::sandbox::prepare(&limits, &options.cwd, &options.env) {
            Ok(prepared) if prepared.only_cgroups() => Some(prepared),
            Ok(_) => {
                warn_once(
                    "not preloading: the memory/process limits here are rlimits or need a user namespace, which a \
                     forked kernel cannot be given from the host; kernels are spawned",
                );
                return None;
            }
            // The spawn reports the same error in full.
            Err(_) => return None,
        }
    };
    let key = Key::new(options, runner);
    let zygote = acquire(&key, options, runner).await?;
    let mut env = options.env.clone();
    env.extend(zygote.child_env.iter().cloned());
    // After the five pipes: the control socket (fd 5), then the started page
    // (fd 6), which comes only with a control socket.
    let extra: Vec<_> =
        control.map(AsRawFd::as_raw_fd).into_iter().chain(started_page.map(AsRawFd::as_raw_fd)).collect();
    let (pid, exit) = match zygote.fork(options, argv, env, ends, stdin, &extra).await {
        Ok(forked) => forked,
        Err(message) => {
            tracing::warn!("the fork server could not fork a kernel ({message}); spawning it instead");
            forget(&key);
            return None;
        }
    };
    let mut guard = SandboxGuard::default();
    if let Some(prepared) = prepared {
        if let Err(error) = prepared.move_process(pid) {
            // Its own group once it has called setsid(); the pid itself before that.
            let _ = super::process::signal_group(pid, super::process::Signal::SIGKILL);
            let _ = super::process::signal_pid(pid, super::process::Signal::SIGKILL);
            tracing::warn!("could not move a forked kernel into its cgroup ({error}); spawning it instead");
            return None;
        }
        guard = prepared.guard;
    }
    // A forked kernel is in its zygote's network namespace: its proxies are the zygote's.
    let guard = guard.with_network_of(&zygote._guard);
    Some(ForkedKernel { pid, exit, zygote, guard })
}

/// The zygote for `key`, started on first use; `None` when it cannot be had
/// (the reason is logged the first time and kept, see [`problems`]).
async fn acquire(key: &Key, options: &KernelOptions, runner: &Path) -> Option<Arc<Zygote>> {
    if FAILED.lock().unwrap().iter().any(|(failed, _)| failed == key) {
        return None;
    }
    let slot = {
        let mut registry = REGISTRY.lock().unwrap();
        // Inputs changed for this interpreter and place: the old zygote is
        // retired (it ends with its last kernel).
        registry.retain(|(other, _)| other == key || !other.same_slot(key));
        let slot = match registry.iter().position(|(other, _)| other == key) {
            // The most recently used stays last.
            Some(index) => registry.remove(index).1,
            None => Slot::default(),
        };
        registry.push((key.clone(), slot.clone()));
        if registry.len() > MAX_ZYGOTES {
            registry.remove(0);
        }
        slot
    };
    let started = slot
        .get_or_init(|| async {
            let started = Zygote::start(options, runner).await;
            if let Err(message) = &started {
                tracing::warn!("{message}; kernels are spawned without preloading instead");
                FAILED.lock().unwrap().push((key.clone(), message.to_string()));
                REGISTRY.lock().unwrap().retain(|(other, _)| other != key);
            }
            started
        })
        .await;
    started.as_ref().ok().cloned()
}

/// Why preloading failed, once per configuration that was tried (newest last).
pub fn problems() -> Vec<String> {
    FAILED.lock().unwrap().iter().map(|(_, message)| message.clone()).collect()
}

/// Drop `key`'s zygote from the registry (it failed; the next start makes a new one).
fn forget(key: &Key) {
    REGISTRY.lock().unwrap().retain(|(other, _)| other != key);
}

/// Let go of every zygote: each ends once the kernels forked from it are
/// gone (engine shutdown). A later preloaded start makes a new one.
pub fn release_all() {
    let slots: Vec<(Key, Slot)> = std::mem::take(&mut *REGISTRY.lock().unwrap());
    drop(slots);
}

/// The pids of the running zygotes (for diagnostics and tests).
pub fn pids() -> Vec<u32> {
    let registry = REGISTRY.lock().unwrap();
    registry.iter().filter_map(|(_, slot)| slot.get().and_then(|z| z.as_ref().ok()).map(|z| z.pid)).collect()
}

/// The host's socket to a zygote is not inherited by anything else it spawns.
#[cfg(target_os = "linux")]
const SOCKET_FLAGS: SockFlag = SockFlag::SOCK_CLOEXEC;
/// Kernels are never forked off Linux (see [`platform_note`]); this only has to compile.
#[cfg(not(target_os = "linux"))]
const SOCKET_FLAGS: SockFlag = SockFlag::empty();

impl Zygote {
    /// Start the zygote under the files/network part of the sandbox and wait
    /// until it has imported the preload modules (or said why it cannot).
    async fn start(options: &KernelOptions, runner: &Path) -> Result<Arc<Zygote>, ZygoteError> {
        let modules = options.preload.join(",");
        let policy = zygote_policy(&options.sandbox);
        let mut sandbox = crate::sandbox::prepare(&policy, &options.cwd, &options.env)
            .map_err(|source| ZygoteError::Sandbox { modules: modules.clone(), source })?;
        let (host, child) = socketpair(AddressFamily::Unix, SockType::SeqPacket, None, SOCKET_FLAGS)
            .map_err(|source| ZygoteError::Socket { modules: modules.clone(), source })?;
        let cwd = if policy.is_off() { PathBuf::from("/") } else { options.cwd.clone() };
        let mut command = std::process::Command::new(&options.program);
        command
            .arg("-u")
            .arg(runner)
            .arg("--zygote")
            .arg("--zygote-fd")
            .arg(SOCKET_FD.to_string())
            .arg("--host-pid")
            .arg(std::process::id().to_string())
            .arg("--preload")
            .arg(&modules)
            .current_dir(&cwd)
            .env_clear()
            .envs(&options.env)
            .envs(sandbox.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let child_fd = child.as_raw_fd();
        let guard = std::mem::take(&mut sandbox.guard);
        let child_env = sandbox.env.clone();
        let sandbox = Arc::new(sandbox);
        let child_sandbox = sandbox.clone();
        // SAFETY: only async-signal-safe calls (setsid, the sandbox's system
        // calls, fcntl, dup2, close) between fork and exec.
        unsafe {
            use std::os::unix::process::CommandExt;
            command.pre_exec(move || {
                child_sandbox.enter_in_child()?;
                let high = libc::fcntl(child_fd, libc::F_DUPFD, 10);
                if high < 0 || libc::dup2(high, SOCKET_FD) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                libc::close(high);
                Ok(())
            });
        }
        let spawned = command.spawn();
        drop(command);
        drop(sandbox);
        drop(child);
        let mut process = spawned.map_err(|source| ZygoteError::Spawn {
            modules: modules.clone(),
            program: options.program.clone(),
            source,
        })?;
        let stderr_tail = Arc::new(Mutex::new(String::new()));
        if let Some(mut stderr) = process.stderr.take() {
            let tail = stderr_tail.clone();
            std::thread::spawn(move || {
                use std::io::Read;
                let mut buffer = [0u8; 4096];
                while let Ok(n) = stderr.read(&mut buffer) {
                    if n == 0 {
                        break;
                    }
                    let mut tail = tail.lock().unwrap();
                    tail.push_str(&String::from_utf8_lossy(&buffer[..n]));
                    if tail.len() > STDERR_TAIL {
                        let mut cut = tail.len() - STDERR_TAIL;
                        while !tail.is_char_boundary(cut) {
                            cut += 1;
                        }
                        tail.drain(..cut);
                    }
                }
            });
        }
        let routes = Arc::new(wire::Routes::default());
        let (ready_tx, ready_rx) = oneshot::channel();
        *routes.ready.lock().unwrap() = Some(ready_tx);
        let reader_socket =
            host.try_clone().map_err(|source| ZygoteError::Reader { modules: modules.clone(), source })?;
        let reader_routes = routes.clone();
        std::thread::Builder::new()
            .name("cellbox-zygote".into())
            .spawn(move || {
                wire::read_loop(reader_socket, &reader_routes);
                let _ = process.kill();
                let _ = process.wait();
            })
            .map_err(|source| ZygoteError::Reader { modules: modules.clone(), source })?;
        let mut zygote =
            Zygote { pid: 0, socket: Mutex::new(host), routes, next_id: AtomicU64::new(1), child_env, _guard: guard };
        let answer = tokio::time::timeout(options.startup_timeout, ready_rx).await;
        let tail = || stderr_tail.lock().unwrap().clone();
        match answer {
            Ok(Ok(Ok(pid))) => {
                zygote.pid = pid;
                Ok(Arc::new(zygote))
            }
            Ok(Ok(Err(why))) => {
                // Give the stderr reader a moment to collect the interpreter's own words.
                tokio::time::sleep(Duration::from_millis(50)).await;
                Err(ZygoteError::Failed { modules, why: Box::new(why), stderr: tail() })
            }
            Ok(Err(_)) => Err(ZygoteError::Silent { modules, stderr: tail() }),
            Err(_) => Err(ZygoteError::NotReady { modules, seconds: options.startup_timeout.as_secs() }),
        }
    }

    /// Ask for a child with `ends` as its pipes; its pid and exit watch.
    async fn fork(
        &self,
        options: &KernelOptions,
        argv: &[String],
        env: BTreeMap<String, String>,
        ends: &ChildEnds,
        stdin: &std::io::PipeReader,
        extra: &[std::os::fd::RawFd],
    ) -> Result<wire::Forked, ZygoteError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let request = crate::protocol::fork_server::Request::Fork(crate::protocol::fork_server::Fork {
            id,
            cwd: Some(crate::sandbox::seen_cwd(&options.sandbox, &options.cwd)),
            env: Some(env),
            argv: Some(argv.to_vec()),
        });
        let body = request.encode().map_err(ZygoteError::Encode)?;
        let answer = self.routes.expect_fork(id).ok_or(ZygoteError::Gone)?;
        let mut fds = vec![
            stdin.as_raw_fd(),
            ends.stdout.as_raw_fd(),
            ends.stderr.as_raw_fd(),
            ends.frames.as_raw_fd(),
            ends.diagnostics.as_raw_fd(),
        ];
        fds.extend_from_slice(extra);
        let sent = {
            let socket = self.socket.lock().unwrap();
            wire::send(socket.as_raw_fd(), &body, &fds)
        };
        if let Err(error) = sent {
            self.routes.forget_fork(id);
            return Err(ZygoteError::Send { source: error });
        }
        match tokio::time::timeout(options.startup_timeout, answer).await {
            Ok(Ok(result)) => result,
            Ok(Err(_)) => Err(ZygoteError::Gone),
            Err(_) => Err(ZygoteError::NoAnswer { seconds: options.startup_timeout.as_secs() }),
        }
    }
}
