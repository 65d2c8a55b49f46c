//! Output throughput (`--only output`).

use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use cellbox_engine::tool::{CallContext, EngineConfig, EvalEngine, EvalParams, ignore_events};
use serde_json::json;
use tokio::process::Command;
use tokio_util::sync::CancellationToken;

use super::{Jupyter, Plan, Report, Series, Setup};

/// Peak resident memory of this process, sampled while `work` runs.
async fn with_peak_rss<F: std::future::Future>(work: F) -> (F::Output, f64) {
    let stop = Arc::new(AtomicBool::new(false));
    let peak = Arc::new(AtomicU64::new(0));
    let sampler = {
        let (stop, peak) = (stop.clone(), peak.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                if let Some(rss) = cellbox_engine::session::resident_bytes(std::process::id()) {
                    peak.fetch_max(rss, Ordering::Relaxed);
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        })
    };
    let output = work.await;
    stop.store(true, Ordering::Relaxed);
    sampler.join().unwrap();
    (output, peak.load(Ordering::Relaxed) as f64 / 1_048_576.0)
}

pub(super) async fn output_throughput(plan: &Plan, setup: &Setup, jupyter: &mut Jupyter, report: &mut Report) {
    let lines = plan.output_mb * 10_000; // 100-byte lines
    let code = format!("line = 'x' * 99\nfor _ in range({lines}):\n    print(line)");
    let dir = tempfile::tempdir().unwrap();
    let mut config = EngineConfig::new(&setup.cwd);
    config.python = Some(setup.python.display().to_string());
    config.artifacts_dir = dir.path().join("artifacts");
    let engine = EvalEngine::new(config);
    let context = CallContext::new("bench");
    jupyter.call(json!({"op": "start"})).await;
    let params = EvalParams::from_json(json!({"cells": [{"code": code.clone(), "timeout": 3600}]})).unwrap();
    engine.eval(&EvalParams::code("1"), &context, &CancellationToken::new(), &ignore_events).await.unwrap();
    let mut cellbox = Series::new("cellbox");
    let mut rss = Series::new("cellbox");
    let mut jupyter_series = Series::new("jupyter_client");
    let mut print_floor = Series::new("python print() → /dev/null");
    let mut jupyter_bytes = 0.0;
    let megabytes = (lines * 100) as f64 / 1_000_000.0;
    // The floor: the same loop in a plain interpreter writing to /dev/null,
    // timed inside Python (no process start).
    let floor_code = format!(
        "import sys, time\nstart = time.perf_counter()\n{code}\nsys.stdout.flush()\nsys.stderr.write(str(time.perf_counter() - start))"
    );
    for _ in 0..plan.output_runs {
        let floor = Command::new(&setup.python)
            .args(["-c", &floor_code])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
            .wait_with_output()
            .await
            .unwrap();
        let seconds: f64 = String::from_utf8_lossy(&floor.stderr).trim().parse().unwrap_or(f64::NAN);
        print_floor.values.push(megabytes / seconds);
        let cancel = CancellationToken::new();
        let started = Instant::now();
        let (result, peak) = with_peak_rss(engine.eval(&params, &context, &cancel, &ignore_events)).await;
        let result = result.unwrap();
        assert!(!result.is_error && result.truncated);
        cellbox.values.push(megabytes / started.elapsed().as_secs_f64());
        rss.values.push(peak);
        let answer = jupyter.call(json!({"op": "output", "code": code})).await;
        jupyter_bytes = answer["bytes"].as_f64().unwrap();
        jupyter_series.values.push(megabytes / answer["seconds"].as_f64().unwrap());
    }
    let note = format!("Jupyter delivered {:.1} of {megabytes:.0} MB", jupyter_bytes / 1_000_000.0);
    report.add(&format!("{megabytes:.0} MB of printed lines"), "MB/s", true, &cellbox, Some(&print_floor), "");
    report.add(&format!("{megabytes:.0} MB of printed lines"), "MB/s", true, &cellbox, Some(&jupyter_series), &note);
    report.add(&format!("host peak RSS during {megabytes:.0} MB"), "MiB", false, &rss, None, "whole benchmark process");

    let small = "for i in range(10000):\n    print(i)";
    let small_params = EvalParams::code(small);
    let mut cellbox_small = Series::new("cellbox");
    let mut jupyter_small = Series::new("jupyter_client");
    for _ in 0..(if plan.quick { 2 } else { 5 }) {
        let started = Instant::now();
        engine.eval(&small_params, &context, &CancellationToken::new(), &ignore_events).await.unwrap();
        cellbox_small.values.push(started.elapsed().as_secs_f64() * 1000.0);
        let answer = jupyter.call(json!({"op": "output", "code": small})).await;
        jupyter_small.values.push(answer["seconds"].as_f64().unwrap() * 1000.0);
    }
    report.add("10 000 small print() calls", "ms", false, &cellbox_small, Some(&jupyter_small), "");
    engine.dispose_all().await;
}
