//! Interrupt latency (`--only interrupt`).

use std::time::{Duration, Instant};

use cellbox_kernels::kernel::ExecEvent;
use serde_json::json;

use super::{Jupyter, Plan, Report, Series, Setup, first_result};

pub(super) async fn interrupt_latency(plan: &Plan, setup: &Setup, jupyter: &mut Jupyter, report: &mut Report) {
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
