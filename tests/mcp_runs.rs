//! Runs and named sessions of `evalkit mcp`, driven by the official Python MCP
//! client (tests/mcp/runs.py): `wait` on eval, `eval_wait`, `eval_cancel`,
//! queueing, `session` and `eval_sessions`, progress on silent cells.

mod common;

use std::process::Command;

fn scenario(name: &str) {
    let cwd = tempfile::tempdir().unwrap();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/mcp/runs.py");
    let output = Command::new(common::python())
        .arg(script)
        .arg(env!("CARGO_BIN_EXE_evalkit"))
        .arg(cwd.path())
        .arg(name)
        .env("EVALKIT_PYTHON", common::python())
        .env("EVALKIT_ARTIFACTS_DIR", cwd.path().join("artifacts"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        !stderr.contains("No module named 'mcp'"),
        "the MCP client is missing: run scripts/test, which installs it (python: {})",
        common::python().display()
    );
    assert!(output.status.success(), "scenario {name} failed\nstdout:\n{stdout}\nstderr:\n{stderr}");
}

#[test]
fn a_long_cell_with_a_wait_returns_a_handle_and_eval_wait_brings_the_rest() {
    scenario("wait");
}

#[test]
fn eval_cancel_interrupts_the_run_and_keeps_state() {
    scenario("cancel");
}

#[test]
fn a_call_on_a_busy_session_queues_or_fails_with_wait_zero() {
    scenario("queue");
}

#[test]
fn named_sessions_have_separate_state() {
    scenario("sessions");
}

#[test]
fn a_silent_cell_still_sends_progress_at_least_every_ten_seconds() {
    scenario("silent_progress");
}
