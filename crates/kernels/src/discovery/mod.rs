//! Interpreter discovery: which Python runs the kernel, and with which environment.

pub mod env;
pub mod input;
pub mod memo;
pub mod probe;
pub mod shims;
pub mod sources;
pub mod stamp;

use std::fmt;
use std::path::PathBuf;

pub use env::EnvActivation;
pub use input::{DiscoveryInput, is_executable};
pub use probe::ProbeError;
pub use shims::{Followed, Manager, ShimError};
pub use sources::{Candidate, PythonSource};

/// An interpreter that was found (and, unless the check is skipped, run once).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedPython {
    pub source: PythonSource,
    /// The path discovery found (perhaps a shim or a venv symlink).
    pub interpreter: PathBuf,
    /// What to spawn: the probe's `sys.executable`, or `interpreter` unprobed.
    pub executable: PathBuf,
    /// `major.minor.patch`, when probed.
    pub version: Option<String>,
    pub activation: EnvActivation,
    /// The shim `interpreter` is, followed to the interpreter it runs
    /// (`executable` comes from probing that one, not the shim).
    pub via: Option<Followed>,
    /// Why `interpreter`, a version manager's shim, was probed as it is
    /// instead of being followed.
    pub unfollowed: Option<String>,
}

impl ResolvedPython {
    /// How the interpreter was found, in one line: the source, and the shim
    /// followed or probed.
    pub fn how_found(&self, home: Option<&std::path::Path>) -> String {
        match (&self.via, &self.unfollowed) {
            (Some(followed), _) => format!("{}: {}", self.source, followed.describe(home)),
            (None, Some(why)) => {
                format!("{}: {} (probed as a shim: {why})", self.source, shims::tilde(&self.interpreter, home))
            }
            (None, None) => format!("{}: {}", self.source, shims::tilde(&self.interpreter, home)),
        }
    }
}

/// One candidate that was tried and why it was not used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempt {
    pub source: PythonSource,
    pub interpreter: PathBuf,
    pub problem: String,
}

/// No usable interpreter: lists every attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiscoveryError {
    pub attempts: Vec<Attempt>,
}

impl fmt::Display for DiscoveryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "no usable Python interpreter was found. Tried, in order:")?;
        for attempt in &self.attempts {
            writeln!(f, "  - {}: {} ({})", attempt.source, attempt.interpreter.display(), attempt.problem)?;
        }
        write!(
            f,
            "Install Python 3.8 or newer on PATH, create a venv with `python3 -m venv ~/.cellbox/python-env`, \
             or name one with --python / CELLBOX_PYTHON."
        )
    }
}

impl std::error::Error for DiscoveryError {}

/// Whether probing is skipped (`CELLBOX_PYTHON_SKIP_CHECK=1`).
pub fn skip_check_from_env() -> bool {
    crate::settings::PYTHON_SKIP_CHECK.is_on()
}

/// Try each candidate in order; the first that exists and (unless
/// `skip_check`) runs as Python 3.8+ wins. A version manager's shim is
/// followed to its interpreter first (from the cache when nothing changed),
/// so the probe runs, or is remembered for, the real binary.
pub fn resolve(input: &DiscoveryInput, skip_check: bool) -> Result<ResolvedPython, DiscoveryError> {
    let mut probe = |run: &std::path::Path| Some(probe::probe(run, &input.cwd, &input.sandbox));
    resolve_by(input, skip_check, &mut probe).expect("a probe always answers")
}

/// [`resolve`] when every interpreter it tries was probed before in this
/// process, else `None`. What is left is reading file metadata and a few
/// small files (a shim's resolution), which a caller may do on its own
/// thread before each call; a probe starts the interpreter, which it may not.
pub fn resolve_known(input: &DiscoveryInput, skip_check: bool) -> Option<Result<ResolvedPython, DiscoveryError>> {
    resolve_by(input, skip_check, &mut |run| probe::known(run, &input.cwd).map(Ok))
}

/// [`resolve`] with `probe` answering for each candidate (`None`: stop, no answer).
fn resolve_by(
    input: &DiscoveryInput,
    skip_check: bool,
    probe: &mut dyn FnMut(&std::path::Path) -> Option<Result<probe::ProbeInfo, ProbeError>>,
) -> Option<Result<ResolvedPython, DiscoveryError>> {
    let mut attempts = Vec::new();
    // Attempts that were not executable files: why is said only if nothing
    // works (`missing_problem`), so a call whose interpreter is found does not
    // look at the missing ones twice.
    let mut missing = Vec::new();
    for candidate in sources::candidates(input) {
        let Candidate { source, interpreter, activation } = candidate;
        if !is_executable(&interpreter) {
            missing.push(attempts.len());
            attempts.push(Attempt { source, interpreter, problem: String::new() });
            continue;
        }
        let (via, unfollowed) = match shims::follow_cached(&interpreter, input) {
            shims::Outcome::Followed(followed, _) => (Some(followed), None),
            shims::Outcome::Uncertain { manager, why } => (None, Some(format!("{manager}: {why}"))),
            shims::Outcome::NotAShim => (None, None),
        };
        let run = via.as_ref().map_or(&interpreter, |f| &f.interpreter).clone();
        if skip_check {
            return Some(Ok(ResolvedPython {
                source,
                executable: run,
                interpreter,
                version: None,
                activation,
                via,
                unfollowed,
            }));
        }
        match probe(&run)? {
            Ok(info) => {
                return Some(Ok(ResolvedPython {
                    source,
                    interpreter,
                    executable: info.executable,
                    version: Some(info.version),
                    activation,
                    via,
                    unfollowed,
                }));
            }
            Err(problem) => attempts.push(Attempt { source, interpreter, problem: problem.to_string() }),
        }
    }
    for index in missing {
        attempts[index].problem = missing_problem(&attempts[index].interpreter);
    }
    Some(Err(DiscoveryError { attempts }))
}

/// Why a candidate that is not an executable file was passed over (`doctor` says it too).
pub fn missing_problem(interpreter: &std::path::Path) -> String {
    if interpreter.components().count() == 1 {
        "not found on PATH".to_string()
    } else if interpreter.exists() {
        "not an executable file".to_string()
    } else {
        "does not exist".to_string()
    }
}
