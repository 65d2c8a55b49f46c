//! The host bridge end to end: cells call completion()/agent()/tool()/parallel()
//! on real Python kernels, answered by a library `Bridge`, by the CLI's
//! OpenAI-compatible client (against a local fake server) and by an agent command.

use crate::common;

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use cellbox_engine::bridge::BridgeLimits;
use cellbox_engine::tool::{CallContext, CellStatus, EvalEvent, EvalParams, ignore_events};
use common::engine::{Fixture, eval_timed as eval};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

fn fixture(with_bridge: bool, limits: impl FnOnce(&mut BridgeLimits)) -> Fixture {
    Fixture::bridged(with_bridge, |config| limits(&mut config.bridge.limits))
}

#[tokio::test]
async fn without_a_bridge_calls_fail_with_a_clear_error() {
    let f = fixture(false, |_| {});
    let result = eval(&f.engine, "completion('hi')", 10.0).await;
    assert!(result.is_error);
    assert!(result.text.contains("BridgeError: no bridge configured"), "{}", result.text);
    // The kernel is fine afterwards.
    let result = eval(&f.engine, "1 + 1", 10.0).await;
    assert_eq!(result.text, "2\n");
    f.engine.dispose_all().await;
}

#[tokio::test]
async fn completion_agent_and_tool_are_answered_by_the_bridge() {
    let f = fixture(true, |_| {});
    let code = "print(completion('hi'))\nprint(agent('sort', agent='worker'))\nprint(tool('grep', pattern='x'))";
    let result = eval(&f.engine, code, 10.0).await;
    assert!(!result.is_error, "{}", result.text);
    assert!(
        result.text.contains("echo: hi\nworker did: sort\n{'args': {'pattern': 'x'}, 'tool': 'grep'}"),
        "{}",
        result.text
    );
    let lines: Vec<&Value> = result.status_events.iter().map(|s| &s.event).filter(|e| e["op"] == "bridge").collect();
    assert_eq!(lines.len(), 3, "{:?}", result.status_events);
    assert_eq!(lines[0]["call"], "completion");
    assert_eq!(lines[0]["model"], "fake-1");
    let line = cellbox::render::status::status_line(lines[0]);
    assert!(line.starts_with("completion · fake-1 · "), "{line}");
    f.engine.dispose_all().await;
}

#[tokio::test]
async fn host_errors_surface_as_exceptions_with_the_hosts_message() {
    let f = fixture(true, |_| {});
    let code = "try:\n    completion('fail')\nexcept BridgeError as e:\n    print('caught', e.kind, e)";
    let result = eval(&f.engine, code, 10.0).await;
    assert_eq!(result.text, "caught host the model is on fire\n");
    f.engine.dispose_all().await;
}

#[tokio::test]
async fn a_two_second_call_inside_a_one_second_cell_finishes() {
    let f = fixture(true, |_| {});
    let result = eval(&f.engine, "r = completion('sleep:2')\nprint(r)", 1.0).await;
    assert_eq!(result.cells[0].status, CellStatus::Ok, "{}", result.text);
    assert_eq!(result.text, "echo: sleep:2\n");
    f.engine.dispose_all().await;
}

#[tokio::test]
async fn a_cell_spinning_after_the_call_still_times_out() {
    let f = fixture(true, |_| {});
    let code = "completion('sleep:1.5')\nprint('back')\nwhile True:\n    pass";
    let result = eval(&f.engine, code, 1.0).await;
    assert_eq!(result.cells[0].status, CellStatus::Timeout, "{}", result.text);
    assert!(result.text.contains("back"), "{}", result.text);
    f.engine.dispose_all().await;
}

#[tokio::test]
async fn parallel_keeps_order_with_many_calls_in_flight() {
    let f = fixture(true, |_| {});
    let code = "parallel([lambda i=i: completion('together:2') + str(i) for i in range(6)])";
    let result = eval(&f.engine, code, 60.0).await;
    assert!(!result.is_error, "{}", result.text);
    let expected: Vec<String> = (0..6).map(|i| format!("'echo: together:2{i}'")).collect();
    // Wider than a line: one item per line, as IPython prints it.
    assert_eq!(result.text.trim(), format!("[{}]", expected.join(",\n ")));
    assert!(f.bridge.most_at_once.load(Ordering::SeqCst) > 1, "calls overlapped");

    let code = "import asyncio\nawait aparallel([acompletion(f'sleep:0.2') for _ in range(4)] + [atool('t', n=1)])";
    let result = eval(&f.engine, code, 30.0).await;
    assert!(!result.is_error, "{}", result.text);
    assert!(result.text.contains("'echo: sleep:0.2',\n 'echo: sleep:0.2'"), "{}", result.text);
    assert!(result.text.contains("{'args': {'n': 1}, 'tool': 't'}"), "{}", result.text);

    let code = "pipeline([1, 2], lambda x: x * 10, lambda x: completion(str(x)))";
    let result = eval(&f.engine, code, 30.0).await;
    assert_eq!(result.text, "['echo: 10', 'echo: 20']\n");
    f.engine.dispose_all().await;
}

#[tokio::test]
async fn parallel_reraises_the_lowest_index_error() {
    let f = fixture(true, |_| {});
    let code = "def boom(i):\n    raise ValueError(i)\ntry:\n    parallel([lambda: 1, lambda: boom(1), lambda: completion('fail')])\nexcept Exception as e:\n    print(type(e).__name__, e)";
    let result = eval(&f.engine, code, 30.0).await;
    assert_eq!(result.text, "ValueError 1\n");
    f.engine.dispose_all().await;
}

#[tokio::test]
async fn schema_answers_are_parsed_and_validated() {
    let f = fixture(true, |_| {});
    let code = "schema = {'type': 'object', 'properties': {'name': {'type': 'string'}, 'age': {'type': 'integer'}}, 'required': ['name']}\ncompletion('json', schema=schema)";
    let result = eval(&f.engine, code, 10.0).await;
    assert_eq!(result.text, "{'name': 'Ada', 'age': 36}\n");
    let code = "completion('json', schema={'type': 'object', 'properties': {'age': {'type': 'string'}}})";
    let result = eval(&f.engine, code, 10.0).await;
    assert!(result.text.contains("SchemaError: $.age: expected string, got number"), "{}", result.text);
    let code = "completion('not json', schema={'type': 'object'})";
    let result = eval(&f.engine, code, 10.0).await;
    assert!(result.text.contains("SchemaError: $: the answer is not valid JSON"), "{}", result.text);
    f.engine.dispose_all().await;
}

#[tokio::test]
async fn agent_handles_give_a_node_dict() {
    let f = fixture(true, |_| {});
    let result = eval(&f.engine, "n = agent('go', handle=True)\nsorted(n)", 10.0).await;
    assert_eq!(result.text, "['agent', 'handle', 'id', 'output', 'text']\n");
    let result = eval(&f.engine, "n['text'], n['output'], n['agent']", 10.0).await;
    assert_eq!(result.text, "('task did: go', 'transcript', 'task')\n");
    // The handle reads back the stored output, like an artifact.
    let result = eval(&f.engine, "print(n['handle'])\nassert n['handle'] == 'agent://' + n['id']", 10.0).await;
    let handle = result.text.trim().to_string();
    assert!(handle.starts_with("agent://"), "{}", result.text);
    let (text, _) = f.engine.read_artifact(&handle, 0, 1000).unwrap();
    assert_eq!(text, "transcript");
    // Without handle=True nothing is stored.
    let result = eval(&f.engine, "agent('go')", 10.0).await;
    assert_eq!(result.text, "'task did: go'\n");
    f.engine.dispose_all().await;
}

#[tokio::test]
async fn per_cell_caps_and_depth_are_enforced() {
    let f = fixture(true, |limits| limits.max_calls_per_cell = 2);
    let code =
        "completion('a'); completion('b')\ntry:\n    completion('c')\nexcept BridgeError as e:\n    print(e.kind, e)";
    let result = eval(&f.engine, code, 10.0).await;
    assert!(result.text.starts_with("limit this cell reached its cap of 2 bridge calls"), "{}", result.text);
    // The count is per cell.
    let result = eval(&f.engine, "completion('d')", 10.0).await;
    assert_eq!(result.text, "'echo: d'\n");
    f.engine.dispose_all().await;

    let f = fixture(true, |limits| limits.depth = 2);
    let result = eval(&f.engine, "completion('a')", 10.0).await;
    assert!(result.text.contains("nested 2 deep"), "{}", result.text);
    f.engine.dispose_all().await;
}

#[tokio::test]
async fn interrupting_the_cell_cancels_its_calls_on_the_host() {
    let f = fixture(true, |_| {});
    let cancel = CancellationToken::new();
    let bridge = f.bridge.clone();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        while bridge.started.load(Ordering::SeqCst) < 3 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        trigger.cancel();
    });
    let code = "parallel([lambda: completion('sleep:60') for _ in range(3)])";
    let params = EvalParams::from_json(json!({"cells": [{"code": code, "timeout": 120}]})).unwrap();
    let result = f.engine.eval(&params, &CallContext::new("s"), &cancel, &ignore_events).await.unwrap();
    assert_eq!(result.cells[0].status, CellStatus::Cancelled, "{}", result.text);
    // The calls sleep for 60 s: dropped ones were not waited for.
    assert!(f.bridge.dropped.load(Ordering::SeqCst), "the host stopped the calls in flight");
    // The kernel still works, and a new call is answered.
    let result = eval(&f.engine, "completion('after')", 10.0).await;
    assert_eq!(result.text, "'echo: after'\n");
    f.engine.dispose_all().await;
}

#[tokio::test]
async fn javascript_cells_call_the_bridge_too() {
    let f = fixture(true, |_| {});
    let code = "const r = await parallel([() => completion('a'), () => completion('sleep:1.5'), () => tool('t', {n: 2})]);\n\
                console.log(JSON.stringify(r));\n\
                try { await completion('fail') } catch (e) { console.log(e.name, e.kind, e.message) }\n\
                console.log(JSON.stringify(await completion('json', {schema: {type: 'object', required: ['name']}})))";
    let params = EvalParams::from_json(json!({"cells": [{"code": code, "language": "js", "timeout": 1}]})).unwrap();
    let result =
        f.engine.eval(&params, &CallContext::new("s"), &CancellationToken::new(), &ignore_events).await.unwrap();
    assert_eq!(result.cells[0].status, CellStatus::Ok, "{}", result.text);
    assert_eq!(
        result.text,
        "[\"echo: a\",\"echo: sleep:1.5\",{\"args\":{\"n\":2},\"tool\":\"t\"}]\nBridgeError host the model is on fire\n{\"name\":\"Ada\",\"age\":36}\n"
    );
    f.engine.dispose_all().await;
}

/// Every event streamed to the caller, for tests that look at their order.
fn recorder() -> (Arc<Mutex<Vec<EvalEvent>>>, impl Fn(EvalEvent) + Send + Sync) {
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = events.clone();
    (events, move |event| sink.lock().unwrap().push(event))
}

#[tokio::test]
async fn every_call_is_wrapped_in_pause_and_resume_events_that_renderers_hide() {
    let f = fixture(true, |_| {});
    let (events, on_event) = recorder();
    let code = "completion('a')\nparallel([lambda: completion('b'), lambda: completion('c')])";
    let params = EvalParams::from_json(json!({"cells": [{"code": code, "timeout": 10}]})).unwrap();
    let result = f.engine.eval(&params, &CallContext::new("s"), &CancellationToken::new(), &on_event).await.unwrap();
    assert_eq!(result.cells[0].status, CellStatus::Ok, "{}", result.text);
    let statuses: Vec<Value> = events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|event| match event {
            EvalEvent::Status { event, .. } => Some(event.clone()),
            _ => None,
        })
        .collect();
    let budget: Vec<&Value> = statuses.iter().filter(|s| s["op"] == "timeout").collect();
    assert_eq!(budget.len(), 6, "a pause and a resume per call: {statuses:?}");
    // The first call: pause, its bridge line, then resume, in that order.
    assert_eq!(statuses[0]["action"], "pause", "{statuses:?}");
    assert_eq!(statuses[1]["op"], "bridge", "{statuses:?}");
    assert_eq!(statuses[2]["action"], "resume", "{statuses:?}");
    assert_eq!(statuses[0]["call"], statuses[2]["call"]);
    // Each call id pauses once and resumes once.
    for event in budget.iter().filter(|e| e["action"] == "pause") {
        let resumed = budget.iter().filter(|e| e["action"] == "resume" && e["call"] == event["call"]).count();
        assert_eq!(resumed, 1, "{statuses:?}");
    }
    assert!(budget.iter().all(|e| cellbox::render::status::is_hidden(e)));
    assert!(!statuses.iter().filter(|e| e["op"] == "bridge").any(cellbox::render::status::is_hidden));
    // Not part of what the model reads.
    assert!(result.status_events.iter().all(|s| s.event["op"] != "timeout"), "{:?}", result.status_events);
    assert_eq!(result.text, "['echo: b', 'echo: c']\n");
    f.engine.dispose_all().await;
}

#[tokio::test]
async fn a_cell_cannot_pause_its_own_budget_with_a_status_event() {
    let f = fixture(true, |_| {});
    let code = "display({'application/x-cellbox-status': {'op': 'timeout', 'action': 'pause', 'call': 'x'}}, raw=True)\n\
                while True:\n    pass";
    let result = eval(&f.engine, code, 1.0).await;
    assert_eq!(result.cells[0].status, CellStatus::Timeout, "{}", result.text);
    f.engine.dispose_all().await;
}
