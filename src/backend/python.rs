//! The Python backend: `python -u runner.py` (the `runner/` package, listed in
//! [`runner_files::RUNNER_FILES`]), found by [`crate::runtime`]'s discovery
//! (explicit setting, venvs, conda, the managed env, `PATH`).

use super::runner_files::{self, RunnerSet};

/// The Python runner.
pub static RUNNER: RunnerSet = RunnerSet {
    folder: "runner",
    source_dir: "runner",
    extension: "py",
    entry: "runner.py",
    files: runner_files::RUNNER_FILES,
};

/// The code the host runs once in every new Python kernel.
pub const PRELUDE_CODE: &str = runner_files::PRELUDE_CODE;
