//! cellbox against Jupyter and against the physical floor, in one run.
//!
//! `bench/run` provisions the Jupyter baseline and calls this with
//! `cargo bench --bench compare -- [--quick] [--out DIR] [--only cold,sandbox,warm,js,languages,output,bulk,spare,pandas,mcp,serve,crowd,hibernate,sdk,fork,shim,gateway,interrupt,ladder,concurrency]`. Each scenario
//! interleaves cellbox and its baselines (A B A B …) so machine drift
//! cancels out, then prints median / p90 and the ratio cellbox ÷ baseline,
//! and writes the table as JSON and Markdown.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Instant;

use cellbox_kernels::discovery::{self, DiscoveryInput, EnvActivation, env};
use cellbox_kernels::kernel::{Kernel, KernelOptions};
use cellbox_kernels::sandbox::SandboxPolicy;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

#[path = "compare/baselines.rs"]
mod baselines;
#[path = "compare/bulk.rs"]
mod bulk;
#[path = "compare/cold.rs"]
mod cold;
#[path = "compare/concurrency.rs"]
mod concurrency;
#[path = "compare/fork.rs"]
mod fork;
#[path = "compare/gateway.rs"]
mod gateway;
#[path = "compare/hibernate.rs"]
mod hibernate;
#[path = "compare/interrupt.rs"]
mod interrupt;
#[path = "compare/javascript.rs"]
mod javascript;
#[path = "compare/ladder.rs"]
mod ladder;
#[path = "compare/languages.rs"]
mod languages;
#[path = "compare/mcp.rs"]
mod mcp;
#[path = "compare/mcp_http.rs"]
mod mcp_http;
#[path = "compare/output.rs"]
mod output;
#[path = "compare/pandas.rs"]
mod pandas;
#[path = "compare/sandbox.rs"]
mod sandbox;
#[path = "compare/sdk.rs"]
mod sdk;
#[path = "compare/serve_load.rs"]
mod serve_load;
#[path = "compare/serve_memory.rs"]
mod serve_memory;
#[path = "compare/shim.rs"]
mod shim;
#[path = "compare/spare.rs"]
mod spare;
#[path = "compare/warm.rs"]
mod warm;
#[path = "compare/web_view.rs"]
mod web_view;

use bulk::bulk_output;
use cold::cold_start;
use concurrency::concurrency;
use interrupt::interrupt_latency;
use javascript::javascript;
use ladder::kill_ladder;
use mcp::mcp_rows;
use output::output_throughput;
use pandas::pandas_ready;
use sandbox::sandbox_costs;
use shim::shim_rows;
use spare::spare_rows;
use warm::warm_round_trip;

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
    /// Kernel options under the policy users get: the default sandbox, or
    /// what `CELLBOX_SANDBOX` and the other sandbox variables say (`off` runs
    /// every scenario without it).
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
    let resolved =
        discovery::resolve(&DiscoveryInput::from_env(&cwd, explicit), false).unwrap_or_else(|e| panic!("{e}"));
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
    report.facts.insert("cpu_idle".into(), json!(cpu_idle()));
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
    if let Some(idle) = report.facts["cpu_idle"].as_str() {
        println!("idle CPUs: {idle}");
    }
    println!();
    println!(
        "{:<42} {:>9} {:>9} {:<6} | {:<28} {:>9} {:>9} | {:>8}",
        "scenario", "median", "p90", "unit", "baseline", "median", "p90", "ratio"
    );
    let only = args.iter().position(|a| a == "--only").and_then(|i| args.get(i + 1)).cloned();
    let wanted = |name: &str| only.as_deref().is_none_or(|list| list.split(',').any(|w| w == name));
    // Measured once, ahead of every warm row that names them.
    let baselines = if ["warm", "mcp", "sdk"].iter().any(|name| wanted(name)) {
        Some(baselines::WarmBaselines::measure(&plan, &setup).await)
    } else {
        None
    };
    let baselines = || baselines.as_ref().expect("measured when a warm scenario is wanted");
    if wanted("cold") {
        cold_start(&plan, &setup, &mut jupyter, &mut report).await;
    }
    if wanted("sandbox") {
        sandbox_costs(&plan, &setup, &mut report).await;
    }
    if wanted("warm") {
        warm_round_trip(&plan, &setup, &mut jupyter, baselines(), &mut report).await;
    }
    if wanted("js") {
        javascript(&plan, &setup, &mut report).await;
    }
    if wanted("languages") {
        languages::languages(&plan, &setup, &mut jupyter, &mut report).await;
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
        mcp_rows(&plan, &setup, &jupyter_python, baselines(), &mut report).await;
    }
    if wanted("serve") {
        serve_load::serve_load(&plan, &setup, &mut report).await;
        serve_memory::memory_rows(&plan, &setup, &jupyter_python, &mut report).await;
    }
    if wanted("crowd") {
        serve_load::serve_crowd(&plan, &setup, &mut report).await;
    }
    if wanted("ui") {
        web_view::web_view_rows(&plan, &setup, &mut report).await;
    }
    if wanted("hibernate") {
        hibernate::hibernate_rows(&plan, &setup, &jupyter_python, &mut report).await;
    }
    if wanted("sdk") {
        sdk::sdk_rows(&plan, &setup, &jupyter_python, baselines(), &mut report).await;
    }
    if wanted("fork") {
        fork::fork_rows(&plan, &setup, &mut report).await;
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

/// How this machine's idle CPUs wait (Linux's cpuidle driver and governor), and under `haltpoll` how
/// long at most a vCPU polls before it halts. Without polling, each wake-up of an idle vCPU goes
/// through the hypervisor, and the echo floor, which does little else, slows most: warm ratios from
/// two machines compare only with this beside them (docs/benchmarks.md, "Why waking costs so much here").
fn cpu_idle() -> Option<String> {
    let read = |path: &str| std::fs::read_to_string(path).ok().map(|text| text.trim().to_string());
    let driver = read("/sys/devices/system/cpu/cpuidle/current_driver")?;
    let governor = read("/sys/devices/system/cpu/cpuidle/current_governor")
        .or_else(|| read("/sys/devices/system/cpu/cpuidle/current_governor_ro"))
        .unwrap_or_default();
    let polling = read("/sys/module/haltpoll/parameters/guest_halt_poll_ns");
    Some(match polling {
        Some(ns) if governor == "haltpoll" => format!("{driver}, polling at most {ns} ns before halting"),
        _ => format!("{driver} ({governor})"),
    })
}

/// Whether a warm `1+1` call's text is its answer: `2`, after the note the runner prints on the
/// calls where `Out` is full and lets its oldest values go (every 200th past the first 1000 on one
/// session). Any other note means something else happened to the call, and fails the run.
fn answered_two(text: &str) -> bool {
    text.strip_suffix("2\n").is_some_and(|notes| notes.lines().all(|line| line.starts_with("[cellbox: Out held ")))
}
