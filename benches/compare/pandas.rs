//! A kernel ready to use pandas (`--only pandas`).

use std::path::Path;
use std::time::Instant;

use cellbox_kernels::kernel::{Kernel, KernelOptions};
use serde_json::json;
use tokio::process::Command;

use super::{Jupyter, Plan, Report, Series, Setup};

/// A kernel ready to use pandas: the first result of `import pandas; 1+1`
/// in a kernel forked from a fork server that preloaded pandas, beside a
/// spawned kernel that imports it, a Jupyter kernel start plus the import,
/// and the floor `python -c "import pandas"`. All on the bench venv's
/// interpreter (the one with pandas), alternating.
pub(super) async fn pandas_ready(
    plan: &Plan,
    setup: &Setup,
    python: &Path,
    jupyter: &mut Jupyter,
    report: &mut Report,
) {
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
    assert!(warm.forked_from().is_some(), "the kernel was forked: {:?}", cellbox_kernels::kernel::zygote::problems());
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
    cellbox_kernels::kernel::zygote::release_all();
    let label = "pandas-ready kernel → first result";
    report.add(label, "ms", false, &forked, Some(&spawned), "`import pandas; 1+1`; --preload pandas");
    report.add(label, "ms", false, &forked, Some(&jupyter_series), "kernel start + import");
    report.add(label, "ms", false, &forked, Some(&floor), "");
}
