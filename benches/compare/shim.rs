//! `cellbox mcp` started with Python found through a pyenv shim (`--only shim`).

use std::path::Path;

use cellbox_kernels::discovery::{self, DiscoveryInput};
use serde_json::json;

use super::{McpClient, Plan, Report, Series, Setup};

/// The first `cellbox mcp` start → first `1+1` with Python found through a pyenv shim on PATH,
/// beside the same start with that shim's interpreter given explicitly (`CELLBOX_PYTHON`). Each
/// start gets a fresh `CELLBOX_CACHE_DIR` (no remembered probe, shim resolution or runner files:
/// a first start on the machine), then again with one cache kept across starts (every later
/// start). Starts alternate shim, explicit, … so drift cancels out. Skipped, saying why, when
/// discovery does not find Python through a pyenv shim here.
pub(super) async fn shim_rows(plan: &Plan, setup: &Setup, jupyter_python: &Path, report: &mut Report) {
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
    let found = discovery::resolve(&input, true);
    let shim = match &found {
        Ok(python) if python.via.as_ref().is_some_and(|via| via.manager == discovery::Manager::Pyenv) => {
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
