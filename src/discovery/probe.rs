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
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

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

/// Probe `interpreter` in `cwd` (cached on success, in the process and, for
/// a real binary, on disk: see [`super::memo`]); the error says why it is unusable.
pub fn probe(interpreter: &Path, cwd: &Path) -> Result<ProbeInfo, String> {
    let key = (cwd.to_path_buf(), interpreter.to_path_buf());
    let slot = cache().lock().unwrap().entry(key).or_default().clone();
    let mut known = slot.lock().unwrap();
    if let Some(info) = known.as_ref() {
        return Ok(info.clone());
    }
    let info = super::memo::remembered("python", interpreter, || run_probe(interpreter, cwd))?;
    *known = Some(info.clone());
    Ok(info)
}

fn run_probe(interpreter: &Path, cwd: &Path) -> Result<ProbeInfo, String> {
    let mut command = Command::new(interpreter);
    command.args(["-c", PROBE_SCRIPT]).current_dir(cwd);
    let stdout = run_bounded(command, PROBE_TIMEOUT)?;
    let info: ProbeInfo = serde_json::from_str(stdout.trim())
        .map_err(|_| format!("it printed something unexpected: {:?}", stdout.trim()))?;
    check_version(&info.version)?;
    if info.executable.as_os_str().is_empty() {
        return Ok(ProbeInfo { executable: interpreter.to_path_buf(), ..info });
    }
    Ok(info)
}

/// Err unless `version` is at least [`MIN_VERSION`].
pub fn check_version(version: &str) -> Result<(), String> {
    let mut parts = version.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    let found = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    if found < MIN_VERSION {
        return Err(format!("it is Python {version}; cellbox needs {}.{} or newer", MIN_VERSION.0, MIN_VERSION.1));
    }
    Ok(())
}

/// Run a probe command (stdin detached) for at most `limit`; its stdout when it
/// succeeds, else a reason that completes "… failed: ".
pub fn run_bounded(mut command: Command, limit: Duration) -> Result<String, String> {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("could not run it: {e}"))?;
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() > limit => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("it did not answer within {}s", limit.as_secs()));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => return Err(format!("could not wait for it: {e}")),
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
        return Err(format!("it failed ({status}): {detail}"));
    }
    Ok(stdout)
}
