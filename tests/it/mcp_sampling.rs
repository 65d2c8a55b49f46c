//! A cell's completion()/agent() under `cellbox mcp`, answered by the real
//! Python MCP client's sampling callback (tests/mcp/sampling.py).

use crate::common;

fn scenario(name: &str) {
    common::mcp::mcp_scenario("sampling.py", name, &[]);
}

#[test]
fn completion_is_answered_by_the_clients_sampling() {
    scenario("completion");
}

#[test]
fn a_schema_asks_for_json_and_agent_sends_its_instructions_as_system_prompt() {
    scenario("schema_and_agent");
}

#[test]
fn a_named_session_reaches_the_same_client() {
    scenario("named_session");
}

#[test]
fn the_cell_timeout_waits_while_the_client_answers() {
    scenario("paused_timeout");
}

#[test]
fn a_client_without_sampling_gets_a_clear_error_in_the_cell() {
    scenario("no_sampling");
}

#[test]
fn on_protocol_2026_07_28_sampling_goes_through_input_required_rounds() {
    scenario("rounds_completion");
}

#[test]
fn between_rounds_the_parked_cell_keeps_its_timeout_paused() {
    scenario("rounds_paused_timeout");
}

#[test]
fn on_protocol_2026_07_28_a_client_without_sampling_gets_a_clear_error() {
    scenario("rounds_no_sampling");
}
