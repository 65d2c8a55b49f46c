//! Memory per session with a live kernel (`--only serve`): `cellbox serve`
//! with N sessions that each ran a cell, against Jupyter Server running N
//! kernels, both measured the same way: the proportional set size (PSS,
//! shared pages split between the processes sharing them) of the server and
//! every process under it, divided by N.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::mcp_http::{HttpMcp, ServeProcess};
use super::{Plan, Report, Series, Setup};

pub(super) async fn memory_rows(plan: &Plan, setup: &Setup, jupyter_python: &Path, report: &mut Report) {
    if !cfg!(target_os = "linux") {
        return; // PSS comes from /proc
    }
    let sessions = if plan.quick { 5 } else { 20 };
    let dir = tempfile::tempdir().unwrap();
    let mut env = setup.env.clone();
    env.insert("CELLBOX_PYTHON".into(), setup.python.display().to_string());
    env.insert("CELLBOX_ARTIFACTS_DIR".into(), dir.path().join("artifacts").display().to_string());
    let server = json!({"command": env!("CARGO_BIN_EXE_cellbox"), "env": env});
    let kernels = (sessions + 1).to_string();
    let serve = ServeProcess::start(&server, dir.path(), &["--max-kernels", &kernels]).await;
    let mut client = HttpMcp::connect(&serve.url).await;
    for index in 0..sessions {
        client.call_ms(Some(&format!("mem-{index}"))).await;
    }
    let ours = serve.pid().and_then(tree_pss_kib);
    drop(client);
    drop(serve);

    let theirs = match JupyterServer::start(jupyter_python, dir.path()).await {
        Ok(jupyter) => match jupyter.start_kernels(sessions).await {
            Ok(_connected) => {
                tree_pss_kib(jupyter.child.id()).ok_or_else(|| "its memory could not be read".to_string())
            }
            Err(why) => Err(why),
        },
        Err(why) => Err(why),
    };
    let per_session = |total: u64| total as f64 / 1024.0 / sessions as f64;
    if let Some(ours) = ours {
        let row = Series { name: "cellbox serve".into(), values: vec![per_session(ours)] };
        let base = theirs
            .as_ref()
            .ok()
            .map(|theirs| Series { name: "Jupyter Server".into(), values: vec![per_session(*theirs)] });
        let note = match &theirs {
            Ok(_) => format!("PSS of the server and its kernels / {sessions}, a client connected to each"),
            Err(why) => format!("Jupyter Server unavailable: {why}"),
        };
        report.add(
            &format!("memory per session with its kernel ({sessions})"),
            "MiB",
            false,
            &row,
            base.as_ref(),
            &note,
        );
    }
}

/// The PSS of `pid` and every process below it, in KiB (Linux).
pub(super) fn tree_pss_kib(pid: u32) -> Option<u64> {
    let mut total = 0;
    let mut pending = vec![pid];
    while let Some(pid) = pending.pop() {
        let rollup = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).ok()?;
        total += rollup
            .lines()
            .find_map(|line| line.strip_prefix("Pss:"))
            .and_then(|rest| rest.split_whitespace().next()?.parse::<u64>().ok())
            .unwrap_or(0);
        for task in std::fs::read_dir(format!("/proc/{pid}/task")).ok()?.flatten() {
            let children = std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
            pending.extend(children.split_whitespace().filter_map(|child| child.parse::<u32>().ok()));
        }
    }
    Some(total)
}

/// `jupyter server` on a free port with a token, in `root`; killed on drop.
pub(super) struct JupyterServer {
    pub(super) child: Child,
    url: String,
    token: String,
}

impl JupyterServer {
    pub(super) async fn start(python: &Path, root: &Path) -> Result<JupyterServer, String> {
        let port = std::net::TcpListener::bind(("127.0.0.1", 0))
            .and_then(|l| l.local_addr())
            .map_err(|e| e.to_string())?
            .port();
        let token = "bench-token".to_string();
        let mut command = Command::new(python);
        command
            // --allow-root: the bench may run as root (in a container); it changes nothing else.
            .args(["-m", "jupyter_server", "--no-browser", "--allow-root", "--ServerApp.port_retries=0"])
            .arg(format!("--ServerApp.port={port}"))
            .arg(format!("--IdentityProvider.token={token}"))
            .arg(format!("--ServerApp.root_dir={}", root.display()))
            .env("JUPYTER_RUNTIME_DIR", root.join("jupyter-runtime"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        // Its kernels join its process group, which the drop ends.
        #[cfg(unix)]
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        let child = command.spawn().map_err(|e| format!("{}: {e}", python.display()))?;
        let server = JupyterServer { child, url: format!("http://127.0.0.1:{port}"), token };
        let deadline = Instant::now() + Duration::from_secs(60);
        while server.get("/api/status").await.is_none() {
            if Instant::now() > deadline {
                return Err("jupyter_server did not answer /api/status within 60 s".into());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Ok(server)
    }

    async fn get(&self, path: &str) -> Option<Value> {
        let response = reqwest::Client::new()
            .get(format!("{}{path}", self.url))
            .header("authorization", format!("token {}", self.token))
            .send()
            .await
            .ok()?;
        if !response.status().is_success() {
            return None;
        }
        response.json().await.ok()
    }

    /// Start `count` kernels, each with a client connected that has had its
    /// `kernel_info_reply` (the kernel is then fully up, as a notebook's is).
    /// The connections are returned: they stay open while memory is read.
    pub(super) async fn start_kernels(&self, count: usize) -> Result<Vec<KernelSocket>, String> {
        let client = reqwest::Client::new();
        let mut sockets = Vec::new();
        for _ in 0..count {
            let created = client
                .post(format!("{}/api/kernels", self.url))
                .header("authorization", format!("token {}", self.token))
                .json(&json!({"name": "python3"}))
                .send()
                .await
                .map_err(|e| format!("POST /api/kernels: {e}"))?;
            let kernel: Value = created.json().await.map_err(|e| format!("POST /api/kernels: {e}"))?;
            let id = kernel["id"].as_str().ok_or_else(|| format!("POST /api/kernels answered {kernel}"))?;
            sockets.push(self.connect_ready(id).await?);
        }
        Ok(sockets)
    }

    async fn connect_ready(&self, id: &str) -> Result<KernelSocket, String> {
        use futures_util::{SinkExt, StreamExt};
        let url = format!("{}/api/kernels/{id}/channels?token={}", self.url.replacen("http", "ws", 1), self.token);
        let (mut socket, _) = tokio_tungstenite::connect_async(url).await.map_err(|e| format!("channels: {e}"))?;
        let request = json!({
            "header": {"msg_id": format!("info-{id}"), "msg_type": "kernel_info_request", "username": "bench",
                       "session": "bench", "version": "5.3", "date": ""},
            "parent_header": {}, "metadata": {}, "content": {}, "channel": "shell", "buffers": []
        });
        socket.send(request.to_string().into()).await.map_err(|e| format!("channels: {e}"))?;
        let deadline = Instant::now() + Duration::from_secs(120);
        while Instant::now() < deadline {
            let message = tokio::time::timeout(Duration::from_secs(120), socket.next()).await;
            let Ok(Some(Ok(message))) = message else { break };
            let text = message.into_text().unwrap_or_default();
            if text.contains("\"kernel_info_reply\"") {
                return Ok(socket);
            }
        }
        Err(format!("kernel {id} sent no kernel_info_reply"))
    }
}

type KernelSocket = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

impl Drop for JupyterServer {
    fn drop(&mut self) {
        let _ = cellbox_kernels::kernel::process::signal_group(
            self.child.id(),
            cellbox_kernels::kernel::process::Signal::SIGKILL,
        );
        let _ = self.child.wait();
    }
}
