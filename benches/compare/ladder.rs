//! The kill ladder: a cell that ignores SIGINT (`--only ladder`).

use std::time::Instant;

use cellbox_engine::tool::{CallContext, EngineConfig, EvalEngine, EvalParams, ignore_events};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::{Jupyter, Plan, Report, Series, Setup};

/// A cell that ignores SIGINT, with a 1 s budget: cellbox interrupts, waits
/// the interrupt window, then kills the group at once; Jupyter interrupts,
/// waits as long, then restarts the kernel. Seconds from the call to the
/// killed result, and to the next cell's answer.
pub(super) async fn kill_ladder(plan: &Plan, setup: &Setup, jupyter: &mut Jupyter, report: &mut Report) {
    jupyter.call(json!({"op": "start"})).await;
    let mut config = EngineConfig::new(&setup.cwd);
    config.python = Some(setup.python.display().to_string());
    let engine = EvalEngine::new(config);
    let context = CallContext::new("bench-ladder");
    let stuck = EvalParams::from_json(json!({"cells": [{
        "code": "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True: pass",
        "timeout": 1
    }]}))
    .unwrap();
    let next = EvalParams::code("1+1");
    engine.eval(&next, &context, &CancellationToken::new(), &ignore_events).await.unwrap();
    let (mut cellbox_killed, mut cellbox_next) = (Series::new("cellbox"), Series::new("cellbox"));
    let (mut jupyter_killed, mut jupyter_next) = (Series::new("jupyter_client"), Series::new("jupyter_client"));
    let window = cellbox_engine::tool::engine::INTERRUPT_ESCALATION.as_secs_f64();
    for _ in 0..plan.ladder_runs {
        let started = Instant::now();
        let result = engine.eval(&stuck, &context, &CancellationToken::new(), &ignore_events).await.unwrap();
        assert_eq!(result.cells[0].status.as_str(), "killed", "{}", result.text);
        cellbox_killed.values.push(started.elapsed().as_secs_f64());
        let answer = engine.eval(&next, &context, &CancellationToken::new(), &ignore_events).await.unwrap();
        assert!(answer.text.starts_with("2\n"), "{}", answer.text);
        cellbox_next.values.push(started.elapsed().as_secs_f64());
        let answer = jupyter.call(json!({"op": "ladder", "budget": 1.0, "window": window})).await;
        jupyter_killed.values.push(answer["killed_s"].as_f64().unwrap());
        jupyter_next.values.push(answer["next_s"].as_f64().unwrap());
    }
    engine.dispose_all().await;
    report.add("stuck cell (1 s budget) → killed", "s", false, &cellbox_killed, Some(&jupyter_killed), "");
    report.add("stuck cell → next cell answers", "s", false, &cellbox_next, Some(&jupyter_next), "");
}
