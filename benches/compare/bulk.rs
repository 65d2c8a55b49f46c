//! Bulk output through the whole eval tool (`--only bulk`).

use std::time::Instant;

use cellbox_engine::tool::{CallContext, EngineConfig, EvalEngine, EvalParams, ignore_events};
use cellbox_kernels::kernel::ExecEvent;
use serde_json::json;
use tokio::process::Command;
use tokio_util::sync::CancellationToken;

use super::{Plan, Report, Series, Setup, first_result};

/// Bulk output: `os.write(1, …)` in 1 MB chunks through the whole eval tool
/// (bounded text and artifact), against the same writes through a pipe into
/// `cat > file` in the same run.
pub(super) async fn bulk_output(plan: &Plan, setup: &Setup, report: &mut Report) {
    let chunks = plan.output_mb;
    let code = format!("import os\nchunk = b'x' * 1000000\nfor _ in range({chunks}):\n    os.write(1, chunk)");
    let dir = tempfile::tempdir().unwrap();
    let mut config = EngineConfig::new(&setup.cwd);
    config.python = Some(setup.python.display().to_string());
    config.artifacts_dir = dir.path().join("artifacts");
    config.spare = cellbox_engine::session::SpareLimits::OFF;
    let engine = EvalEngine::new(config);
    let context = CallContext::new("bench-bulk");
    let params = EvalParams::from_json(json!({"cells": [{"code": code.clone(), "timeout": 3600}]})).unwrap();
    engine.eval(&EvalParams::code("1"), &context, &CancellationToken::new(), &ignore_events).await.unwrap();
    // The floor: the same writes into a pipe read by `cat > file`, timed
    // inside Python from the first write until `cat` has finished the file.
    let sink = dir.path().join("floor.out");
    let floor_code = format!(
        "import os, subprocess, sys, time\n\
         cat = subprocess.Popen(['sh', '-c', 'cat > \"$0\"', sys.argv[1]], stdin=subprocess.PIPE)\n\
         fd = cat.stdin.fileno()\n\
         chunk = b'x' * 1000000\n\
         start = time.perf_counter()\n\
         for _ in range({chunks}):\n    os.write(fd, chunk)\n\
         cat.stdin.close()\n\
         cat.wait()\n\
         print(time.perf_counter() - start)"
    );
    let mut cellbox = Series::new("cellbox");
    let mut floor = Series::new("python os.write | cat > file");
    let mut kernel_only = Series::new("cellbox kernel");
    let (kernel, _) = first_result(setup).await;
    let megabytes = chunks as f64;
    for _ in 0..plan.output_runs.max(2) {
        let out = Command::new(&setup.python).arg("-c").arg(&floor_code).arg(&sink).output().await.unwrap();
        let seconds: f64 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap_or(f64::NAN);
        floor.values.push(megabytes / seconds);
        let started = Instant::now();
        let result = engine.eval(&params, &context, &CancellationToken::new(), &ignore_events).await.unwrap();
        assert!(!result.is_error && result.truncated);
        cellbox.values.push(megabytes / started.elapsed().as_secs_f64());
        let started = Instant::now();
        let mut execution = kernel.execute(&code).await.unwrap();
        while let Some(event) = execution.next().await {
            if matches!(event.unwrap(), ExecEvent::Done(_)) {
                break;
            }
        }
        kernel_only.values.push(megabytes / started.elapsed().as_secs_f64());
    }
    kernel.shutdown().await;
    report.add(
        &format!("{megabytes:.0} MB via os.write (kernel events only)"),
        "MB/s",
        true,
        &kernel_only,
        Some(&floor),
        "",
    );
    let _ = std::fs::remove_file(&sink);
    report.add(&format!("{megabytes:.0} MB via os.write, 1 MB chunks"), "MB/s", true, &cellbox, Some(&floor), "");
    engine.dispose_all().await;
}
