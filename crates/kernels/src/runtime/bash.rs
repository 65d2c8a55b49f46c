//! The bash runtime: a long-lived `bash runner.sh` (`runner-bash/`), one per
//! session, whose cwd, variables, functions and aliases carry from cell to
//! cell. Bash is `bash` on `PATH`, probed once per process (in the kernels'
//! sandbox, with a 15 s bound) for its real path and version; 4.1 or newer
//! is required (the runner keeps its protocol's fds in variables).

use std::path::{Path, PathBuf};

use super::runner_files::{self, RunnerSet};
use super::{Interpreter, Probed, Probes, Runtime};
use crate::discovery::sources::search_path;
use crate::discovery::{EnvActivation, ProbeError, is_executable};
use crate::sandbox::SandboxPolicy;

/// The oldest bash the runner supports.
pub const MIN_VERSION: (u32, u32) = (4, 1);

/// The bash runner.
pub static RUNNER: RunnerSet = RunnerSet {
    folder: "runner-bash",
    source_dir: "runner-bash",
    extension: "sh",
    entry: "runner.sh",
    files: runner_files::BASH_RUNNER_FILES,
    hash_once: std::sync::OnceLock::new(),
};

/// No usable bash: what was tried and why it failed, and what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no usable bash was found for bash cells: {tried}. Install bash 4.1 or newer on PATH.")]
pub struct BashUnavailable {
    pub tried: String,
}

static PROBES: Probes = Probes::new("bash");

/// Find and probe `bash` on `path` (the probe runs under the kernels' sandbox `policy`).
pub fn resolve(
    cwd: &Path,
    path: Option<&std::ffi::OsString>,
    policy: &SandboxPolicy,
) -> Result<Interpreter, BashUnavailable> {
    let Some(candidate) = search_path(path, "bash") else {
        return Err(BashUnavailable { tried: "`bash` is not on PATH".into() });
    };
    if !is_executable(&candidate) {
        return Err(BashUnavailable { tried: format!("{} is not executable", candidate.display()) });
    }
    let probed = PROBES.answer(&candidate, || probe(&candidate, cwd, policy));
    match probed {
        Ok((executable, version)) => Ok(Interpreter {
            runtime: Runtime::Bash,
            executable,
            version: Some(version),
            activation: EnvActivation::None,
        }),
        Err(problem) => Err(BashUnavailable { tried: format!("{} on PATH: {problem}", candidate.display()) }),
    }
}

/// [`resolve`] with this process's `PATH`.
pub fn resolve_from_env(cwd: &Path, policy: &SandboxPolicy) -> Result<Interpreter, BashUnavailable> {
    resolve(cwd, std::env::var_os("PATH").as_ref(), policy)
}

fn probe(bash: &Path, cwd: &Path, policy: &SandboxPolicy) -> Probed {
    let (mut command, _sandbox) = crate::discovery::probe::probe_command(bash, cwd, policy)?;
    command.args(["--noprofile", "--norc", "-c", "printf '%s\\n%s' \"$BASH_VERSION\" \"$BASH\""]);
    let stdout = crate::discovery::probe::run_bounded(command, super::node::PROBE_TIMEOUT)?;
    let mut lines = stdout.lines();
    let version = lines.next().unwrap_or_default().split('(').next().unwrap_or_default().trim().to_string();
    let executable = lines.next().map(PathBuf::from).filter(|p| p.is_absolute()).unwrap_or_else(|| bash.to_path_buf());
    check_version(&version)?;
    crate::discovery::probe::check_answer(bash, &executable, cwd, policy)?;
    Ok((executable, version))
}

/// Err unless `version` is bash [`MIN_VERSION`] or newer.
pub fn check_version(version: &str) -> Result<(), ProbeError> {
    let mut parts = version.split('.').map(|part| part.parse::<u32>().unwrap_or(0));
    let found = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    if found < MIN_VERSION {
        return Err(ProbeError::TooOld {
            runtime: "bash",
            version: version.to_string(),
            needed: format!("{}.{}", MIN_VERSION.0, MIN_VERSION.1),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_below_4_1_are_refused() {
        assert!(check_version("5.2.15").is_ok());
        assert!(check_version("4.1.0").is_ok());
        let old = check_version("3.2.57").unwrap_err();
        assert_eq!(old.to_string(), "it is bash 3.2.57; cellbox needs 4.1 or newer");
        assert!(check_version("4.0.44").is_err());
    }

    #[test]
    fn a_missing_bash_is_explained() {
        let none = std::ffi::OsString::from("/nonexistent-dir");
        let error = resolve(Path::new("/"), Some(&none), &SandboxPolicy::default()).unwrap_err();
        assert!(error.to_string().contains("not on PATH"), "{error}");
    }
}
