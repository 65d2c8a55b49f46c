//! JavaScript cells (`--only js`).

use std::time::Instant;

use cellbox_kernels::kernel::{Kernel, KernelOptions};
use serde_json::json;
use tokio::process::Command;

use super::{Plan, Report, Series, Setup};

/// JavaScript cells: cold start → first `1+1` of a Node kernel beside `node -e 1+1`, and the warm
/// round trip of `1+1` (no Node floor for a round trip: the Python echo floor row above is the protocol's).
pub(super) async fn javascript(plan: &Plan, setup: &Setup, report: &mut Report) {
    let node = match cellbox_kernels::runtime::node::resolve_from_env(None, &setup.cwd, &Default::default()) {
        Ok(node) => node,
        Err(error) => {
            println!("(JavaScript rows skipped: {error})");
            return;
        }
    };
    report.facts.insert("node".into(), json!(node.executable.display().to_string()));
    report.facts.insert("node_version".into(), json!(node.version));
    let options = || KernelOptions::for_interpreter(&node, &setup.cwd, setup.env.clone());
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
