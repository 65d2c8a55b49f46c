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

pub(super) async fn serve_load(plan: &Plan, setup: &Setup, report: &mut Report) {
    let (clients, cells, idle) = if plan.quick { (10, 20, 100) } else { (50, 100, 500) };
    let dir = tempfile::tempdir().unwrap();
    let mut env = setup.env.clone();
    env.insert("CELLBOX_PYTHON".into(), setup.python.display().to_string());
    env.insert("CELLBOX_ARTIFACTS_DIR".into(), dir.path().join("artifacts").display().to_string());
    let server = json!({"command": env!("CARGO_BIN_EXE_cellbox"), "env": env});
    let kernels = (clients + 1).to_string();
    // Every client and idle session holds a connection of its own, all from loopback: past the
    // server's default caps (64 from one address, 512 in all) the extra ones would be closed.
    let connections = (clients + idle + 8).to_string();
    let flags = [
        "--max-kernels",
        &kernels,
        "--max-calls",
        "10000",
        "--max-body-bytes",
        "1048576",
        "--max-connections",
        &connections,
        "--max-connections-per-ip",
        &connections,
    ];
    let serve = ServeProcess::start(&server, dir.path(), &flags).await;

    // One client alone: the per-call figure the loaded ones are compared with.
    let mut solo = HttpMcp::connect(&serve.url).await;
    let mut alone = Series::new("one client alone");
    for _ in 0..20 {
        solo.call_ms(Some("solo")).await;
    }
    for _ in 0..cells {
        alone.values.push(solo.call_ms(Some("solo")).await);
    }

    // Each client's session gets its kernel before the clock starts.
    let mut connected = Vec::new();
    for index in 0..clients {
        let mut client = HttpMcp::connect(&serve.url).await;
        client.call_ms(Some(&format!("load-{index}"))).await;
        connected.push(client);
    }
    let started = Instant::now();
    let runs = connected.into_iter().enumerate().map(|(index, mut client)| {
        tokio::spawn(async move {
            let session = format!("load-{index}");
            let mut times = Vec::with_capacity(cells);
            for _ in 0..cells {
                times.push(client.call_ms(Some(&session)).await);
            }
            times
        })
    });
    let mut loaded = Series::new("cellbox serve");
    for run in futures_util::future::join_all(runs).await {
        loaded.values.extend(run.unwrap());
    }
    let seconds = started.elapsed().as_secs_f64();
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
    let mut env = setup.env.clone();
    env.insert("CELLBOX_PYTHON".into(), setup.python.display().to_string());
    env.insert("CELLBOX_ARTIFACTS_DIR".into(), dir.path().join("artifacts").display().to_string());
    let server = json!({"command": env!("CARGO_BIN_EXE_cellbox"), "env": env});
    let kernels = (clients + 1).to_string();
    let connections = (clients + 8).to_string();
    let flags = [
        "--max-kernels",
        &kernels,
        "--max-calls",
        "100000",
        "--max-connections",
        &connections,
        "--max-connections-per-ip",
        &connections,
    ];
    let serve = ServeProcess::start(&server, dir.path(), &flags).await;
    let mut solo = HttpMcp::connect(&serve.url).await;
    let mut alone = Series::new("one client alone");
    for round in 0..120 {
        let ms = solo.call_ms(Some("solo")).await;
        if round >= 20 {
            alone.values.push(ms);
        }
    }
    let mut connected = Vec::new();
    for index in 0..clients {
        let mut client = HttpMcp::connect(&serve.url).await;
        client.call_ms(Some(&format!("crowd-{index}"))).await;
        connected.push(client);
    }
    let started = Instant::now();
    let deadline = started + Duration::from_secs(seconds);
    let runs = connected.into_iter().enumerate().map(|(index, mut client)| {
        tokio::spawn(async move {
            let session = format!("crowd-{index}");
            let mut times = Vec::new();
            while Instant::now() < deadline {
                times.push(client.call_ms(Some(&session)).await);
            }
            times
        })
    });
    let mut crowd = Series::new("cellbox serve");
    for run in futures_util::future::join_all(runs).await {
        crowd.values.extend(run.unwrap());
    }
    let elapsed = started.elapsed().as_secs_f64();
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
