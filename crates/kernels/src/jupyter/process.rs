//! A Jupyter kernel's process: started from its kernelspec's command line,
//! its own stdout and stderr kept (the end of them says why it died), its
//! exit watched, and its process group signalled only while that is safe.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::sync::watch;

use super::spec::KernelSpec;
use crate::kernel::KernelError;
use crate::kernel::process::{ExitInfo, Signal, signal_group};
use crate::runtime::Runtime;

/// How much of the kernel's own stdout and stderr is kept, for the reason it died.
const TAIL_BYTES: usize = 8 << 10;
/// After the kernel exits, how long its stdout and stderr are still read.
const TAIL_DRAIN: Duration = Duration::from_secs(1);

/// A kernel that could not start, in words that name it.
pub(super) fn startup_failed(spec: &KernelSpec, reason: impl std::fmt::Display, tail: &str) -> KernelError {
    KernelError::StartupFailed {
        runtime: Runtime::Jupyter,
        reason: format!("{} ({}): {reason}", spec.display_name, spec.name),
        stderr_tail: tail.to_string(),
    }
}

/// Signals the kernel's process group until the kernel is reaped: then its
/// group is swept ([`spawn`]) and its id may become another process's.
#[derive(Debug, Clone)]
pub(super) struct KillSwitch {
    pid: u32,
    reaped: Arc<AtomicBool>,
}

impl KillSwitch {
    pub(super) fn signal(&self, signal: Signal) {
        if !self.reaped.load(Ordering::SeqCst) {
            let _ = signal_group(self.pid, signal);
        }
    }

    pub(super) fn kill(&self) {
        self.signal(Signal::SIGKILL);
    }
}

/// Kills the kernel when dropped armed (a start that did not finish).
pub(super) struct Abandoned(pub Option<KillSwitch>);

impl Drop for Abandoned {
    fn drop(&mut self) {
        if let Some(kill) = self.0.take() {
            kill.kill();
        }
    }
}

/// The last of what the kernel wrote to its stdout and stderr.
pub(super) fn tail_text(tail: &Mutex<Vec<u8>>) -> String {
    String::from_utf8_lossy(&tail.lock().unwrap()).into_owned()
}

/// A started kernel process.
pub(super) struct Started {
    pub pid: u32,
    pub exit: watch::Receiver<Option<ExitInfo>>,
    pub tail: Arc<Mutex<Vec<u8>>>,
    pub kill: KillSwitch,
}

/// Start `command` (the kernelspec's program, made by
/// [`crate::sandbox::command_like_a_kernel`]) with the rest of `argv`, its
/// stdout and stderr kept (the last [`TAIL_BYTES`]).
pub(super) fn spawn(
    mut command: std::process::Command,
    spec: &KernelSpec,
    argv: &[String],
) -> Result<Started, KernelError> {
    use std::process::Stdio;
    command.args(&argv[1..]).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut command = tokio::process::Command::from(command);
    let spawned = command.spawn();
    // The sandbox's fds were for the child only.
    drop(command);
    let mut child = spawned.map_err(|e| startup_failed(spec, format!("could not run {}: {e}", argv[0]), ""))?;
    let pid = child.id().expect("a just-spawned child has a pid");
    let tail = Arc::new(Mutex::new(Vec::new()));
    let streams = [
        child.stdout.take().map(|out| Box::new(out) as Box<dyn Output>),
        child.stderr.take().map(|err| Box::new(err) as Box<dyn Output>),
    ];
    let readers: Vec<_> =
        streams.into_iter().flatten().map(|stream| tokio::spawn(keep_tail(stream, tail.clone()))).collect();
    let reaped = Arc::new(AtomicBool::new(false));
    let (exit_tx, exit_rx) = watch::channel(None);
    let flag = reaped.clone();
    tokio::spawn(async move {
        let info = child.wait().await.map(ExitInfo::from).unwrap_or(ExitInfo { code: None, signal: None });
        // Whatever its cells started in its group goes with it, now: while
        // any of them lives, the group's id cannot be another process's.
        let _ = signal_group(pid, Signal::SIGKILL);
        flag.store(true, Ordering::SeqCst);
        // What it wrote last is read before its exit is told (bounded: a
        // process outside its group may still hold the pipes).
        for reader in readers {
            let _ = tokio::time::timeout(TAIL_DRAIN, reader).await;
        }
        let _ = exit_tx.send(Some(info));
    });
    Ok(Started { pid, exit: exit_rx, tail, kill: KillSwitch { pid, reaped } })
}

/// The kernel's stdout or stderr.
trait Output: tokio::io::AsyncRead + Unpin + Send {}
impl<T: tokio::io::AsyncRead + Unpin + Send> Output for T {}

async fn keep_tail(mut stream: Box<dyn Output>, tail: Arc<Mutex<Vec<u8>>>) {
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
