//! Many sessions on one machine (`--only hibernate`): `cellbox serve` with
//! at most 8 live kernels is given N sessions, each called once; the ones
//! past the limit hibernate. Rows: the memory of the whole server tree with
//! N sessions (against Jupyter Server, where every session is a live kernel:
//! its memory per kernel is measured with fewer kernels and shown per GiB),
//! a call to a hibernated session (wake + `1+1`) against a call to a live
//! one, after a pause and back to back, and waking a session that holds 10
//! MB of variables.

use std::path::Path;
use std::time::Instant;

use serde_json::json;

use super::mcp_http::{HttpMcp, ServeProcess};
use super::serve_memory::{JupyterServer, tree_pss_kib};
use super::{Plan, Report, Series, Setup};

const LIVE: usize = 8;
/// The pause before a timed wake, in which the server readies its warm spare.
const THINK: std::time::Duration = std::time::Duration::from_millis(250);

pub(super) async fn hibernate_rows(plan: &Plan, setup: &Setup, jupyter_python: &Path, report: &mut Report) {
    if !cfg!(target_os = "linux") {
        return; // hibernation and PSS are Linux's
    }
    let (sessions, sample, big_rounds, jupyter_kernels) = if plan.quick { (60, 20, 3, 5) } else { (1000, 100, 10, 20) };
    let dir = tempfile::tempdir().unwrap();
    let mut env = setup.env.clone();
    env.insert("CELLBOX_PYTHON".into(), setup.python.display().to_string());
    env.insert("CELLBOX_ARTIFACTS_DIR".into(), dir.path().join("artifacts").display().to_string());
    // Its own cache, so the hibernation files on disk can be counted (outside the server's root,
    // whose entries other than the principal's own folder kernels cannot read).
    let cache_dir = tempfile::tempdir().unwrap();
    let cache = cache_dir.path().to_path_buf();
    env.insert("CELLBOX_CACHE_DIR".into(), cache.display().to_string());
    let server = json!({"command": env!("CARGO_BIN_EXE_cellbox"), "env": env});
    // With its default warm spare, which a wake takes, as users run it.
    let serve = ServeProcess::start(&server, dir.path(), &["--max-kernels", &LIVE.to_string(), "--spares", "1"]).await;
    let mut client = HttpMcp::connect(&serve.url).await;

    let started = Instant::now();
    for index in 0..sessions {
        client.call_ms(Some(&format!("h-{index}"))).await;
    }
    let created = started.elapsed().as_secs_f64();
    let pss_mib = serve.pid().and_then(tree_pss_kib).map(|kib| kib as f64 / 1024.0);
    let on_disk = folder_bytes(&cache.join("hibernate")) as f64 / 1024.0 / 1024.0;

    // The most recent sessions are the live ones: all but one place, the spare's.
    let mut live = Series::new(&format!("a live session ({} of {sessions})", LIVE - 1));
    for round in 0..sample {
        live.values.push(client.call_ms(Some(&format!("h-{}", sessions - 1 - round % (LIVE - 1)))).await);
    }
    // The oldest are hibernated; each wake puts the least recently used live one away, in the
    // background, to keep a warm spare. First with a pause before each call (a model's turn
    // leaves far more), then back to back, where the spare a wake takes is still starting.
    let mut woken = Series::new("cellbox serve");
    for index in 0..sample {
        tokio::time::sleep(THINK).await;
        // The result says the session woke, after the value.
        woken.values.push(client.call_code(Some(&format!("h-{index}")), "1+1", "2\n").await);
    }
    let mut rushed = Series::new("cellbox serve");
    for index in sample..2 * sample {
        rushed.values.push(client.call_code(Some(&format!("h-{index}")), "1+1", "2\n").await);
    }
    let note = format!(
        "{sessions} sessions each called once, {} live and a spare; {} ms between calls; p99 {} against {} ms",
        LIVE - 1,
        THINK.as_millis(),
        super::fmt(woken.quantile(0.99)),
        super::fmt(live.quantile(0.99))
    );
    report.add(&format!("call a hibernated session ({sessions})"), "ms", false, &woken, Some(&live), &note);
    let note = format!("no pause between calls; p99 {} ms", super::fmt(rushed.quantile(0.99)));
    report.add("call a hibernated session, back to back", "ms", false, &rushed, Some(&live), &note);

    let mut big_woken = Series::new("cellbox serve");
    let mut big_live = Series::new("the same call, live");
    let fill = "big = [float(i) for i in range(1_100_000)]; None";
    let check = "len(big)";
    client.call_code(Some("big"), fill, "").await;
    for round in 0..big_rounds {
        // LIVE fresh sessions push it out of the live set.
        for other in 0..LIVE {
            client.call_ms(Some(&format!("push-{round}-{other}"))).await;
        }
        tokio::time::sleep(THINK).await;
        big_woken.values.push(client.call_code(Some("big"), check, "1100000").await);
        big_live.values.push(client.call_code(Some("big"), check, "1100000").await);
    }
    report.add(
        "wake a session holding 10 MB",
        "ms",
        false,
        &big_woken,
        Some(&big_live),
        "1.1 million floats (9.9 MB pickled); the first call after waking, against the next one",
    );
    drop(client);
    drop(serve);

    let Some(ours) = pss_mib else { return };
    let theirs = match JupyterServer::start(jupyter_python, dir.path()).await {
        Ok(jupyter) => match jupyter.start_kernels(jupyter_kernels).await {
            Ok(_connected) => tree_pss_kib(jupyter.child.id())
                .map(|kib| kib as f64 / 1024.0 / jupyter_kernels as f64)
                .ok_or_else(|| "its memory could not be read".to_string()),
            Err(why) => Err(why),
        },
        Err(why) => Err(why),
    };
    let per_gib = Series { name: "cellbox serve".into(), values: vec![sessions as f64 / (ours / 1024.0)] };
    let base = theirs
        .as_ref()
        .ok()
        .map(|per_kernel| Series { name: "Jupyter Server".into(), values: vec![1024.0 / per_kernel] });
    let note = match &theirs {
        Ok(per_kernel) => format!(
            "PSS of the server tree: {ours:.0} MiB for {sessions} sessions ({} live and a spare; {on_disk:.1} MiB of \
             hibernation files on disk; made in {created:.0} s); Jupyter Server {per_kernel:.1} MiB per kernel, \
             measured with {jupyter_kernels}",
            LIVE - 1
        ),
        Err(why) => format!("PSS {ours:.0} MiB for {sessions} sessions; Jupyter Server unavailable: {why}"),
    };
    report.add("sessions per GiB of memory", "sessions", true, &per_gib, base.as_ref(), &note);
}

/// The bytes of the files under `dir`.
fn folder_bytes(dir: &Path) -> u64 {
    let mut total = 0;
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            match entry.file_type() {
                Ok(kind) if kind.is_dir() => pending.push(entry.path()),
                Ok(_) => total += entry.metadata().map_or(0, |meta| meta.len()),
                Err(_) => {}
            }
        }
    }
    total
}
