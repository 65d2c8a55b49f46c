//! Forking a live kernel (`--only fork`): the time to a ready copy of a
//! kernel holding 100 MB and 1 GB, against the baseline of getting the same
//! state the only other way (a new kernel that re-runs the cells), and the
//! memory the copy really adds (its private pages, from smaps_rollup) against
//! what the re-run kernel holds.

use std::time::{Duration, Instant};

use cellbox_kernels::kernel::Kernel;

use super::{Plan, Report, Series, Setup};

const WAIT: Duration = Duration::from_secs(120);

/// The cells that build the state: a buffer whose pages are all written
/// (standard library only: the bench's interpreter has no numpy).
fn state_cells(megabytes: usize) -> String {
    format!("blob = bytearray(b'x') * {}\nlen(blob)", megabytes << 20)
}

pub(super) async fn fork_rows(plan: &Plan, setup: &Setup, report: &mut Report) {
    if !cfg!(target_os = "linux") {
        println!("{:<42} skipped: kernels are forked on Linux only", "fork");
        return;
    }
    let sizes: &[usize] = if plan.quick { &[100] } else { &[100, 1024] };
    for &megabytes in sizes {
        let options = setup.options();
        let source = Kernel::start(options.clone()).await.expect("kernel starts");
        run_ok(&source, &state_cells(megabytes)).await;
        let forks = if plan.quick { 5 } else { 20 };
        let mut fork_ms = Series::new("cellbox fork");
        let mut private_mib = Series::new("cellbox fork");
        for _ in 0..forks {
            let started = Instant::now();
            let copy = source.fork(WAIT).await.expect("fork");
            fork_ms.values.push(started.elapsed().as_secs_f64() * 1000.0);
            run_ok(&copy, "len(blob)").await;
            if let Some(bytes) = cellbox_engine::session::private_bytes(copy.pid()) {
                private_mib.values.push(bytes as f64 / (1 << 20) as f64);
            }
            copy.shutdown().await;
        }
        source.shutdown().await;
        let reruns = if plan.quick { 2 } else { 5 };
        let mut rerun_ms = Series::new("new kernel + re-run cells");
        let mut rerun_mib = Series::new("new kernel + re-run cells");
        for _ in 0..reruns {
            let started = Instant::now();
            let fresh = Kernel::start(options.clone()).await.expect("kernel starts");
            run_ok(&fresh, &state_cells(megabytes)).await;
            rerun_ms.values.push(started.elapsed().as_secs_f64() * 1000.0);
            if let Some(bytes) = cellbox_engine::session::private_bytes(fresh.pid()) {
                rerun_mib.values.push(bytes as f64 / (1 << 20) as f64);
            }
            fresh.shutdown().await;
        }
        let size = if megabytes >= 1024 { format!("{} GB", megabytes / 1024) } else { format!("{megabytes} MB") };
        report.add(&format!("fork a kernel holding {size}"), "ms", false, &fork_ms, Some(&rerun_ms), "");
        report.add(
            &format!("memory a fork adds ({size} kernel)"),
            "MiB",
            false,
            &private_mib,
            Some(&rerun_mib),
            "private pages after one cell",
        );
    }
}

async fn run_ok(kernel: &Kernel, code: &str) {
    let output = kernel.execute(code).await.expect("request sent").collect().await.expect("cell completes");
    assert!(output.is_ok(), "{code}: {:?}", output.errors());
}
