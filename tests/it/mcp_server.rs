//! `cellbox mcp` driven by the official Python MCP client (tests/mcp/client.py).
//! The client needs the `mcp` package: `scripts/test` installs it into the
//! interpreter it passes as CELLBOX_TEST_PYTHON.

use crate::common;

use std::time::Duration;

fn scenario(name: &str) -> tempfile::TempDir {
    scenario_with_env(name, &[])
}

fn scenario_with_env(name: &str, env: &[(&str, &str)]) -> tempfile::TempDir {
    common::mcp::mcp_scenario("client.py", name, env)
}

#[test]
fn initialize_and_list_tools() {
    scenario("tools");
}

#[test]
fn every_tool_result_validates_against_its_output_schema_and_carries_its_text() {
    scenario("schemas");
}

#[test]
fn state_persists_across_calls_and_reset_clears_it() {
    scenario("state");
}

#[test]
fn a_failing_cell_is_an_error_result() {
    scenario("error");
}

#[test]
fn pre_run_checks_through_the_tool_argument() {
    scenario("check");
}

#[test]
fn a_matplotlib_plot_is_image_content() {
    scenario("plot");
}

#[test]
fn large_output_is_truncated_and_readable_as_a_resource() {
    scenario("artifact");
}

#[test]
fn the_session_exports_as_a_notebook() {
    scenario("notebook");
}

#[test]
fn long_cells_send_progress_notifications() {
    scenario("progress");
}

#[test]
fn cancelling_a_call_interrupts_the_cell_and_keeps_state() {
    scenario("cancel");
}

#[test]
fn closing_the_connection_leaves_no_python_process() {
    let cwd = scenario("close");
    let pid: u32 = std::fs::read_to_string(cwd.path().join("kernel.pid")).unwrap().trim().parse().unwrap();
    let deadline = std::time::Instant::now() + common::PATIENCE;
    while !common::group_members(pid).is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(common::group_members(pid).is_empty(), "kernel group {pid} outlived the connection");
}

#[test]
fn sigterm_to_the_server_disposes_its_kernels() {
    let (mut server, _) = common::mcp::RawServer::initialized("2025-06-18", serde_json::json!({}));
    let result = server.eval(serde_json::json!({"cells": [{"code": "import os; os.getpid()"}]}));
    let pid: u32 = common::mcp::text(&result).trim().parse().expect("the eval call answered a pid");
    assert_eq!(common::group_members(pid).len(), 1);
    let status = server.terminate();
    assert!(status.success() || status.code().is_some(), "{status:?}");
    assert!(common::group_members(pid).is_empty(), "kernel {pid} outlived the server");
}

#[test]
fn javascript_cells_run_beside_python() {
    scenario_with_env("javascript", &[("CELLBOX_PY", "on"), ("CELLBOX_JS", "on")]);
}

#[test]
fn javascript_only_offers_only_javascript() {
    scenario_with_env("javascript_only", &[("CELLBOX_JS", "only")]);
}
