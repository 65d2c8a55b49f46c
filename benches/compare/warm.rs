//! The warm round trip of `1+1` (`--only warm`): the kernel alone and the
//! library, each against the run's echo floor (both taken in the baselines'
//! turns), and the kernel against Jupyter, taken in turns with Jupyter's calls.

use std::time::Instant;

use serde_json::json;

use super::baselines::WarmBaselines;
use super::{Jupyter, Plan, Report, Series, Setup, first_result, ms_list};

pub(super) async fn warm_round_trip(
    plan: &Plan,
    setup: &Setup,
    jupyter: &mut Jupyter,
    baselines: &WarmBaselines,
    report: &mut Report,
) {
    let (kernel, _) = first_result(setup).await;
    let mut cellbox = Series::new("cellbox");
    let mut jupyter_series = Series::new("jupyter_client");
    jupyter.call(json!({"op": "start"})).await;
    // warm-up
    for _ in 0..50 {
        kernel.execute("1+1").await.unwrap().collect().await.unwrap();
    }
    let batch = 100;
    for _ in 0..plan.warm_iterations.div_ceil(batch) {
        for _ in 0..batch {
            let started = Instant::now();
            kernel.execute("1+1").await.unwrap().collect().await.unwrap();
            cellbox.values.push(started.elapsed().as_secs_f64() * 1000.0);
        }
        let jupyter_batch = if plan.quick { 20 } else { batch / 2 };
        jupyter_series.values.extend(ms_list(&jupyter.call(json!({"op": "roundtrip", "n": jupyter_batch})).await));
    }
    kernel.shutdown().await;
    report.add("warm round trip of 1+1", "ms", false, &baselines.kernel, Some(&baselines.floor), "the kernel alone");
    report.add(
        "warm round trip of 1+1, library",
        "ms",
        false,
        &baselines.library,
        Some(&baselines.floor),
        "EvalEngine::eval on a kept session: the library baseline of every warm row",
    );
    report.add("warm round trip of 1+1", "ms", false, &cellbox, Some(&jupyter_series), "");
}
