//! Running a candidate interpreter once to learn what it really is.
//!
//! Version-manager shims (pyenv, asdf) cost a lot on every start (~170 ms
//! against ~20 ms for the real binary here), so the probe records the real
//! `sys.executable` and kernels are spawned on that. Results are cached per
//! (cwd, interpreter) for the life of the process: a shim may pick another
//! version in another folder. A real binary's answer is also kept on disk
//! for the next process ([`super::memo`]).

use std::collections::HashMap;
use std::io::Read;
use std::path::{Component, Path, PathBuf};
use std::process::ExitStatus;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::sandbox::{SandboxError, SandboxGuard, SandboxPolicy};

/// Why a probed program (an interpreter, `node`, a tool) is unusable, by cause; the text
/// completes "… failed: " and is what an attempt lists. `Arc` keeps it cloneable for caches.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ProbeError {
    #[error("could not run it: {source}")]
    Spawn { source: Arc<std::io::Error> },
    #[error("it did not answer within {seconds}s")]
    Timeout { seconds: u64 },
    #[error("could not wait for it: {source}")]
    Wait { source: Arc<std::io::Error> },
    /// It exited unsuccessfully; `detail` is the last line of its stderr.
    #[error("it failed ({status}): {detail}")]
    Failed { status: ExitStatus, detail: String },
    #[error("it printed something unexpected: {output:?}")]
    Unexpected { output: String },
    /// It runs, but is older than cellbox supports (`runtime` is `Python` or `Node`).
    #[error("it is {runtime} {version}; cellbox needs {needed} or newer")]
    TooOld { runtime: &'static str, version: String, needed: String },
    /// The kernels' sandbox, which a probe runs in, cannot be set up here.
    #[error("{0}")]
    Sandbox(Arc<SandboxError>),
}

/// How long one probe may take before the candidate is given up.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(15);

/// The oldest Python the runner supports.
pub const MIN_VERSION: (u32, u32) = (3, 8);

const PROBE_SCRIPT: &str =
    "import json, sys; print(json.dumps({'executable': sys.executable, 'version': '%d.%d.%d' % sys.version_info[:3]}))";

/// What the probe learnt about an interpreter.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
pub struct ProbeInfo {
    /// The real binary (`sys.executable`), used for spawning.
    pub executable: PathBuf,
    /// `major.minor.patch`.
    pub version: String,
}

/// One slot per (cwd, interpreter): a second caller waits for the first's
/// probe instead of running its own (an engine start and `cellbox mcp`'s
/// first kernel ask at the same moment).
type Slot = Arc<Mutex<Option<ProbeInfo>>>;

fn cache() -> &'static Mutex<HashMap<(PathBuf, PathBuf), Slot>> {
    static CACHE: OnceLock<Mutex<HashMap<(PathBuf, PathBuf), Slot>>> = OnceLock::new();
    CACHE.get_or_init(Default::default)
}

/// A probe of `program` in `cwd`, started as a kernel would be: under the
/// kernels' sandbox `policy` and with the kernels' filtered environment.
/// A candidate may be a file a kernel wrote (`<cwd>/.venv/bin/python`, a
/// shim's target named by a `.python-version` in the workspace): running it
/// with the host's rights and environment would hand the host to the kernel.
/// The guard holds the probe's temp dir until it is done.
pub fn probe_command(
    program: &Path,
    cwd: &Path,
    policy: &SandboxPolicy,
) -> Result<(Command, SandboxGuard), ProbeError> {
    let env = super::env::kernel_env(std::env::vars_os(), &super::EnvActivation::None, &Default::default());
    crate::sandbox::command_like_a_kernel(program, policy, cwd, &env).map_err(|e| ProbeError::Sandbox(Arc::new(e)))
}

/// Probe `interpreter` in `cwd` under the kernels' sandbox `policy` (cached on
/// success, in the process and, for a real binary, on disk: see
/// [`super::memo`]); the error says why it is unusable.
pub fn probe(interpreter: &Path, cwd: &Path, policy: &SandboxPolicy) -> Result<ProbeInfo, ProbeError> {
    let key = (cwd.to_path_buf(), interpreter.to_path_buf());
    let slot = cache().lock().unwrap().entry(key).or_default().clone();
    let mut known = slot.lock().unwrap();
    if let Some(info) = known.as_ref() {
        return Ok(info.clone());
    }
    let info = super::memo::remembered("python", interpreter, || run_probe(interpreter, cwd, policy))?;
    *known = Some(info.clone());
    Ok(info)
}

/// What [`probe`] found for `interpreter` in `cwd` earlier in this process,
/// without probing: `None` when it was never probed (or is being probed now).
pub fn known(interpreter: &Path, cwd: &Path) -> Option<ProbeInfo> {
    let key = (cwd.to_path_buf(), interpreter.to_path_buf());
    let slot = cache().lock().unwrap().get(&key)?.clone();
    slot.try_lock().ok()?.clone()
}

fn run_probe(interpreter: &Path, cwd: &Path, policy: &SandboxPolicy) -> Result<ProbeInfo, ProbeError> {
    let (mut command, _sandbox) = probe_command(interpreter, cwd, policy)?;
    // Isolated (-I): neither the working folder (a `json.py` planted there would
    // answer for the interpreter) nor PYTHON* variables nor user site-packages.
    command.args(["-I", "-c", PROBE_SCRIPT]);
    let stdout = run_bounded(command, PROBE_TIMEOUT)?;
    let info: ProbeInfo = serde_json::from_str(stdout.trim())
        .map_err(|_| ProbeError::Unexpected { output: stdout.trim().to_string() })?;
    check_version(&info.version)?;
    if info.executable.as_os_str().is_empty() {
        return Ok(ProbeInfo { executable: interpreter.to_path_buf(), ..info });
    }
    check_answer(interpreter, &info.executable, cwd, policy)?;
    Ok(info)
}

/// A probe's answer names the program every later kernel of that
/// interpreter is started with (and is remembered on disk for other
/// workspaces): it may name the candidate itself, or a program no kernel
/// could have written, never another file of a place kernels write in.
pub fn check_answer(candidate: &Path, executable: &Path, cwd: &Path, policy: &SandboxPolicy) -> Result<(), ProbeError> {
    use crate::sandbox::resolve;
    if !executable.is_absolute() {
        return Err(ProbeError::Unexpected { output: format!("a relative executable {}", executable.display()) });
    }
    let real = resolve(executable);
    if real == resolve(candidate) || policy.mode == crate::sandbox::SandboxMode::Off {
        return Ok(());
    }
    let mut writable: Vec<PathBuf> = vec![policy.workspace.clone().unwrap_or_else(|| cwd.to_path_buf())];
    writable.extend(policy.allow_write.iter().cloned());
    writable.extend([policy.caches(), PathBuf::from("/dev/shm")]);
    // The kernels' temp dirs, not the whole temp folder they are made in.
    let temp_root = resolve(&policy.temp_root());
    if let Some(Component::Normal(first)) = real.strip_prefix(&temp_root).ok().and_then(|rest| rest.components().next())
        && first.to_string_lossy().starts_with(crate::sandbox::KERNEL_TEMP_PREFIX)
    {
        writable.push(temp_root.join(first));
    }
    match writable.iter().find(|place| real.starts_with(resolve(place))) {
        None => Ok(()),
        Some(place) => Err(ProbeError::Unexpected {
            output: format!(
                "it names {} as its interpreter, a file in {}, where kernels write: not used",
                executable.display(),
                place.display()
            ),
        }),
    }
}

/// Err unless `version` is at least [`MIN_VERSION`].
pub fn check_version(version: &str) -> Result<(), ProbeError> {
    let mut parts = version.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    let found = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    if found < MIN_VERSION {
        return Err(ProbeError::TooOld {
            runtime: "Python",
            version: version.to_string(),
            needed: format!("{}.{}", MIN_VERSION.0, MIN_VERSION.1),
        });
    }
    Ok(())
}

/// The most of a probe's stdout and stderr that is kept: its answer is a line.
pub const MAX_PROBE_OUTPUT: usize = 64 << 10;

/// Run a probe command (stdin detached) for at most `limit`; its stdout when it
/// succeeds, else a reason that completes "… failed: ". A probe may be a file
/// a kernel planted: at most [`MAX_PROBE_OUTPUT`] of each stream is kept, and
/// once it exits (or runs out of time) its whole process group is killed and
/// nothing more is waited for, so a child it left holding its pipes holds
/// nothing of the host's.
pub fn run_bounded(mut command: Command, limit: Duration) -> Result<String, ProbeError> {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| ProbeError::Spawn { source: Arc::new(e) })?;
    let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
    let outcome = collect(&mut child, limit, &mut stdout, &mut stderr);
    // Whatever it started in its group goes with it (probes run in a session of their own);
    // the probe is not reaped yet, so its pid (the group's id) cannot have been reused.
    #[cfg(unix)]
    if let Ok(pid) = i32::try_from(child.id()) {
        // SAFETY: a kill(2) of the probe's own process group.
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
        }
    }
    if let Err(error) = outcome {
        let _ = child.kill();
        let _ = child.wait();
        return Err(error);
    }
    let status = child.wait().map_err(|e| ProbeError::Wait { source: Arc::new(e) })?;
    let (stdout, stderr) = (String::from_utf8_lossy(&stdout).into_owned(), String::from_utf8_lossy(&stderr));
    if !status.success() {
        let detail = stderr.trim().lines().last().unwrap_or("no error output").to_string();
        return Err(ProbeError::Failed { status, detail });
    }
    Ok(stdout)
}

/// Read the child's stdout and stderr (to [`MAX_PROBE_OUTPUT`] each) until it
/// exits (left unreaped) or `limit` passes, never blocking on a pipe past
/// either, nor reading on past what is kept.
#[cfg(unix)]
fn collect(
    child: &mut std::process::Child,
    limit: Duration,
    stdout: &mut Vec<u8>,
    stderr: &mut Vec<u8>,
) -> Result<(), ProbeError> {
    use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
    use std::os::fd::AsFd;
    let deadline = Instant::now() + limit;
    let (mut out, mut err) = (child.stdout.take(), child.stderr.take());
    for fd in [out.as_ref().map(|p| p.as_fd()), err.as_ref().map(|p| p.as_fd())].into_iter().flatten() {
        let flags = nix::fcntl::fcntl(fd, nix::fcntl::FcntlArg::F_GETFL).unwrap_or(0);
        let flags = nix::fcntl::OFlag::from_bits_truncate(flags) | nix::fcntl::OFlag::O_NONBLOCK;
        let _ = nix::fcntl::fcntl(fd, nix::fcntl::FcntlArg::F_SETFL(flags));
    }
    loop {
        drain(&mut out, stdout);
        drain(&mut err, stderr);
        if exited(child).map_err(|e| ProbeError::Wait { source: Arc::new(e) })? {
            // What it wrote before it ended is in the pipes; a child it left may hold them open.
            drain(&mut out, stdout);
            drain(&mut err, stderr);
            return Ok(());
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(ProbeError::Timeout { seconds: limit.as_secs() });
        }
        // Output, or a look at whether it exited, whichever comes first.
        let step = left.min(Duration::from_millis(20));
        let mut fds: Vec<PollFd> = [out.as_ref().map(|p| p.as_fd()), err.as_ref().map(|p| p.as_fd())]
            .into_iter()
            .flatten()
            .map(|fd| PollFd::new(fd, PollFlags::POLLIN))
            .collect();
        if fds.is_empty() {
            std::thread::sleep(step);
        } else {
            let _ = poll(&mut fds, PollTimeout::try_from(step).unwrap_or(PollTimeout::ZERO));
        }
    }
}

/// Whether the child has exited, leaving it unreaped (so that its pid, its
/// process group's id, is not reused before the group is killed).
#[cfg(target_os = "linux")]
fn exited(child: &std::process::Child) -> std::io::Result<bool> {
    use nix::sys::wait::{Id, WaitPidFlag, WaitStatus, waitid};
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    let flags = WaitPidFlag::WEXITED | WaitPidFlag::WNOHANG | WaitPidFlag::WNOWAIT;
    match waitid(Id::Pid(pid), flags) {
        Ok(WaitStatus::StillAlive) => Ok(false),
        Ok(_) => Ok(true),
        Err(e) => Err(std::io::Error::from(e)),
    }
}

/// Whether the child has exited (reaped: `wait` then gives the status kept).
#[cfg(all(unix, not(target_os = "linux")))]
fn exited(child: &mut std::process::Child) -> std::io::Result<bool> {
    child.try_wait().map(|status| status.is_some())
}

/// Read what a non-blocking pipe holds now, up to [`MAX_PROBE_OUTPUT`]; at
/// its end, at an error, or once that much was read, the pipe is dropped (a
/// writer that goes on gets EPIPE; nothing keeps this reading forever).
#[cfg(unix)]
fn drain(pipe: &mut Option<impl Read>, into: &mut Vec<u8>) {
    let Some(reader) = pipe else { return };
    let mut buffer = [0u8; 8192];
    while into.len() < MAX_PROBE_OUTPUT {
        let room = (MAX_PROBE_OUTPUT - into.len()).min(buffer.len());
        match reader.read(&mut buffer[..room]) {
            Ok(0) => break,
            Ok(n) => into.extend_from_slice(&buffer[..n]),
            Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => return,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    *pipe = None;
}

/// Elsewhere: wait for the child within `limit`, then read what it wrote (bounded).
#[cfg(not(unix))]
fn collect(
    child: &mut std::process::Child,
    limit: Duration,
    stdout: &mut Vec<u8>,
    stderr: &mut Vec<u8>,
) -> Result<(), ProbeError> {
    let started = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if started.elapsed() > limit => return Err(ProbeError::Timeout { seconds: limit.as_secs() }),
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => return Err(ProbeError::Wait { source: Arc::new(e) }),
        }
    }
    if let Some(out) = child.stdout.take() {
        let _ = out.take(MAX_PROBE_OUTPUT as u64).read_to_end(stdout);
    }
    if let Some(err) = child.stderr.take() {
        let _ = err.take(MAX_PROBE_OUTPUT as u64).read_to_end(stderr);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn old_pythons_and_failing_commands_say_why() {
        assert!(check_version("3.8.0").is_ok());
        let old = check_version("3.7.9").unwrap_err();
        assert!(matches!(&old, ProbeError::TooOld { runtime: "Python", version, .. } if version == "3.7.9"));
        assert_eq!(old.to_string(), "it is Python 3.7.9; cellbox needs 3.8 or newer");
        let mut command = Command::new("sh");
        command.args(["-c", "echo first >&2; echo 'last words' >&2; exit 3"]);
        let failed = run_bounded(command, Duration::from_secs(10)).unwrap_err();
        assert!(matches!(&failed, ProbeError::Failed { detail, .. } if detail == "last words"), "{failed:?}");
        assert_eq!(failed.to_string(), "it failed (exit status: 3): last words");
        let missing = run_bounded(Command::new("/nonexistent/cellbox-probe"), Duration::from_secs(10)).unwrap_err();
        assert!(matches!(missing, ProbeError::Spawn { .. }), "{missing:?}");
    }
}
