//! The Python runtime: `python -u runner.py` (the `runner/` package, listed in
//! [`runner_files::RUNNER_FILES`]), found by [`crate::discovery`]'s discovery
//! (explicit setting, venvs, conda, the managed env, `PATH`).

use std::path::{Path, PathBuf};

use super::runner_files::{self, RunnerSet};
use crate::paths::cache_root;

/// The Python runner.
pub static RUNNER: RunnerSet = RunnerSet {
    folder: "runner",
    source_dir: "runner",
    extension: "py",
    entry: "runner.py",
    files: runner_files::RUNNER_FILES,
    hash_once: std::sync::OnceLock::new(),
};

/// The code the host runs once in every new Python kernel (and after a reset).
pub const PRELUDE_CODE: &str = "import cellbox_kernel.prelude as _cellbox_prelude\n\
_cellbox_prelude.install(globals())\n\
del _cellbox_prelude\n";

/// Make sure the Python runner is on disk under `root`; return the path of `runner.py`.
pub fn ensure_runner_in(root: &Path) -> std::io::Result<PathBuf> {
    RUNNER.ensure_in(root)
}

/// [`ensure_runner_in`] the default [`cache_root`].
pub fn ensure_runner() -> std::io::Result<PathBuf> {
    ensure_runner_in(&cache_root())
}
