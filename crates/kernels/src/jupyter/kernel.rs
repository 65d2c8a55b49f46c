//! [`JupyterKernel`]: an installed Jupyter kernel started from its kernelspec
//! as a local process, under the same sandbox as cellbox's own kernels, and
//! spoken to over ZeroMQ with signed messages.
//!
//! The host writes the connection file (a fresh HMAC key; `ipc` transport)
//! into a folder of the kernel's private temp dir, where the kernel binds its
//! five sockets. Unix sockets work across the network namespace a sandboxed
//! kernel lives in, and only the kernel and the host can reach them. The
//! kernel could swap a socket for a symlink to some other socket, so on
//! Linux the host opens each socket itself without following symlinks
//! (`O_PATH | O_NOFOLLOW`, from the folder's own descriptor), checks that it
//! is a socket, and connects through `/proc/self/fd/N`: it never reaches a
//! socket the kernel could not reach.
//!
//! Once the sockets are up, `kernel_info_request`s go out until a reply and
//! an IOPub message came back (IOPub drops what is published before its
//! subscription is in place). Then every message is routed as a gateway
//! kernel's are ([`super::route`]). Heartbeats are sent while the kernel
//! runs nothing: some kernels (IRkernel) answer them from their main loop,
//! so a long cell would look like a dead kernel. A kernel that stops
//! answering while idle (stopped, or wedged) is declared dead and killed.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use serde_json::{Value, json};
use tokio::io::AsyncReadExt;
use tokio::sync::{Notify, mpsc, watch};
use zeromq::prelude::*;

use super::Outgoing;
use super::requests::{Requests, fail_pending, new_session_id};
use super::route::{Routes, Shared, route};
use super::spec::{InterruptMode, KernelSpec};
use super::wire::Signer;
use crate::kernel::process::{ExitInfo, Signal, signal_group};
use crate::kernel::{Completeness, ExecuteOptions, Execution, KernelError, KernelOptions};
use crate::runtime::Runtime;

/// The channels, in the order of their port numbers in the connection file.
const CHANNELS: [&str; 5] = ["shell", "iopub", "stdin", "control", "hb"];
/// How much of the kernel's own stdout and stderr is kept, for the reason it died.
const TAIL_BYTES: usize = 8 << 10;
/// How often `kernel_info_request` is repeated until the kernel answers on both channels.
const READY_REPEAT: Duration = Duration::from_millis(250);
/// After `shutdown_request`, how long the kernel gets to leave by itself.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// How an idle kernel's heartbeat is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Heartbeat {
    /// Time between pings, and the most a ping waits for its echo.
    pub interval: Duration,
    /// Echoes missed in a row (while idle) before the kernel is declared dead.
    pub misses: u32,
}

impl Default for Heartbeat {
    fn default() -> Self {
        Heartbeat { interval: Duration::from_secs(5), misses: 3 }
    }
}

/// A Jupyter kernel run from its kernelspec. Dropping it kills its process group.
pub struct JupyterKernel {
    spec: KernelSpec,
    requests: Requests,
    pid: u32,
    cwd: PathBuf,
    language_info: Value,
    exit: watch::Receiver<Option<ExitInfo>>,
    tail: Arc<Mutex<Vec<u8>>>,
    stopped: AtomicBool,
    interrupts: Arc<AtomicU64>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    _sockets: Sockets,
    _short: ShortName,
    _folder: tempfile::TempDir,
    _guard: crate::sandbox::SandboxGuard,
}

impl std::fmt::Debug for JupyterKernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JupyterKernel")
            .field("kernel", &self.spec.name)
            .field("pid", &self.pid)
            .field("alive", &self.is_alive())
            .finish()
    }
}

fn startup_failed(spec: &KernelSpec, reason: impl std::fmt::Display, tail: &str) -> KernelError {
    KernelError::StartupFailed {
        runtime: Runtime::Jupyter,
        reason: format!("{} ({}): {reason}", spec.display_name, spec.name),
        stderr_tail: tail.to_string(),
    }
}

impl JupyterKernel {
    /// Start `spec`'s kernel in `options.cwd` with `options.env` under
    /// `options.sandbox`, and wait until it answers (within `options.startup_timeout`).
    pub async fn start(options: KernelOptions, spec: KernelSpec) -> Result<JupyterKernel, KernelError> {
        JupyterKernel::start_with(options, spec, Heartbeat::default()).await
    }

    /// [`JupyterKernel::start`] with the heartbeat checked as `heartbeat` says.
    pub async fn start_with(
        options: KernelOptions,
        spec: KernelSpec,
        heartbeat: Heartbeat,
    ) -> Result<JupyterKernel, KernelError> {
        crate::kernel::validate_cwd(&options.cwd)?;
        if cfg!(not(unix)) {
            return Err(startup_failed(&spec, "Jupyter kernels from kernelspecs run on Linux and macOS only", ""));
        }
        crate::sandbox::announce(&options.sandbox);
        // The kernelspec's program, started as cellbox starts its own kernels
        // (sandbox, session, environment, and the working folder as the kernel sees it).
        let mut env = options.env.clone();
        env.extend(spec.env.clone());
        let (command, guard) =
            crate::sandbox::command_like_a_kernel(&spec.program(), &options.sandbox, &options.cwd, &env)?;
        let folder = match guard.temp_dir() {
            Some(temp) => tempfile::Builder::new().prefix("jupyter-").tempdir_in(temp),
            None => tempfile::Builder::new().prefix("cellbox-jupyter-").tempdir(),
        }
        .map_err(|e| startup_failed(&spec, format!("could not make its connection folder: {e}"), ""))?;
        let mut key = [0u8; 32];
        getrandom::fill(&mut key).map_err(|e| startup_failed(&spec, format!("no random key: {e}"), ""))?;
        let key: String = key.iter().map(|b| format!("{b:02x}")).collect();
        let connection_file = folder.path().join("connection.json");
        let short = ShortName::for_folder(folder.path())
            .map_err(|e| startup_failed(&spec, format!("could not name its sockets: {e}"), ""))?;
        let mut connection = json!({
            "transport": "ipc", "ip": short.path().join("k").to_string_lossy(),
            "key": key, "signature_scheme": "hmac-sha256", "kernel_name": spec.name,
        });
        for (port, channel) in CHANNELS.iter().enumerate() {
            connection[format!("{channel}_port")] = json!(port + 1);
        }
        write_private(&connection_file, &serde_json::to_vec_pretty(&connection).unwrap_or_default())
            .map_err(|e| startup_failed(&spec, format!("could not write its connection file: {e}"), ""))?;

        let argv = spec.command(&connection_file);
        let (pid, exit, tail) = spawn(command, &spec, &argv)?;
        let kill = || {
            let _ = signal_group(pid, Signal::SIGKILL);
        };
        let connected = tokio::time::timeout(options.startup_timeout, async {
            let sockets = Sockets::wait_for(folder.path(), exit.clone()).await?;
            let mut channels = Channels::connect(&sockets, &new_session_id()).await?;
            let signer = Signer::new(key.as_bytes());
            let language_info = channels.handshake(&signer, exit.clone()).await?;
            Ok::<_, String>((sockets, channels, signer, language_info))
        })
        .await;
        let (sockets, channels, signer, language_info) = match connected {
            Ok(Ok(connected)) => connected,
            Ok(Err(reason)) => {
                kill();
                let reason = match *exit.borrow() {
                    Some(exit) => format!("it exited ({exit}) before it answered"),
                    None => reason,
                };
                return Err(startup_failed(&spec, reason, &tail_text(&tail)));
            }
            Err(_) => {
                kill();
                return Err(KernelError::StartupTimeout {
                    runtime: Runtime::Jupyter,
                    seconds: options.startup_timeout.as_secs(),
                    stderr_tail: tail_text(&tail),
                });
            }
        };
        let (outgoing, queue) = mpsc::unbounded_channel();
        let shared = Arc::new(Shared {
            routes: Mutex::new(Routes::default()),
            bridge: None,
            drop_for_test: Notify::new(),
            progress: Notify::new(),
        });
        let requests = Requests::new(channels.session.clone(), outgoing, shared.clone());
        let tasks = channels.run(
            signer,
            requests.outgoing.clone(),
            queue,
            shared.clone(),
            Watch { pid, exit: exit.clone(), tail: tail.clone(), spec: spec.clone(), heartbeat },
        );
        Ok(JupyterKernel {
            spec,
            requests,
            pid,
            cwd: options.cwd,
            language_info,
            exit,
            tail,
            stopped: AtomicBool::new(false),
            interrupts: Arc::new(AtomicU64::new(0)),
            tasks,
            _sockets: sockets,
            _short: short,
            _folder: folder,
            _guard: guard,
        })
    }

    /// Send an `execute_request`; its events arrive on the returned [`Execution`].
    /// Per-cell variables and working folders are cellbox runners' own: a
    /// Jupyter kernel has no way to take them, so a cell that sets them is refused.
    pub async fn execute_with(&self, code: &str, options: ExecuteOptions) -> Result<Execution, KernelError> {
        if options.env.as_ref().is_some_and(|env| !env.is_empty()) || options.cwd.is_some() {
            return Err(KernelError::Protocol(format!(
                "{} ({}) cells take no per-cell environment variables or working folder: set them in the \
                 cell's own code, or in the session's environment",
                self.spec.display_name, self.spec.name
            )));
        }
        self.requests.execute_with(code, options)
    }

    /// Ask the kernel whether `code` is a whole cell yet.
    pub async fn check_complete(&self, code: &str) -> Result<Completeness, KernelError> {
        self.requests.check_complete(code).await
    }

    /// Interrupt the running cell as the kernelspec asks: SIGINT to the
    /// kernel's process group, or an `interrupt_request` on the control channel;
    /// repeated every second until the cell ends.
    pub fn interrupt(&self) -> Result<(), KernelError> {
        let pid = self.pid;
        match self.spec.interrupt_mode {
            InterruptMode::Signal => self.requests.interrupt_with(move || async move {
                let _ = signal_group(pid, Signal::SIGINT);
            }),
            InterruptMode::Message => {
                let (outgoing, session) = (self.requests.outgoing.clone(), self.requests.session_id.clone());
                let count = self.interrupts.clone();
                self.requests.interrupt_with(move || {
                    let number = count.fetch_add(1, Ordering::Relaxed);
                    let message = control_message(&session, &format!("interrupt_{number}"), "interrupt_request");
                    let _ = outgoing.send(Outgoing::Message(message));
                    async {}
                })
            }
        }
    }

    /// Whether the kernel can still run cells.
    pub fn is_alive(&self) -> bool {
        self.requests.is_alive() && self.exit.borrow().is_none()
    }

    /// Why the kernel stopped, once it has.
    pub fn death_reason(&self) -> Option<String> {
        self.requests.death_reason().or_else(|| self.exit.borrow().map(|exit| exit.to_string()))
    }

    /// Stop the kernel: `shutdown_request`, then SIGTERM and SIGKILL to its
    /// process group if it does not leave. Idempotent.
    pub async fn shutdown(&self) -> Option<ExitInfo> {
        if self.stopped.swap(true, Ordering::SeqCst) {
            return *self.exit.borrow();
        }
        self.requests.close();
        let message = control_message(&self.requests.session_id, "shutdown", "shutdown_request");
        let mut message = message;
        message["content"] = json!({ "restart": false });
        let _ = self.requests.outgoing.send(Outgoing::Message(message));
        let exit = self.stop_within(SHUTDOWN_GRACE).await;
        for task in &self.tasks {
            task.abort();
        }
        exit
    }

    /// Stop a kernel that ignored an interrupt, without the polite step.
    pub async fn terminate_stuck(&self) -> Option<ExitInfo> {
        self.stopped.store(true, Ordering::SeqCst);
        self.requests.close();
        let exit = self.stop_within(Duration::ZERO).await;
        for task in &self.tasks {
            task.abort();
        }
        exit
    }

    /// Wait `grace` for the kernel to exit, then SIGTERM, then SIGKILL its group.
    async fn stop_within(&self, grace: Duration) -> Option<ExitInfo> {
        let mut exit = self.exit.clone();
        let waited = |limit: Duration| {
            let mut exit = exit.clone();
            async move { tokio::time::timeout(limit, exit.wait_for(Option::is_some)).await.is_ok() }
        };
        if !waited(grace).await {
            let _ = signal_group(self.pid, Signal::SIGTERM);
            if !waited(crate::kernel::process::STUCK_TERM_GRACE).await {
                let _ = signal_group(self.pid, Signal::SIGKILL);
            }
        }
        // Whatever its cells started in its group goes with it.
        let _ = signal_group(self.pid, Signal::SIGKILL);
        let _ = tokio::time::timeout(crate::kernel::process::TERM_GRACE, exit.wait_for(Option::is_some)).await;
        *self.exit.borrow()
    }

    /// The kernelspec it was started from.
    pub fn spec(&self) -> &KernelSpec {
        &self.spec
    }

    /// The `language_info` of its `kernel_info_reply` (for notebooks).
    pub fn language_info(&self) -> &Value {
        &self.language_info
    }

    /// Its process id (it leads its own process group).
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// The working directory it started in.
    pub fn cwd(&self) -> &Path {
        &self.cwd
    }

    /// The last of what the kernel wrote to its own stdout and stderr.
    pub fn output_tail(&self) -> String {
        tail_text(&self.tail)
    }
}

impl Drop for JupyterKernel {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
        if self.exit.borrow().is_none() || !self.stopped.load(Ordering::SeqCst) {
            let _ = signal_group(self.pid, Signal::SIGKILL);
        }
    }
}

/// The longest socket path the kernel is given (a Unix socket's path holds
/// at most 107 bytes on Linux, 103 on macOS).
const MAX_SOCKET_PATH: usize = 100;

/// The name the kernel binds its sockets under: its connection folder, or,
/// when that path is too long for a socket (a deep temp root), a short
/// symlink to it in `/tmp` that the host made (and removes). The host itself
/// never goes through the link: it opens the folder it made ([`Sockets`]).
struct ShortName {
    path: PathBuf,
    link: bool,
}

impl ShortName {
    fn for_folder(folder: &Path) -> std::io::Result<ShortName> {
        if folder.join("k-5").as_os_str().len() <= MAX_SOCKET_PATH {
            return Ok(ShortName { path: folder.to_path_buf(), link: false });
        }
        #[cfg(unix)]
        for _ in 0..16 {
            let mut random = [0u8; 8];
            getrandom::fill(&mut random).map_err(std::io::Error::other)?;
            let name: String = random.iter().map(|b| format!("{b:02x}")).collect();
            let link = Path::new("/tmp").join(format!("cellbox-jupyter-{name}"));
            match std::os::unix::fs::symlink(folder, &link) {
                Ok(()) => return Ok(ShortName { path: link, link: true }),
                Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(error) => return Err(error),
            }
        }
        Err(std::io::Error::other(format!(
            "its connection folder's path is longer than a socket's ({} bytes), and no short link to it could be made \
             in /tmp",
            folder.as_os_str().len()
        )))
    }

    fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for ShortName {
    fn drop(&mut self) {
        if self.link {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// A message for the control channel that no request waits on.
fn control_message(session: &str, what: &str, msg_type: &str) -> Value {
    json!({
        "header": {
            "msg_id": format!("{session}_{what}"), "msg_type": msg_type, "session": session,
            "username": "cellbox", "version": "5.3",
        },
        "parent_header": {}, "metadata": {}, "content": {}, "channel": "control", "buffers": [],
    })
}

fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path)?.write_all(bytes)
}

fn tail_text(tail: &Mutex<Vec<u8>>) -> String {
    String::from_utf8_lossy(&tail.lock().unwrap()).into_owned()
}

type Spawned = (u32, watch::Receiver<Option<ExitInfo>>, Arc<Mutex<Vec<u8>>>);

/// Start `command` (the kernelspec's program, made by
/// [`crate::sandbox::command_like_a_kernel`]) with the rest of `argv`, its
/// stdout and stderr kept (the last [`TAIL_BYTES`]).
fn spawn(mut command: std::process::Command, spec: &KernelSpec, argv: &[String]) -> Result<Spawned, KernelError> {
    use std::process::Stdio;
    command.args(&argv[1..]).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut command = tokio::process::Command::from(command);
    let spawned = command.spawn();
    // The sandbox's fds were for the child only.
    drop(command);
    let mut child = spawned.map_err(|e| startup_failed(spec, format!("could not run {}: {e}", argv[0]), ""))?;
    let pid = child.id().expect("a just-spawned child has a pid");
    let tail = Arc::new(Mutex::new(Vec::new()));
    if let Some(stdout) = child.stdout.take() {
        tokio::spawn(keep_tail(stdout, tail.clone()));
    }
    if let Some(stderr) = child.stderr.take() {
        tokio::spawn(keep_tail(stderr, tail.clone()));
    }
    let (exit_tx, exit_rx) = watch::channel(None);
    tokio::spawn(async move {
        let info = child.wait().await.map(ExitInfo::from).unwrap_or(ExitInfo { code: None, signal: None });
        let _ = exit_tx.send(Some(info));
    });
    Ok((pid, exit_rx, tail))
}

async fn keep_tail(mut stream: impl tokio::io::AsyncRead + Unpin, tail: Arc<Mutex<Vec<u8>>>) {
    let mut buffer = [0u8; 4096];
    while let Ok(read) = stream.read(&mut buffer).await {
        if read == 0 {
            break;
        }
        let mut tail = tail.lock().unwrap();
        tail.extend_from_slice(&buffer[..read]);
        if tail.len() > TAIL_BYTES {
            let excess = tail.len() - TAIL_BYTES;
            tail.drain(..excess);
        }
    }
}

/// The kernel's five sockets, as endpoints the host connects to.
struct Sockets {
    endpoints: Vec<String>,
    /// On Linux, the sockets themselves (`O_PATH`), which the endpoints name.
    #[cfg(target_os = "linux")]
    _held: Vec<std::os::fd::OwnedFd>,
}

impl Sockets {
    /// Wait until the kernel has bound all five sockets in `folder` (or exited).
    async fn wait_for(folder: &Path, mut exit: watch::Receiver<Option<ExitInfo>>) -> Result<Sockets, String> {
        let mut delay = Duration::from_millis(5);
        loop {
            match Sockets::open(folder)? {
                Some(sockets) => return Ok(sockets),
                None => {
                    tokio::select! {
                        _ = tokio::time::sleep(delay) => {}
                        _ = exit.wait_for(Option::is_some) => return Err("it exited".into()),
                    }
                    delay = (delay * 2).min(Duration::from_millis(100));
                }
            }
        }
    }

    /// The sockets, once every one exists; an entry that is not a socket is an error.
    #[cfg(target_os = "linux")]
    fn open(folder: &Path) -> Result<Option<Sockets>, String> {
        use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
        let path = std::ffi::CString::new(folder.as_os_str().as_encoded_bytes()).map_err(|e| e.to_string())?;
        // SAFETY: plain system calls on a NUL-terminated path and fds this function owns.
        let dir =
            unsafe { libc::open(path.as_ptr(), libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC) };
        if dir < 0 {
            return Err(format!("its connection folder is gone: {}", std::io::Error::last_os_error()));
        }
        // SAFETY: `dir` was just opened and is owned here.
        let dir = unsafe { OwnedFd::from_raw_fd(dir) };
        let mut held = Vec::new();
        for port in 1..=CHANNELS.len() {
            let name = std::ffi::CString::new(format!("k-{port}")).expect("no NUL");
            // SAFETY: as above.
            let fd = unsafe {
                libc::openat(dir.as_raw_fd(), name.as_ptr(), libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC)
            };
            if fd < 0 {
                let error = std::io::Error::last_os_error();
                return match error.raw_os_error() {
                    Some(libc::ENOENT) => Ok(None),
                    _ => Err(format!("its socket k-{port} cannot be opened: {error}")),
                };
            }
            // SAFETY: `fd` was just opened and is owned here.
            let fd = unsafe { OwnedFd::from_raw_fd(fd) };
            // SAFETY: a zeroed stat buffer filled by fstat on a live fd.
            let mut stat: libc::stat = unsafe { std::mem::zeroed() };
            if unsafe { libc::fstat(fd.as_raw_fd(), &mut stat) } != 0 || stat.st_mode & libc::S_IFMT != libc::S_IFSOCK {
                return Err(format!("k-{port} in its connection folder is not a socket (was it replaced?)"));
            }
            held.push(fd);
        }
        let endpoints = held.iter().map(|fd| format!("ipc:///proc/self/fd/{}", fd.as_raw_fd())).collect();
        Ok(Some(Sockets { endpoints, _held: held }))
    }

    /// The sockets, once every one exists (by name: see docs/kernels.md on macOS).
    #[cfg(not(target_os = "linux"))]
    fn open(folder: &Path) -> Result<Option<Sockets>, String> {
        let mut endpoints = Vec::new();
        for port in 1..=CHANNELS.len() {
            let path = folder.join(format!("k-{port}"));
            match std::fs::symlink_metadata(&path) {
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
                Err(error) => return Err(format!("its socket k-{port} cannot be read: {error}")),
                Ok(meta) if meta.file_type().is_symlink() => {
                    return Err(format!("k-{port} in its connection folder is not a socket (was it replaced?)"));
                }
                Ok(_) => endpoints.push(format!("ipc://{}", path.display())),
            }
        }
        Ok(Some(Sockets { endpoints }))
    }
}

/// The client's sockets, before they are split among the tasks.
struct Channels {
    session: String,
    shell: zeromq::DealerSocket,
    iopub: zeromq::SubSocket,
    stdin: zeromq::DealerSocket,
    control: zeromq::DealerSocket,
    hb_endpoint: String,
}

/// What the tasks watching the kernel need.
struct Watch {
    pid: u32,
    exit: watch::Receiver<Option<ExitInfo>>,
    tail: Arc<Mutex<Vec<u8>>>,
    spec: KernelSpec,
    heartbeat: Heartbeat,
}

impl Channels {
    async fn connect(sockets: &Sockets, session: &str) -> Result<Channels, String> {
        let failed =
            |channel: &str, error: zeromq::ZmqError| format!("could not connect to its {channel} socket: {error}");
        // The shell and stdin sockets share an identity: a kernel sends
        // `input_request`s to the identity its shell request came from.
        let identity = || {
            let mut options = zeromq::SocketOptions::default();
            options.peer_identity(zeromq::util::PeerIdentity::try_from(session.as_bytes().to_vec()).expect("short"));
            options
        };
        let mut shell = zeromq::DealerSocket::with_options(identity());
        shell.connect(&sockets.endpoints[0]).await.map_err(|e| failed("shell", e))?;
        let mut iopub = zeromq::SubSocket::new();
        iopub.connect(&sockets.endpoints[1]).await.map_err(|e| failed("iopub", e))?;
        iopub.subscribe("").await.map_err(|e| failed("iopub", e))?;
        let mut stdin = zeromq::DealerSocket::with_options(identity());
        stdin.connect(&sockets.endpoints[2]).await.map_err(|e| failed("stdin", e))?;
        let mut control = zeromq::DealerSocket::new();
        control.connect(&sockets.endpoints[3]).await.map_err(|e| failed("control", e))?;
        Ok(Channels {
            session: session.to_string(),
            shell,
            iopub,
            stdin,
            control,
            hb_endpoint: sockets.endpoints[4].clone(),
        })
    }

    /// Ask for `kernel_info` until the reply and an IOPub message have both
    /// come (so IOPub's subscription is in place); the reply's `language_info`.
    async fn handshake(
        &mut self,
        signer: &Signer,
        mut exit: watch::Receiver<Option<ExitInfo>>,
    ) -> Result<Value, String> {
        let (mut info, mut heard) = (None, false);
        let mut number = 0u64;
        while info.is_none() || !heard {
            if info.is_none() {
                number += 1;
                let request = json!({
                    "header": {
                        "msg_id": format!("{}_ready_{number}", self.session), "msg_type": "kernel_info_request",
                        "session": self.session, "username": "cellbox", "version": "5.3",
                    },
                    "parent_header": {}, "metadata": {}, "content": {},
                });
                let frames = zeromq::ZmqMessage::try_from(signer.encode(&request)).map_err(|e| e.to_string())?;
                self.shell.send(frames).await.map_err(|e| format!("could not send to it: {e}"))?;
            }
            let deadline = tokio::time::sleep(READY_REPEAT);
            tokio::pin!(deadline);
            loop {
                tokio::select! {
                    received = self.shell.recv() => {
                        let frames = received.map_err(|e| format!("its shell socket failed: {e}"))?.into_vec();
                        if let Ok(reply) = signer.decode(&frames, "shell")
                            && reply.pointer("/header/msg_type").and_then(Value::as_str) == Some("kernel_info_reply")
                        {
                            info = Some(reply.pointer("/content/language_info").cloned().unwrap_or(Value::Null));
                        }
                    }
                    received = self.iopub.recv() => {
                        let frames = received.map_err(|e| format!("its iopub socket failed: {e}"))?.into_vec();
                        heard |= signer.decode(&frames, "iopub").is_ok();
                    }
                    _ = exit.wait_for(Option::is_some) => return Err("it exited".into()),
                    _ = &mut deadline => break,
                }
                if info.is_some() && heard {
                    break;
                }
            }
        }
        Ok(info.unwrap_or(Value::Null))
    }

    /// Hand the sockets to the tasks that carry the kernel's messages.
    fn run(
        self,
        signer: Signer,
        outgoing: mpsc::UnboundedSender<Outgoing>,
        mut queue: mpsc::UnboundedReceiver<Outgoing>,
        shared: Arc<Shared>,
        watch: Watch,
    ) -> Vec<tokio::task::JoinHandle<()>> {
        let (mut shell_out, shell_in) = self.shell.split();
        let (mut stdin_out, stdin_in) = self.stdin.split();
        let (mut control_out, control_in) = self.control.split();
        let writer_signer = signer.clone();
        let writer = tokio::spawn(async move {
            while let Some(Outgoing::Message(message)) = queue.recv().await {
                let channel = message.get("channel").and_then(Value::as_str).unwrap_or("shell").to_string();
                let Ok(frames) = zeromq::ZmqMessage::try_from(writer_signer.encode(&message)) else { continue };
                let sent = match channel.as_str() {
                    "stdin" => stdin_out.send(frames).await,
                    "control" => control_out.send(frames).await,
                    _ => shell_out.send(frames).await,
                };
                if let Err(error) = sent {
                    tracing::warn!(target: "cellbox::jupyter", "a message to the kernel was lost: {error}");
                }
            }
        });
        let session = self.session.clone();
        let reader = |mut socket: Box<dyn Receive>, channel: &'static str| {
            let (shared, signer, outgoing, session) =
                (shared.clone(), signer.clone(), outgoing.clone(), session.clone());
            tokio::spawn(async move {
                while let Ok(frames) = socket.receive().await {
                    let message = match signer.decode(&frames, channel) {
                        Ok(message) => message,
                        Err(error) => {
                            tracing::warn!(target: "cellbox::jupyter", "skipping a message on {channel}: {error}");
                            continue;
                        }
                    };
                    for (sender, event) in route(&shared, message, &outgoing, &session) {
                        let _ = sender.send(event).await;
                    }
                }
            })
        };
        let mut tasks = vec![
            writer,
            reader(Box::new(shell_in), "shell"),
            reader(Box::new(self.iopub), "iopub"),
            reader(Box::new(stdin_in), "stdin"),
            reader(Box::new(control_in), "control"),
        ];
        tasks.push(tokio::spawn(watch_exit(
            shared.clone(),
            watch.exit.clone(),
            watch.tail.clone(),
            watch.spec.clone(),
        )));
        tasks.push(tokio::spawn(heartbeat(shared, self.hb_endpoint, watch)));
        tasks
    }
}

/// A socket the reader tasks take whole messages from.
trait Receive: Send {
    fn receive(&mut self) -> std::pin::Pin<Box<dyn Future<Output = zeromq::ZmqResult<Vec<Bytes>>> + Send + '_>>;
}

impl<S: SocketRecv + Send> Receive for S {
    fn receive(&mut self) -> std::pin::Pin<Box<dyn Future<Output = zeromq::ZmqResult<Vec<Bytes>>> + Send + '_>> {
        Box::pin(async move { self.recv().await.map(zeromq::ZmqMessage::into_vec) })
    }
}

/// When the process ends, every pending request fails with how it ended.
async fn watch_exit(
    shared: Arc<Shared>,
    mut exit: watch::Receiver<Option<ExitInfo>>,
    tail: Arc<Mutex<Vec<u8>>>,
    spec: KernelSpec,
) {
    let Ok(ended) = exit.wait_for(Option::is_some).await.map(|exit| exit.expect("checked")) else { return };
    let error = KernelError::Died {
        runtime: Runtime::Jupyter,
        exit: format!("{} ({}): {ended}", spec.display_name, spec.name),
        stderr_tail: tail_text(&tail),
    };
    fail_pending(&shared, error).await;
}

/// Ping the kernel while it runs nothing; declare it dead (and kill it) after
/// `misses` pings in a row went unanswered.
async fn heartbeat(shared: Arc<Shared>, endpoint: String, watch: Watch) {
    let Heartbeat { interval, misses } = watch.heartbeat;
    let mut socket: Option<zeromq::ReqSocket> = None;
    let mut missed = 0u32;
    loop {
        tokio::time::sleep(interval).await;
        let idle = {
            let routes = shared.routes.lock().unwrap();
            if routes.dead.is_some() {
                return;
            }
            routes.pending.is_empty()
        };
        if !idle {
            missed = 0;
            continue;
        }
        let answered = tokio::time::timeout(interval, async {
            if socket.is_none() {
                let mut fresh = zeromq::ReqSocket::new();
                fresh.connect(&endpoint).await.ok()?;
                socket = Some(fresh);
            }
            let req = socket.as_mut()?;
            req.send(zeromq::ZmqMessage::from("ping")).await.ok()?;
            req.recv().await.ok()
        })
        .await
        .ok()
        .flatten()
        .is_some();
        if answered {
            missed = 0;
            continue;
        }
        // A REQ socket that lost its answer cannot ask again: start over.
        socket = None;
        if !shared.routes.lock().unwrap().pending.is_empty() {
            missed = 0;
            continue;
        }
        missed += 1;
        if missed >= misses && watch.exit.borrow().is_none() {
            let silent = interval * misses;
            let error = KernelError::Died {
                runtime: Runtime::Jupyter,
                exit: format!(
                    "{} ({}) stopped answering its heartbeat for {}s while idle; it was killed",
                    watch.spec.display_name,
                    watch.spec.name,
                    silent.as_secs_f64().round()
                ),
                stderr_tail: tail_text(&watch.tail),
            };
            fail_pending(&shared, error).await;
            let _ = signal_group(watch.pid, Signal::SIGKILL);
            return;
        }
    }
}
