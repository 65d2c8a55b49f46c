//! [`JupyterKernel`]: an installed Jupyter kernel started from its kernelspec
//! as a local process, under the same sandbox as cellbox's own kernels, and
//! spoken to over ZeroMQ with signed messages.
//!
//! The host writes the connection file (a fresh HMAC key; `ipc` transport)
//! into a folder of the kernel's private temp dir, where the kernel binds its
//! sockets ([`super::sockets`]); a kernel that speaks only TCP gets loopback
//! ports instead, checked to be its own ([`super::tcp`]). The host's sockets reach them through relays
//! that bound what the kernel may send ([`super::relay`]). Once they are up,
//! `kernel_info_request`s go out until the kernel answers on shell and IOPub,
//! and every message is then routed as a gateway kernel's are
//! ([`super::channels`], [`super::route`]). Heartbeats are sent while the
//! kernel runs nothing: some kernels (IRkernel) answer them from their main
//! loop, so a long cell would look like a dead kernel. A kernel that stops
//! answering while idle (stopped, or wedged) is declared dead and killed.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::{Notify, mpsc, watch};

use super::Outgoing;
pub use super::channels::Heartbeat;
use super::channels::{Channels, Watch};
use super::process::{Abandoned, KillSwitch, Started, spawn, startup_failed, tail_text};
use super::relay::{Relays, Target};
use super::requests::{Requests, new_session_id};
use super::route::{Routes, Shared};
use super::sockets::{CHANNELS, ShortName, Sockets};
use super::spec::{InterruptMode, KernelSpec};
use super::wire::Signer;
use crate::kernel::process::{ExitInfo, Signal};
use crate::kernel::{Completeness, ExecEvent, ExecuteOptions, Execution, KernelError, KernelOptions};
use crate::runtime::Runtime;

/// After `shutdown_request`, how long the kernel gets to leave by itself.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// A Jupyter kernel run from its kernelspec. Dropping it kills its process group.
pub struct JupyterKernel {
    spec: KernelSpec,
    requests: Requests,
    pid: u32,
    cwd: PathBuf,
    language_info: Value,
    exit: watch::Receiver<Option<ExitInfo>>,
    kill: KillSwitch,
    stopped: AtomicBool,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    _relays: Relays,
    _sockets: Option<Sockets>,
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
        let tcp_ports = tcp_ports(&spec)?;
        let (command, guard, sockets) = match &tcp_ports {
            None => {
                let (command, guard) =
                    crate::sandbox::command_like_a_kernel(&spec.program(), &options.sandbox, &options.cwd, &env)?;
                (command, guard, None)
            }
            #[cfg(target_os = "linux")]
            Some(_) => {
                let sandbox = tcp_network(&options.sandbox);
                let (command, guard, sockets) = crate::sandbox::command_like_a_tcp_kernel(
                    &spec.program(),
                    &sandbox,
                    &options.cwd,
                    &env,
                    CHANNELS.len() * super::tcp::CONNECTIONS_PER_CHANNEL,
                )?;
                (command, guard, Some(sockets))
            }
            #[cfg(not(target_os = "linux"))]
            Some(_) => unreachable!("TCP kernels are refused before this on other systems"),
        };
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
        let mut connection = match &tcp_ports {
            Some(_) => json!({"transport": "tcp", "ip": "127.0.0.1"}),
            None => json!({"transport": "ipc", "ip": short.path().join("k").to_string_lossy()}),
        };
        connection["key"] = json!(key);
        connection["signature_scheme"] = json!("hmac-sha256");
        connection["kernel_name"] = json!(spec.name);
        for (index, channel) in CHANNELS.iter().enumerate() {
            let port = tcp_ports.as_ref().map_or(index as u16 + 1, |ports| ports[index]);
            connection[format!("{channel}_port")] = json!(port);
        }
        write_private(&connection_file, &serde_json::to_vec_pretty(&connection).unwrap_or_default())
            .map_err(|e| startup_failed(&spec, format!("could not write its connection file: {e}"), ""))?;

        let argv = spec.command(&connection_file);
        let Started { pid, exit, tail, kill } = spawn(command, &spec, &argv)?;
        // A start given up on (its caller gone) takes the kernel with it.
        let mut abandoned = Abandoned(Some(kill.clone()));
        let broken = Arc::new(Mutex::new(None));
        let connected = tokio::time::timeout(options.startup_timeout, async {
            let (sockets, targets) = match &tcp_ports {
                None => {
                    let sockets = Sockets::wait_for(folder.path(), exit.clone()).await?;
                    let targets = sockets.targets.iter().cloned().map(Target::Unix).collect();
                    (Some(sockets), targets)
                }
                Some(ports) => (None, tcp_targets(pid, ports, exit.clone(), sockets).await?),
            };
            let switch = kill.clone();
            let relays = Relays::start(&targets, broken.clone(), Arc::new(move || switch.kill()))
                .map_err(|e| format!("could not relay its sockets: {e}"))?;
            let mut channels = Channels::connect(&relays.endpoints, &new_session_id()).await?;
            let signer = Signer::new(key.as_bytes());
            let language_info = channels.handshake(&signer, exit.clone()).await?;
            Ok::<_, String>((sockets, relays, channels, signer, language_info))
        })
        .await;
        let (sockets, relays, channels, signer, language_info) = match connected {
            Ok(Ok(connected)) => connected,
            Ok(Err(reason)) => {
                kill.kill();
                let reason = match (broken.lock().unwrap().clone(), *exit.borrow()) {
                    (Some(limit), _) => limit,
                    (None, Some(exit)) => format!("it exited ({exit}) before it answered"),
                    (None, None) => reason,
                };
                return Err(startup_failed(&spec, reason, &tail_text(&tail)));
            }
            Err(_) => {
                kill.kill();
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
        let watch = Watch { exit: exit.clone(), tail, spec: spec.clone(), heartbeat, broken, kill: kill.clone() };
        let tasks = channels.run(signer, requests.outgoing.clone(), queue, shared.clone(), watch);
        abandoned.0 = None;
        Ok(JupyterKernel {
            spec,
            requests,
            pid,
            cwd: options.cwd,
            language_info,
            exit,
            kill,
            stopped: AtomicBool::new(false),
            tasks,
            _relays: relays,
            _sockets: sockets,
            _short: short,
            _folder: folder,
            _guard: guard,
        })
    }

    /// Send an `execute_request`; its events arrive on the returned [`Execution`].
    /// Per-cell variables are set around the cell where cellbox speaks the
    /// kernel's language (R: [`super::cell_env`]); elsewhere, and for a
    /// per-cell working folder, the cell is refused.
    pub async fn execute_with(&self, code: &str, mut options: ExecuteOptions) -> Result<Execution, KernelError> {
        let env = options.env.take().filter(|env| !env.is_empty());
        let around = env.as_ref().map(|env| super::cell_env::code_for(&self.spec.language, env));
        if options.cwd.is_some() || matches!(around, Some(None)) {
            return Err(KernelError::Protocol(format!(
                "{} ({}) cells take no per-cell {}: set them in the cell's own code, or in the session's \
                 environment",
                self.spec.display_name,
                self.spec.name,
                if options.cwd.is_some() { "working folder" } else { "environment variables" }
            )));
        }
        let Some(Some((setup, restore))) = around else { return self.requests.execute_with(code, options) };
        let silent = || ExecuteOptions { silent: true, internal: true, ..Default::default() };
        // Requests run in the order they are sent: the setup before the cell (its events are nobody's).
        drop(self.requests.execute_with(&setup, silent())?);
        let mut cell = self.requests.execute_with(code, options)?;
        // The restore goes out once the cell is done, before its end is told (so it runs before any next cell).
        let (sender, events) = mpsc::channel(1);
        let requests = self.requests.clone();
        tokio::spawn(async move {
            while let Some(item) = cell.next().await {
                if let Ok(ExecEvent::Done(_)) = &item {
                    drop(requests.execute_with(&restore, silent()));
                }
                if sender.send(item).await.is_err() {
                    break;
                }
            }
        });
        Ok(crate::kernel::execution_from(format!("{}_env", self.requests.session_id), events))
    }

    /// Ask the kernel whether `code` is a whole cell yet.
    pub async fn check_complete(&self, code: &str) -> Result<Completeness, KernelError> {
        self.requests.check_complete(code).await
    }

    /// Interrupt the running cell as the kernelspec asks: SIGINT to the
    /// kernel's process group, or an `interrupt_request` on the control channel;
    /// repeated every second until the cell ends.
    pub fn interrupt(&self) -> Result<(), KernelError> {
        match self.spec.interrupt_mode {
            InterruptMode::Signal => {
                let kill = self.kill.clone();
                self.requests.interrupt_with(move || {
                    kill.signal(Signal::SIGINT);
                    async {}
                })
            }
            InterruptMode::Message => {
                // No request waits on its reply: it is sent, not routed.
                let requests = self.requests.clone();
                self.requests.interrupt_with(move || {
                    let (_, message) = requests.message("interrupt_request", "control", json!({}));
                    let _ = requests.outgoing.send(Outgoing::Message(message));
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
        let (_, message) = self.requests.message("shutdown_request", "control", json!({ "restart": false }));
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

    /// Wait `grace` for the kernel to exit, then SIGTERM, then SIGKILL its
    /// group (what its cells started in it goes when it exits: see [`spawn`]).
    async fn stop_within(&self, grace: Duration) -> Option<ExitInfo> {
        let waited = |limit: Duration| {
            let mut exit = self.exit.clone();
            async move { tokio::time::timeout(limit, exit.wait_for(Option::is_some)).await.is_ok() }
        };
        if !waited(grace).await {
            self.kill.signal(Signal::SIGTERM);
            if !waited(crate::kernel::process::STUCK_TERM_GRACE).await {
                self.kill.kill();
                waited(crate::kernel::process::TERM_GRACE).await;
            }
        }
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
}

impl Drop for JupyterKernel {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
        self.kill.kill();
    }
}

/// Loopback ports for a kernel that speaks only TCP (`None`: it binds Unix sockets).
fn tcp_ports(spec: &KernelSpec) -> Result<Option<Vec<u16>>, KernelError> {
    if !spec.speaks_only_tcp() {
        return Ok(None);
    }
    if cfg!(not(target_os = "linux")) {
        return Err(startup_failed(spec, "it speaks only TCP, which cellbox offers kernels on Linux only", ""));
    }
    #[cfg(target_os = "linux")]
    return super::tcp::free_ports(CHANNELS.len())
        .map(Some)
        .map_err(|e| startup_failed(spec, format!("no free loopback ports: {e}"), ""));
    #[cfg(not(target_os = "linux"))]
    Ok(None)
}

/// The network a kernel that speaks only TCP gets: always a namespace of its
/// own, since on the host's loopback any local process could connect to its
/// ports and read what it publishes. With no network it gets its own loopback
/// up (as `--network localhost`); with the host's, every public host through
/// cellbox's proxy (as `--network deny:` with nothing denied), but not the
/// host's loopback or local network.
#[cfg(target_os = "linux")]
fn tcp_network(policy: &crate::sandbox::SandboxPolicy) -> crate::sandbox::SandboxPolicy {
    use crate::sandbox::NetworkMode;
    let mut policy = policy.clone();
    match policy.network {
        NetworkMode::Off => policy.network = NetworkMode::Localhost,
        NetworkMode::On => {
            policy.network = NetworkMode::Filtered;
            policy.hosts = Default::default();
        }
        NetworkMode::Localhost | NetworkMode::Filtered => {}
    }
    policy
}

/// Where a kernel's process hands the host its sockets (Linux only).
#[cfg(target_os = "linux")]
type SocketChannel = std::os::fd::OwnedFd;
#[cfg(not(target_os = "linux"))]
type SocketChannel = std::convert::Infallible;

/// The kernel's ports, once it listens on all of them, each with the sockets
/// its process made for the host in its namespace.
async fn tcp_targets(
    pid: u32,
    ports: &[u16],
    exit: watch::Receiver<Option<ExitInfo>>,
    sockets: Option<SocketChannel>,
) -> Result<Vec<Target>, String> {
    #[cfg(target_os = "linux")]
    {
        use super::tcp::{CONNECTIONS_PER_CHANNEL, TcpTarget, in_own_namespace, wait_listening};
        let channel = sockets.ok_or("no sockets were asked for")?;
        let mut sockets = crate::sandbox::network::handoff::receive_sockets(channel)
            .await
            .map_err(|e| format!("its sockets for the host: {e}"))?;
        if !in_own_namespace(pid).map_err(|e| format!("its network namespace: {e}"))? {
            return Err("it runs in the host's network namespace, where every local process could reach its \
                        ports; cellbox runs kernels that speak only TCP in a namespace of their own"
                .into());
        }
        if sockets.len() < ports.len() * CONNECTIONS_PER_CHANNEL {
            return Err(format!(
                "its process handed over {} sockets, not {}",
                sockets.len(),
                ports.len() * CONNECTIONS_PER_CHANNEL
            ));
        }
        wait_listening(pid, ports, exit.clone()).await?;
        Ok(ports
            .iter()
            .map(|&port| {
                let mine = sockets.split_off(sockets.len() - CONNECTIONS_PER_CHANNEL);
                Target::Tcp(TcpTarget { port, pid, sockets: Arc::new(Mutex::new(mine)), exit: exit.clone() })
            })
            .collect())
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (pid, ports, exit, sockets);
        Err("TCP kernels run on Linux only".into())
    }
}

fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path)?.write_all(bytes)
}
