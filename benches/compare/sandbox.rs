//! The sandbox's cold-start cost (`--only sandbox`).

use std::time::Instant;

use cellbox::kernel::{Kernel, KernelOptions};
use cellbox::sandbox::{NetworkMode, SandboxMode, SandboxPolicy};

use super::{Plan, Report, Series, Setup};

/// The sandbox's cold-start cost: the first `1+1` of a kernel under the full
/// sandbox (workspace-write, network off, memory and process limits) beside
/// one with the sandbox off, alternating so both see the same machine load.
pub(super) async fn sandbox_cold_start(plan: &Plan, setup: &Setup, report: &mut Report) {
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
