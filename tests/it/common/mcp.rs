//! `cellbox mcp` for a test: driven by a Python MCP client script from
//! tests/mcp/, or over raw JSON-RPC lines ([`RawServer`]) for what the SDK
//! clients cannot show: the exact `initialize`/`server/discover` answers of
//! each protocol version, tasks, and requests carrying per-request `_meta`.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde_json::{Value, json};

use super::binary;
use super::python;

/// The Python MCP client script `tests/mcp/<script>` run on the interpreter
/// under test, its first argument this build's `cellbox` binary.
pub fn client(script: &str) -> Command {
    let mut command = Command::new(python());
    command.arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp").join(script)).arg(binary::BIN);
    command
}

/// Run `scenario` of the Python MCP client script `tests/mcp/<script>` against
/// this build's `cellbox mcp` in a fresh cwd (returned, so a test can look at
/// what the scenario left there); fails the test with the script's output.
pub fn mcp_scenario(script: &str, scenario: &str, env: &[(&str, &str)]) -> tempfile::TempDir {
    let cwd = tempfile::tempdir().unwrap();
    let output = client(script)
        .envs(env.iter().copied())
        .arg(cwd.path())
        .arg(scenario)
        .env("CELLBOX_PYTHON", python())
        .env("CELLBOX_ARTIFACTS_DIR", cwd.path().join("artifacts"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        !stderr.contains("No module named 'mcp'"),
        "the MCP client is missing: run scripts/test, which installs it (python: {})",
        python().display()
    );
    assert!(output.status.success(), "scenario {scenario} failed\nstdout:\n{stdout}\nstderr:\n{stderr}");
    cwd
}

/// A running `cellbox mcp` with its own working folder and artifacts.
pub struct RawServer {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next: u64,
    /// Sent as `_meta` with every request (the 2026-07-28 lifecycle), when set.
    pub request_meta: Option<Value>,
    _cwd: Option<tempfile::TempDir>,
}

impl RawServer {
    /// A server not yet initialised, in a working folder of its own.
    pub fn spawn() -> RawServer {
        let cwd = tempfile::tempdir().unwrap();
        let mut command = binary::cellbox(["mcp", "--cwd"]);
        command.arg(cwd.path()).env("CELLBOX_ARTIFACTS_DIR", cwd.path().join("artifacts"));
        let mut server = RawServer::from_command(command);
        server._cwd = Some(cwd);
        server
    }

    /// The server `command` starts (`cellbox mcp …`), not yet initialised.
    pub fn from_command(mut command: Command) -> RawServer {
        command.stderr(Stdio::null());
        RawServer::with_stderr(command).0
    }

    /// [`RawServer::from_command`], with the server's stderr to read (set `command`'s stderr first).
    pub fn with_stderr(mut command: Command) -> (RawServer, Option<std::process::ChildStderr>) {
        let mut child = command.stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let stderr = child.stderr.take();
        (RawServer { child, stdin, stdout, next: 0, request_meta: None, _cwd: None }, stderr)
    }

    /// The server `command` starts, initialised (protocol 2025-06-18, no client capabilities).
    pub fn started(command: Command) -> RawServer {
        let mut server = RawServer::from_command(command);
        server.initialize("2025-06-18", json!({}));
        server
    }

    /// A server initialised with `initialize` at `version`, the client declaring `capabilities`.
    pub fn initialized(version: &str, capabilities: Value) -> (RawServer, Value) {
        let mut server = RawServer::spawn();
        let answer = server.initialize(version, capabilities);
        (server, answer)
    }

    /// `initialize` at `version` and then `notifications/initialized`; the answer.
    pub fn initialize(&mut self, version: &str, capabilities: Value) -> Value {
        let answer = self.request(
            "initialize",
            json!({"protocolVersion": version, "capabilities": capabilities, "clientInfo": {"name": "raw", "version": "1"}}),
        );
        self.notify("notifications/initialized");
        answer
    }

    /// A server spoken to in the 2026-07-28 lifecycle: no `initialize`, every request with its `_meta`.
    pub fn stateless(capabilities: Value) -> RawServer {
        let mut server = RawServer::spawn();
        server.request_meta = Some(json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": capabilities,
            "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
        }));
        server
    }

    pub fn notify(&mut self, method: &str) {
        writeln!(self.stdin, "{}", json!({"jsonrpc": "2.0", "method": method})).unwrap();
    }

    /// Send a request and return its whole response (notifications in between are skipped).
    pub fn request(&mut self, method: &str, mut params: Value) -> Value {
        self.next += 1;
        let id = self.next;
        if let (Some(meta), Some(map)) = (&self.request_meta, params.as_object_mut()) {
            map.insert("_meta".into(), meta.clone());
        }
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

    /// SIGTERM to the server, and its exit status once it is gone.
    pub fn terminate(&mut self) -> std::process::ExitStatus {
        use cellbox_kernels::kernel::process::{Signal, signal_pid};
        signal_pid(self.child.id(), Signal::SIGTERM).unwrap();
        self.child.wait().unwrap()
    }

    /// `tools/call` of `eval`: the result.
    pub fn eval(&mut self, arguments: Value) -> Value {
        self.tool("eval", arguments)
    }

    /// `tools/call` of the tool `name`: the result.
    pub fn tool(&mut self, name: &str, arguments: Value) -> Value {
        self.request("tools/call", json!({"name": name, "arguments": arguments}))["result"].clone()
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for RawServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The text of a tool result's first content block.
pub fn text(result: &Value) -> String {
    result["content"][0]["text"].as_str().unwrap_or_default().to_string()
}
