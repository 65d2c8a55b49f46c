//! The warm round trip of `1+1` (`--only warm`).

use std::path::Path;
use std::process::Stdio;
use std::time::Instant;

use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::Command;

use super::{Jupyter, Plan, Report, Series, Setup, first_result, ms_list};

pub(super) async fn warm_round_trip(plan: &Plan, setup: &Setup, jupyter: &mut Jupyter, report: &mut Report) {
    let (kernel, _) = first_result(setup).await;
    let floor_script = Path::new(env!("CARGO_MANIFEST_DIR")).join("bench/echo_floor.py");
    let mut floor_child = Command::new(&setup.python)
        .arg("-u")
        .arg(&floor_script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut floor_in = floor_child.stdin.take().unwrap();
    let mut floor_out = BufReader::new(floor_child.stdout.take().unwrap());
    let mut cellbox = Series::new("cellbox");
    let mut floor = Series::new("NDJSON echo floor");
    let mut jupyter_series = Series::new("jupyter_client");
    jupyter.call(json!({"op": "start"})).await;
    // warm-up
    for _ in 0..50 {
        kernel.execute("1+1").await.unwrap().collect().await.unwrap();
    }
    let batch = 100;
    let mut line = String::new();
    for round in 0..plan.warm_iterations.div_ceil(batch) {
        for i in 0..batch {
            let started = Instant::now();
            kernel.execute("1+1").await.unwrap().collect().await.unwrap();
            cellbox.values.push(started.elapsed().as_secs_f64() * 1000.0);
            let started = Instant::now();
            floor_in.write_all(format!("{{\"id\":\"{round}-{i}\",\"code\":\"1+1\"}}\n").as_bytes()).await.unwrap();
            line.clear();
            floor_out.read_line(&mut line).await.unwrap();
            floor.values.push(started.elapsed().as_secs_f64() * 1000.0);
        }
        let jupyter_batch = if plan.quick { 20 } else { batch / 2 };
        jupyter_series.values.extend(ms_list(&jupyter.call(json!({"op": "roundtrip", "n": jupyter_batch})).await));
    }
    kernel.shutdown().await;
    report.add("warm round trip of 1+1", "ms", false, &cellbox, Some(&floor), "");
    report.add("warm round trip of 1+1", "ms", false, &cellbox, Some(&jupyter_series), "");
}
