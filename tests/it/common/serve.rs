//! A real `cellbox serve` for a test, and the raw HTTP a client library hides.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::Value;

use super::binary;

/// A running `cellbox serve` on a free loopback port with its own tokens file and root.
pub struct Server {
    pub child: Child,
    pub url: String,
    pub tokens: PathBuf,
    /// The server's stderr lines after its address (read by the Unix-only signal test).
    #[cfg_attr(not(unix), allow(dead_code))]
    pub stderr: mpsc::Receiver<String>,
    pub dir: tempfile::TempDir,
}

impl Server {
    /// Started with principals `names`; returns their tokens in the same order.
    pub fn start(names: &[&str], extra: &[&str]) -> (Server, Vec<String>) {
        Server::start_with_env(names, extra, &[])
    }

    /// [`Server::start`] with variables added to the server's environment.
    pub fn start_with_env(names: &[&str], extra: &[&str], env: &[(&str, &str)]) -> (Server, Vec<String>) {
        let dir = tempfile::tempdir().unwrap();
        let tokens_file = dir.path().join("tokens.json");
        let tokens = names.iter().map(|name| token_add(&tokens_file, name)).collect();
        let root = dir.path().join("root");
        std::fs::create_dir(&root).unwrap();
        let mut child = binary::cellbox(["serve", "--listen", "127.0.0.1:0", "--spares", "0"])
            .arg("--tokens")
            .arg(&tokens_file)
            .arg("--root")
            .arg(&root)
            .args(extra)
            .envs(env.iter().copied())
            .env("CELLBOX_ARTIFACTS_DIR", dir.path().join("artifacts"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (stderr, url) = follow_stderr(&mut child);
        (Server { child, url, tokens: tokens_file, stderr, dir }, tokens)
    }

    pub fn base(&self) -> String {
        self.url.trim_end_matches("/mcp").to_string()
    }

    /// Scenario `scenario` of tests/serve/client.py as the holder of `token`; its JSON answer.
    pub fn client(&self, token: &str, scenario: &str, stdin: &str) -> Value {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/serve/client.py");
        let mut command = Command::new(super::python());
        command.arg(script).args([&self.url, token, scenario]);
        let output = binary::output_with_input(&mut command, stdin);
        let stdout = binary::text(&output.stdout);
        assert!(output.status.success(), "client {scenario} failed:\n{stdout}\n{}", binary::text(&output.stderr));
        serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The server's stderr lines, read on a thread so it never blocks on a full
/// pipe, and the MCP URL it names once it accepts (nothing is polled).
pub fn follow_stderr(child: &mut Child) -> (mpsc::Receiver<String>, String) {
    let (lines, stderr) = mpsc::channel();
    let pipe = BufReader::new(child.stderr.take().unwrap());
    std::thread::spawn(move || {
        for line in pipe.lines().map_while(Result::ok) {
            let _ = lines.send(line);
        }
    });
    let url = loop {
        let line = stderr.recv_timeout(Duration::from_secs(60)).expect("cellbox serve printed its address");
        if let Some(rest) = line.strip_prefix("cellbox serve: MCP on ") {
            break rest.split(',').next().unwrap().to_string();
        }
    };
    (stderr, url)
}

/// `cellbox serve token add`; `name` may go on with the command's flags (`"alice --max-calls 1"`).
pub fn token_add(tokens_file: &Path, name: &str) -> String {
    let output = binary::bare(["serve", "token", "add"])
        .args(name.split_whitespace())
        .arg("--tokens")
        .arg(tokens_file)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", binary::text(&output.stderr));
    binary::text(&output.stdout).trim().to_string()
}

pub const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#;

/// An MCP session opened by hand for `token`: the headers its requests carry.
pub async fn raw_session(url: &str, token: &str) -> Vec<(String, String)> {
    let auth = bearer(token);
    let (status, headers, body) = post(url, INITIALIZE, &[("authorization", &auth)]).await;
    assert_eq!(status, 200, "{body}");
    let session = headers["mcp-session-id"].to_str().unwrap().to_string();
    vec![("authorization".to_string(), auth), ("mcp-session-id".to_string(), session)]
}

/// An `eval` of `code` (in `session` when given) POSTed on a task of its own
/// with `headers`; the task gives the status, headers and body.
pub fn spawn_eval(
    url: &str,
    headers: &[(String, String)],
    id: u64,
    code: &str,
    session: Option<&str>,
) -> tokio::task::JoinHandle<(u16, reqwest::header::HeaderMap, String)> {
    let mut arguments = serde_json::json!({"cells": [{"code": code}]});
    if let Some(session) = session {
        arguments["session"] = session.into();
    }
    let body = serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                                  "params": {"name": "eval", "arguments": arguments}});
    let (url, headers) = (url.to_string(), headers.to_vec());
    tokio::spawn(async move {
        let headers: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        post(&url, &body.to_string(), &headers).await
    })
}

/// POST `body` to the MCP endpoint with these headers; the status and the response's headers.
pub async fn post(url: &str, body: &str, headers: &[(&str, &str)]) -> (u16, reqwest::header::HeaderMap, String) {
    cellbox_kernels::tls::install_crypto();
    let mut request = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(body.to_string());
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.unwrap();
    let (status, headers) = (response.status().as_u16(), response.headers().clone());
    (status, headers, response.text().await.unwrap_or_default())
}

pub fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

/// GET a path of the server; the status and the body.
pub async fn get(server: &Server, path: &str) -> (u16, String) {
    cellbox_kernels::tls::install_crypto();
    let response = reqwest::get(format!("{}{path}", server.base())).await.unwrap();
    (response.status().as_u16(), response.text().await.unwrap())
}
