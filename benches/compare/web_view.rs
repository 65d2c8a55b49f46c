//! What watching costs the server (`--only ui`): 20 sessions of one
//! `cellbox serve` stream output at once (each cell prints 100 lines, 10 ms
//! apart), with the web view's event stream (`/ui/api/events`) read by a
//! client and without one, in turn. The row is the server process's CPU time
//! for one such round, watched against unwatched. (How soon a line reaches the
//! page, with the same 20 sessions streaming, is measured in the browser test,
//! tests/serve/ui_browser.py.)

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::json;

use super::mcp_http::{HttpMcp, ServeProcess};
use super::{Plan, Report, Series, Setup};

const SESSIONS: usize = 20;

const STREAMING_CELL: &str =
    "import time\nfor i in range(100):\n    print(f'line {i}', flush=True)\n    time.sleep(0.01)\n'done'";

pub(super) async fn web_view_rows(plan: &Plan, setup: &Setup, report: &mut Report) {
    let dir = tempfile::tempdir().unwrap();
    let mut env = setup.env.clone();
    env.insert("CELLBOX_PYTHON".into(), setup.python.display().to_string());
    env.insert("CELLBOX_ARTIFACTS_DIR".into(), dir.path().join("artifacts").display().to_string());
    let server = json!({"command": env!("CARGO_BIN_EXE_cellbox"), "env": env});
    let kernels = (SESSIONS + 2).to_string();
    let flags = ["--max-kernels", &kernels, "--max-kernels-total", &kernels, "--principal-share", "100"];
    let serve = ServeProcess::start(&server, dir.path(), &flags).await;
    let pid = serve.pid().expect("the server runs");
    let mut clients = Vec::new();
    for index in 0..SESSIONS {
        let mut client = HttpMcp::connect(&serve.url).await;
        client.call_ms(Some(&format!("stream-{index}"))).await;
        clients.push(client);
    }
    let base = serve.url.trim_end_matches("/mcp").to_string();
    let rounds = if plan.quick { 3 } else { 8 };
    let mut watched = Series::new("cellbox serve, 20 sessions streaming, watched");
    let mut unwatched = Series::new("the same, unwatched");
    let events = Arc::new(AtomicU64::new(0));
    for round in 0..rounds * 2 {
        let watching = round % 2 == 0;
        let opened = events.load(Ordering::SeqCst);
        let watcher = watching.then(|| tokio::spawn(watch(base.clone(), events.clone())));
        if let Some(watcher) = &watcher {
            // This round's stream is open (its first bytes came) before the cells start.
            while events.load(Ordering::SeqCst) == opened {
                assert!(!watcher.is_finished(), "the web view's event stream did not open");
                tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            }
        }
        let before = cpu_ms(pid);
        let calls = clients.iter_mut().enumerate().map(|(index, client)| async move {
            client.call_code(Some(&format!("stream-{index}")), STREAMING_CELL, "line 0").await
        });
        futures_util::future::join_all(calls).await;
        let spent = cpu_ms(pid) - before;
        if let Some(watcher) = watcher {
            watcher.abort();
            watched.values.push(spent);
        } else {
            unwatched.values.push(spent);
        }
    }
    let delivered = events.load(Ordering::SeqCst);
    report.add(
        "server CPU, 20 sessions streaming, watched by the web view",
        "ms",
        false,
        &watched,
        Some(&unwatched),
        &format!(
            "one round: 20 cells at once, 100 lines each; CPU of the server process; {delivered} event-stream \
             chunks read over {rounds} watched rounds"
        ),
    );
}

/// Read the web view's event stream until aborted, counting its chunks (the
/// first one, the stream's opening, counts too).
async fn watch(base: String, events: Arc<AtomicU64>) {
    let client = reqwest::Client::new();
    let mut response = client.get(format!("{base}/ui/api/events")).send().await.expect("the event stream opens");
    assert_eq!(response.status().as_u16(), 200);
    events.fetch_add(1, Ordering::SeqCst);
    while let Ok(Some(_)) = response.chunk().await {
        events.fetch_add(1, Ordering::SeqCst);
    }
}

/// The process's user and system CPU time so far, in ms (Linux).
fn cpu_ms(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command's closing parenthesis: utime and stime are the 12th and 13th.
    let fields: Vec<&str> = stat.rsplit_once(')').map_or("", |(_, rest)| rest).split_whitespace().collect();
    let ticks: f64 = fields.get(11..13).map_or(0.0, |t| t.iter().filter_map(|v| v.parse::<f64>().ok()).sum());
    #[cfg(unix)]
    let per_second = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK).ok().flatten().unwrap_or(100) as f64;
    #[cfg(not(unix))]
    let per_second = 100.0;
    ticks * 1000.0 / per_second
}
