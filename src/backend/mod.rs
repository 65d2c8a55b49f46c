//! The backends a kernel can run: which runtime executes the cells, how its
//! runner is started, and what it supports.
//!
//! Every backend speaks the same NDJSON protocol (`crate::protocol`) with the
//! same process layout, so one process kernel ([`crate::kernel::Kernel`])
//! drives them all; a backend only says how to find its runtime and launch
//! its runner:
//!
//! - [`python`]: `python -u runner.py` (the `runner/` folder), magics, a prelude request;
//! - [`node`]: `node --expose-internals runner.js` (the `runner-js/` folder).
//!
//! Code above the kernel layer asks a [`Backend`] instead of naming one.

pub mod node;
pub mod python;
pub mod runner_files;

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::runtime::EnvActivation;
use runner_files::RunnerSet;

/// Which runtime runs a kernel's cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Backend {
    /// CPython 3.8+, with the `runner/` package.
    Python,
    /// Node.js 18+, with the `runner-js/` scripts.
    Node,
}

impl Backend {
    /// Every backend, in the order a call takes their kernels (so concurrent
    /// calls never wait for each other in a cycle).
    pub const ALL: [Backend; 2] = [Backend::Python, Backend::Node];

    /// The name people read ("Python", "JavaScript").
    pub fn display_name(self) -> &'static str {
        match self {
            Backend::Python => "Python",
            Backend::Node => "JavaScript",
        }
    }

    /// The `cellbox setup <name> --check` word for this backend's runtime.
    pub fn setup_name(self) -> &'static str {
        match self {
            Backend::Python => "python",
            Backend::Node => "node",
        }
    }

    /// The runner files embedded for this backend.
    pub fn runner(self) -> &'static RunnerSet {
        match self {
            Backend::Python => &python::RUNNER,
            Backend::Node => &node::RUNNER,
        }
    }

    /// Arguments before the host's own (`--host-pid …`), given the runner's entry file.
    pub fn runner_args(self, entry: &Path) -> Vec<OsString> {
        match self {
            Backend::Python => vec!["-u".into(), entry.into()],
            Backend::Node => vec!["--expose-internals".into(), entry.into()],
        }
    }

    /// Code run once in every new kernel, after the cwd is set, if any.
    pub fn prelude(self) -> Option<&'static str> {
        match self {
            Backend::Python => Some(python::PRELUDE_CODE),
            // The Node runner installs its helpers itself.
            Backend::Node => None,
        }
    }

    /// Whether cells understand IPython-style magics (`%pip`, `!cmd`, …).
    pub fn supports_magics(self) -> bool {
        self == Backend::Python
    }
}

impl std::fmt::Display for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.display_name())
    }
}

/// A runtime that was found for a backend: what to spawn and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Runtime {
    pub backend: Backend,
    /// What to spawn (a probed real executable, ideally).
    pub executable: PathBuf,
    /// `major.minor.patch`, when probed.
    pub version: Option<String>,
    /// Environment activation (a Python venv or conda env; none for Node).
    pub activation: EnvActivation,
}

impl From<crate::runtime::ResolvedPython> for Runtime {
    fn from(python: crate::runtime::ResolvedPython) -> Self {
        Runtime {
            backend: Backend::Python,
            executable: python.executable,
            version: python.version,
            activation: python.activation,
        }
    }
}
