//! The shared local gateway: one `python -m kernel_gateway` on 127.0.0.1 for
//! every cellbox process of the user, kept under `~/.cellbox/gateway/`
//! (0700; `CELLBOX_GATEWAY_DIR` moves it).
//!
//! - `gateway.lock`: an exclusive file lock taken while a process looks for,
//!   or starts, the gateway (the OS releases it if that process dies); the
//!   holder writes its pid and a heartbeat into it, shown by `gateway status`;
//! - `gateway.json` (0600): pid, port, token, interpreter, version of the
//!   running gateway. It is reused when the pid lives and `GET
//!   /api/kernelspecs` answers with the token; otherwise it is stale, the
//!   process (if it is still a gateway) is stopped and a new one is started;
//! - `runtime/`: the gateway's `JUPYTER_RUNTIME_DIR` (kernel connection files);
//! - `gateway.log`: its output.
//!
//! The gateway is started with `--port_retries=0` on a free port (there is
//! no way to learn a port chosen by the gateway itself), retried on another
//! port when that one was taken meanwhile; with the IOPub rate limit off (so
//! large output is never dropped), no-delay on its sockets, and idle-kernel
//! culling so kernels of crashed clients are reaped. It outlives cellbox
//! processes; `cellbox gateway stop` ends it (SIGTERM, stdin from /dev/null).

use std::collections::BTreeMap;
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use super::client::{Endpoint, GatewayClient};
use crate::kernel::process::{Signal, pid_alive, signal_pid};
use crate::paths::{private_file_options, tighten_dir};
use crate::settings;

/// How long a new gateway gets to answer its health check.
pub const START_TIMEOUT: Duration = Duration::from_secs(60);
/// How long to wait for another process that holds the lock.
pub const LOCK_TIMEOUT: Duration = Duration::from_secs(90);
/// Kernels idle this long are culled by the gateway (their client is gone).
pub const CULL_IDLE_SECONDS: u64 = 6 * 60 * 60;
/// Ports tried when the chosen one was taken before the gateway bound it.
const PORT_ATTEMPTS: usize = 5;
/// The Python modules the shared gateway needs.
pub const INSTALL_HINT: &str = "python -m pip install jupyter_kernel_gateway ipykernel";

/// Runs kernel_gateway with no-delay on every socket it accepts.
const LAUNCHER: &str = include_str!("launcher.py");

/// Why the shared local gateway could not be found, started or stopped, one variant per cause,
/// so a caller can tell a missing module from a busy lock; the text says what to do.
#[derive(Debug, thiserror::Error)]
pub enum LocalGatewayError {
    #[error("could not create {dir} ({source}); set {var} to a writable folder", var = settings::GATEWAY_DIR.name)]
    CreateDir { dir: PathBuf, source: std::io::Error },
    #[error("could not open {path} ({source})")]
    Open { path: PathBuf, source: std::io::Error },
    #[error("could not write {path} ({source})")]
    WriteInfo { path: PathBuf, source: std::io::Error },
    #[error(
        "another cellbox process has held {path} for {seconds}s ({holder}); if it is stuck, stop it or delete the file"
    )]
    LockHeld { path: PathBuf, seconds: u64, holder: String },
    /// The blocking task that waited for the lock did not finish.
    #[error(transparent)]
    LockTask(#[from] tokio::task::JoinError),
    #[error("could not run {python} ({source})")]
    Run { python: PathBuf, source: std::io::Error },
    #[error(
        "the shared Jupyter gateway needs jupyter_kernel_gateway and ipykernel in {python} ({missing}). Install them \
         with `{INSTALL_HINT}` for that interpreter, or run `cellbox setup gateway`"
    )]
    MissingModules { python: PathBuf, missing: String },
    #[error("no free local port ({source})")]
    NoFreePort { source: std::io::Error },
    /// A socket or file call that the old message reported as the OS error alone.
    #[error(transparent)]
    Io(std::io::Error),
    #[error("could not start {python} ({source})")]
    Spawn { python: PathBuf, source: std::io::Error },
    #[error("the shared Jupyter gateway did not answer within {seconds}s; see {log}")]
    NoAnswer { seconds: u64, log: PathBuf },
    #[error("the shared Jupyter gateway could not start: it exited ({status}) on port {port}; see {log}")]
    Exited { status: std::process::ExitStatus, port: u16, log: PathBuf },
}

/// What `gateway.json` records about the running gateway.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GatewayInfo {
    pub pid: u32,
    pub port: u16,
    pub token: String,
    pub interpreter: String,
    /// kernel_gateway's version.
    pub version: String,
    /// Seconds since the Unix epoch.
    pub started_at: u64,
}

impl GatewayInfo {
    /// Its base URL.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn endpoint(&self) -> Endpoint {
        Endpoint::new(self.url(), Some(self.token.clone()))
    }
}

/// The shared gateway's folder.
pub fn dir() -> PathBuf {
    match settings::GATEWAY_DIR.path() {
        Some(dir) => dir,
        None => dirs::home_dir().unwrap_or_else(std::env::temp_dir).join(".cellbox").join("gateway"),
    }
}

/// The shared gateway's log: where it says it ran out of file descriptors.
fn log_path(dir: &Path) -> PathBuf {
    dir.join("gateway.log")
}

/// How far the shared gateway's log goes now (see [`out_of_files_since`]).
pub fn log_mark() -> u64 {
    std::fs::metadata(log_path(&dir())).map(|meta| meta.len()).unwrap_or(0)
}

/// Whether the shared gateway ran out of file descriptors (`EMFILE`) since
/// `mark`. A gateway out of descriptors may not even accept the next
/// connection, so a start would only time out: its log says why at once, and
/// its descriptor count shows it while it lasts.
pub fn out_of_files_since(mark: u64) -> bool {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut log) = std::fs::File::open(log_path(&dir())) else { return false };
    let mut text = Vec::new();
    // Bounded: the end of a busy log is what matters.
    let start = mark.max(log.metadata().map(|m| m.len()).unwrap_or(0).saturating_sub(1 << 20));
    if log.seek(SeekFrom::Start(start)).is_err() || log.take(1 << 20).read_to_end(&mut text).is_err() {
        return false;
    }
    // Descriptors come back as soon as the failed operation is cleaned up, so
    // the count alone misses most failures, and the log is where they stay.
    // A kernel's own stderr goes to the same log: words in it count only where
    // the count agrees; in the gateway's own error records, always.
    let words = memchr::memmem::find(&text, b"Too many open files").is_some();
    gateway_logged_emfile(&String::from_utf8_lossy(&text))
        || descriptors_left().is_some_and(|left| left == 0)
        || (words && descriptors_left().is_none_or(|left| left < 16))
}

/// Whether an error record of the gateway itself, not a kernel's stderr,
/// reports EMFILE. Its records start with a level and a time in brackets
/// (`[E 2026-12-04 06:26:32.575 KernelGatewayApp] …`, `[E 261204 06:26:32
/// web:2108] …`) and go on with indented lines (the traceback); a kernel's
/// output has neither.
fn gateway_logged_emfile(log: &str) -> bool {
    let mut in_error_record = false;
    for line in log.lines() {
        if line.starts_with('[') {
            in_error_record = line.starts_with("[E ") || line.starts_with("[C ");
        } else if !line.starts_with(' ') {
            in_error_record = false;
        }
        if in_error_record && (line.contains("Too many open files") || line.contains("[Errno 24]")) {
            return true;
        }
    }
    false
}

/// How many more files the shared gateway process may open (Linux `/proc`), if known.
fn descriptors_left() -> Option<u64> {
    let pid = read_info(&dir())?.pid;
    let open = std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?.count() as u64;
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).ok()?;
    let line = limits.lines().find(|line| line.starts_with("Max open files"))?;
    let soft: u64 = line.split_whitespace().nth(3)?.parse().ok()?;
    Some(soft.saturating_sub(open))
}

fn info_path(dir: &Path) -> PathBuf {
    dir.join("gateway.json")
}

fn ensure_dir(dir: &Path) -> Result<(), LocalGatewayError> {
    std::fs::create_dir_all(dir.join("runtime"))
        .map_err(|source| LocalGatewayError::CreateDir { dir: dir.to_path_buf(), source })?;
    tighten_dir(dir);
    tighten_dir(&dir.join("runtime"));
    Ok(())
}

/// The recorded gateway, if `gateway.json` exists and reads.
pub fn read_info(dir: &Path) -> Option<GatewayInfo> {
    let text = std::fs::read_to_string(info_path(dir)).ok()?;
    serde_json::from_str(&text).ok()
}

fn write_info(dir: &Path, info: &GatewayInfo) -> Result<(), LocalGatewayError> {
    let path = info_path(dir);
    let temporary = dir.join(format!(".gateway.json.{}", std::process::id()));
    let written = (|| {
        let mut file = private_file_options().write(true).create(true).truncate(true).open(&temporary)?;
        file.write_all(serde_json::to_string_pretty(info).expect("info serializes").as_bytes())?;
        file.sync_all()?;
        std::fs::rename(&temporary, &path)
    })();
    written.map_err(|source| LocalGatewayError::WriteInfo { path, source })
}

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_secs()
}

/// Whether `pid` runs and looks like a kernel gateway (a recycled pid of
/// another program must never be signalled).
pub fn is_gateway_process(pid: u32) -> bool {
    if pid == 0 || !pid_alive(pid) {
        return false;
    }
    match std::fs::read(format!("/proc/{pid}/cmdline")) {
        Ok(cmdline) => {
            let cmdline = String::from_utf8_lossy(&cmdline);
            cmdline.contains("kernel_gateway") && !is_zombie(pid)
        }
        // No /proc (not Linux): trust the pid.
        Err(_) => true,
    }
}

fn is_zombie(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| stat.rsplit_once(')').map(|(_, rest)| rest.trim_start().starts_with('Z')))
        .unwrap_or(false)
}

/// The exclusive lock on `gateway.lock`, with the holder's heartbeat.
struct Lock {
    file: std::fs::File,
    beating: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Lock {
    /// Wait (bounded) for the lock, then start the heartbeat.
    fn acquire(dir: &Path, limit: Duration) -> Result<Lock, LocalGatewayError> {
        let path = dir.join("gateway.lock");
        let file = private_file_options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|source| LocalGatewayError::Open { path: path.clone(), source })?;
        let deadline = std::time::Instant::now() + limit;
        loop {
            if file.try_lock().is_ok() {
                break;
            }
            if std::time::Instant::now() >= deadline {
                let holder = std::fs::read_to_string(&path).unwrap_or_default().trim().to_string();
                return Err(LocalGatewayError::LockHeld { path, seconds: limit.as_secs(), holder });
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let beating = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
        let lock = Lock { file, beating: beating.clone() };
        lock.beat();
        let heartbeat = lock.file.try_clone().ok();
        std::thread::spawn(move || {
            while beating.load(std::sync::atomic::Ordering::SeqCst) {
                std::thread::sleep(Duration::from_secs(1));
                if let Some(file) = &heartbeat
                    && beating.load(std::sync::atomic::Ordering::SeqCst)
                {
                    write_heartbeat(file);
                }
            }
        });
        Ok(lock)
    }

    fn beat(&self) {
        write_heartbeat(&self.file);
    }
}

fn write_heartbeat(mut file: &std::fs::File) {
    let line = format!("pid {} heartbeat {}\n", std::process::id(), now());
    let _ = file.set_len(0);
    let _ = file.rewind();
    let _ = file.write_all(line.as_bytes());
}

impl Drop for Lock {
    fn drop(&mut self) {
        self.beating.store(false, std::sync::atomic::Ordering::SeqCst);
        let _ = self.file.unlock();
    }
}

/// The shared gateway's endpoint: the running one if it is healthy, else a
/// new one started on `python` with `env` (the filtered kernel environment).
pub async fn acquire(python: &Path, env: &BTreeMap<String, String>) -> Result<Endpoint, LocalGatewayError> {
    let dir = dir();
    ensure_dir(&dir)?;
    if let Some(info) = read_info(&dir)
        && healthy(&info).await
    {
        return Ok(info.endpoint());
    }
    let lock_dir = dir.clone();
    let lock = tokio::task::spawn_blocking(move || Lock::acquire(&lock_dir, LOCK_TIMEOUT)).await??;
    // Another process may have started it while we waited.
    if let Some(info) = read_info(&dir) {
        if healthy(&info).await {
            return Ok(info.endpoint());
        }
        stop_recorded(&dir, &info).await;
    }
    let info = start(&dir, python, env, &lock).await?;
    drop(lock);
    Ok(info.endpoint())
}

/// Replace the shared gateway with a new one (it ran out of file
/// descriptors, say); kernels on the old one are lost.
pub async fn restart(python: &Path, env: &BTreeMap<String, String>) -> Result<Endpoint, LocalGatewayError> {
    stop().await?;
    acquire(python, env).await
}

/// Whether the recorded gateway lives and answers with its token.
pub async fn healthy(info: &GatewayInfo) -> bool {
    if !is_gateway_process(info.pid) {
        return false;
    }
    match GatewayClient::new(info.endpoint()) {
        Ok(client) => client.health().await.is_ok(),
        Err(_) => false,
    }
}

/// The gateway outlives this process and its terminal's signals: on Unix a
/// session of its own (and, for tests, a lower open-files limit).
#[cfg(unix)]
fn detach(command: &mut std::process::Command, nofile: Option<u64>) {
    // SAFETY: setsid and setrlimit are async-signal-safe.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(command, move || {
            if let Some(limit) = nofile {
                let limit = libc::rlimit { rlim_cur: limit, rlim_max: limit };
                if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            nix::unistd::setsid().map(|_| ()).map_err(std::io::Error::from)
        });
    }
}

/// On Windows a process group of its own, without a console window (a
/// child is not ended with its parent there unless a job says so).
#[cfg(windows)]
fn detach(command: &mut std::process::Command, _nofile: Option<u64>) {
    use std::os::windows::process::CommandExt;
    use windows_sys::Win32::System::Threading::{CREATE_NEW_PROCESS_GROUP, CREATE_NO_WINDOW};
    command.creation_flags(CREATE_NEW_PROCESS_GROUP | CREATE_NO_WINDOW);
}

/// Stop the recorded gateway process (if it still is one) and forget it.
async fn stop_recorded(dir: &Path, info: &GatewayInfo) {
    if is_gateway_process(info.pid) {
        let _ = signal_pid(info.pid, Signal::SIGTERM);
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        while is_gateway_process(info.pid) && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        if is_gateway_process(info.pid) {
            let _ = signal_pid(info.pid, Signal::SIGKILL);
        }
    }
    let _ = std::fs::remove_file(info_path(dir));
}

/// What `python` says its kernel_gateway version is, or how to install it.
pub async fn check_modules(python: &Path) -> Result<String, LocalGatewayError> {
    let output = tokio::process::Command::new(python)
        .args(["-c", "import ipykernel, kernel_gateway; print(kernel_gateway.__version__)"])
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .map_err(|source| LocalGatewayError::Run { python: python.to_path_buf(), source })?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let missing = stderr.lines().rev().find(|line| !line.trim().is_empty()).unwrap_or_default().trim().to_string();
        return Err(LocalGatewayError::MissingModules { python: python.to_path_buf(), missing });
    }
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_string())
}

fn free_port() -> Result<u16, LocalGatewayError> {
    let listener =
        std::net::TcpListener::bind(("127.0.0.1", 0)).map_err(|source| LocalGatewayError::NoFreePort { source })?;
    listener.local_addr().map(|addr| addr.port()).map_err(LocalGatewayError::Io)
}

fn new_token() -> String {
    let mut bytes = [0u8; 24];
    let random = std::fs::File::open("/dev/urandom").and_then(|mut file| file.read_exact(&mut bytes));
    if random.is_err() {
        use sha2::Digest;
        let seed = format!("{}-{:?}", std::process::id(), SystemTime::now());
        bytes.copy_from_slice(&sha2::Sha256::digest(seed.as_bytes())[..24]);
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

async fn start(
    dir: &Path,
    python: &Path,
    env: &BTreeMap<String, String>,
    lock: &Lock,
) -> Result<GatewayInfo, LocalGatewayError> {
    let version = check_modules(python).await?;
    let log_file = dir.join("gateway.log");
    let mut attempt = 0;
    loop {
        attempt += 1;
        lock.beat();
        let port = free_port()?;
        let token = new_token();
        let log = private_file_options()
            .create(true)
            .append(true)
            .open(&log_file)
            .map_err(|source| LocalGatewayError::Open { path: log_file.clone(), source })?;
        let mut command = std::process::Command::new(python);
        command
            .arg("-c")
            .arg(LAUNCHER)
            .arg("--KernelGatewayApp.ip=127.0.0.1")
            .arg(format!("--KernelGatewayApp.port={port}"))
            .arg("--KernelGatewayApp.port_retries=0")
            .arg("--ZMQChannelsWebsocketConnection.limit_rate=False")
            .arg("--ZMQChannelsWebsocketConnection.iopub_data_rate_limit=0")
            .arg("--ZMQChannelsWebsocketConnection.iopub_msg_rate_limit=0")
            .arg(format!("--MappingKernelManager.cull_idle_timeout={CULL_IDLE_SECONDS}"))
            .arg("--MappingKernelManager.cull_interval=300")
            .env_clear()
            .envs(env)
            .env("KG_AUTH_TOKEN", &token)
            .env("KG_LIST_KERNELS", "True")
            .env("JUPYTER_RUNTIME_DIR", dir.join("runtime"))
            .current_dir(dir)
            .stdin(std::process::Stdio::null())
            .stdout(log.try_clone().map_err(LocalGatewayError::Io)?)
            .stderr(log);
        detach(&mut command, nofile_for_test());
        let mut child =
            command.spawn().map_err(|source| LocalGatewayError::Spawn { python: python.to_path_buf(), source })?;
        let info = GatewayInfo {
            pid: child.id(),
            port,
            token,
            interpreter: python.display().to_string(),
            version: version.clone(),
            started_at: now(),
        };
        let deadline = tokio::time::Instant::now() + START_TIMEOUT;
        let outcome = loop {
            if let Ok(Some(status)) = child.try_wait() {
                break Err(status);
            }
            if let Ok(client) = GatewayClient::new(info.endpoint())
                && client.health().await.is_ok()
            {
                break Ok(());
            }
            if tokio::time::Instant::now() >= deadline {
                let _ = child.kill();
                let _ = child.wait();
                return Err(LocalGatewayError::NoAnswer { seconds: START_TIMEOUT.as_secs(), log: log_file });
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        match outcome {
            Ok(()) => {
                write_info(dir, &info)?;
                // Reap it when it ends, so it never lingers as a zombie of ours.
                std::thread::spawn(move || {
                    let _ = child.wait();
                });
                return Ok(info);
            }
            // Exit code 1: the port was taken meanwhile; try another.
            Err(status) if status.code() == Some(1) && attempt < PORT_ATTEMPTS => {}
            Err(status) => return Err(LocalGatewayError::Exited { status, port, log: log_file }),
        }
    }
}

/// Tests only, never documented as a setting: the open-file limit the shared
/// gateway is started with (`CELLBOX_GATEWAY_NOFILE_FOR_TEST=N`), so a test
/// can drive it into EMFILE with a few kernels.
fn nofile_for_test() -> Option<u64> {
    settings::GATEWAY_NOFILE_FOR_TEST.parse().ok().flatten()
}

/// What `cellbox gateway status` prints.
pub async fn status() -> String {
    let dir = dir();
    match read_info(&dir) {
        None => format!("no shared gateway is recorded in {}", dir.display()),
        Some(info) => {
            let health = if healthy(&info).await {
                "running and healthy"
            } else if is_gateway_process(info.pid) {
                "running but not answering its health check"
            } else {
                "not running (stale record)"
            };
            let kernels = match GatewayClient::new(info.endpoint()) {
                Ok(client) => client.list_kernels().await.map(|k| k.len()).unwrap_or(0),
                Err(_) => 0,
            };
            format!(
                "shared gateway: {health}\n  url: {}\n  pid: {}\n  kernels: {kernels}\n  interpreter: {}\n  \
                 kernel_gateway: {}\n  folder: {}",
                info.url(),
                info.pid,
                info.interpreter,
                info.version,
                dir.display()
            )
        }
    }
}

/// Stop the shared gateway (its kernels with it) and forget it. Returns
/// whether one was recorded.
pub async fn stop() -> Result<bool, LocalGatewayError> {
    let dir = dir();
    let Some(info) = read_info(&dir) else { return Ok(false) };
    let lock_dir = dir.clone();
    let lock = tokio::task::spawn_blocking(move || Lock::acquire(&lock_dir, LOCK_TIMEOUT)).await??;
    stop_recorded(&dir, &info).await;
    drop(lock);
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emfile_counts_in_the_gateways_error_records_and_not_in_kernel_output() {
        let record = "[I 2026-12-04 06:26:32.508 KernelGatewayApp] Connecting to kernel a8.\n\
                      [E 261204 06:26:32 base_events:1771] Exception in callback BaseAsyncIOLoop._handle_events(6, 1)\n\
                      \x20   Traceback (most recent call last):\n\
                      \x20     File \"socket.py\", line 294, in accept\n\
                      \x20   OSError: [Errno 24] Too many open files\n";
        assert!(gateway_logged_emfile(record));
        let headline = "[E 2026-12-04 06:26:32.575 KernelGatewayApp] [Errno 24] Too many open files\n";
        assert!(gateway_logged_emfile(headline));
        // A cell printed the words (its stderr shares the log), or an info record quotes them.
        let kernel = "[I 2026-12-04 06:26:32.508 KernelGatewayApp] Kernel started: a8\n\
                      OSError: [Errno 24] Too many open files\n\
                      \x20   indented output of the cell: Too many open files\n";
        assert!(!gateway_logged_emfile(kernel));
        let info = "[I 2026-12-04 06:26:32.508 KernelGatewayApp] Too many open files, said a kernel\n";
        assert!(!gateway_logged_emfile(info));
    }

    #[test]
    fn a_folder_that_cannot_be_made_names_the_setting() {
        let error = ensure_dir(Path::new("/dev/null/gateway")).unwrap_err();
        let LocalGatewayError::CreateDir { source, .. } = &error else { panic!("{error:?}") };
        assert_eq!(
            error.to_string(),
            format!(
                "could not create /dev/null/gateway ({source}); set {} to a writable folder",
                settings::GATEWAY_DIR.name
            )
        );
    }
}
