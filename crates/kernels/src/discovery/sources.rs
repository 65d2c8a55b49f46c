//! Finding the Python interpreter for a kernel: an ordered list of sources,
//! each a small function that proposes a candidate.
//!
//! Order: an explicit interpreter setting (which skips all others) →
//! `VIRTUAL_ENV` → `CONDA_PREFIX` → `<cwd>/.venv` → `<cwd>/venv` → the managed
//! environment `~/.cellbox/python-env` → `python`, then `python3`, on `PATH`.
//! A candidate that is a version manager's shim (pyenv, asdf, mise) is then
//! followed to the interpreter it would run ([`super::shims`]).

use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};

use super::env::EnvActivation;
use super::input::{DiscoveryInput, is_executable};

/// Where a candidate interpreter came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PythonSource {
    /// The caller named the interpreter (`--python`, `CELLBOX_PYTHON`).
    Explicit,
    /// `$VIRTUAL_ENV`, an activated virtual environment.
    VirtualEnv,
    /// `$CONDA_PREFIX`, an activated conda environment.
    CondaPrefix,
    /// `<cwd>/.venv`.
    ProjectDotVenv,
    /// `<cwd>/venv`.
    ProjectVenv,
    /// `~/.cellbox/python-env`, the environment cellbox manages.
    Managed,
    /// A `python`/`python3` found on `PATH`.
    Path,
}

impl fmt::Display for PythonSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PythonSource::Explicit => "explicit interpreter setting",
            PythonSource::VirtualEnv => "VIRTUAL_ENV",
            PythonSource::CondaPrefix => "CONDA_PREFIX",
            PythonSource::ProjectDotVenv => "project .venv",
            PythonSource::ProjectVenv => "project venv",
            PythonSource::Managed => "managed environment ~/.cellbox/python-env",
            PythonSource::Path => "PATH",
        })
    }
}

/// One interpreter a source proposes. `interpreter` may not exist: checking
/// is the resolver's job, so that it can say what was tried.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    pub source: PythonSource,
    pub interpreter: PathBuf,
    pub activation: EnvActivation,
}

/// The interpreter inside an environment root (`bin/python`, else `bin/python3`).
///
/// A root that is not there (the usual `.venv`, `venv` and managed
/// environment) costs one look, not two: discovery runs before every call.
pub fn env_interpreter(root: &Path) -> PathBuf {
    let bin = root.join("bin");
    let python = bin.join("python");
    if !root.exists() || python.exists() {
        return python;
    }
    let python3 = bin.join("python3");
    if python3.exists() { python3 } else { python }
}

fn venv_candidate(source: PythonSource, root: PathBuf) -> Candidate {
    Candidate { source, interpreter: env_interpreter(&root), activation: EnvActivation::Venv(root) }
}

/// The explicit setting: `~` expanded, relative paths against cwd, bare
/// names looked up on `PATH`. An interpreter inside a venv activates it.
pub fn explicit_source(input: &DiscoveryInput) -> Option<Candidate> {
    let raw = input.explicit.as_deref()?.trim();
    let interpreter = if let Some(rest) = raw.strip_prefix("~/") {
        input.home.clone().unwrap_or_default().join(rest)
    } else if raw.contains('/') {
        input.cwd.join(raw)
    } else {
        search_path(input.path.as_ref(), raw).unwrap_or_else(|| PathBuf::from(raw))
    };
    let activation = interpreter
        .parent()
        .and_then(Path::parent)
        .filter(|root| root.join("pyvenv.cfg").is_file())
        .map(|root| EnvActivation::Venv(root.to_path_buf()))
        .unwrap_or(EnvActivation::None);
    Some(Candidate { source: PythonSource::Explicit, interpreter, activation })
}

pub fn virtual_env_source(input: &DiscoveryInput) -> Option<Candidate> {
    let root = PathBuf::from(input.virtual_env.as_ref()?);
    Some(venv_candidate(PythonSource::VirtualEnv, root))
}

pub fn conda_source(input: &DiscoveryInput) -> Option<Candidate> {
    let root = PathBuf::from(input.conda_prefix.as_ref()?);
    Some(Candidate {
        source: PythonSource::CondaPrefix,
        interpreter: env_interpreter(&root),
        activation: EnvActivation::Conda(root),
    })
}

pub fn project_dot_venv_source(input: &DiscoveryInput) -> Option<Candidate> {
    Some(venv_candidate(PythonSource::ProjectDotVenv, input.cwd.join(".venv")))
}

pub fn project_venv_source(input: &DiscoveryInput) -> Option<Candidate> {
    Some(venv_candidate(PythonSource::ProjectVenv, input.cwd.join("venv")))
}

/// `~/.cellbox/python-env`.
pub fn managed_env_root(home: &Path) -> PathBuf {
    home.join(".cellbox").join("python-env")
}

pub fn managed_source(input: &DiscoveryInput) -> Option<Candidate> {
    let home = input.home.as_ref()?;
    Some(venv_candidate(PythonSource::Managed, managed_env_root(home)))
}

/// `python` then `python3` from `PATH`; a name not found is still proposed
/// (as a bare name) so the report says it was looked for. Each is looked up
/// only when reached.
pub fn path_sources(input: &DiscoveryInput) -> impl Iterator<Item = Candidate> + '_ {
    ["python", "python3"].into_iter().map(|name| Candidate {
        source: PythonSource::Path,
        interpreter: search_path(input.path.as_ref(), name).unwrap_or_else(|| PathBuf::from(name)),
        activation: EnvActivation::None,
    })
}

/// Every candidate in resolution order. With an explicit setting, only it.
///
/// Each is made when reached: resolution stops at the first that works, and
/// making one looks at files (it runs before every call).
pub fn candidates(input: &DiscoveryInput) -> Box<dyn Iterator<Item = Candidate> + '_> {
    if let Some(explicit) = explicit_source(input) {
        return Box::new(std::iter::once(explicit));
    }
    let sources: [fn(&DiscoveryInput) -> Option<Candidate>; 5] =
        [virtual_env_source, conda_source, project_dot_venv_source, project_venv_source, managed_source];
    Box::new(sources.into_iter().filter_map(move |source| source(input)).chain(path_sources(input)))
}

/// The first executable file called `name` in `path`.
pub fn search_path(path: Option<&OsString>, name: &str) -> Option<PathBuf> {
    std::env::split_paths(path?).map(|dir| dir.join(name)).find(|file| is_executable(file))
}
