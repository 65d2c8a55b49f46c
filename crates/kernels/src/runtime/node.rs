//! The JavaScript runtime: a long-lived `node runner.js` (the `runner-js/`
//! folder, listed in [`runner_files::NODE_RUNNER_FILES`]).
//!
//! Node is found like Python, more simply: the explicit setting (`--node` /
//! `CELLBOX_NODE`; `~` expanded, relative to the cwd, bare names looked up on
//! `PATH`) and nothing else when given, else `node` on `PATH`. Each candidate
//! is probed once per process (`node -p …` with stdin detached and a 15 s
//! bound) for its real executable and version; Node 18 or newer is required.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::runner_files::{self, RunnerSet};
use super::{Interpreter, Probed, Probes, Runtime};
use crate::discovery::EnvActivation;
use crate::discovery::ProbeError;
use crate::discovery::is_executable;
use crate::discovery::sources::search_path;
use crate::sandbox::SandboxPolicy;

/// The oldest Node the runner supports.
pub const MIN_MAJOR: u32 = 18;
/// How long the probe may take.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(15);

/// The Node runner.
pub static RUNNER: RunnerSet = RunnerSet {
    folder: "runner-js",
    source_dir: "runner-js",
    extension: "js",
    entry: "runner.js",
    files: runner_files::NODE_RUNNER_FILES,
    hash_once: std::sync::OnceLock::new(),
};

const PROBE_SCRIPT: &str = "process.stdout.write(process.versions.node + '\\n' + process.execPath)";

/// No usable node: what was tried and why it failed, and what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "no usable Node.js was found: {tried}. Install Node {MIN_MAJOR} or newer on PATH, or name one with --node / \
     CELLBOX_NODE."
)]
pub struct NodeUnavailable {
    pub tried: String,
}

static PROBES: Probes = Probes::new("node");

/// Find and probe node: `explicit` (or `CELLBOX_NODE` when `explicit` is
/// `None`), else `node` on `path`. The probe runs under the kernels' sandbox
/// `policy` (a relative `--node` names a file of the workspace).
pub fn resolve(
    explicit: Option<&str>,
    cwd: &Path,
    path: Option<&std::ffi::OsString>,
    policy: &SandboxPolicy,
) -> Result<Interpreter, NodeUnavailable> {
    let from_env = crate::settings::NODE.get();
    let explicit = explicit.map(str::to_string).or(from_env);
    let (label, candidate) = match explicit.as_deref().map(str::trim) {
        Some(raw) => {
            let file = if let Some(rest) = raw.strip_prefix("~/") {
                dirs::home_dir().unwrap_or_default().join(rest)
            } else if raw.contains('/') {
                cwd.join(raw)
            } else {
                search_path(path, raw).unwrap_or_else(|| PathBuf::from(raw))
            };
            (format!("the explicit setting {}", file.display()), file)
        }
        None => match search_path(path, "node") {
            Some(file) => (format!("{} on PATH", file.display()), file),
            None => return Err(NodeUnavailable { tried: "`node` is not on PATH".into() }),
        },
    };
    if !is_executable(&candidate) {
        return Err(NodeUnavailable { tried: format!("{label} does not exist or is not executable") });
    }
    let probed = PROBES.answer(&candidate, || probe(&candidate, cwd, policy));
    match probed {
        Ok((executable, version)) => Ok(Interpreter {
            runtime: Runtime::Node,
            executable,
            version: Some(version),
            activation: EnvActivation::None,
        }),
        Err(problem) => Err(NodeUnavailable { tried: format!("{label}: {problem}") }),
    }
}

/// [`resolve`] with this process's `PATH`.
pub fn resolve_from_env(
    explicit: Option<&str>,
    cwd: &Path,
    policy: &SandboxPolicy,
) -> Result<Interpreter, NodeUnavailable> {
    resolve(explicit, cwd, std::env::var_os("PATH").as_ref(), policy)
}

fn probe(node: &Path, cwd: &Path, policy: &SandboxPolicy) -> Probed {
    let (mut command, _sandbox) = crate::discovery::probe::probe_command(node, cwd, policy)?;
    command.args(["-e", PROBE_SCRIPT]).env_remove("NODE_OPTIONS");
    let stdout = crate::discovery::probe::run_bounded(command, PROBE_TIMEOUT)?;
    let mut lines = stdout.lines();
    let version = lines.next().unwrap_or_default().trim().to_string();
    let executable = lines.next().map(PathBuf::from).filter(|p| p.is_absolute()).unwrap_or_else(|| node.to_path_buf());
    check_version(&version)?;
    crate::discovery::probe::check_answer(node, &executable, cwd, policy)?;
    Ok((executable, version))
}

/// Err unless `version` is Node [`MIN_MAJOR`] or newer.
pub fn check_version(version: &str) -> Result<(), ProbeError> {
    let major: u32 = version.split('.').next().and_then(|m| m.parse().ok()).unwrap_or(0);
    if major < MIN_MAJOR {
        return Err(ProbeError::TooOld {
            runtime: "Node",
            version: version.to_string(),
            needed: MIN_MAJOR.to_string(),
        });
    }
    Ok(())
}

/// The first Node that strips TypeScript types itself (`module.stripTypeScriptTypes`). On an
/// older one the runner strips them with the amaro it ships (`runner-js/vendor/amaro`).
pub const BUILTIN_TS_STRIPPING: (u32, u32) = (22, 13);

/// Who strips a TypeScript cell's types on Node `version`, in words (for `cellbox doctor`).
pub fn typescript_stripper(version: &str) -> String {
    let mut parts = version.trim_start_matches('v').split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    if (major, minor) >= BUILTIN_TS_STRIPPING {
        "TypeScript types stripped by Node itself".to_string()
    } else {
        format!("TypeScript types stripped by the runner's amaro {}", vendored_amaro_version())
    }
}

/// The version recorded in `runner-js/vendor/amaro/VENDOR.json` (embedded with the runner).
fn vendored_amaro_version() -> &'static str {
    let record =
        RUNNER.files.iter().find(|(path, _)| *path == "vendor/amaro/VENDOR.json").map_or("", |(_, text)| *text);
    let after = record.split("\"version\": \"").nth(1).unwrap_or("");
    after.split('"').next().filter(|v| !v.is_empty()).unwrap_or("?")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typescript_is_stripped_by_node_from_22_13_and_by_the_vendored_amaro_before() {
        assert_eq!(typescript_stripper("22.13.0"), "TypeScript types stripped by Node itself");
        assert_eq!(typescript_stripper("24.1.0"), "TypeScript types stripped by Node itself");
        for old in ["18.20.8", "20.20.2", "22.12.0"] {
            let said = typescript_stripper(old);
            assert!(said.starts_with("TypeScript types stripped by the runner's amaro 1."), "{said}");
        }
    }

    #[test]
    fn versions_below_18_are_refused() {
        assert!(check_version("18.0.0").is_ok());
        assert!(check_version("22.6.1").is_ok());
        let old = check_version("16.20.2").unwrap_err();
        assert!(matches!(&old, ProbeError::TooOld { runtime: "Node", version, .. } if version == "16.20.2"));
        assert_eq!(old.to_string(), "it is Node 16.20.2; cellbox needs 18 or newer");
        assert!(matches!(check_version(""), Err(ProbeError::TooOld { .. })));
    }

    #[test]
    fn a_missing_explicit_node_is_explained() {
        let error = resolve(Some("/no/such/node"), Path::new("/"), None, &SandboxPolicy::default()).unwrap_err();
        assert!(error.to_string().contains("/no/such/node"), "{error}");
        assert!(error.to_string().contains("--node"), "{error}");
        let none = resolve(
            None,
            Path::new("/"),
            Some(&std::ffi::OsString::from("/nonexistent-dir")),
            &SandboxPolicy::default(),
        )
        .unwrap_err();
        assert!(none.tried.contains("not on PATH") || none.tried.contains("explicit"), "{none}");
    }
}
