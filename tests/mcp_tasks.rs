//! `eval` as an MCP task (the `io.modelcontextprotocol/tasks` extension),
//! over raw JSON-RPC: the Python client has no tasks support.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

struct Server {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next: u64,
    _cwd: tempfile::TempDir,
}

impl Server {
    /// A server whose client declares (or not) the tasks extension.
    fn start(tasks: bool) -> Server {
        let cwd = tempfile::tempdir().unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_cellbox"))
            .args(["mcp", "--cwd"])
            .arg(cwd.path())
            .env("CELLBOX_PYTHON", common::python())
            .env("CELLBOX_ARTIFACTS_DIR", cwd.path().join("artifacts"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut server = Server { child, stdin, stdout, next: 0, _cwd: cwd };
        let capabilities = if tasks { json!({"extensions": {"io.modelcontextprotocol/tasks": {}}}) } else { json!({}) };
        server.request(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": capabilities,
                   "clientInfo": {"name": "raw", "version": "1"}}),
        );
        writeln!(server.stdin, "{}", json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).unwrap();
        server
    }

    /// Send a request and return its response (notifications in between are skipped).
    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let id = self.next;
        writeln!(self.stdin, "{}", json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})).unwrap();
        loop {
            let mut line = String::new();
            assert!(self.stdout.read_line(&mut line).unwrap() > 0, "the server closed its output");
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["id"] == id {
                return message;
            }
        }
    }

    fn eval(&mut self, arguments: Value) -> Value {
        self.request("tools/call", json!({"name": "eval", "arguments": arguments}))["result"].clone()
    }

    fn task(&mut self, id: &str) -> Value {
        self.request("tasks/get", json!({"taskId": id}))["result"].clone()
    }

    /// Poll `tasks/get` (the client's side of the protocol) until `done` holds.
    fn task_until(&mut self, id: &str, done: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let task = self.task(id);
            if done(&task) {
                return task;
            }
            assert!(Instant::now() < deadline, "task {id} never got there: {task}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn text(result: &Value) -> String {
    result["content"][0]["text"].as_str().unwrap_or_default().to_string()
}

#[test]
fn eval_runs_as_a_task_with_status_messages_cancellation_and_a_result() {
    let mut server = Server::start(true);
    let created = server.eval(json!({"cells": [{"code": "kept = 'still here'\n6 * 7"}]}));
    assert_eq!(created["resultType"], "task", "{created}");
    let id = created["taskId"].as_str().unwrap().to_string();
    let done = server.task_until(&id, |task| task["status"] != "working");
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(text(&done["result"]), "42\n", "{done}");

    let long = server
        .eval(json!({"cells": [{"code": "import time\nprint('tick', flush=True)\ntime.sleep(60)", "timeout": 120}]}));
    let id = long["taskId"].as_str().unwrap().to_string();
    let working = server.task_until(&id, |task| task["statusMessage"] == "tick");
    assert_eq!(working["status"], "working", "{working}");
    let ack = server.request("tasks/cancel", json!({"taskId": id}));
    assert!(ack.get("error").is_none(), "{ack}");
    let cancelled = server.task_until(&id, |task| task["status"] != "working");
    assert_eq!(cancelled["status"], "cancelled", "{cancelled}");

    // The cell was interrupted, not the kernel: its state is kept.
    let again = server.eval(json!({"cells": [{"code": "kept"}]}));
    let after = server.task_until(again["taskId"].as_str().unwrap(), |task| task["status"] != "working");
    assert_eq!(text(&after["result"]), "'still here'\n", "{after}");
}

#[test]
fn without_the_extension_or_with_a_wait_eval_answers_directly() {
    let mut plain = Server::start(false);
    let result = plain.eval(json!({"cells": [{"code": "1 + 1"}]}));
    assert_eq!(text(&result), "2\n", "{result}");
    let refused = plain.request("tasks/get", json!({"taskId": "x"}));
    assert!(refused.get("error").is_some(), "{refused}");

    let mut tasks = Server::start(true);
    let result = tasks.eval(json!({"cells": [{"code": "1 + 2"}], "wait": 30}));
    assert_eq!(text(&result), "3\n", "{result}");
}
