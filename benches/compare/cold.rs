//! Cold start: a new kernel's first `1+1` beside Jupyter's and the bare interpreter's (`--only cold`).

use std::time::Instant;

use serde_json::json;
use tokio::process::Command;

use super::{Jupyter, Plan, Report, Series, Setup, first_result};

/// Standard-library modules the runner imports at start, beyond a bare interpreter's.
async fn runner_imports(setup: &Setup) -> Vec<String> {
    let (kernel, _) = first_result(setup).await;
    // One string of names: a list result would wrap over lines as IPython's pretty printer wraps it.
    let code =
        "import sys\n' '.join(sorted(m for m in sys.modules if '.' not in m and not m.startswith('cellbox_kernel')))";
    let output = kernel.execute(code).await.unwrap().collect().await.unwrap();
    kernel.shutdown().await;
    let loaded: Vec<String> = output.results()[0].trim_matches('\'').split_whitespace().map(String::from).collect();
    let bare = std::process::Command::new(&setup.python)
        .args(["-c", "import sys; print(' '.join(sorted(m for m in sys.modules if '.' not in m)))"])
        .output()
        .unwrap();
    let bare: Vec<String> = String::from_utf8_lossy(&bare.stdout).split_whitespace().map(String::from).collect();
    loaded.into_iter().filter(|m| !bare.contains(m) && !m.starts_with('_') && m != "__main__").collect()
}

pub(super) async fn cold_start(plan: &Plan, setup: &Setup, jupyter: &mut Jupyter, report: &mut Report) {
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
