//! Host-bridge calls (completion()/agent()/parallel()/tool()) from cells of
//! kernels on a real Jupyter Kernel Gateway, carried by the stdin channel and
//! answered by a library `Bridge`.

use crate::common;

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use cellbox_engine::tool::{CallContext, CellStatus, EvalEvent, EvalParams, ignore_events};
use common::engine::{Fixture, GATEWAY_NOTE, eval_timed as eval};
use common::gateway::{Flavor, TestGateway};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

fn fixture(gateway: &TestGateway, with_bridge: bool) -> Fixture {
    Fixture::bridged(with_bridge, |config| common::engine::on_gateway(config, &gateway.url, &gateway.token))
}

#[tokio::test]
async fn bridge_calls_on_a_kernel_gateway() {
    let gateway = TestGateway::start(Flavor::KernelGateway, common::python(), false).await;
    let f = fixture(&gateway, true);
    answers_errors_and_schemas(&f).await;
    parallel_calls(&f).await;
    paused_budget_and_interrupt(&f).await;
    f.engine.dispose_all().await;

    // Without a bridge the calls fail clearly, and input() is still refused.
    let bare = fixture(&gateway, false);
    let result = eval(&bare.engine, "completion('hi')", 10.0).await;
    assert!(result.is_error);
    assert!(result.text.contains("BridgeError: no bridge configured"), "{}", result.text);
    let result = eval(&bare.engine, "input('name? ')", 10.0).await;
    assert!(result.text.contains("StdinNotSupportedError"), "{}", result.text);
    assert_eq!(eval(&bare.engine, "1 + 1", 10.0).await.text, "2\n");
    bare.engine.dispose_all().await;

    assert_eq!(gateway.kernels().await, Vec::<String>::new(), "disposing deletes the gateway's kernels");
    assert_eq!(gateway.stop(), Vec::<u32>::new(), "no gateway or kernel process is left");
}

#[tokio::test]
async fn bridge_calls_on_an_enterprise_gateway() {
    let gateway = TestGateway::start(Flavor::EnterpriseGateway, &common::gateway::enterprise_python(), false).await;
    let f = fixture(&gateway, true);
    answers_errors_and_schemas(&f).await;
    parallel_calls(&f).await;
    let result = eval(&f.engine, "r = completion('sleep:2')\nprint(r)", 1.0).await;
    assert_eq!(result.cells[0].status, CellStatus::Ok, "{}", result.text);
    f.engine.dispose_all().await;
    assert_eq!(gateway.kernels().await, Vec::<String>::new(), "disposing deletes the gateway's kernels");
    assert_eq!(gateway.stop(), Vec::<u32>::new(), "no gateway or kernel process is left");
}

async fn answers_errors_and_schemas(f: &Fixture) {
    let code = "print(completion('hi'))\nprint(agent('sort', agent='worker'))\nprint(tool('grep', pattern='x'))";
    let result = eval(&f.engine, code, 10.0).await;
    assert!(!result.is_error, "{}", result.text);
    // The session's first call: the gateway note follows the output.
    assert_eq!(
        result.text,
        format!("echo: hi\nworker did: sort\n{{'args': {{'pattern': 'x'}}, 'tool': 'grep'}}\n{GATEWAY_NOTE}")
    );
    let lines: Vec<&Value> = result.status_events.iter().map(|s| &s.event).filter(|e| e["op"] == "bridge").collect();
    assert_eq!(lines.len(), 3, "one status event per call: {:?}", result.status_events);
    assert_eq!(lines[0]["call"], "completion");
    assert_eq!(lines[0]["model"], "fake-1");

    // A host error is an exception with the host's message.
    let code = "try:\n    completion('fail')\nexcept BridgeError as e:\n    print('caught', e.kind, e)";
    assert_eq!(eval(&f.engine, code, 10.0).await.text, "caught host the model is on fire\n");
    let result = eval(&f.engine, "completion('fail')", 10.0).await;
    assert!(result.text.contains("BridgeError: the model is on fire"), "{}", result.text);

    // Schema answers are parsed and validated in the kernel.
    let code = "completion('json', schema={'type': 'object', 'properties': {'name': {'type': 'string'}}, 'required': ['name']})";
    assert_eq!(eval(&f.engine, code, 10.0).await.text, "{'name': 'Ada', 'age': 36}\n");
    let code = "completion('json', schema={'type': 'object', 'properties': {'age': {'type': 'string'}}})";
    let result = eval(&f.engine, code, 10.0).await;
    assert!(result.text.contains("SchemaError: $.age: expected string, got number"), "{}", result.text);

    // An ordinary input() is still refused as on local kernels, and the kernel carries on.
    let result = eval(&f.engine, "input('name? ')", 10.0).await;
    assert!(result.text.contains("StdinNotSupportedError"), "{}", result.text);
    assert_eq!(eval(&f.engine, "completion('again')", 10.0).await.text, "'echo: again'\n");
}

async fn parallel_calls(f: &Fixture) {
    let code = "print(parallel([lambda i=i: completion('sleep:0.5') + str(i) for i in range(6)]))";
    let result = eval(&f.engine, code, 30.0).await;
    assert!(!result.is_error, "{}", result.text);
    let expected: Vec<String> = (0..6).map(|i| format!("'echo: sleep:0.5{i}'")).collect();
    assert_eq!(result.text.trim(), format!("[{}]", expected.join(", ")));
    assert!(f.bridge.most_at_once.load(Ordering::SeqCst) > 1, "calls were in flight together on the host");

    let code = "print(await aparallel([acompletion('sleep:0.2') for _ in range(4)] + [atool('t', n=1)]))";
    let result = eval(&f.engine, code, 30.0).await;
    assert!(!result.is_error, "{}", result.text);
    assert!(result.text.contains("'echo: sleep:0.2', 'echo: sleep:0.2'"), "{}", result.text);
    assert!(result.text.contains("{'args': {'n': 1}, 'tool': 't'}"), "{}", result.text);

    let code = "def boom(i):\n    raise ValueError(i)\ntry:\n    parallel([lambda: completion('a'), lambda: boom(1), lambda: completion('fail')])\nexcept Exception as e:\n    print(type(e).__name__, e)";
    assert_eq!(eval(&f.engine, code, 30.0).await.text, "ValueError 1\n");
    let code = "pipeline([1, 2], lambda x: x * 10, lambda x: completion(str(x)))";
    assert_eq!(eval(&f.engine, code, 30.0).await.text, "['echo: 10', 'echo: 20']\n");
}

async fn paused_budget_and_interrupt(f: &Fixture) {
    // The budget waits while the host works: a 2 s call inside a 1 s cell finishes.
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = events.clone();
    let on_event = move |event: EvalEvent| {
        if let EvalEvent::Status { event, .. } = event {
            sink.lock().unwrap().push(event);
        }
    };
    let params =
        EvalParams::from_json(json!({"cells": [{"code": "r = completion('sleep:2')\nprint(r)", "timeout": 1}]}))
            .unwrap();
    let result = f.engine.eval(&params, &CallContext::new("s"), &CancellationToken::new(), &on_event).await.unwrap();
    assert_eq!(result.cells[0].status, CellStatus::Ok, "{}", result.text);
    assert_eq!(result.text, "echo: sleep:2\n");
    // The host wrapped the call in pause and resume events, as for process kernels.
    let statuses = events.lock().unwrap().clone();
    let actions: Vec<&Value> = statuses.iter().filter(|e| e["op"] == "timeout").map(|e| &e["action"]).collect();
    assert_eq!(actions, [&json!("pause"), &json!("resume")], "{statuses:?}");
    // Only the host pauses the budget: a cell spinning after its call, or
    // displaying a pause event of its own, still times out.
    let result = eval(&f.engine, "completion('sleep:1.5')\nprint('back')\nwhile True:\n    pass", 1.0).await;
    assert_eq!(result.cells[0].status, CellStatus::Timeout, "{}", result.text);
    assert!(result.text.contains("back"), "{}", result.text);
    let code = "display({'application/x-cellbox-status': {'op': 'timeout', 'action': 'pause', 'call': 'x'}}, raw=True)\n\
                while True:\n    pass";
    assert_eq!(eval(&f.engine, code, 1.0).await.cells[0].status, CellStatus::Timeout);

    // Interrupting the cell stops its calls on the host.
    let cancel = CancellationToken::new();
    let bridge = f.bridge.clone();
    let before = bridge.started.load(Ordering::SeqCst);
    let trigger = cancel.clone();
    tokio::spawn(async move {
        while bridge.started.load(Ordering::SeqCst) < before + 3 {
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
    assert_eq!(eval(&f.engine, "completion('after')", 10.0).await.text, "'echo: after'\n");
}
