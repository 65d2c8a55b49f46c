//! cellbox against Jupyter and against the physical floor, in one run.
//!
//! `bench/run` provisions the Jupyter baseline and calls this with
//! `cargo bench --bench compare -- [--quick] [--out DIR] [--only cold,sandbox,warm,js,output,bulk,spare,pandas,mcp,shim,gateway,interrupt,ladder,concurrency]`. Each scenario
//! interleaves cellbox and its baselines (A B A B …) so machine drift
//! cancels out, then prints median / p90 and the ratio cellbox ÷ baseline,
//! and writes the table as JSON and Markdown.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use cellbox::kernel::{ExecEvent, Kernel, KernelOptions};
use cellbox::runtime::{self, DiscoveryInput, EnvActivation, env};
use cellbox::sandbox::{NetworkMode, SandboxMode, SandboxPolicy};
use cellbox::tool::{CallContext, EngineConfig, EvalEngine, EvalParams, KernelMode, ignore_events};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio_util::sync::CancellationToken;

#[path = "compare/gateway.rs"]
mod gateway;

/// How much work each scenario does.
struct Plan {
    quick: bool,
    cold_runs: usize,
    warm_iterations: usize,
    output_mb: usize,
    output_runs: usize,
    interrupt_runs: usize,
    ladder_runs: usize,
    concurrent_cells: usize,
}

impl Plan {
    fn new(quick: bool) -> Self {
        if quick {
            Plan {
                quick,
                cold_runs: 3,
                warm_iterations: 200,
                output_mb: 10,
                output_runs: 1,
                interrupt_runs: 3,
                ladder_runs: 2,
                concurrent_cells: 25,
            }
        } else {
            Plan {
                quick,
                cold_runs: 15,
                warm_iterations: 2000,
                output_mb: 100,
                output_runs: 3,
                interrupt_runs: 10,
                ladder_runs: 3,
                concurrent_cells: 200,
            }
        }
    }
}

/// One measured series.
#[derive(Clone)]
struct Series {
    name: String,
    values: Vec<f64>,
}

impl Series {
    fn new(name: &str) -> Self {
        Series { name: name.to_string(), values: Vec::new() }
    }
    fn quantile(&self, q: f64) -> f64 {
        let mut sorted = self.values.clone();
        sorted.sort_by(|a, b| a.total_cmp(b));
        if sorted.is_empty() {
            return f64::NAN;
        }
        let index = ((sorted.len() - 1) as f64 * q).round() as usize;
        sorted[index]
    }
}

/// A table row: cellbox against one baseline.
struct Row {
    scenario: String,
    unit: String,
    higher_is_better: bool,
    cellbox: Series,
    baseline: Option<Series>,
    note: String,
}

struct Report {
    rows: Vec<Row>,
    facts: BTreeMap<String, Value>,
}

impl Report {
    fn add(
        &mut self,
        scenario: &str,
        unit: &str,
        higher: bool,
        cellbox: &Series,
        baseline: Option<&Series>,
        note: &str,
    ) {
        let row = Row {
            scenario: scenario.into(),
            unit: unit.into(),
            higher_is_better: higher,
            cellbox: cellbox.clone(),
            baseline: baseline.cloned(),
            note: note.into(),
        };
        print_row(&row);
        self.rows.push(row);
    }
}

fn fmt(value: f64) -> String {
    if !value.is_finite() {
        "–".into()
    } else if value >= 100.0 {
        format!("{value:.0}")
    } else if value >= 10.0 {
        format!("{value:.1}")
    } else if value >= 0.1 {
        format!("{value:.2}")
    } else {
        format!("{value:.3}")
    }
}

fn ratio(row: &Row) -> Option<f64> {
    let baseline = row.baseline.as_ref()?;
    Some(row.cellbox.quantile(0.5) / baseline.quantile(0.5))
}

fn print_row(row: &Row) {
    let (name, median, p90) = match &row.baseline {
        Some(b) => (b.name.clone(), fmt(b.quantile(0.5)), fmt(b.quantile(0.9))),
        None => ("–".into(), "–".into(), "–".into()),
    };
    println!(
        "{:<42} {:>9} {:>9} {:<6} | {:<28} {:>9} {:>9} | {:>8} {}",
        row.scenario,
        fmt(row.cellbox.quantile(0.5)),
        fmt(row.cellbox.quantile(0.9)),
        row.unit,
        name,
        median,
        p90,
        ratio(row).map(|r| format!("{r:.3}×")).unwrap_or_else(|| "–".into()),
        row.note
    );
}

fn markdown(report: &Report) -> String {
    let mut out = String::from(
        "| scenario | unit | cellbox median | cellbox p90 | baseline | baseline median | baseline p90 | cellbox ÷ baseline |\n\
         | --- | --- | ---: | ---: | --- | ---: | ---: | ---: |\n",
    );
    for row in &report.rows {
        let (name, median, p90) = match &row.baseline {
            Some(b) => (b.name.clone(), fmt(b.quantile(0.5)), fmt(b.quantile(0.9))),
            None => ("–".into(), "–".into(), "–".into()),
        };
        let ratio = ratio(row).map(|r| format!("{r:.3}×")).unwrap_or_else(|| "–".into());
        // A `|` in a name would split its cell.
        let name = name.replace('|', "\\|");
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} |\n",
            row.scenario,
            row.unit,
            fmt(row.cellbox.quantile(0.5)),
            fmt(row.cellbox.quantile(0.9)),
            name,
            median,
            p90,
            ratio
        ));
    }
    out
}

fn to_json(report: &Report) -> Value {
    let rows: Vec<Value> = report
        .rows
        .iter()
        .map(|row| {
            let stats = |s: &Series| {
                json!({"name": s.name, "median": s.quantile(0.5), "p90": s.quantile(0.9), "p99": s.quantile(0.99), "n": s.values.len()})
            };
            json!({
                "scenario": row.scenario,
                "unit": row.unit,
                "higher_is_better": row.higher_is_better,
                "cellbox": stats(&row.cellbox),
                "baseline": row.baseline.as_ref().map(stats),
                "ratio": ratio(row),
                "note": row.note,
            })
        })
        .collect();
    json!({"facts": report.facts, "rows": rows})
}

/// A Python helper process that answers one JSON line with one JSON line
/// (bench/jupyter_helper.py, bench/mcp_helper.py).
struct HelperProcess {
    _child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    name: &'static str,
}

impl HelperProcess {
    async fn spawn(python: &Path, script: &Path, name: &'static str) -> Self {
        let mut child = Command::new(python)
            .arg(script)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("start the {name} helper: {e}"));
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        HelperProcess { _child: child, stdin, stdout, name }
    }

    /// One command; `Err` carries the helper's account of a failure.
    async fn call(&mut self, command: &Value) -> Result<Value, String> {
        self.stdin.write_all(format!("{command}\n").as_bytes()).await.map_err(|e| e.to_string())?;
        let mut line = String::new();
        self.stdout.read_line(&mut line).await.map_err(|e| e.to_string())?;
        let answer: Value =
            serde_json::from_str(&line).map_err(|_| format!("the {} helper said {line:?}", self.name))?;
        match answer.get("error") {
            Some(error) => Err(error.as_str().map_or_else(|| error.to_string(), str::to_string)),
            None => Ok(answer),
        }
    }
}

/// The Jupyter helper process (bench/jupyter_helper.py).
struct Jupyter(HelperProcess);

impl Jupyter {
    async fn spawn(python: &Path, script: &Path) -> Self {
        Jupyter(HelperProcess::spawn(python, script, "Jupyter").await)
    }

    async fn call(&mut self, command: Value) -> Value {
        self.0.call(&command).await.unwrap_or_else(|error| panic!("Jupyter helper failed on {command}: {error}"))
    }
}

fn ms_list(value: &Value) -> Vec<f64> {
    number_list(value, "ms")
}

fn number_list(value: &Value, key: &str) -> Vec<f64> {
    value[key].as_array().map(|a| a.iter().filter_map(Value::as_f64).collect()).unwrap_or_default()
}

struct Setup {
    python: PathBuf,
    env: BTreeMap<String, String>,
    cwd: PathBuf,
}

impl Setup {
    /// Kernel options; `CELLBOX_SANDBOX` and the other sandbox variables
    /// run every scenario inside the sandbox.
    fn options(&self) -> KernelOptions {
        let mut options = KernelOptions::new(&self.python, &self.cwd, self.env.clone());
        options.sandbox = SandboxPolicy::from_env().expect("the CELLBOX_* sandbox variables are valid");
        options
    }
}

async fn first_result(setup: &Setup) -> (Kernel, f64) {
    let started = Instant::now();
    let kernel = Kernel::start(setup.options()).await.expect("kernel starts");
    let output = kernel.execute("1+1").await.unwrap().collect().await.unwrap();
    assert_eq!(output.results(), ["2"]);
    (kernel, started.elapsed().as_secs_f64() * 1000.0)
}

/// Standard-library modules the runner imports at start, beyond a bare interpreter's.
async fn runner_imports(setup: &Setup) -> Vec<String> {
    let (kernel, _) = first_result(setup).await;
    let code = "import sys\nsorted(m for m in sys.modules if '.' not in m and not m.startswith('cellbox_kernel'))";
    let output = kernel.execute(code).await.unwrap().collect().await.unwrap();
    kernel.shutdown().await;
    let loaded: Vec<String> = parse_py_list(&output.results()[0]);
    let bare = std::process::Command::new(&setup.python)
        .args(["-c", "import sys; print(repr(sorted(m for m in sys.modules if '.' not in m)))"])
        .output()
        .unwrap();
    let bare = parse_py_list(String::from_utf8_lossy(&bare.stdout).trim());
    loaded.into_iter().filter(|m| !bare.contains(m) && !m.starts_with('_') && m != "__main__").collect()
}

fn parse_py_list(text: &str) -> Vec<String> {
    text.trim_matches(|c| c == '[' || c == ']')
        .split(", ")
        .map(|s| s.trim_matches('\'').to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

async fn cold_start(plan: &Plan, setup: &Setup, jupyter: &mut Jupyter, report: &mut Report) {
    let modules = runner_imports(setup).await;
    report.facts.insert("floor_imports".into(), json!(modules));
    let import_line = format!("import {}", modules.join(", "));
    let mut cellbox = Series::new("cellbox");
    let mut floor = Series::new("python -c 'import …'");
    let mut bare = Series::new("python -c pass");
    let mut jupyter_series = Series::new("jupyter_client");
    for _ in 0..plan.cold_runs {
        let (kernel, ms) = first_result(setup).await;
        cellbox.values.push(ms);
        kernel.shutdown().await;
        for (series, code) in [(&mut floor, import_line.as_str()), (&mut bare, "pass")] {
            let started = Instant::now();
            let status = Command::new(&setup.python)
                .args(["-c", code])
                .envs(&setup.env)
                .env_clear()
                .envs(&setup.env)
                .status()
                .await
                .unwrap();
            assert!(status.success());
            series.values.push(started.elapsed().as_secs_f64() * 1000.0);
        }
        jupyter_series.values.push(jupyter.call(json!({"op": "cold"})).await["ms"].as_f64().unwrap());
    }
    report.add("cold start → first 1+1", "ms", false, &cellbox, Some(&floor), "floor: the runner's own stdlib imports");
    report.add("cold start → first 1+1", "ms", false, &cellbox, Some(&bare), "");
    report.add("cold start → first 1+1", "ms", false, &cellbox, Some(&jupyter_series), "");
}

/// The sandbox's cold-start cost: the first `1+1` of a kernel under the full
/// sandbox (workspace-write, network off, memory and process limits) beside
/// one with the sandbox off, alternating so both see the same machine load.
async fn sandbox_cold_start(plan: &Plan, setup: &Setup, report: &mut Report) {
    let full = SandboxPolicy {
        mode: SandboxMode::WorkspaceWrite,
        network: NetworkMode::Off,
        memory_limit: Some(4 << 30),
        max_processes: Some(512),
        ..SandboxPolicy::default()
    };
    let mut sandboxed = Series::new("cellbox");
    let mut plain = Series::new("sandbox off");
    for _ in 0..plan.cold_runs {
        for (series, policy) in [(&mut sandboxed, full.clone()), (&mut plain, SandboxPolicy::default())] {
            let mut options = KernelOptions::new(&setup.python, &setup.cwd, setup.env.clone());
            options.sandbox = policy;
            let started = Instant::now();
            let kernel = Kernel::start(options).await.expect("kernel starts");
            let output = kernel.execute("1+1").await.unwrap().collect().await.unwrap();
            assert_eq!(output.results(), ["2"]);
            series.values.push(started.elapsed().as_secs_f64() * 1000.0);
            kernel.shutdown().await;
        }
    }
    report.add(
        "sandboxed cold start → first 1+1",
        "ms",
        false,
        &sandboxed,
        Some(&plain),
        "workspace-write, network off, 4G memory, 512 processes",
    );
}

async fn warm_round_trip(plan: &Plan, setup: &Setup, jupyter: &mut Jupyter, report: &mut Report) {
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

/// JavaScript cells: cold start → first `1+1` of a Node kernel beside `node -e 1+1`, and the warm
/// round trip of `1+1` (no Node floor for a round trip: the Python echo floor row above is the protocol's).
async fn javascript(plan: &Plan, setup: &Setup, report: &mut Report) {
    let node = match cellbox::backend::node::resolve_from_env(None, &setup.cwd) {
        Ok(node) => node,
        Err(error) => {
            println!("(JavaScript rows skipped: {error})");
            return;
        }
    };
    report.facts.insert("node".into(), json!(node.executable.display().to_string()));
    report.facts.insert("node_version".into(), json!(node.version));
    let options = || KernelOptions::for_runtime(&node, &setup.cwd, setup.env.clone());
    let mut cellbox = Series::new("cellbox js");
    let mut floor = Series::new("node -e 1+1");
    for _ in 0..plan.cold_runs {
        let started = Instant::now();
        let kernel = Kernel::start(options()).await.expect("node kernel starts");
        let output = kernel.execute("1+1").await.unwrap().collect().await.unwrap();
        assert_eq!(output.results(), ["2"]);
        cellbox.values.push(started.elapsed().as_secs_f64() * 1000.0);
        kernel.shutdown().await;
        let started = Instant::now();
        let status =
            Command::new(&node.executable).args(["-e", "1+1"]).env_clear().envs(&setup.env).status().await.unwrap();
        assert!(status.success());
        floor.values.push(started.elapsed().as_secs_f64() * 1000.0);
    }
    report.add("JS cold start → first 1+1", "ms", false, &cellbox, Some(&floor), "");
    let kernel = Kernel::start(options()).await.expect("node kernel starts");
    for _ in 0..50 {
        kernel.execute("1+1").await.unwrap().collect().await.unwrap();
    }
    let mut warm = Series::new("cellbox js");
    for _ in 0..plan.warm_iterations {
        let started = Instant::now();
        kernel.execute("1+1").await.unwrap().collect().await.unwrap();
        warm.values.push(started.elapsed().as_secs_f64() * 1000.0);
    }
    kernel.shutdown().await;
    report.add("JS warm round trip of 1+1", "ms", false, &warm, None, "");
}

/// Peak resident memory of this process, sampled while `work` runs.
async fn with_peak_rss<F: std::future::Future>(work: F) -> (F::Output, f64) {
    let stop = Arc::new(AtomicBool::new(false));
    let peak = Arc::new(AtomicU64::new(0));
    let sampler = {
        let (stop, peak) = (stop.clone(), peak.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                if let Some(rss) = cellbox::session::resident_bytes(std::process::id()) {
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

async fn output_throughput(plan: &Plan, setup: &Setup, jupyter: &mut Jupyter, report: &mut Report) {
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

/// Bulk output: `os.write(1, …)` in 1 MB chunks through the whole eval tool
/// (bounded text and artifact), against the same writes through a pipe into
/// `cat > file` in the same run.
async fn bulk_output(plan: &Plan, setup: &Setup, report: &mut Report) {
    let chunks = plan.output_mb;
    let code = format!("import os\nchunk = b'x' * 1000000\nfor _ in range({chunks}):\n    os.write(1, chunk)");
    let dir = tempfile::tempdir().unwrap();
    let mut config = EngineConfig::new(&setup.cwd);
    config.python = Some(setup.python.display().to_string());
    config.artifacts_dir = dir.path().join("artifacts");
    config.spare = cellbox::session::SpareLimits::OFF;
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

/// Time to a first result when a kernel must be replaced or created, with
/// and without a warm spare: `reset: true`, a `per-call` call, a new session.
async fn spare_rows(plan: &Plan, setup: &Setup, report: &mut Report) {
    let runs = if plan.quick { 5 } else { 20 };
    for (label, mode) in [("reset → first 1+1", 0), ("per-call 1+1", 1), ("new session → first 1+1", 2)] {
        let mut with = Series::new("cellbox, spare");
        let mut without = Series::new("cellbox, no spare");
        for spare in [true, false] {
            let dir = tempfile::tempdir().unwrap();
            let mut config = EngineConfig::new(&setup.cwd);
            config.python = Some(setup.python.display().to_string());
            config.artifacts_dir = dir.path().join("artifacts");
            config.mode = if mode == 1 { KernelMode::PerCall } else { KernelMode::Session };
            config.pool.max_kernels = runs + 4;
            config.spare =
                if spare { cellbox::session::SpareLimits::default() } else { cellbox::session::SpareLimits::OFF };
            let engine = EvalEngine::new(config);
            let cancel = CancellationToken::new();
            engine.eval(&EvalParams::code("1"), &CallContext::new("warm"), &cancel, &ignore_events).await.unwrap();
            for run in 0..runs {
                // Give the background spare its start, as a pause between calls would.
                let waited = Instant::now();
                while spare && engine.spare_pids().is_empty() && waited.elapsed() < Duration::from_secs(5) {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
                let (params, session) = match mode {
                    0 => (
                        EvalParams::from_json(json!({"reset": true, "cells": [{"code": "1+1"}]})).unwrap(),
                        "warm".to_string(),
                    ),
                    1 => (EvalParams::code("1+1"), "warm".to_string()),
                    _ => (EvalParams::code("1+1"), format!("new-{run}")),
                };
                let started = Instant::now();
                let result = engine.eval(&params, &CallContext::new(session), &cancel, &ignore_events).await.unwrap();
                let ms = started.elapsed().as_secs_f64() * 1000.0;
                assert_eq!(result.text, "2\n");
                if spare { with.values.push(ms) } else { without.values.push(ms) }
            }
            engine.dispose_all().await;
        }
        report.add(label, "ms", false, &with, Some(&without), "");
    }
}

/// A kernel ready to use pandas: the first result of `import pandas; 1+1`
/// in a kernel forked from a fork server that preloaded pandas, beside a
/// spawned kernel that imports it, a Jupyter kernel start plus the import,
/// and the floor `python -c "import pandas"`. All on the bench venv's
/// interpreter (the one with pandas), alternating.
async fn pandas_ready(plan: &Plan, setup: &Setup, python: &Path, jupyter: &mut Jupyter, report: &mut Report) {
    const CODE: &str = "import pandas; 1+1";
    let options = |preload: bool| {
        let mut options = KernelOptions::new(python, &setup.cwd, setup.env.clone());
        if preload {
            options.preload = vec!["pandas".into()];
        }
        options
    };
    let first = |options: KernelOptions| async move {
        let started = Instant::now();
        let kernel = Kernel::start(options).await.expect("kernel starts");
        let output = kernel.execute(CODE).await.unwrap().collect().await.unwrap();
        assert_eq!(output.results(), ["2"], "{}", output.stderr());
        let ms = started.elapsed().as_secs_f64() * 1000.0;
        (kernel, ms)
    };
    // The fork server's own start (the one-time import) is not part of a kernel's start.
    let (warm, _) = first(options(true)).await;
    assert!(warm.forked_from().is_some(), "the kernel was forked: {:?}", cellbox::kernel::zygote::problems());
    warm.shutdown().await;
    let mut forked = Series::new("cellbox, preloaded");
    let mut spawned = Series::new("cellbox, spawned");
    let mut jupyter_series = Series::new("jupyter_client");
    let mut floor = Series::new("python -c 'import pandas'");
    for _ in 0..plan.cold_runs {
        for (series, preload) in [(&mut forked, true), (&mut spawned, false)] {
            let (kernel, ms) = first(options(preload)).await;
            series.values.push(ms);
            kernel.shutdown().await;
        }
        jupyter_series.values.push(jupyter.call(json!({"op": "cold", "code": CODE})).await["ms"].as_f64().unwrap());
        let started = Instant::now();
        let status = Command::new(python).args(["-c", "import pandas"]).env_clear().envs(&setup.env).status().await;
        assert!(status.unwrap().success());
        floor.values.push(started.elapsed().as_secs_f64() * 1000.0);
    }
    cellbox::kernel::zygote::release_all();
    let label = "pandas-ready kernel → first result";
    report.add(label, "ms", false, &forked, Some(&spawned), "`import pandas; 1+1`; --preload pandas");
    report.add(label, "ms", false, &forked, Some(&jupyter_series), "kernel start + import");
    report.add(label, "ms", false, &forked, Some(&floor), "");
}

/// The MCP helper process (bench/mcp_helper.py): a real MCP client over stdio.
struct McpClient(HelperProcess);

impl McpClient {
    async fn spawn(python: &Path) -> Self {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("bench/mcp_helper.py");
        McpClient(HelperProcess::spawn(python, &script, "MCP").await)
    }

    /// One command; `Err` carries the helper's account of a failure.
    async fn call(&mut self, command: Value) -> Result<Value, String> {
        self.0.call(&command).await
    }

    async fn ms(&mut self, command: Value) -> Result<f64, String> {
        Ok(self.call(command).await?["ms"].as_f64().unwrap_or(f64::NAN))
    }
}

/// How the MCP rows start each contender and ask it for `1+1`.
struct McpContenders {
    cellbox: Value,
    cellbox_call: Value,
    mcp_repl: Result<(Value, Value), String>,
    run_argv: Vec<String>,
    env: BTreeMap<String, String>,
}

impl McpContenders {
    fn new(setup: &Setup, jupyter_python: &Path, artifacts: &Path) -> Self {
        let binary = env!("CARGO_BIN_EXE_cellbox").to_string();
        let mut env = setup.env.clone();
        env.insert("CELLBOX_PYTHON".into(), setup.python.display().to_string());
        env.insert("CELLBOX_ARTIFACTS_DIR".into(), artifacts.display().to_string());
        let cwd = setup.cwd.display().to_string();
        let cellbox = json!({"command": binary, "args": ["mcp", "--cwd", cwd], "env": env});
        let cellbox_call = json!({"tool": "eval", "arguments": {"cells": [{"code": "1+1"}]}, "expect": "2\n"});
        // mcp-repl lives in the benchmark's venv; its Python is found on PATH, so the
        // interpreter cellbox uses comes first. It runs under `sh -c` (see mcp_helper.py).
        let repl = jupyter_python.with_file_name("mcp-repl");
        let mcp_repl = if repl.is_file() {
            let python_dir = setup.python.parent().map(|d| d.display().to_string()).unwrap_or_default();
            let mut repl_env = setup.env.clone();
            let path = repl_env.get("PATH").cloned().unwrap_or_else(|| "/usr/bin:/bin".into());
            repl_env.insert("PATH".into(), format!("{python_dir}:{path}"));
            let server = json!({
                "command": "sh",
                "args": ["-c", "\"$0\" \"$@\"; exit $?", repl.display().to_string(),
                         "--interpreter", "python", "--sandbox", "danger-full-access"],
                "env": repl_env,
                "cwd": cwd,
            });
            Ok((server, json!({"tool": "repl", "arguments": {"input": "1+1\n"}, "expect": "2"})))
        } else {
            Err(format!("{} is not installed (bench/requirements.txt names posit-mcp-repl)", repl.display()))
        };
        let run_argv = vec![binary, "run".into(), "--cwd".into(), cwd, "-c".into(), "1+1".into()];
        McpContenders { cellbox, cellbox_call, mcp_repl, run_argv, env }
    }

    fn command(op: &str, server: &Value, call: &Value) -> Value {
        let mut command = call.clone();
        command["op"] = json!(op);
        command["server"] = server.clone();
        command
    }
}

/// Through MCP, driven by the Python `mcp` client over stdio: spawn of `cellbox mcp` → the first
/// `1+1` result, beside `cellbox run`'s spawn → first result and beside mcp-repl (PyPI
/// `posit-mcp-repl`, a Python REPL server); then the warm `1+1` round trip beside the library's
/// own warm call and mcp-repl's.
async fn mcp_rows(plan: &Plan, setup: &Setup, jupyter_python: &Path, report: &mut Report) {
    let dir = tempfile::tempdir().unwrap();
    let contenders = McpContenders::new(setup, jupyter_python, &dir.path().join("artifacts"));
    let mut client = McpClient::spawn(jupyter_python).await;
    let mut repl_problem = contenders.mcp_repl.as_ref().err().cloned();
    if let Ok((server, _)) = &contenders.mcp_repl {
        match client.call(json!({"op": "tools", "server": server})).await {
            Ok(answer) if answer["tools"].as_array().is_some_and(|t| t.iter().any(|t| t["name"] == "repl")) => {}
            Ok(answer) => repl_problem = Some(format!("it has no `repl` tool: {}", answer["tools"])),
            Err(error) => repl_problem = Some(format!("it did not start: {error}")),
        }
    }
    let (mut cellbox_cold, mut run_cold, mut repl_cold) =
        (Series::new("cellbox mcp"), Series::new("cellbox run"), Series::new("mcp-repl"));
    let run = json!({"op": "run", "argv": contenders.run_argv, "env": contenders.env, "expect": "2"});
    for _ in 0..plan.cold_runs {
        let cold = McpContenders::command("cold", &contenders.cellbox, &contenders.cellbox_call);
        cellbox_cold.values.push(client.ms(cold).await.unwrap_or_else(|e| panic!("cellbox mcp: {e}")));
        run_cold.values.push(client.ms(run.clone()).await.unwrap_or_else(|e| panic!("cellbox run: {e}")));
        if let (Ok((server, call)), None) = (&contenders.mcp_repl, &repl_problem) {
            match client.ms(McpContenders::command("cold", server, call)).await {
                Ok(ms) => repl_cold.values.push(ms),
                Err(error) => repl_problem = Some(format!("its first call failed: {error}")),
            }
        }
    }
    report.add("MCP spawn → first 1+1", "ms", false, &cellbox_cold, Some(&run_cold), "Python mcp client, stdio");
    add_peer_row(report, "MCP spawn → first 1+1", "ms", &cellbox_cold, &repl_cold, &repl_problem);

    // Warm: one kept server each, the library's engine beside them.
    let mut start = McpContenders::command("start", &contenders.cellbox, &contenders.cellbox_call);
    start["name"] = json!("cellbox");
    client.call(start).await.unwrap_or_else(|e| panic!("cellbox mcp: {e}"));
    if let (Ok((server, call)), None) = (&contenders.mcp_repl, &repl_problem) {
        let mut start = McpContenders::command("start", server, call);
        start["name"] = json!("mcp-repl");
        if let Err(error) = client.call(start).await {
            repl_problem = Some(format!("it did not start: {error}"));
        }
    }
    let mut config = EngineConfig::new(&setup.cwd);
    config.python = Some(setup.python.display().to_string());
    config.artifacts_dir = dir.path().join("library-artifacts");
    config.spare = cellbox::session::SpareLimits::OFF;
    let engine = EvalEngine::new(config);
    let context = CallContext::new("bench-mcp");
    let one = EvalParams::code("1+1");
    for _ in 0..20 {
        engine.eval(&one, &context, &CancellationToken::new(), &ignore_events).await.unwrap();
    }
    let (mut cellbox_warm, mut library_warm, mut repl_warm) =
        (Series::new("cellbox mcp"), Series::new("cellbox library"), Series::new("mcp-repl"));
    let batch = 50;
    let rounds = plan.warm_iterations.div_ceil(batch);
    let mut raw = RawMcp::start(&contenders.cellbox).await;
    let mut raw_warm = Series::new("cellbox mcp, bare JSON-RPC");
    for _ in 0..rounds {
        for _ in 0..batch {
            raw_warm.values.push(raw.call_ms().await);
        }
        let answer = client.call(json!({"op": "roundtrip", "name": "cellbox", "n": batch})).await;
        cellbox_warm.values.extend(ms_list(&answer.unwrap_or_else(|e| panic!("cellbox mcp: {e}"))));
        for _ in 0..batch {
            let started = Instant::now();
            let result = engine.eval(&one, &context, &CancellationToken::new(), &ignore_events).await.unwrap();
            library_warm.values.push(started.elapsed().as_secs_f64() * 1000.0);
            assert_eq!(result.text, "2\n");
        }
        // mcp-repl answers in tens of milliseconds: a few calls a round keep the run short.
        if repl_problem.is_none() && contenders.mcp_repl.is_ok() {
            match client.call(json!({"op": "roundtrip", "name": "mcp-repl", "n": 2})).await {
                Ok(answer) => repl_warm.values.extend(ms_list(&answer)),
                Err(error) => repl_problem = Some(format!("a warm call failed: {error}")),
            }
        }
    }
    engine.dispose_all().await;
    let _ = client.call(json!({"op": "stop"})).await;
    report.add("MCP warm round trip of 1+1", "ms", false, &cellbox_warm, Some(&library_warm), "");
    report.add(
        "MCP warm round trip of 1+1, bare JSON-RPC",
        "ms",
        false,
        &raw_warm,
        Some(&library_warm),
        "request and response lines, no client library",
    );
    add_peer_row(report, "MCP warm round trip of 1+1", "ms", &cellbox_warm, &repl_warm, &repl_problem);
}

/// The first `cellbox mcp` start → first `1+1` with Python found through a pyenv shim on PATH,
/// beside the same start with that shim's interpreter given explicitly (`CELLBOX_PYTHON`). Each
/// start gets a fresh `CELLBOX_CACHE_DIR` (no remembered probe, shim resolution or runner files:
/// a first start on the machine), then again with one cache kept across starts (every later
/// start). Starts alternate shim, explicit, … so drift cancels out. Skipped, saying why, when
/// discovery does not find Python through a pyenv shim here.
async fn shim_rows(plan: &Plan, setup: &Setup, jupyter_python: &Path, report: &mut Report) {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().join("project");
    std::fs::create_dir_all(&cwd).unwrap();
    let mut env = setup.env.clone();
    for var in ["CELLBOX_PYTHON", "VIRTUAL_ENV", "CONDA_PREFIX", "CELLBOX_CACHE_DIR"] {
        env.remove(var);
    }
    env.insert("CELLBOX_ARTIFACTS_DIR".into(), dir.path().join("artifacts").display().to_string());
    let mut input = DiscoveryInput::from_env(&cwd, None);
    input.virtual_env = None;
    input.conda_prefix = None;
    let found = runtime::resolve(&input, true);
    let shim = match &found {
        Ok(python) if python.via.as_ref().is_some_and(|via| via.manager == runtime::Manager::Pyenv) => {
            python.via.clone().unwrap()
        }
        Ok(python) => {
            let why = format!("Python is found without a pyenv shim here ({})", python.how_found(None));
            println!("pyenv shim rows skipped: {why}");
            report.facts.insert("pyenv_shim_rows".into(), json!(why));
            return;
        }
        Err(error) => panic!("{error}"),
    };
    report.facts.insert("pyenv_shim".into(), json!(shim.describe(None)));
    let binary = env!("CARGO_BIN_EXE_cellbox");
    let server = |explicit: bool, cache: &Path| {
        let mut env = env.clone();
        env.insert("CELLBOX_CACHE_DIR".into(), cache.display().to_string());
        if explicit {
            env.insert("CELLBOX_PYTHON".into(), shim.interpreter.display().to_string());
        }
        let mut command = json!({"tool": "eval", "arguments": {"cells": [{"code": "1+1"}]}, "expect": "2\n"});
        command["op"] = json!("cold");
        command["server"] = json!({"command": binary, "args": ["mcp", "--cwd", cwd.display().to_string()], "env": env});
        command
    };
    let mut client = McpClient::spawn(jupyter_python).await;
    let kept = (dir.path().join("kept-shim"), dir.path().join("kept-explicit"));
    let (mut fresh_shim, mut fresh_explicit) = (Series::new("shim"), Series::new("explicit"));
    let (mut kept_shim, mut kept_explicit) = (Series::new("shim"), Series::new("explicit"));
    for (explicit, cache) in [(false, &kept.0), (true, &kept.1)] {
        client.ms(server(explicit, cache)).await.unwrap_or_else(|e| panic!("cellbox mcp: {e}"));
    }
    for run in 0..plan.cold_runs {
        for (explicit, series) in [(false, &mut fresh_shim), (true, &mut fresh_explicit)] {
            let cache = dir.path().join(format!("fresh-{run}-{explicit}"));
            series
                .values
                .push(client.ms(server(explicit, &cache)).await.unwrap_or_else(|e| panic!("cellbox mcp: {e}")));
        }
        for (explicit, cache, series) in [(false, &kept.0, &mut kept_shim), (true, &kept.1, &mut kept_explicit)] {
            series.values.push(client.ms(server(explicit, cache)).await.unwrap_or_else(|e| panic!("cellbox mcp: {e}")));
        }
    }
    let _ = client.call(json!({"op": "stop"})).await;
    let note = "Python mcp client; baseline: the shim's interpreter as CELLBOX_PYTHON; target ≤ 1.2×";
    report.add(
        "first MCP start → 1+1, pyenv shim",
        "ms",
        false,
        &fresh_shim,
        Some(&fresh_explicit),
        &format!("fresh CELLBOX_CACHE_DIR per start; {note}"),
    );
    report.add(
        "MCP start → 1+1, pyenv shim",
        "ms",
        false,
        &kept_shim,
        Some(&kept_explicit),
        &format!("cache kept from an earlier start (not counted); {note}"),
    );
}

/// `cellbox mcp` driven by hand: one JSON-RPC line out, one line back, so the
/// row shows what the MCP layer itself adds to a call (the Python client's
/// own work per call is most of the other MCP row).
struct RawMcp {
    _child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

impl RawMcp {
    async fn start(server: &Value) -> Self {
        let args: Vec<String> =
            server["args"].as_array().unwrap().iter().map(|a| a.as_str().unwrap().to_string()).collect();
        let env: BTreeMap<String, String> = serde_json::from_value(server["env"].clone()).unwrap();
        let mut child = Command::new(server["command"].as_str().unwrap())
            .args(args)
            .env_clear()
            .envs(env)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("cellbox mcp starts");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut raw = RawMcp { _child: child, stdin, stdout, next_id: 0 };
        let hello = json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}});
        raw.request("initialize", hello).await;
        raw.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
        for _ in 0..20 {
            raw.call_ms().await;
        }
        raw
    }

    async fn send(&mut self, message: Value) {
        let mut line = message.to_string();
        line.push('\n');
        self.stdin.write_all(line.as_bytes()).await.unwrap();
    }

    async fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        self.send(json!({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})).await;
        let mut line = String::new();
        loop {
            line.clear();
            assert!(self.stdout.read_line(&mut line).await.unwrap() > 0, "cellbox mcp ended");
            let answer: Value = serde_json::from_str(&line).unwrap();
            if answer["id"] == json!(self.next_id) {
                return answer;
            }
        }
    }

    async fn call_ms(&mut self) -> f64 {
        let started = Instant::now();
        let params = json!({"name": "eval", "arguments": {"cells": [{"code": "1+1"}]}});
        let answer = self.request("tools/call", params).await;
        let elapsed = started.elapsed().as_secs_f64() * 1000.0;
        assert_eq!(answer["result"]["content"][0]["text"], "2\n", "{answer}");
        elapsed
    }
}

/// A row against mcp-repl, or one saying why it has no figures.
fn add_peer_row(
    report: &mut Report,
    scenario: &str,
    unit: &str,
    cellbox: &Series,
    peer: &Series,
    problem: &Option<String>,
) {
    match problem {
        Some(why) => report.add(scenario, unit, false, cellbox, None, &format!("mcp-repl unavailable: {why}")),
        None => report.add(
            scenario,
            unit,
            false,
            cellbox,
            Some(peer),
            "mcp-repl --interpreter python --sandbox danger-full-access",
        ),
    }
}

async fn interrupt_latency(plan: &Plan, setup: &Setup, jupyter: &mut Jupyter, report: &mut Report) {
    jupyter.call(json!({"op": "start"})).await;
    let (kernel, _) = first_result(setup).await;
    let mut cellbox = Series::new("cellbox");
    let mut jupyter_series = Series::new("jupyter_client");
    for _ in 0..plan.interrupt_runs {
        let mut execution = kernel.execute("while True: pass").await.unwrap();
        assert!(matches!(execution.next().await, Some(Ok(ExecEvent::Started))));
        tokio::time::sleep(Duration::from_millis(200)).await;
        let started = Instant::now();
        kernel.interrupt().unwrap();
        let output = execution.collect().await.unwrap();
        cellbox.values.push(started.elapsed().as_secs_f64() * 1000.0);
        assert!(output.done.cancelled);
        jupyter_series.values.push(jupyter.call(json!({"op": "interrupt"})).await["ms"].as_f64().unwrap());
    }
    kernel.shutdown().await;
    report.add("interrupt → cancelled result", "ms", false, &cellbox, Some(&jupyter_series), "");
}

/// A cell that ignores SIGINT, with a 1 s budget: cellbox interrupts, waits
/// the interrupt window, then kills the group at once; Jupyter interrupts,
/// waits as long, then restarts the kernel. Seconds from the call to the
/// killed result, and to the next cell's answer.
async fn kill_ladder(plan: &Plan, setup: &Setup, jupyter: &mut Jupyter, report: &mut Report) {
    jupyter.call(json!({"op": "start"})).await;
    let mut config = EngineConfig::new(&setup.cwd);
    config.python = Some(setup.python.display().to_string());
    let engine = EvalEngine::new(config);
    let context = CallContext::new("bench-ladder");
    let stuck = EvalParams::from_json(json!({"cells": [{
        "code": "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True: pass",
        "timeout": 1
    }]}))
    .unwrap();
    let next = EvalParams::code("1+1");
    engine.eval(&next, &context, &CancellationToken::new(), &ignore_events).await.unwrap();
    let (mut cellbox_killed, mut cellbox_next) = (Series::new("cellbox"), Series::new("cellbox"));
    let (mut jupyter_killed, mut jupyter_next) = (Series::new("jupyter_client"), Series::new("jupyter_client"));
    let window = cellbox::tool::engine::INTERRUPT_ESCALATION.as_secs_f64();
    for _ in 0..plan.ladder_runs {
        let started = Instant::now();
        let result = engine.eval(&stuck, &context, &CancellationToken::new(), &ignore_events).await.unwrap();
        assert_eq!(result.cells[0].status.as_str(), "killed", "{}", result.text);
        cellbox_killed.values.push(started.elapsed().as_secs_f64());
        let answer = engine.eval(&next, &context, &CancellationToken::new(), &ignore_events).await.unwrap();
        assert!(answer.text.starts_with("2\n"), "{}", answer.text);
        cellbox_next.values.push(started.elapsed().as_secs_f64());
        let answer = jupyter.call(json!({"op": "ladder", "budget": 1.0, "window": window})).await;
        jupyter_killed.values.push(answer["killed_s"].as_f64().unwrap());
        jupyter_next.values.push(answer["next_s"].as_f64().unwrap());
    }
    engine.dispose_all().await;
    report.add("stuck cell (1 s budget) → killed", "s", false, &cellbox_killed, Some(&jupyter_killed), "");
    report.add("stuck cell → next cell answers", "s", false, &cellbox_next, Some(&jupyter_next), "");
}

async fn concurrency(plan: &Plan, setup: &Setup, jupyter: &mut Jupyter, report: &mut Report) {
    let kernels = 8;
    let mut handles = Vec::new();
    let mut started_kernels = Vec::new();
    for _ in 0..kernels {
        started_kernels.push(Arc::new(first_result(setup).await.0));
    }
    let started = Instant::now();
    for kernel in &started_kernels {
        let kernel = kernel.clone();
        let cells = plan.concurrent_cells;
        handles.push(tokio::spawn(async move {
            let mut latencies = Vec::with_capacity(cells);
            for _ in 0..cells {
                let begun = Instant::now();
                kernel.execute("1+1").await.unwrap().collect().await.unwrap();
                latencies.push(begun.elapsed().as_secs_f64() * 1000.0);
            }
            latencies
        }));
    }
    let mut latencies = Series::new("cellbox");
    for handle in handles {
        latencies.values.extend(handle.await.unwrap());
    }
    let total = started.elapsed().as_secs_f64();
    for kernel in started_kernels {
        kernel.shutdown().await;
    }
    let answer = jupyter.call(json!({"op": "concurrent", "kernels": kernels, "cells": plan.concurrent_cells})).await;
    let mut jupyter_latencies = Series::new("jupyter_client");
    jupyter_latencies.values = ms_list(&answer);
    let cells = (kernels * plan.concurrent_cells) as f64;
    let cellbox_rate = Series { name: "cellbox".into(), values: vec![cells / total] };
    let jupyter_rate =
        Series { name: "jupyter_client".into(), values: vec![cells / answer["seconds"].as_f64().unwrap()] };
    let label = format!("{kernels} kernels × {} cells", plan.concurrent_cells);
    report.add(&format!("{label}: throughput"), "cells/s", true, &cellbox_rate, Some(&jupyter_rate), "");
    let p99 = |s: &Series| Series { name: s.name.clone(), values: vec![s.quantile(0.99)] };
    report.add(&format!("{label}: p99 latency"), "ms", false, &p99(&latencies), Some(&p99(&jupyter_latencies)), "");
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let quick = args.iter().any(|a| a == "--quick");
    let out = args.iter().position(|a| a == "--out").and_then(|i| args.get(i + 1)).map(PathBuf::from);
    let jupyter_python = std::env::var_os("CELLBOX_BENCH_JUPYTER_PYTHON").map(PathBuf::from).unwrap_or_else(|| {
        eprintln!("set CELLBOX_BENCH_JUPYTER_PYTHON (bench/run does) to a Python with ipykernel and jupyter_client");
        std::process::exit(2);
    });
    let plan = Plan::new(quick);
    let cwd = std::env::temp_dir();
    let explicit = std::env::var("CELLBOX_PYTHON").ok();
    let resolved = runtime::resolve(&DiscoveryInput::from_env(&cwd, explicit), false).unwrap_or_else(|e| panic!("{e}"));
    let setup = Setup {
        python: resolved.executable.clone(),
        env: env::kernel_env(std::env::vars_os(), &EnvActivation::None, &Default::default()),
        cwd,
    };
    let mut report = Report { rows: Vec::new(), facts: BTreeMap::new() };
    report.facts.insert("mode".into(), json!(if quick { "quick" } else { "full" }));
    report.facts.insert("python".into(), json!(setup.python.display().to_string()));
    report.facts.insert("python_version".into(), json!(resolved.version));
    report
        .facts
        .insert("found_through".into(), json!(format!("{} ({})", resolved.source, resolved.interpreter.display())));
    report.facts.insert("cores".into(), json!(std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)));
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("bench/jupyter_helper.py");
    let mut jupyter = Jupyter::spawn(&jupyter_python, &script).await;
    let jupyter_kernel = jupyter.call(json!({"op": "start"})).await;
    jupyter.call(json!({"op": "stop"})).await;
    report.facts.insert("jupyter_kernel_python".into(), jupyter_kernel["python"].clone());

    println!("cellbox benchmark ({} mode)", if quick { "quick" } else { "full" });
    println!(
        "interpreter: {} (Python {}; found through {})",
        setup.python.display(),
        resolved.version.as_deref().unwrap_or("?"),
        report.facts["found_through"].as_str().unwrap_or("")
    );
    println!("jupyter kernel: {}", jupyter_kernel["python"].as_str().unwrap_or("?"));
    println!();
    println!(
        "{:<42} {:>9} {:>9} {:<6} | {:<28} {:>9} {:>9} | {:>8}",
        "scenario", "median", "p90", "unit", "baseline", "median", "p90", "ratio"
    );
    let only = args.iter().position(|a| a == "--only").and_then(|i| args.get(i + 1)).cloned();
    let wanted = |name: &str| only.as_deref().is_none_or(|list| list.split(',').any(|w| w == name));
    if wanted("cold") {
        cold_start(&plan, &setup, &mut jupyter, &mut report).await;
    }
    if wanted("sandbox") {
        sandbox_cold_start(&plan, &setup, &mut report).await;
    }
    if wanted("warm") {
        warm_round_trip(&plan, &setup, &mut jupyter, &mut report).await;
    }
    if wanted("js") {
        javascript(&plan, &setup, &mut report).await;
    }
    if wanted("output") {
        output_throughput(&plan, &setup, &mut jupyter, &mut report).await;
    }
    if wanted("bulk") {
        bulk_output(&plan, &setup, &mut report).await;
    }
    if wanted("spare") {
        spare_rows(&plan, &setup, &mut report).await;
    }
    if wanted("pandas") {
        pandas_ready(&plan, &setup, &jupyter_python, &mut jupyter, &mut report).await;
    }
    if wanted("mcp") {
        mcp_rows(&plan, &setup, &jupyter_python, &mut report).await;
    }
    if wanted("shim") {
        shim_rows(&plan, &setup, &jupyter_python, &mut report).await;
    }
    if wanted("gateway") {
        gateway::gateway_backend(&plan, &setup, &jupyter_python, &mut jupyter, &mut report).await;
    }
    if wanted("interrupt") {
        interrupt_latency(&plan, &setup, &mut jupyter, &mut report).await;
    }
    if wanted("ladder") {
        kill_ladder(&plan, &setup, &mut jupyter, &mut report).await;
    }
    if wanted("concurrency") {
        concurrency(&plan, &setup, &mut jupyter, &mut report).await;
    }
    jupyter.call(json!({"op": "stop"})).await;

    if let Some(out) = out {
        std::fs::create_dir_all(&out).unwrap();
        let stem = if quick { "quick" } else { "latest" };
        std::fs::write(out.join(format!("{stem}.json")), serde_json::to_string_pretty(&to_json(&report)).unwrap())
            .unwrap();
        let mut file = std::fs::File::create(out.join(format!("{stem}.md"))).unwrap();
        writeln!(file, "{}", markdown(&report)).unwrap();
        println!("\nwrote {}/{stem}.json and {stem}.md", out.display());
    }
}
