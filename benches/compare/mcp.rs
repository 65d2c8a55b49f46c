//! Through MCP: `cellbox mcp` beside `cellbox run`, the library and mcp-repl (`--only mcp`).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Stdio;
use std::time::Instant;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use super::baselines::WarmBaselines;
use super::{McpClient, Plan, Report, Series, Setup, ms_list};

/// How the MCP rows start each contender and ask it for `1+1`.
struct McpContenders {
    cellbox: Value,
    cellbox_call: Value,
    mcp_repl: Result<(Value, Value), String>,
    run_argv: Vec<String>,
    env: BTreeMap<String, String>,
}

impl McpContenders {
    fn new(setup: &Setup, jupyter_python: &Path, artifacts: &Path) -> Self {
        let binary = env!("CARGO_BIN_EXE_cellbox").to_string();
        let mut env = setup.env.clone();
        env.insert("CELLBOX_PYTHON".into(), setup.python.display().to_string());
        env.insert("CELLBOX_ARTIFACTS_DIR".into(), artifacts.display().to_string());
        let cwd = setup.cwd.display().to_string();
        let cellbox = json!({"command": binary, "args": ["mcp", "--cwd", cwd], "env": env});
        let cellbox_call = json!({"tool": "eval", "arguments": {"cells": [{"code": "1+1"}]}, "expect": "2\n"});
        // mcp-repl lives in the benchmark's venv; its Python is found on PATH, so the
        // interpreter cellbox uses comes first. It runs under `sh -c` (see mcp_helper.py).
        let repl = jupyter_python.with_file_name("mcp-repl");
        let mcp_repl = if repl.is_file() {
            let python_dir = setup.python.parent().map(|d| d.display().to_string()).unwrap_or_default();
            let mut repl_env = setup.env.clone();
            let path = repl_env.get("PATH").cloned().unwrap_or_else(|| "/usr/bin:/bin".into());
            repl_env.insert("PATH".into(), format!("{python_dir}:{path}"));
            let server = json!({
                "command": "sh",
                "args": ["-c", "\"$0\" \"$@\"; exit $?", repl.display().to_string(),
                         "--interpreter", "python", "--sandbox", "danger-full-access"],
                "env": repl_env,
                "cwd": cwd,
            });
            Ok((server, json!({"tool": "repl", "arguments": {"input": "1+1\n"}, "expect": "2"})))
        } else {
            Err(format!("{} is not installed (bench/requirements.txt names posit-mcp-repl)", repl.display()))
        };
        let run_argv = vec![binary, "run".into(), "--cwd".into(), cwd, "-c".into(), "1+1".into()];
        McpContenders { cellbox, cellbox_call, mcp_repl, run_argv, env }
    }

    fn command(op: &str, server: &Value, call: &Value) -> Value {
        let mut command = call.clone();
        command["op"] = json!(op);
        command["server"] = server.clone();
        command
    }
}

/// Through MCP, driven by the Python `mcp` client over stdio: spawn of `cellbox mcp` → the first
/// `1+1` result, beside `cellbox run`'s spawn → first result and beside mcp-repl (PyPI
/// `posit-mcp-repl`, a Python REPL server); then the warm `1+1` round trip beside the library's
/// own warm call and mcp-repl's.
pub(super) async fn mcp_rows(
    plan: &Plan,
    setup: &Setup,
    jupyter_python: &Path,
    baselines: &WarmBaselines,
    report: &mut Report,
) {
    let dir = tempfile::tempdir().unwrap();
    let contenders = McpContenders::new(setup, jupyter_python, &dir.path().join("artifacts"));
    let mut client = McpClient::spawn(jupyter_python).await;
    let mut repl_problem = contenders.mcp_repl.as_ref().err().cloned();
    if let Ok((server, _)) = &contenders.mcp_repl {
        match client.call(json!({"op": "tools", "server": server})).await {
            Ok(answer) if answer["tools"].as_array().is_some_and(|t| t.iter().any(|t| t["name"] == "repl")) => {}
            Ok(answer) => repl_problem = Some(format!("it has no `repl` tool: {}", answer["tools"])),
            Err(error) => repl_problem = Some(format!("it did not start: {error}")),
        }
    }
    let (mut cellbox_cold, mut run_cold, mut repl_cold) =
        (Series::new("cellbox mcp"), Series::new("cellbox run"), Series::new("mcp-repl"));
    let run = json!({"op": "run", "argv": contenders.run_argv, "env": contenders.env, "expect": "2"});
    for _ in 0..plan.cold_runs {
        let cold = McpContenders::command("cold", &contenders.cellbox, &contenders.cellbox_call);
        cellbox_cold.values.push(client.ms(cold).await.unwrap_or_else(|e| panic!("cellbox mcp: {e}")));
        run_cold.values.push(client.ms(run.clone()).await.unwrap_or_else(|e| panic!("cellbox run: {e}")));
        if let (Ok((server, call)), None) = (&contenders.mcp_repl, &repl_problem) {
            match client.ms(McpContenders::command("cold", server, call)).await {
                Ok(ms) => repl_cold.values.push(ms),
                Err(error) => repl_problem = Some(format!("its first call failed: {error}")),
            }
        }
    }
    report.add("MCP spawn → first 1+1", "ms", false, &cellbox_cold, Some(&run_cold), "Python mcp client, stdio");
    add_peer_row(report, "MCP spawn → first 1+1", "ms", &cellbox_cold, &repl_cold, &repl_problem);

    // Warm: one kept server each, the library's engine beside them.
    let mut start = McpContenders::command("start", &contenders.cellbox, &contenders.cellbox_call);
    start["name"] = json!("cellbox");
    client.call(start).await.unwrap_or_else(|e| panic!("cellbox mcp: {e}"));
    if let (Ok((server, call)), None) = (&contenders.mcp_repl, &repl_problem) {
        let mut start = McpContenders::command("start", server, call);
        start["name"] = json!("mcp-repl");
        if let Err(error) = client.call(start).await {
            repl_problem = Some(format!("it did not start: {error}"));
        }
    }
    let (mut cellbox_warm, mut repl_warm) = (Series::new("cellbox mcp"), Series::new("mcp-repl"));
    let batch = 50;
    let rounds = plan.warm_iterations.div_ceil(batch);
    let mut raw = RawMcp::start(&contenders.cellbox).await;
    let mut raw_warm = Series::new("cellbox mcp, bare JSON-RPC");
    let serve = super::mcp_http::ServeProcess::start(&contenders.cellbox, dir.path(), &[]).await;
    let mut http = super::mcp_http::HttpMcp::connect(&serve.url).await;
    for _ in 0..20 {
        http.call_ms(None).await;
    }
    let mut http_warm = Series::new("cellbox serve, bare HTTP");
    for _ in 0..rounds {
        for _ in 0..batch {
            raw_warm.values.push(raw.call_ms().await);
            http_warm.values.push(http.call_ms(None).await);
        }
        let answer = client.call(json!({"op": "roundtrip", "name": "cellbox", "n": batch})).await;
        cellbox_warm.values.extend(ms_list(&answer.unwrap_or_else(|e| panic!("cellbox mcp: {e}"))));
        // mcp-repl answers in tens of milliseconds: a few calls a round keep the run short.
        if repl_problem.is_none() && contenders.mcp_repl.is_ok() {
            match client.call(json!({"op": "roundtrip", "name": "mcp-repl", "n": 2})).await {
                Ok(answer) => repl_warm.values.extend(ms_list(&answer)),
                Err(error) => repl_problem = Some(format!("a warm call failed: {error}")),
            }
        }
    }
    let _ = client.call(json!({"op": "stop"})).await;
    let (library, floor) = (&baselines.library, &baselines.floor);
    report.add("MCP warm round trip of 1+1", "ms", false, &cellbox_warm, Some(library), "Python mcp client, stdio");
    report.add("MCP warm round trip of 1+1", "ms", false, &cellbox_warm, Some(floor), "Python mcp client, stdio");
    let bare = "request and response lines, no client library";
    report.add("MCP warm round trip of 1+1, bare JSON-RPC", "ms", false, &raw_warm, Some(library), bare);
    report.add("MCP warm round trip of 1+1, bare JSON-RPC", "ms", false, &raw_warm, Some(floor), bare);
    report.add(
        "MCP warm round trip of 1+1, streamable HTTP",
        "ms",
        false,
        &http_warm,
        Some(&raw_warm),
        "cellbox serve, a POST per call on a kept-alive connection, no client library",
    );
    report.add(
        "MCP warm round trip of 1+1, streamable HTTP",
        "ms",
        false,
        &http_warm,
        Some(floor),
        "cellbox serve, a POST per call on a kept-alive connection, no client library",
    );
    add_peer_row(report, "MCP warm round trip of 1+1", "ms", &cellbox_warm, &repl_warm, &repl_problem);
}

/// `cellbox mcp` driven by hand: one JSON-RPC line out, one line back, so the
/// row shows what the MCP layer itself adds to a call (the Python client's
/// own work per call is most of the other MCP row).
pub(super) struct RawMcp {
    _child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

impl RawMcp {
    pub(super) async fn start(server: &Value) -> Self {
        let args: Vec<String> =
            server["args"].as_array().unwrap().iter().map(|a| a.as_str().unwrap().to_string()).collect();
        let env: BTreeMap<String, String> = serde_json::from_value(server["env"].clone()).unwrap();
        let mut child = Command::new(server["command"].as_str().unwrap())
            .args(args)
            .env_clear()
            .envs(env)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("cellbox mcp starts");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut raw = RawMcp { _child: child, stdin, stdout, next_id: 0 };
        let hello = json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}});
        raw.request("initialize", hello).await;
        raw.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
        for _ in 0..20 {
            raw.call_ms().await;
        }
        raw
    }

    async fn send(&mut self, message: Value) {
        let mut line = message.to_string();
        line.push('\n');
        self.stdin.write_all(line.as_bytes()).await.unwrap();
    }

    async fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        self.send(json!({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})).await;
        let mut line = String::new();
        loop {
            line.clear();
            assert!(self.stdout.read_line(&mut line).await.unwrap() > 0, "cellbox mcp ended");
            let answer: Value = serde_json::from_str(&line).unwrap();
            if answer["id"] == json!(self.next_id) {
                return answer;
            }
        }
    }

    pub(super) async fn call_ms(&mut self) -> f64 {
        let started = Instant::now();
        let params = json!({"name": "eval", "arguments": {"cells": [{"code": "1+1"}]}});
        let answer = self.request("tools/call", params).await;
        let elapsed = started.elapsed().as_secs_f64() * 1000.0;
        let text = answer["result"]["content"][0]["text"].as_str().unwrap_or_default();
        assert!(answer["result"]["isError"] == json!(false) && super::answered_two(text), "{answer}");
        elapsed
    }
}

/// A row against mcp-repl, or one saying why it has no figures.
fn add_peer_row(
    report: &mut Report,
    scenario: &str,
    unit: &str,
    cellbox: &Series,
    peer: &Series,
    problem: &Option<String>,
) {
    match problem {
        Some(why) => report.add(scenario, unit, false, cellbox, None, &format!("mcp-repl unavailable: {why}")),
        None => report.add(
            scenario,
            unit,
            false,
            cellbox,
            Some(peer),
            "mcp-repl --interpreter python --sandbox danger-full-access",
        ),
    }
}
