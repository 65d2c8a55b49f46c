//! `cellbox serve` under load (`--only serve`): many MCP clients at once, each
//! in a session (and kernel) of its own, beside the same clients each with a
//! `cellbox mcp` of its own over stdio (and one client alone, in the note);
//! the server's memory per idle MCP session; and a crowd of clients calling
//! for a fixed time.

use std::time::{Duration, Instant};

use serde_json::json;

use super::mcp::RawMcp;
use super::mcp_http::{HttpMcp, ServeProcess};
use super::{Plan, Report, Series, Setup};

/// A `cellbox serve` for `clients` sessions with a live kernel each, and
/// `connections` connections from loopback: past the server's default caps
/// (64 from one address, 512 in all) the extra ones would be closed.
async fn loaded_serve(
    setup: &Setup,
    dir: &std::path::Path,
    clients: usize,
    connections: usize,
) -> (ServeProcess, std::collections::BTreeMap<String, String>) {
    let mut env = setup.env.clone();
    env.insert("CELLBOX_PYTHON".into(), setup.python.display().to_string());
    env.insert("CELLBOX_ARTIFACTS_DIR".into(), dir.join("artifacts").display().to_string());
    let server = json!({"command": env!("CARGO_BIN_EXE_cellbox"), "env": env});
    // The clients' kernels, one alone's, and room for spares.
    let (kernels, total, connections) = ((clients + 1).to_string(), (clients + 4).to_string(), connections.to_string());
    let flags = [
        // One principal (no auth) may hold them all.
        "--max-kernels-total",
        &total,
        "--principal-share",
        "100",
        "--max-kernels",
        &kernels,
        "--max-calls",
        "100000",
        "--max-body-bytes",
        "1048576",
        "--max-connections",
        &connections,
        "--max-connections-per-ip",
        &connections,
    ];
    (ServeProcess::start(&server, dir, &flags).await, env)
}

/// One client alone, `1+1` `cells` times after 20 unmeasured: the per-call
/// figure the loaded ones are compared with.
async fn alone(serve: &ServeProcess, cells: usize) -> Series {
    let mut solo = HttpMcp::connect(&serve.url).await;
    let mut alone = Series::new("one client alone");
    for _ in 0..20 {
        solo.call_ms(Some("solo")).await;
    }
    for _ in 0..cells {
        alone.values.push(solo.call_ms(Some("solo")).await);
    }
    alone
}

/// `clients` clients at once, each calling `1+1` in a session of its own
/// (its kernel started before the clock) until `done(calls it made, time
/// since the clock started)`: every call's time, and the seconds it all took.
async fn crowd(
    serve: &ServeProcess,
    clients: usize,
    done: impl Fn(usize, Duration) -> bool + Clone + Send + 'static,
) -> (Series, f64) {
    let mut connected = Vec::new();
    for index in 0..clients {
        let mut client = HttpMcp::connect(&serve.url).await;
        client.call_ms(Some(&format!("load-{index}"))).await;
        connected.push(client);
    }
    let started = Instant::now();
    let runs = connected.into_iter().enumerate().map(|(index, mut client)| {
        let done = done.clone();
        tokio::spawn(async move {
            let session = format!("load-{index}");
            let mut times = Vec::new();
            while !done(times.len(), started.elapsed()) {
                times.push(client.call_ms(Some(&session)).await);
            }
            times
        })
    });
    let mut loaded = Series::new("cellbox serve");
    for run in futures_util::future::join_all(runs).await {
        loaded.values.extend(run.unwrap());
    }
    (loaded, started.elapsed().as_secs_f64())
}

pub(super) async fn serve_load(plan: &Plan, setup: &Setup, report: &mut Report) {
    let (clients, cells, idle) = if plan.quick { (10, 20, 100) } else { (50, 100, 500) };
    let dir = tempfile::tempdir().unwrap();
    let (serve, env) = loaded_serve(setup, dir.path(), clients, clients + idle + 8).await;
    let alone = alone(&serve, cells).await;
    let (loaded, seconds) = crowd(&serve, clients, move |made, _| made >= cells).await;
    let throughput = Series { name: "cellbox serve".into(), values: vec![(clients * cells) as f64 / seconds] };

    // The same clients over stdio, each with a `cellbox mcp` of its own (warmed by `start`).
    let stdio = json!({"command": env!("CARGO_BIN_EXE_cellbox"),
                       "args": ["mcp", "--spares", "0", "--cwd", dir.path()], "env": env});
    let mut servers = Vec::new();
    for _ in 0..clients {
        servers.push(RawMcp::start(&stdio).await);
    }
    let started = Instant::now();
    let runs = servers.into_iter().map(|mut server| {
        tokio::spawn(async move {
            let mut times = Vec::with_capacity(cells);
            for _ in 0..cells {
                times.push(server.call_ms().await);
            }
            times
        })
    });
    let mut stdio_loaded = Series::new("stdio MCP, a server per client");
    for run in futures_util::future::join_all(runs).await {
        stdio_loaded.values.extend(run.unwrap());
    }
    let stdio_throughput = Series {
        name: stdio_loaded.name.clone(),
        values: vec![(clients * cells) as f64 / started.elapsed().as_secs_f64()],
    };
    let what = format!("{clients} clients × {cells} cells of 1+1");
    let note = format!(
        "each client its own session; p99 {:.1} ms (stdio {:.1} ms); one client alone {:.2} ms",
        loaded.quantile(0.99),
        stdio_loaded.quantile(0.99),
        alone.quantile(0.5)
    );
    report.add(&format!("HTTP MCP, {what}: per call"), "ms", false, &loaded, Some(&stdio_loaded), &note);
    let note = format!("one client alone: {:.0} calls/s", 1000.0 / alone.quantile(0.5));
    report.add(&format!("HTTP MCP, {what}: throughput"), "calls/s", true, &throughput, Some(&stdio_throughput), &note);

    // Idle sessions: initialized, then left open.
    let before = serve.rss_kib();
    let mut sessions = Vec::with_capacity(idle);
    for _ in 0..idle {
        sessions.push(HttpMcp::connect(&serve.url).await);
    }
    let after = serve.rss_kib();
    if let (Some(before), Some(after)) = (before, after) {
        let per_session = after.saturating_sub(before) as f64 / idle as f64;
        let row = Series { name: "cellbox serve".into(), values: vec![per_session] };
        let note = format!("server RSS {before} → {after} KiB over {idle} idle MCP sessions");
        report.add("HTTP MCP: server memory per idle session", "KiB", false, &row, None, &note);
    }
    drop(sessions);
}

/// 200 clients (20 in a quick run), each in a session of its own, calling
/// `1+1` back to back for 60 s (5 s): the server's throughput and the
/// clients' latency, against one client alone on the same server.
pub(super) async fn serve_crowd(plan: &Plan, setup: &Setup, report: &mut Report) {
    let (clients, seconds) = if plan.quick { (20, 5) } else { (200, 60) };
    let dir = tempfile::tempdir().unwrap();
    // A client may open a second connection when it calls again before its last one is back in
    // its pool: room for that, or the server would close the extra ones.
    let (serve, _env) = loaded_serve(setup, dir.path(), clients, clients * 4 + 16).await;
    let alone = alone(&serve, 100).await;
    let (crowd, elapsed) = crowd(&serve, clients, move |_, since| since >= Duration::from_secs(seconds)).await;
    let calls = crowd.values.len();
    let what = format!("{clients} clients calling for {seconds} s");
    let throughput = Series { name: "cellbox serve".into(), values: vec![calls as f64 / elapsed] };
    let solo_rate = Series { name: "one client alone".into(), values: vec![1000.0 / alone.quantile(0.5)] };
    let note = format!(
        "{calls} calls of 1+1, each client in a session of its own; p50 {} ms, p99 {} ms (one client alone: {} ms)",
        super::fmt(crowd.quantile(0.5)),
        super::fmt(crowd.quantile(0.99)),
        super::fmt(alone.quantile(0.5))
    );
    report.add(&format!("HTTP MCP, {what}: throughput"), "calls/s", true, &throughput, Some(&solo_rate), &note);
    report.add(
        &format!("HTTP MCP, {what}: per call"),
        "ms",
        false,
        &crowd,
        Some(&alone),
        "the same calls, each timed by its client",
    );
}
