//! `eval` as an MCP task (the `io.modelcontextprotocol/tasks` extension of
//! protocol 2026-07-28), over raw JSON-RPC: the Python client has no tasks support.

use crate::common;

use std::time::{Duration, Instant};

use common::mcp::{RawServer, text};
use serde_json::{Value, json};

/// A 2026-07-28 client that declares (or not) the tasks extension with every request.
fn start(tasks: bool) -> RawServer {
    let capabilities = if tasks { json!({"extensions": {"io.modelcontextprotocol/tasks": {}}}) } else { json!({}) };
    RawServer::stateless(capabilities)
}

fn task(server: &mut RawServer, id: &str) -> Value {
    server.request("tasks/get", json!({"taskId": id}))["result"].clone()
}

/// Poll `tasks/get` (the client's side of the protocol) until `done` holds.
fn task_until(server: &mut RawServer, id: &str, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + common::PATIENCE;
    loop {
        let task = task(server, id);
        if done(&task) {
            return task;
        }
        assert!(Instant::now() < deadline, "task {id} never got there: {task}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn eval_runs_as_a_task_with_status_messages_cancellation_and_a_result() {
    let mut server = start(true);
    let created = server.eval(json!({"cells": [{"code": "kept = 'still here'\n6 * 7"}]}));
    assert_eq!(created["resultType"], "task", "{created}");
    let id = created["taskId"].as_str().unwrap().to_string();
    let done = task_until(&mut server, &id, |task| task["status"] != "working");
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(text(&done["result"]), "42\n", "{done}");

    let long = server
        .eval(json!({"cells": [{"code": "import time\nprint('tick', flush=True)\ntime.sleep(60)", "timeout": 120}]}));
    let id = long["taskId"].as_str().unwrap().to_string();
    let working = task_until(&mut server, &id, |task| task["statusMessage"] == "tick");
    assert_eq!(working["status"], "working", "{working}");
    let ack = server.request("tasks/cancel", json!({"taskId": id}));
    assert!(ack.get("error").is_none(), "{ack}");
    let cancelled = task_until(&mut server, &id, |task| task["status"] != "working");
    assert_eq!(cancelled["status"], "cancelled", "{cancelled}");

    // The cell was interrupted, not the kernel: its state is kept.
    let again = server.eval(json!({"cells": [{"code": "kept"}]}));
    let after = task_until(&mut server, again["taskId"].as_str().unwrap(), |task| task["status"] != "working");
    assert_eq!(text(&after["result"]), "'still here'\n", "{after}");
}

#[test]
fn without_the_extension_or_with_a_wait_eval_answers_directly() {
    let mut plain = start(false);
    let result = plain.eval(json!({"cells": [{"code": "1 + 1"}]}));
    assert_eq!(text(&result), "2\n", "{result}");
    let refused = plain.request("tasks/get", json!({"taskId": "x"}));
    assert!(refused.get("error").is_some(), "{refused}");

    let mut tasks = start(true);
    let result = tasks.eval(json!({"cells": [{"code": "1 + 2"}], "wait": 30}));
    assert_eq!(text(&result), "3\n", "{result}");

    // Declared on a version that has no extensions (2025-11-25): a plain result, as that client expects.
    let (mut older, _) =
        RawServer::initialized("2025-11-25", json!({"extensions": {"io.modelcontextprotocol/tasks": {}}}));
    let result = older.eval(json!({"cells": [{"code": "2 + 2"}]}));
    assert_eq!(text(&result), "4\n", "{result}");
    assert!(result.get("taskId").is_none(), "{result}");
}
