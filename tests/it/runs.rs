//! Runs through the library API, on real kernels: calls that outlive the
//! wait, reads of the output since the last read, cancellation, queueing.

use crate::common;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use cellbox_engine::tool::{
    CallContext, CallOutcome, EvalEngine, EvalParams, RunError, RunReport, WaitFor, ignore_events,
};
use common::engine::{fixture, params};
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// Python that blocks until `path` exists (so tests release cells on purpose, not by the clock).
fn gate(path: &Path) -> String {
    format!("import os, time\nwhile not os.path.exists({:?}):\n    time.sleep(0.02)\n", path.display().to_string())
}

async fn call(engine: &Arc<EvalEngine>, session: &str, p: EvalParams) -> CallOutcome {
    engine.call(&p, &CallContext::new(session), &CancellationToken::new(), &ignore_events).await.unwrap()
}

fn running(outcome: CallOutcome) -> RunReport {
    match outcome {
        CallOutcome::Running(report) => report,
        CallOutcome::Finished(result) => panic!("expected a running call, got {}", result.text),
    }
}

/// Read `report`'s run until its output so far contains `needle` (the cell got
/// there, which a `wait` of any length does not promise on a loaded machine);
/// every read, the first included, is returned.
async fn read_until(engine: &EvalEngine, report: RunReport, needle: &str) -> Vec<RunReport> {
    let deadline = std::time::Instant::now() + common::PATIENCE;
    let mut reads = vec![report];
    while !reads.iter().any(|read| read.text.contains(needle)) {
        assert!(std::time::Instant::now() < deadline, "{needle:?} never came: {:?}", reads.last().unwrap().text);
        tokio::time::sleep(Duration::from_millis(20)).await;
        reads.push(engine.output_since(&reads[0].run).unwrap());
    }
    reads
}

#[tokio::test]
async fn a_call_that_outlives_its_wait_returns_a_handle_and_later_reads_get_new_output() {
    let f = fixture(|_| {});
    let go = f.dir.path().join("go");
    let code = format!("print('before', flush=True)\n{}print('after')\n'done'", gate(&go));
    let report =
        running(call(&f.engine, "s", params(json!({"wait": 1, "cells": [{"code": code, "title": "train"}]}))).await);
    assert!(report.run.starts_with("run://"), "{report:?}");
    assert!(report.running);
    assert!(report.text.contains(&report.run) && report.text.contains("eval_wait"), "{}", report.text);
    assert_eq!(report.cells[0].title.as_deref(), Some("train"));
    let reads = read_until(&f.engine, report, "before\n").await;
    let text: String = reads.iter().map(|read| read.text.as_str()).collect();
    assert!(text.starts_with("before\n"), "{text}");
    let report = reads.into_iter().next_back().unwrap();
    assert_eq!(report.cells[0].state, "running");

    // Nothing new yet: a read says so without repeating the earlier output.
    let again = f.engine.output_since(&report.run).unwrap();
    assert!(again.running && !again.text.contains("before"), "{}", again.text);

    std::fs::write(&go, "").unwrap();
    let last = f.engine.wait(&report.run, common::PATIENCE, WaitFor::Run).await.unwrap();
    assert!(!last.running);
    let result = last.result.expect("the final read carries the result");
    assert!(!result.is_error, "{}", result.text);
    assert_eq!(result.text, "after\n'done'\n");
    assert_eq!(last.cells[0].state, "ok");
    // The final result was read: the run is forgotten.
    assert!(matches!(f.engine.output_since(&report.run), Err(RunError::Unknown(_))));
}

#[tokio::test]
async fn a_call_that_ends_within_its_wait_is_an_ordinary_result() {
    let f = fixture(|_| {});
    let with_wait = call(&f.engine, "s", params(json!({"wait": 30, "cells": [{"code": "x = 6\nx * 7"}]}))).await;
    let CallOutcome::Finished(result) = with_wait else { panic!("the cell is quick") };
    assert_eq!(result.text, "42\n");
    let CallOutcome::Finished(plain) = call(&f.engine, "s", EvalParams::code("x + 1")).await else { panic!() };
    assert_eq!(plain.text, "7\n");
    assert!(f.engine.current_run("s").is_none());
}

#[tokio::test]
async fn waiting_for_any_cell_returns_when_one_ends() {
    let f = fixture(|_| {});
    let go = f.dir.path().join("go");
    let cells = json!([{"code": "print('one')"}, {"code": gate(&go)}, {"code": "print('three')"}]);
    let id = f.engine.start(&params(json!({"cells": cells})), &CallContext::new("s")).unwrap();
    let mut seen = String::new();
    // The first cell ends quickly; the second holds until released.
    loop {
        let report = f.engine.wait(&id, common::PATIENCE, WaitFor::AnyCell).await.unwrap();
        seen.push_str(&report.text);
        if report.cells[0].state == "ok" {
            assert!(report.running);
            break;
        }
    }
    assert!(seen.contains("one"), "{seen}");
    std::fs::write(&go, "").unwrap();
    let last = f.engine.wait(&id, common::PATIENCE, WaitFor::Run).await.unwrap();
    assert!(last.text.contains("three") && !last.text.contains("one"), "{}", last.text);
    assert!(last.cells.iter().all(|cell| cell.state == "ok"), "{:?}", last.cells);
}

#[tokio::test]
async fn cancel_interrupts_the_cell_skips_the_rest_and_keeps_state() {
    let f = fixture(|_| {});
    call(&f.engine, "s", EvalParams::code("kept = 'still here'")).await;
    let cells =
        json!([{"code": "import time\nprint('sleeping', flush=True)\ntime.sleep(60)"}, {"code": "print('never')"}]);
    let report = running(call(&f.engine, "s", params(json!({"wait": 1, "cells": cells}))).await);
    // Cancelled once the cell runs (it printed), not after a guess at how long that takes.
    let report = read_until(&f.engine, report, "sleeping").await.swap_remove(0);
    f.engine.cancel(&report.run).unwrap();
    let last = f.engine.wait(&report.run, common::PATIENCE, WaitFor::Run).await.unwrap();
    let states: Vec<&str> = last.cells.iter().map(|cell| cell.state.as_str()).collect();
    assert_eq!(states, ["cancelled", "skipped"], "{}", last.text);
    assert!(last.text.contains("KeyboardInterrupt") && !last.text.contains("never"), "{}", last.text);
    let CallOutcome::Finished(after) = call(&f.engine, "s", EvalParams::code("kept")).await else { panic!() };
    assert_eq!(after.text, "'still here'\n");
}

#[tokio::test]
async fn a_call_on_a_busy_session_queues_behind_the_run_and_says_so() {
    let f = fixture(|_| {});
    let go = f.dir.path().join("go");
    let first = running(call(&f.engine, "s", params(json!({"wait": 0.5, "cells": [{"code": gate(&go)}]}))).await);
    assert_eq!(f.engine.current_run("s").as_deref(), Some(first.run.as_str()));
    let second = running(call(&f.engine, "s", params(json!({"wait": 0.5, "cells": [{"code": "'second'"}]}))).await);
    assert_eq!(second.queued_behind.as_deref(), Some(first.run.as_str()));
    assert_eq!(second.cells[0].state, "pending");
    assert!(second.text.contains("Queued behind"), "{}", second.text);
    // Another session is not held up.
    let CallOutcome::Finished(other) = call(&f.engine, "t", EvalParams::code("'free'")).await else { panic!() };
    assert_eq!(other.text, "'free'\n");
    std::fs::write(&go, "").unwrap();
    let last = f.engine.wait(&second.run, common::PATIENCE, WaitFor::Run).await.unwrap();
    assert!(last.text.starts_with("'second'\n"), "{}", last.text);
    assert!(last.text.contains(&format!("queued behind {}", first.run)), "{}", last.text);
}

#[tokio::test]
async fn each_read_obeys_the_output_limits_and_the_artifact_keeps_everything() {
    let f = fixture(|config| config.text_limits.max_lines = 40);
    let go = f.dir.path().join("go");
    let cells =
        json!([{"code": "for i in range(500): print('line', i)"}, {"code": format!("{}print('end')", gate(&go))}]);
    let id = f.engine.start(&params(json!({"cells": cells})), &CallContext::new("s")).unwrap();
    // The first read comes once the first cell ended, so it holds all 500 lines
    // (a read after a fixed wait might come before or amid them).
    let report = f.engine.wait(&id, common::PATIENCE, WaitFor::AnyCell).await.unwrap();
    assert_eq!(report.cells[0].state, "ok", "{}", report.text);
    assert!(report.truncated, "{}", report.text);
    assert!(report.text.lines().count() < 50, "{}", report.text);
    let artifact = report.artifact.clone().expect("output was written");
    assert!(report.text.contains(&artifact), "{}", report.text);
    std::fs::write(&go, "").unwrap();
    let last = f.engine.wait(&id, common::PATIENCE, WaitFor::Run).await.unwrap();
    assert!(!last.truncated && last.text.contains("end\n") && !last.text.contains("line"), "{}", last.text);
    let (full, _) = f.engine.read_artifact(&artifact, 0, 1 << 20).unwrap();
    assert!(
        full.contains("line 0\nline 1\n") && full.contains("line 499\n") && full.ends_with("end\n"),
        "{}",
        &full[..100]
    );
}

#[tokio::test]
async fn bad_parameters_fail_at_start_and_unknown_runs_are_explained() {
    let f = fixture(|_| {});
    let bad = f.engine.start(&params(json!({"cells": []})), &CallContext::new("s")).unwrap_err();
    assert!(bad.to_string().contains("at least one cell"), "{bad}");
    let wait = EvalParams::from_json(json!({"wait": -1, "cells": [{"code": "1"}]})).unwrap();
    let error = f.engine.call(&wait, &CallContext::new("s"), &CancellationToken::new(), &ignore_events).await;
    assert!(error.unwrap_err().to_string().contains("wait must be"));
    let unknown = f.engine.output_since("run://nope").unwrap_err();
    assert!(unknown.to_string().contains("eval_sessions"), "{unknown}");
}

#[tokio::test]
async fn disposing_the_owner_cancels_and_forgets_its_runs() {
    let f = fixture(|_| {});
    let report = running(
        call(&f.engine, "s", params(json!({"wait": 0.5, "cells": [{"code": "import time\ntime.sleep(60)"}]}))).await,
    );
    f.engine.dispose_owner("s").await;
    assert!(matches!(f.engine.output_since(&report.run), Err(RunError::Unknown(_))));
    assert!(f.engine.current_run("s").is_none());
    assert!(common::eventually(common::PATIENCE, || f.engine.kernel_pids().is_empty()).await);
}
