//! The CLI's host bridge: `cellbox run` answering completion() from a local
//! fake OpenAI-compatible server and agent() from a fake agent command.

use crate::common;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::process::{Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::binary::text;
use serde_json::{Value, json};

/// What the fake server saw: (authorization header, request body).
type Seen = Arc<Mutex<Vec<(String, Value)>>>;

/// A chat-completions server on a free port. Prompts steer it: `slow` waits
/// 2 s, `error` answers 500, a request with `response_format` gets JSON.
fn fake_server() -> (String, Seen) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = format!("http://{}/v1", listener.local_addr().unwrap());
    let seen: Seen = Arc::default();
    let log = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let log = log.clone();
            std::thread::spawn(move || {
                let (head, body) = read_request(&mut stream);
                let auth = head
                    .lines()
                    .find_map(|l| l.to_ascii_lowercase().strip_prefix("authorization: ").map(String::from))
                    .unwrap_or_default();
                let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                log.lock().unwrap().push((auth, request.clone()));
                let prompt = request["messages"].as_array().and_then(|m| m.last()).and_then(|m| m["content"].as_str());
                let prompt = prompt.unwrap_or_default().to_string();
                if prompt.contains("slow") {
                    std::thread::sleep(Duration::from_secs(2));
                }
                let (status, answer) = if prompt.contains("error") {
                    ("500 Internal Server Error", json!({"error": {"message": "the fake model is overloaded"}}))
                } else {
                    let content = if request.get("response_format").is_some() {
                        r#"{"city": "Paris"}"#.to_string()
                    } else {
                        format!("you said {prompt}")
                    };
                    let model = request["model"].clone();
                    (
                        "200 OK",
                        json!({"model": model, "choices": [{"message": {"role": "assistant", "content": content}}]}),
                    )
                };
                let body = answer.to_string();
                let reply = format!(
                    "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = stream.write_all(reply.as_bytes());
            });
        }
    });
    (address, seen)
}

fn read_request(stream: &mut std::net::TcpStream) -> (String, Vec<u8>) {
    let mut data = Vec::new();
    let mut buffer = [0u8; 4096];
    loop {
        let n = stream.read(&mut buffer).unwrap_or(0);
        if n == 0 {
            break;
        }
        data.extend_from_slice(&buffer[..n]);
        if let Some(end) = data.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&data[..end]).to_string();
            let length = head
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase().strip_prefix("content-length: ").map(|v| v.trim().parse().unwrap())
                })
                .unwrap_or(0usize);
            while data.len() < end + 4 + length {
                let n = stream.read(&mut buffer).unwrap_or(0);
                if n == 0 {
                    break;
                }
                data.extend_from_slice(&buffer[..n]);
            }
            return (head, data[end + 4..].to_vec());
        }
    }
    (String::new(), Vec::new())
}

fn cellbox_run(code: &str, env: &[(&str, &str)], extra: &[&str]) -> Output {
    let mut command = common::binary::cellbox(["run"]);
    command.args(extra).arg("-c").arg(code);
    for name in ["CELLBOX_LLM_BASE_URL", "CELLBOX_LLM_API_KEY", "CELLBOX_LLM_MODEL", "CELLBOX_AGENT_COMMAND"] {
        command.env_remove(name);
    }
    command.envs(env.iter().copied()).stdin(Stdio::null()).output().unwrap()
}

#[test]
fn completion_goes_to_the_configured_endpoint_with_the_key() {
    let (url, seen) = fake_server();
    let env =
        [("CELLBOX_LLM_BASE_URL", url.as_str()), ("CELLBOX_LLM_API_KEY", "sk-test-123"), ("CELLBOX_LLM_MODEL", "m-1")];
    let out = cellbox_run("print(completion('hello', system='be brief', max_tokens=5))", &env, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "you said hello\n");
    let seen = seen.lock().unwrap();
    assert_eq!(seen[0].0, "bearer sk-test-123");
    assert_eq!(seen[0].1["model"], "m-1");
    assert_eq!(seen[0].1["max_tokens"], 5);
    assert_eq!(seen[0].1["messages"][0], json!({"role": "system", "content": "be brief"}));
}

#[test]
fn the_key_and_endpoint_never_enter_the_kernel() {
    let (url, _) = fake_server();
    let env =
        [("CELLBOX_LLM_BASE_URL", url.as_str()), ("CELLBOX_LLM_API_KEY", "sk-test-123"), ("CELLBOX_LLM_MODEL", "m-1")];
    let code = "import os\nprint(sorted(k for k in os.environ if k.startswith('CELLBOX_LLM')), any('sk-test-123' in v for v in os.environ.values()))";
    let out = cellbox_run(code, &env, &[]);
    assert_eq!(text(&out.stdout), "[] False\n", "{}", text(&out.stderr));
}

#[test]
fn schema_becomes_a_json_schema_response_format() {
    let (url, seen) = fake_server();
    let env = [("CELLBOX_LLM_BASE_URL", url.as_str()), ("CELLBOX_LLM_MODEL", "m-1")];
    let code = "completion('capital?', schema={'type': 'object', 'properties': {'city': {'type': 'string'}}, 'required': ['city']})['city']";
    let out = cellbox_run(code, &env, &[]);
    assert_eq!(text(&out.stdout), "'Paris'\n", "{}", text(&out.stderr));
    let format = &seen.lock().unwrap()[0].1["response_format"];
    assert_eq!(format["type"], "json_schema");
    assert_eq!(format["json_schema"]["schema"]["required"], json!(["city"]));
}

#[test]
fn endpoint_errors_surface_in_the_cell() {
    let (url, _) = fake_server();
    let env = [("CELLBOX_LLM_BASE_URL", url.as_str()), ("CELLBOX_LLM_MODEL", "m-1")];
    let out = cellbox_run("completion('error please')", &env, &[]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(
            "BridgeError: the model endpoint answered 500 Internal Server Error: the fake model is overloaded"
        ),
        "{stderr}"
    );
}

#[test]
fn a_slow_answer_does_not_count_against_the_timeout() {
    let (url, _) = fake_server();
    let env = [("CELLBOX_LLM_BASE_URL", url.as_str()), ("CELLBOX_LLM_MODEL", "m-1")];
    let out = cellbox_run("print(completion('slow one'))", &env, &["--timeout", "1"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "you said slow one\n");
}

#[test]
fn without_configuration_completion_says_what_to_set() {
    let out = cellbox_run("completion('x')", &[], &[]);
    assert!(text(&out.stderr).contains("no bridge configured"), "{}", text(&out.stderr));
    let out = cellbox_run("agent('x')", &[("CELLBOX_LLM_BASE_URL", "http://127.0.0.1:9/v1")], &[]);
    assert!(text(&out.stderr).contains("set CELLBOX_AGENT_COMMAND"), "{}", text(&out.stderr));
}

#[test]
fn agent_runs_the_configured_command() {
    // Prompt on stdin; the answer in Claude Code's JSON shape.
    let command =
        r#"read -r line; printf '{"type":"result","result":"did %s at depth %s"}' "$line" "$CELLBOX_BRIDGE_DEPTH""#;
    let out = cellbox_run("print(agent('the dishes'))", &[("CELLBOX_AGENT_COMMAND", command)], &[]);
    assert_eq!(text(&out.stdout), "did the dishes at depth 1\n", "{}", text(&out.stderr));
    // Prompt as an argument, stdout as it is.
    let out = cellbox_run("agent('x y')", &[("CELLBOX_AGENT_COMMAND", "echo arg: {prompt}; cat")], &[]);
    assert_eq!(text(&out.stdout), "'arg: x y'\n", "{}", text(&out.stderr));
    // A failing command's stderr is quoted.
    let out = cellbox_run("agent('x')", &[("CELLBOX_AGENT_COMMAND", "echo broken >&2; exit 3")], &[]);
    assert!(text(&out.stderr).contains("the agent command failed (exit status: 3): broken"), "{}", text(&out.stderr));
}

#[test]
fn an_agent_command_cut_short_is_killed_with_its_group() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pid");
    let command = format!("echo $$ > {}; exec sleep 30", pidfile.display());
    let env = [("CELLBOX_AGENT_COMMAND", command.as_str()), ("CELLBOX_BRIDGE_CALL_TIMEOUT", "1")];
    let out = cellbox_run("agent('x')", &env, &[]);
    assert!(text(&out.stderr).contains("took longer than 1s"), "{}", text(&out.stderr));
    let pid: i32 = std::fs::read_to_string(&pidfile).unwrap().trim().parse().unwrap();
    let alive = cellbox_kernels::kernel::process::pid_alive(pid as u32);
    assert!(!alive, "the agent command {pid} still runs");
}
