//! Runs and named sessions of `cellbox mcp`, driven by the official Python MCP
//! client (tests/mcp/runs.py): `wait` on eval, `eval_wait`, `eval_cancel`,
//! queueing, `session` and `eval_sessions`, progress on silent cells.

use crate::common;

fn scenario(name: &str) {
    common::mcp::mcp_scenario("runs.py", name, &[]);
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
fn eval_fork_copies_a_session_into_a_new_one_that_diverges() {
    scenario("fork");
}

#[test]
fn eval_undo_returns_a_session_to_its_checkpoint_after_a_crash() {
    scenario("undo");
}

#[test]
fn eval_snapshot_and_eval_restore_carry_variables_between_sessions() {
    scenario("snapshot");
}

#[test]
fn a_silent_cell_still_sends_progress_at_least_every_ten_seconds() {
    scenario("silent_progress");
}
