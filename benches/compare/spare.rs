//! First results with and without a warm spare (`--only spare`).

use std::time::{Duration, Instant};

use cellbox_engine::tool::{CallContext, EngineConfig, EvalEngine, EvalParams, KernelMode, ignore_events};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::{Plan, Report, Series, Setup};

/// Time to a first result when a kernel must be replaced or created, with
/// and without a warm spare: `reset: true`, a `per-call` call, a new session.
pub(super) async fn spare_rows(plan: &Plan, setup: &Setup, report: &mut Report) {
    let runs = if plan.quick { 5 } else { 20 };
    for (label, mode) in [("reset → first 1+1", 0), ("per-call 1+1", 1), ("new session → first 1+1", 2)] {
        let mut with = Series::new("cellbox, spare");
        let mut without = Series::new("cellbox, no spare");
        for spare in [true, false] {
            let dir = tempfile::tempdir().unwrap();
            let mut config = EngineConfig::new(&setup.cwd);
            config.python = Some(setup.python.display().to_string());
            config.artifacts_dir = dir.path().join("artifacts");
            config.mode = if mode == 1 { KernelMode::PerCall } else { KernelMode::Session };
            config.pool.max_kernels = runs + 4;
            config.spare = if spare {
                cellbox_engine::session::SpareLimits::default()
            } else {
                cellbox_engine::session::SpareLimits::OFF
            };
            let engine = EvalEngine::new(config);
            let cancel = CancellationToken::new();
            engine.eval(&EvalParams::code("1"), &CallContext::new("warm"), &cancel, &ignore_events).await.unwrap();
            for run in 0..runs {
                // Give the background spare its start, as a pause between calls would.
                let waited = Instant::now();
                while spare && engine.spare_pids().is_empty() && waited.elapsed() < Duration::from_secs(5) {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
                let (params, session) = match mode {
                    0 => (
                        EvalParams::from_json(json!({"reset": true, "cells": [{"code": "1+1"}]})).unwrap(),
                        "warm".to_string(),
                    ),
                    1 => (EvalParams::code("1+1"), "warm".to_string()),
                    _ => (EvalParams::code("1+1"), format!("new-{run}")),
                };
                let started = Instant::now();
                let result = engine.eval(&params, &CallContext::new(session), &cancel, &ignore_events).await.unwrap();
                let ms = started.elapsed().as_secs_f64() * 1000.0;
                assert_eq!(result.text, "2\n");
                if spare { with.values.push(ms) } else { without.values.push(ms) }
            }
            engine.dispose_all().await;
        }
        report.add(label, "ms", false, &with, Some(&without), "");
    }
}
