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
use std::path::{Path, PathBuf};
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

fn run_probe(interpreter: &Path, cwd: &Path, policy: &SandboxPolicy) -> Result<ProbeInfo, ProbeError> {
    let (mut command, _sandbox) = probe_command(interpreter, cwd, policy)?;
    command.args(["-c", PROBE_SCRIPT]);
    let stdout = run_bounded(command, PROBE_TIMEOUT)?;
    let info: ProbeInfo = serde_json::from_str(stdout.trim())
        .map_err(|_| ProbeError::Unexpected { output: stdout.trim().to_string() })?;
    check_version(&info.version)?;
    if info.executable.as_os_str().is_empty() {
        return Ok(ProbeInfo { executable: interpreter.to_path_buf(), ..info });
    }
    Ok(info)
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

/// Run a probe command (stdin detached) for at most `limit`; its stdout when it
/// succeeds, else a reason that completes "… failed: ".
pub fn run_bounded(mut command: Command, limit: Duration) -> Result<String, ProbeError> {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| ProbeError::Spawn { source: Arc::new(e) })?;
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() > limit => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(ProbeError::Timeout { seconds: limit.as_secs() });
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => return Err(ProbeError::Wait { source: Arc::new(e) }),
        }
    };
    let mut stdout = String::new();
    let mut stderr = String::new();
    if let Some(mut out) = child.stdout.take() {
        let _ = out.read_to_string(&mut stdout);
    }
    if let Some(mut err) = child.stderr.take() {
        let _ = err.read_to_string(&mut stderr);
    }
    if !status.success() {
        let detail = stderr.trim().lines().last().unwrap_or("no error output").to_string();
        return Err(ProbeError::Failed { status, detail });
    }
    Ok(stdout)
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
