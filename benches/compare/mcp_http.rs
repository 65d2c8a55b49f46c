//! `cellbox serve` driven by hand over HTTP: one POST per call on a kept-alive
//! connection, the answer read from its event stream, so the rows show what
//! the streamable HTTP transport adds over stdio (and what many clients at
//! once cost).

use std::collections::BTreeMap;
use std::process::Stdio;
use std::time::Instant;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// A `cellbox serve --no-auth` on a free loopback port.
pub(super) struct ServeProcess {
    child: Child,
    pub url: String,
}

impl ServeProcess {
    /// Started as `server` (the stdio contender's command line and environment)
    /// would start `cellbox mcp`, with `extra` flags.
    pub(super) async fn start(server: &Value, root: &std::path::Path, extra: &[&str]) -> Self {
        let env: BTreeMap<String, String> = serde_json::from_value(server["env"].clone()).unwrap();
        let mut child = Command::new(server["command"].as_str().unwrap())
            .args(["serve", "--no-auth", "--listen", "127.0.0.1:0"])
            // No warm spares unless `extra` asks for them.
            .args(if extra.contains(&"--spares") { &[][..] } else { &["--spares", "0"][..] })
            .arg("--root")
            .arg(root)
            .args(extra)
            .env_clear()
            .envs(env)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("cellbox serve starts");
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let url = loop {
            let line = lines.next_line().await.unwrap().expect("cellbox serve printed its address");
            if let Some(rest) = line.strip_prefix("cellbox serve: MCP on ") {
                break rest.split(',').next().unwrap().to_string();
            }
        };
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        ServeProcess { child, url }
    }

    /// The server process's resident memory (Linux), in KiB.
    pub(super) fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    pub(super) fn rss_kib(&self) -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()?)).ok()?;
        status.lines().find_map(|line| line.strip_prefix("VmRSS:"))?.split_whitespace().next()?.parse().ok()
    }
}

/// One MCP session over HTTP, on a connection of its own.
pub(super) struct HttpMcp {
    client: reqwest::Client,
    url: String,
    session: String,
    next_id: u64,
}

impl HttpMcp {
    /// A new session (initialized) on the server at `url`.
    pub(super) async fn connect(url: &str) -> Self {
        cellbox_kernels::tls::install_crypto();
        let client = reqwest::Client::new();
        let mut http = HttpMcp { client, url: url.to_string(), session: String::new(), next_id: 0 };
        let hello = json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}});
        http.request("initialize", hello).await;
        http.post(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
        http
    }

    async fn post(&mut self, message: Value) -> String {
        let mut request = self
            .client
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-06-18")
            .body(message.to_string());
        if !self.session.is_empty() {
            request = request.header("mcp-session-id", &self.session);
        }
        let response = request.send().await.unwrap();
        if let Some(session) = response.headers().get("mcp-session-id") {
            self.session = session.to_str().unwrap().to_string();
        }
        response.text().await.unwrap()
    }

    async fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let body = self.post(json!({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})).await;
        // The answer is the event-stream's `data:` line that carries this id.
        body.lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
            .find(|message| message["id"] == json!(self.next_id))
            .unwrap_or_else(|| panic!("no answer in {body}"))
    }

    /// `code` through `eval` in the named session (else the default one), in ms;
    /// its text must start with `expected` (and, when `expected` is empty, be no error).
    pub(super) async fn call_code(&mut self, session: Option<&str>, code: &str, expected: &str) -> f64 {
        let started = Instant::now();
        let mut arguments = json!({"cells": [{"code": code, "timeout": 120}]});
        if let Some(session) = session {
            arguments["session"] = json!(session);
        }
        let answer = self.request("tools/call", json!({"name": "eval", "arguments": arguments})).await;
        let elapsed = started.elapsed().as_secs_f64() * 1000.0;
        let text = answer["result"]["content"][0]["text"].as_str().unwrap_or_default();
        assert!(answer["result"]["isError"] == json!(false) && text.starts_with(expected), "{answer}");
        elapsed
    }

    /// One `1+1` through `eval` (in the named session, else the default one), in ms.
    pub(super) async fn call_ms(&mut self, session: Option<&str>) -> f64 {
        let started = Instant::now();
        let mut arguments = json!({"cells": [{"code": "1+1"}]});
        if let Some(session) = session {
            arguments["session"] = json!(session);
        }
        let answer = self.request("tools/call", json!({"name": "eval", "arguments": arguments})).await;
        let elapsed = started.elapsed().as_secs_f64() * 1000.0;
        let text = answer["result"]["content"][0]["text"].as_str().unwrap_or_default();
        assert!(answer["result"]["isError"] == json!(false) && super::answered_two(text), "{answer}");
        elapsed
    }
}
