//! The runtimes that execute a kernel's cells (Python, Node): how each one's
//! interpreter is found, how its runner is started, and what it supports.
//!
//! A cell's *language* (`py`, `js`, `ts`: [`crate::tool::Language`]) maps to
//! one runtime; *where* the kernel runs (a local process or a Jupyter gateway)
//! is the backend ([`crate::session::Backend`]), a separate choice.
//!
//! Every runtime speaks the same NDJSON protocol (`crate::protocol`) with the
//! same process layout, so one process kernel ([`crate::kernel::Kernel`])
//! drives them all; a runtime only says how to find its interpreter and
//! launch its runner:
//!
//! - [`python`]: `python -u runner.py` (the `runner/` folder), magics, a prelude request;
//! - [`node`]: `node --expose-internals runner.js` (the `runner-js/` folder);
//! - [`bash`]: `bash --noprofile --norc runner.sh` (the `runner-bash/` folder).
//!
//! Code above the kernel layer asks a [`Runtime`] instead of naming one.

pub mod bash;
pub mod node;
pub mod python;
pub mod runner_files;

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use crate::discovery::EnvActivation;
use runner_files::RunnerSet;

/// Which runtime runs a kernel's cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Runtime {
    /// CPython 3.8+, with the `runner/` package.
    Python,
    /// Node.js 18+, with the `runner-js/` scripts.
    Node,
    /// Bash 4.1+, with `runner-bash/runner.sh`: one long-lived shell.
    Bash,
    /// Any Jupyter kernel installed on the machine, started from its kernelspec
    /// and spoken to over ZeroMQ ([`crate::jupyter`]); no runner of ours.
    Jupyter,
}

impl Runtime {
    /// Every runtime with a runner of ours, in the order a call takes their
    /// kernels (so concurrent calls never wait for each other in a cycle);
    /// Jupyter kernels come after them.
    pub const ALL: [Runtime; 3] = [Runtime::Python, Runtime::Node, Runtime::Bash];

    /// The name people read ("Python", "JavaScript").
    pub fn display_name(self) -> &'static str {
        match self {
            Runtime::Python => "Python",
            Runtime::Node => "JavaScript",
            Runtime::Bash => "Bash",
            Runtime::Jupyter => "Jupyter",
        }
    }

    /// The `cellbox setup <name> --check` word for this runtime.
    pub fn setup_name(self) -> &'static str {
        match self {
            Runtime::Python => "python",
            Runtime::Node => "node",
            Runtime::Bash => "bash",
            Runtime::Jupyter => "jupyter",
        }
    }

    /// The runner files embedded for this runtime (Jupyter kernels have none).
    pub fn runner(self) -> Option<&'static RunnerSet> {
        match self {
            Runtime::Python => Some(&python::RUNNER),
            Runtime::Node => Some(&node::RUNNER),
            Runtime::Bash => Some(&bash::RUNNER),
            Runtime::Jupyter => None,
        }
    }

    /// Arguments before the host's own (`--host-pid …`), given the runner's entry file.
    pub fn runner_args(self, entry: &Path) -> Vec<OsString> {
        match self {
            Runtime::Python => vec!["-u".into(), entry.into()],
            Runtime::Node => vec!["--expose-internals".into(), entry.into()],
            // No profile or rc file: a kernel starts the same wherever it runs.
            Runtime::Bash => vec!["--noprofile".into(), "--norc".into(), entry.into()],
            Runtime::Jupyter => Vec::new(),
        }
    }

    /// Code run once in every new kernel, after the cwd is set, if any.
    pub fn prelude(self) -> Option<&'static str> {
        match self {
            Runtime::Python => Some(python::PRELUDE_CODE),
            // The Node runner installs its helpers itself; bash has none.
            Runtime::Node | Runtime::Bash | Runtime::Jupyter => None,
        }
    }

    /// Whether cells understand IPython-style magics (`%pip`, `!cmd`, …).
    pub fn supports_magics(self) -> bool {
        self == Runtime::Python
    }
}

impl std::fmt::Display for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.display_name())
    }
}

/// A probe's answer: (real executable, version), or why the candidate is unusable.
pub(crate) type Probed = Result<(PathBuf, String), crate::discovery::ProbeError>;

/// The probes of one runtime's candidates: each asked once per process, and
/// remembered across processes ([`crate::discovery::memo`]).
pub(crate) struct Probes {
    kind: &'static str,
    answers: OnceLock<Mutex<HashMap<PathBuf, Probed>>>,
}

impl Probes {
    pub(crate) const fn new(kind: &'static str) -> Self {
        Probes { kind, answers: OnceLock::new() }
    }

    /// `candidate`'s answer, from `probe` the first time.
    pub(crate) fn answer(&self, candidate: &Path, probe: impl FnOnce() -> Probed) -> Probed {
        let answers = self.answers.get_or_init(Default::default);
        if let Some(known) = answers.lock().unwrap().get(candidate).cloned() {
            return known;
        }
        let result = crate::discovery::memo::remembered(self.kind, candidate, probe);
        answers.lock().unwrap().insert(candidate.to_path_buf(), result.clone());
        result
    }
}

/// An interpreter found for a runtime: what to spawn and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interpreter {
    pub runtime: Runtime,
    /// What to spawn (a probed real executable, ideally).
    pub executable: PathBuf,
    /// `major.minor.patch`, when probed.
    pub version: Option<String>,
    /// Environment activation (a Python venv or conda env; none for Node).
    pub activation: EnvActivation,
}

impl From<crate::discovery::ResolvedPython> for Interpreter {
    fn from(python: crate::discovery::ResolvedPython) -> Self {
        Interpreter {
            runtime: Runtime::Python,
            executable: python.executable,
            version: python.version,
            activation: python.activation,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use super::*;

    #[test]
    fn every_runner_source_is_embedded() {
        for set in Runtime::ALL.map(|runtime| runtime.runner().expect("runners have runner files")) {
            let root = Path::new(env!("CARGO_MANIFEST_DIR")).join(set.source_dir);
            let mut on_disk = Vec::new();
            for entry in walk(&root) {
                if entry.extension().is_some_and(|e| e == set.extension) {
                    on_disk.push(entry.strip_prefix(&root).unwrap().to_string_lossy().into_owned());
                }
            }
            on_disk.sort();
            let mut embedded: Vec<String> = set
                .files
                .iter()
                .map(|(p, _)| p.to_string())
                .filter(|p| p.ends_with(&format!(".{}", set.extension)))
                .collect();
            embedded.sort();
            assert_eq!(on_disk, embedded, "add new runner files to RUNNER_FILES / NODE_RUNNER_FILES");
        }
    }

    fn walk(dir: &Path) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                if path.file_name().is_some_and(|n| n != "__pycache__") {
                    out.extend(walk(&path));
                }
            } else {
                out.push(path);
            }
        }
        out
    }

    #[test]
    fn writes_private_files_and_rewrites_deleted_ones() {
        let temp = tempfile::tempdir().unwrap();
        let root = temp.path().join("cache");
        let runner = python::ensure_runner_in(&root).unwrap();
        assert!(runner.is_file());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&root).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o700);
        }
        std::fs::remove_dir_all(runner.parent().unwrap()).unwrap();
        let again = python::ensure_runner_in(&root).unwrap();
        assert_eq!(again, runner);
        let main = again.parent().unwrap().join("cellbox_kernel/main.py");
        assert!(main.is_file());
        let original = std::fs::read(&main).unwrap();
        std::fs::write(&main, vec![b'#'; original.len()]).unwrap();
        python::ensure_runner_in(&root).unwrap();
        assert_eq!(std::fs::read(&main).unwrap(), original, "an edit of the same length is undone too");
    }
}
