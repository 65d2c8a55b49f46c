//! Concurrent calls (`--only concurrency`).

use std::sync::Arc;
use std::time::Instant;

use serde_json::json;

use super::{Jupyter, Plan, Report, Series, Setup, first_result, ms_list};

pub(super) async fn concurrency(plan: &Plan, setup: &Setup, jupyter: &mut Jupyter, report: &mut Report) {
    let kernels = 8;
    let mut handles = Vec::new();
    let mut started_kernels = Vec::new();
    for _ in 0..kernels {
        started_kernels.push(Arc::new(first_result(setup).await.0));
    }
    let started = Instant::now();
    for kernel in &started_kernels {
        let kernel = kernel.clone();
        let cells = plan.concurrent_cells;
        handles.push(tokio::spawn(async move {
            let mut latencies = Vec::with_capacity(cells);
            for _ in 0..cells {
                let begun = Instant::now();
                kernel.execute("1+1").await.unwrap().collect().await.unwrap();
                latencies.push(begun.elapsed().as_secs_f64() * 1000.0);
            }
            latencies
        }));
    }
    let mut latencies = Series::new("cellbox");
    for handle in handles {
        latencies.values.extend(handle.await.unwrap());
    }
    let total = started.elapsed().as_secs_f64();
    for kernel in started_kernels {
        kernel.shutdown().await;
    }
    let answer = jupyter.call(json!({"op": "concurrent", "kernels": kernels, "cells": plan.concurrent_cells})).await;
    let mut jupyter_latencies = Series::new("jupyter_client");
    jupyter_latencies.values = ms_list(&answer);
    let cells = (kernels * plan.concurrent_cells) as f64;
    let cellbox_rate = Series { name: "cellbox".into(), values: vec![cells / total] };
    let jupyter_rate =
        Series { name: "jupyter_client".into(), values: vec![cells / answer["seconds"].as_f64().unwrap()] };
    let label = format!("{kernels} kernels × {} cells", plan.concurrent_cells);
    report.add(&format!("{label}: throughput"), "cells/s", true, &cellbox_rate, Some(&jupyter_rate), "");
    let p99 = |s: &Series| Series { name: s.name.clone(), values: vec![s.quantile(0.99)] };
    report.add(&format!("{label}: p99 latency"), "ms", false, &p99(&latencies), Some(&p99(&jupyter_latencies)), "");
}
