//! Kernels beyond the runners' Python and JavaScript (`--only languages`): R on
//! IRkernel as a Jupyter kernel cellbox starts from its kernelspec, against
//! `jupyter_client` on the same kernelspec; and bash cells against the least a
//! shell answering over a pipe can do.

use std::process::Stdio;
use std::time::Instant;

use cellbox_kernels::jupyter::{JupyterKernel, SearchPath};
use cellbox_kernels::kernel::{ExecEvent, Kernel, KernelOptions};
use cellbox_kernels::runtime::Runtime;
use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::Command;

use super::{Jupyter, Plan, Report, Series, Setup, ms_list};

/// A value came back (IRkernel shows one as display_data).
fn answered(events: &[ExecEvent]) -> bool {
    events.iter().any(|event| matches!(event, ExecEvent::Result { .. } | ExecEvent::Display { .. }))
}

pub(super) async fn languages(plan: &Plan, setup: &Setup, jupyter: &mut Jupyter, report: &mut Report) {
    r_rows(plan, setup, jupyter, report).await;
    bash_rows(plan, setup, report).await;
}

async fn r_rows(plan: &Plan, setup: &Setup, jupyter: &mut Jupyter, report: &mut Report) {
    let spec = match SearchPath::from_env(None).find("ir") {
        Ok(spec) => spec,
        Err(error) => {
            println!("(R rows skipped: {error})");
            return;
        }
    };
    let options = || KernelOptions::for_runtime(Runtime::Jupyter, &spec.dir, &setup.cwd, setup.env.clone());
    let mut cellbox = Series::new("cellbox R (IRkernel)");
    let mut baseline = Series::new("jupyter_client, IRkernel");
    for _ in 0..plan.cold_runs {
        let started = Instant::now();
        let kernel = JupyterKernel::start(options(), spec.clone()).await.expect("IRkernel starts");
        let output = kernel.execute_with("1+1", Default::default()).await.unwrap().collect().await.unwrap();
        assert!(answered(&output.events), "{output:?}");
        cellbox.values.push(started.elapsed().as_secs_f64() * 1000.0);
        kernel.shutdown().await;
        let cold = jupyter.call(json!({"op": "cold", "kernel": "ir"})).await;
        baseline.values.push(cold["ms"].as_f64().expect("a cold start's ms"));
    }
    report.add("R cold start → first 1+1", "ms", false, &cellbox, Some(&baseline), "IRkernel from its kernelspec");
    let kernel = JupyterKernel::start(options(), spec.clone()).await.expect("IRkernel starts");
    jupyter.call(json!({"op": "named_start", "kernel": "ir"})).await;
    for _ in 0..20 {
        kernel.execute_with("1+1", Default::default()).await.unwrap().collect().await.unwrap();
    }
    let mut warm = Series::new("cellbox R (IRkernel)");
    let mut baseline = Series::new("jupyter_client, IRkernel");
    let batch = 50;
    for _ in 0..(plan.warm_iterations / 2).div_ceil(batch) {
        for _ in 0..batch {
            let started = Instant::now();
            kernel.execute_with("1+1", Default::default()).await.unwrap().collect().await.unwrap();
            warm.values.push(started.elapsed().as_secs_f64() * 1000.0);
        }
        baseline.values.extend(ms_list(&jupyter.call(json!({"op": "roundtrip", "n": batch, "via": "named"})).await));
    }
    jupyter.call(json!({"op": "named_stop"})).await;
    kernel.shutdown().await;
    report.add("R warm round trip of 1+1", "ms", false, &warm, Some(&baseline), "both wait for the idle status");
}

async fn bash_rows(plan: &Plan, setup: &Setup, report: &mut Report) {
    let bash = match cellbox_kernels::runtime::bash::resolve_from_env(&setup.cwd, &Default::default()) {
        Ok(bash) => bash,
        Err(error) => {
            println!("(bash rows skipped: {error})");
            return;
        }
    };
    let kernel = Kernel::start(KernelOptions::for_interpreter(&bash, &setup.cwd, setup.env.clone()))
        .await
        .expect("a bash kernel starts");
    // The floor: a bash loop that answers each line it reads on a pipe.
    let mut floor_child = Command::new(&bash.executable)
        .args(["--noprofile", "--norc", "-c", "while IFS= read -r line; do printf '%s\\n' \"$line\"; done"])
        .env_clear()
        .envs(&setup.env)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut floor_in = floor_child.stdin.take().unwrap();
    let mut floor_out = BufReader::new(floor_child.stdout.take().unwrap());
    for _ in 0..50 {
        kernel.execute("true").await.unwrap().collect().await.unwrap();
    }
    let mut cellbox = Series::new("cellbox bash");
    let mut floor = Series::new("bash read/echo over a pipe");
    let mut line = String::new();
    for i in 0..plan.warm_iterations {
        let started = Instant::now();
        kernel.execute("true").await.unwrap().collect().await.unwrap();
        cellbox.values.push(started.elapsed().as_secs_f64() * 1000.0);
        let started = Instant::now();
        floor_in.write_all(format!("{{\"id\":\"{i}\",\"code\":\"true\"}}\n").as_bytes()).await.unwrap();
        line.clear();
        floor_out.read_line(&mut line).await.unwrap();
        floor.values.push(started.elapsed().as_secs_f64() * 1000.0);
    }
    kernel.shutdown().await;
    report.add("bash warm round trip of true", "ms", false, &cellbox, Some(&floor), "");
}
