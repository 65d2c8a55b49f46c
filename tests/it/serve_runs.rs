//! `cellbox serve` running cells for its clients: progress, cancellation and
//! resumed streams over HTTP, cells' completion()/agent() answered by the
//! calling client's sampling, the kernel limits (per kernel, and in total over
//! all principals), and kernels on an Enterprise Gateway.

use crate::common;

use common::serve::{INITIALIZE, Server, bearer, get, post, raw_session, spawn_eval};
use serde_json::json;

#[test]
fn the_total_kernel_limit_holds_over_all_principals_and_frees_with_a_reset() {
    let (server, tokens) = Server::start(&["alice", "bob"], &["--max-kernels-total", "1"]);
    let (alice, bob) = (&tokens[0], &tokens[1]);
    let run = |token: &str, request: serde_json::Value| server.client(token, "run", &request.to_string());
    // A bash kernel cannot be hibernated: while alice's holds the one place, bob's start is refused.
    let first = run(alice, json!({"code": "echo 42", "language": "bash"}));
    assert_eq!(first["text"], "42\n", "{first}");
    let refused = run(bob, json!({"code": "6 * 7"}));
    assert_eq!(refused["is_error"], true, "{refused}");
    assert!(refused["text"].as_str().unwrap().contains("limit of 1 kernels"), "{refused}");
    server.client(alice, "reset", "");
    let second = run(bob, json!({"code": "kept = 6 * 7; kept"}));
    assert_eq!(second["text"], "42\n", "{second}");
    // An idle Python kernel gives way instead: hibernated, and woken at its session's next call.
    let alices = run(alice, json!({"code": "1"}));
    assert_eq!(alices["text"], "1\n", "{alices}");
    let back = run(bob, json!({"code": "kept"}));
    let text = back["text"].as_str().unwrap();
    assert!(
        text.starts_with("42\n") && text.contains("hibernated (to stay within a budget of 1 live kernels)"),
        "{back}"
    );
}

#[test]
fn a_call_the_http_client_cancels_interrupts_its_cell_and_keeps_the_kernel() {
    let (server, tokens) = Server::start(&["alice"], &[]);
    let cancelled = server.client(&tokens[0], "cancel", "");
    assert_eq!(cancelled["kept"], "'still here'", "{cancelled}");
}

/// Wait until `/metrics` has every one of `lines` (each a whole line), and return the text.
async fn metrics_showing(server: &Server, lines: &[&str]) -> String {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let (_, text) = get(server, "/metrics").await;
        if lines.iter().all(|line| text.lines().any(|have| have == *line)) {
            return text;
        }
        assert!(std::time::Instant::now() < deadline, "{lines:?} never all in\n{text}");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn metrics_show_busy_and_idle_kernels_queued_calls_evictions_and_bytes_sent() {
    let (server, tokens) = Server::start(&["alice"], &["--max-kernels", "1"]);
    let headers = raw_session(&server.url, &tokens[0]).await;
    let call = |id: u64, code: String, session: Option<&str>| spawn_eval(&server.url, &headers, id, &code, session);
    // A cell held by a gate, and a second call of the same session behind it.
    let gate = tempfile::tempdir().unwrap();
    let open = gate.path().join("open");
    let first = call(2, common::gate(&open), None);
    metrics_showing(&server, &["cellbox_kernels_by_state{state=\"busy\"} 1"]).await;
    let second = call(3, "6 * 7".into(), None);
    metrics_showing(&server, &["cellbox_calls_queued 1"]).await;
    std::fs::write(&open, "").unwrap();
    for answered in [first.await.unwrap(), second.await.unwrap()] {
        assert!(answered.0 == 200 && answered.2.contains("\"isError\":false"), "{answered:?}");
    }
    metrics_showing(&server, &["cellbox_kernels_by_state{state=\"idle\"} 1", "cellbox_calls_queued 0"]).await;
    // Another session's kernel needs the only place: the idle one is stopped for it.
    let other = call(4, "1".into(), Some("other")).await.unwrap();
    assert!(other.2.contains("\"isError\":false"), "{other:?}");
    let text = metrics_showing(&server, &["cellbox_kernel_evictions_total{reason=\"limit\"} 1"]).await;
    let sent = text.lines().find_map(|line| line.strip_prefix("cellbox_bytes_out_total ")).unwrap();
    assert!(sent.parse::<u64>().unwrap() > 0, "{text}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tokens_own_limits_hold_for_its_principal_and_no_other() {
    let (server, tokens) =
        Server::start(&["alice --max-calls 1 --max-kernels 1 --memory-limit 300M", "bob"], &["--max-calls", "8"]);
    let (alice, bob) = (raw_session(&server.url, &tokens[0]).await, raw_session(&server.url, &tokens[1]).await);
    let call = |headers: &Vec<(String, String)>, id: u64, code: String, session: &str| {
        spawn_eval(&server.url, headers, id, &code, Some(session))
    };
    let hog = "x = bytearray(512 << 20)\nfor i in range(0, len(x), 4096):\n    x[i] = 1";
    let over = call(&alice, 2, hog.into(), "a").await.unwrap();
    assert!(over.2.contains("memory limit exceeded (300 MiB)"), "alice's kernels get her memory limit: {over:?}");
    // Alice's one place is held by a cell; her next request is refused, bob's is not.
    let gate = tempfile::tempdir().unwrap();
    let open = gate.path().join("open");
    let held = call(&alice, 3, common::gate(&open), "a");
    metrics_showing(&server, &["cellbox_calls_in_flight 1"]).await;
    let refused = call(&alice, 4, "1".into(), "a").await.unwrap();
    assert!(refused.0 == 429 && refused.2.contains("your limit of 1"), "{refused:?}");
    let bobs = call(&bob, 5, "6 * 7".into(), "b").await.unwrap();
    assert!(bobs.0 == 200 && bobs.2.contains("42"), "{bobs:?}");
    std::fs::write(&open, "").unwrap();
    assert_eq!(held.await.unwrap().0, 200);
    // One kernel for alice: a second session's kernel takes the place of the first, which hibernates.
    let second = call(&alice, 6, "1".into(), "other").await.unwrap();
    assert_eq!(second.0, 200, "{second:?}");
    let back = call(&alice, 7, "1".into(), "a").await.unwrap();
    assert!(back.2.contains("hibernated (to stay within "), "{back:?}");
}

/// Scenario `name` of tests/mcp/sampling.py against a fresh server, over HTTP.
fn sampling_scenario(name: &str) {
    let (server, tokens) = Server::start(&["alice"], &[]);
    common::mcp::mcp_scenario(
        "sampling.py",
        name,
        &[("CELLBOX_TEST_MCP_URL", server.url.as_str()), ("CELLBOX_TEST_MCP_TOKEN", tokens[0].as_str())],
    );
}

#[test]
fn over_http_completion_and_agent_are_answered_by_the_clients_sampling() {
    sampling_scenario("completion");
    sampling_scenario("schema_and_agent");
    sampling_scenario("named_session");
}

#[test]
fn over_http_the_client_making_the_call_answers_its_cells_not_another_connection() {
    sampling_scenario("the_calling_client_answers");
}

#[test]
fn over_http_on_protocol_2026_07_28_sampling_goes_through_input_required_rounds() {
    sampling_scenario("rounds_completion");
}

#[test]
fn over_http_a_client_without_sampling_gets_a_clear_error_in_the_cell() {
    sampling_scenario("no_sampling");
    sampling_scenario("rounds_no_sampling");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_server_runs_its_principals_kernels_on_an_enterprise_gateway() {
    use common::gateway::{Flavor, TestGateway};
    let gateway = TestGateway::start(Flavor::EnterpriseGateway, &common::gateway::enterprise_python(), false).await;
    let env = [("CELLBOX_GATEWAY_URL", gateway.url.as_str()), ("CELLBOX_GATEWAY_TOKEN", gateway.token.as_str())];
    let (server, tokens) = Server::start_with_env(&["alice"], &["--backend", "gateway"], &env);
    let token = tokens[0].clone();
    let ran = tokio::task::spawn_blocking(move || {
        let ran = server.client(&token, "run", &json!({"code": "6 * 7"}).to_string());
        (server, ran)
    });
    let (server, ran) = ran.await.unwrap();
    assert_eq!(ran["is_error"], false, "{ran}");
    assert!(ran["text"].as_str().unwrap().contains("42"), "{ran}");
    assert_eq!(gateway.kernels().await.len(), 1, "the kernel runs on the gateway");
    drop(server);
    drop(gateway);
}

#[test]
fn per_kernel_limits_hold_for_every_principals_kernels() {
    let (server, tokens) = Server::start(&["alice"], &["--memory-limit", "256M"]);
    let hog = "x = bytearray(512 << 20)\nfor i in range(0, len(x), 4096):\n    x[i] = 1";
    let over = server.client(&tokens[0], "run", &json!({"code": hog}).to_string());
    assert_eq!(over["is_error"], true, "{over}");
    assert!(over["text"].as_str().unwrap().contains("memory limit exceeded (256 MiB)"), "{over}");
    let next = server.client(&tokens[0], "run", &json!({"code": "1 + 1"}).to_string());
    assert_eq!(next["is_error"], false, "a fresh kernel takes the next call: {next}");
}

#[test]
fn progress_notifications_reach_an_http_client_while_the_cell_runs() {
    let (server, tokens) = Server::start(&["alice"], &[]);
    let gate = tempfile::tempdir().unwrap();
    let stdin = json!({"gate": gate.path().join("open")}).to_string();
    // The cell only ends after the client has seen its first progress notification.
    let seen = server.client(&tokens[0], "progress", &stdin);
    assert_eq!(seen["progress"][0], "cell 1 started", "{seen}");
}

/// The SSE events of a response as they come: (id, data) of each.
struct Events {
    response: reqwest::Response,
    buffer: String,
}

impl Events {
    async fn next(&mut self) -> Option<(Option<String>, String)> {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                let field = |name: &str| {
                    block.lines().find_map(|line| line.strip_prefix(name).map(|rest| rest.trim_start().to_string()))
                };
                match field("data:") {
                    Some(data) => return Some((field("id:"), data)),
                    None => continue, // a comment or a priming event
                }
            }
            let chunk = self.response.chunk().await.ok()??;
            self.buffer.push_str(&String::from_utf8_lossy(&chunk).replace("\r\n", "\n"));
        }
    }
}

#[tokio::test]
async fn a_client_that_lost_its_stream_resumes_it_with_last_event_id() {
    let (server, tokens) = Server::start(&["alice"], &[]);
    let auth = bearer(&tokens[0]);
    let (_, headers, _) = post(&server.url, INITIALIZE, &[("authorization", &auth)]).await;
    let session = headers["mcp-session-id"].to_str().unwrap().to_string();
    let with_session = [("authorization", auth.as_str()), ("mcp-session-id", session.as_str())];
    let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    post(&server.url, initialized, &with_session).await;
    let gate = server.dir.path().join("root/alice/go-on");
    let code = format!(
        "import os, time\nprint('first', flush=True)\nwhile not os.path.exists({:?}):\n    time.sleep(0.02)\n'done'",
        gate.display().to_string()
    );
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "eval", "arguments": {"cells": [{"code": code}]}, "_meta": {"progressToken": "p"}}});
    cellbox_kernels::tls::install_crypto();
    let client = reqwest::Client::new();
    let mut request = client
        .post(&server.url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(call.to_string());
    for (name, value) in with_session {
        request = request.header(name, value);
    }
    let mut events = Events { response: request.send().await.unwrap(), buffer: String::new() };
    // The first progress event, with its id; then the connection is lost.
    let last_id = loop {
        let (id, data) = events.next().await.expect("the call's stream sends progress");
        if data.contains("notifications/progress") && data.contains("first") {
            break id.expect("events carry ids");
        }
    };
    drop(events);
    std::fs::write(&gate, "").unwrap();
    let mut resume = client.get(&server.url).header("accept", "text/event-stream").header("last-event-id", &last_id);
    for (name, value) in with_session {
        resume = resume.header(name, value);
    }
    let response = resume.send().await.unwrap();
    assert_eq!(response.status(), 200, "resuming from {last_id}");
    let mut events = Events { response, buffer: String::new() };
    let answer = loop {
        let (_, data) = events.next().await.expect("the resumed stream brings the call's answer");
        if data.contains("\"id\":2") && data.contains("\"result\"") {
            break data;
        }
    };
    assert!(answer.contains("'done'"), "{answer}");
}
