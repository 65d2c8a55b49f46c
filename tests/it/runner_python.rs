//! The runner's pure-Python unit tests (tests/runner/*.py), run with the
//! interpreter under test so they also cover Python 3.8.

use crate::common;

use std::process::Command;

#[test]
fn runner_unit_tests_pass() {
    let root = env!("CARGO_MANIFEST_DIR");
    let output = Command::new(common::python())
        .args(["-m", "unittest", "discover", "-s", "tests/runner", "-p", "test_*.py", "-v"])
        .current_dir(root)
        .env("PYTHONPATH", format!("{root}/runner"))
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "runner unit tests failed:\n{report}");
    assert!(report.contains("\nOK"), "{report}");
}
