//! The Python SDK (`--only sdk`): `Sandbox()` → the first `1+1` beside `cellbox run`'s spawn → first
//! result, and the warm `run_code("1+1")` beside the library's own warm call (bench/sdk_helper.py),
//! each with the engine in the SDK's process (the default, `cellbox._engine`) and in a child process.

use std::path::Path;

use serde_json::json;

use super::baselines::WarmBaselines;
use super::mcp_http::ServeProcess;
use super::{HelperProcess, McpClient, Plan, Report, Series, Setup, ms_list};

/// E2B's sandbox start as its own materials quote it (a Firecracker VM boot in its cloud, before the
/// SDK's network round trips and the first cell), in ms.
const E2B_QUOTED_START_MS: f64 = 150.0;

/// The SDK helpers (one per engine) run on the benchmark's interpreter (a program using the SDK
/// would) and use this build's binary and extension (bench/run builds it beside the binary);
/// `cellbox run` is timed by the MCP helper, as in the MCP rows.
pub(super) async fn sdk_rows(
    plan: &Plan,
    setup: &Setup,
    jupyter_python: &Path,
    baselines: &WarmBaselines,
    report: &mut Report,
) {
    let binary = Path::new(env!("CARGO_BIN_EXE_cellbox"));
    let binary_dir = binary.parent().unwrap();
    let extension = binary_dir.join(if cfg!(target_os = "macos") { "lib_engine.dylib" } else { "lib_engine.so" });
    assert!(
        extension.is_file(),
        "{}: build it with `cargo build --release -p cellbox-sdk-engine` (bench/run does)",
        extension.display()
    );
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("bench/sdk_helper.py");
    let mut in_process = HelperProcess::spawn(&setup.python, &script, "SDK in-process").await;
    let mut child = HelperProcess::spawn(&setup.python, &script, "SDK child engine").await;
    let mut cli = McpClient::spawn(jupyter_python).await;
    let python = setup.python.display().to_string();
    let cwd = setup.cwd.display().to_string();
    let sandbox = json!({
        "python": python, "cwd": cwd, "binary_dir": binary_dir.display().to_string(),
        "engine_file": extension.display().to_string(),
    });
    let with_op = |op: &str, engine: &str| {
        let mut command = sandbox.clone();
        command["op"] = json!(op);
        command["engine"] = json!(engine);
        command
    };
    let argv = [binary.display().to_string(), "run".into(), "--cwd".into(), cwd.clone(), "-c".into(), "1+1".into()];
    let mut env = setup.env.clone();
    env.insert("CELLBOX_PYTHON".into(), python.clone());
    let run = json!({"op": "run", "argv": argv, "env": env, "expect": "2"});

    // E2B's own SDK, unmodified, against `cellbox serve` (docs/e2b.md): its create → first result.
    let serve_dir = tempfile::tempdir().unwrap();
    let mut serve_env = setup.env.clone();
    serve_env.insert("CELLBOX_PYTHON".into(), python.clone());
    serve_env.insert("CELLBOX_ARTIFACTS_DIR".into(), serve_dir.path().join("artifacts").display().to_string());
    let server = json!({"command": binary.display().to_string(), "env": serve_env});
    let serve = ServeProcess::start(&server, serve_dir.path(), &[]).await;
    let e2b_script = Path::new(env!("CARGO_MANIFEST_DIR")).join("bench/e2b_helper.py");
    // E2B's SDK is installed in the benchmark's venv (bench/requirements.txt), the Jupyter baseline's.
    let mut e2b = HelperProcess::spawn(jupyter_python, &e2b_script, "E2B SDK").await;
    let e2b_cold_op = json!({"op": "cold", "url": serve.url.trim_end_matches("/mcp")});
    let mut e2b_cold = Series::new("E2B SDK on cellbox serve");

    let (mut sdk_cold, mut child_cold) = (Series::new("SDK Sandbox()"), Series::new("SDK, child engine"));
    let mut run_cold = Series::new("cellbox run");
    for _ in 0..plan.cold_runs {
        let answer = e2b.call(&e2b_cold_op).await.unwrap_or_else(|e| panic!("E2B SDK: {e}"));
        e2b_cold.values.push(answer["ms"].as_f64().unwrap_or(f64::NAN));
        let answer = in_process.call(&with_op("cold", "in-process")).await.unwrap_or_else(|e| panic!("SDK: {e}"));
        sdk_cold.values.push(answer["ms"].as_f64().unwrap_or(f64::NAN));
        let answer = child.call(&with_op("cold", "process")).await.unwrap_or_else(|e| panic!("SDK: {e}"));
        child_cold.values.push(answer["ms"].as_f64().unwrap_or(f64::NAN));
        run_cold.values.push(cli.ms(run.clone()).await.unwrap_or_else(|e| panic!("cellbox run: {e}")));
    }
    report.add("SDK Sandbox() → first 1+1", "ms", false, &sdk_cold, Some(&run_cold), "engine in the SDK's process");
    report.add(
        "SDK Sandbox() → first 1+1, child engine",
        "ms",
        false,
        &child_cold,
        Some(&run_cold),
        "engine spawn included",
    );
    // E2B's start cannot be run from here: its quoted figure is the baseline of a row of its own, so the
    // comparison sits in the table rather than in prose (and is marked as quoted, not measured).
    let mut e2b_start = Series::new("E2B's quoted start (VM boot only)");
    e2b_start.values.push(E2B_QUOTED_START_MS);
    report.add(
        "SDK Sandbox() → first 1+1, vs E2B",
        "ms",
        false,
        &sdk_cold,
        Some(&e2b_start),
        "E2B's ~150 ms is a VM boot alone, quoted not measured",
    );
    let _ = e2b.call(&json!({"op": "stop"})).await;
    drop(serve);
    report.add(
        "E2B's SDK create → first 1+1, on cellbox serve",
        "ms",
        false,
        &e2b_cold,
        Some(&sdk_cold),
        "E2B's own Python SDK, unmodified, over HTTP",
    );
    report.add(
        "E2B's SDK create → first 1+1, on cellbox serve, vs E2B",
        "ms",
        false,
        &e2b_cold,
        Some(&e2b_start),
        "E2B's ~150 ms is a VM boot alone, quoted not measured",
    );

    in_process.call(&with_op("start", "in-process")).await.unwrap_or_else(|e| panic!("SDK: {e}"));
    child.call(&with_op("start", "process")).await.unwrap_or_else(|e| panic!("SDK: {e}"));
    let (mut sdk_warm, mut child_warm) = (Series::new("SDK run_code"), Series::new("SDK run_code, child engine"));
    let batch = 50;
    let roundtrip = json!({"op": "roundtrip", "n": batch});
    for _ in 0..plan.warm_iterations.div_ceil(batch) {
        let answer = in_process.call(&roundtrip).await.unwrap_or_else(|e| panic!("SDK: {e}"));
        sdk_warm.values.extend(ms_list(&answer));
        let answer = child.call(&roundtrip).await.unwrap_or_else(|e| panic!("SDK: {e}"));
        child_warm.values.extend(ms_list(&answer));
    }
    let _ = in_process.call(&json!({"op": "stop"})).await;
    let _ = child.call(&json!({"op": "stop"})).await;
    let _ = cli.call(json!({"op": "stop"})).await;
    let (library, floor) = (&baselines.library, &baselines.floor);
    let in_process = "engine in the SDK's process";
    report.add("SDK warm run_code(\"1+1\")", "ms", false, &sdk_warm, Some(library), in_process);
    report.add("SDK warm run_code(\"1+1\")", "ms", false, &sdk_warm, Some(floor), in_process);
    let child = "JSON-RPC over pipes";
    report.add("SDK warm run_code(\"1+1\"), child engine", "ms", false, &child_warm, Some(library), child);
    report.add("SDK warm run_code(\"1+1\"), child engine", "ms", false, &child_warm, Some(floor), child);
}
