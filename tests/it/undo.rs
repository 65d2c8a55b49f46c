//! Checkpoints and undo on real Python kernels: a checkpoint is a fork taken
//! before a call, and `undo` puts it back, after a call that changed data in
//! place, crashed the kernel or timed out; the budget keeps the newest ones.

#![cfg(target_os = "linux")]

use crate::common;

use cellbox_engine::tool::{BranchError, CallContext, CellStatus};
use common::engine::{eval_json, fixture};
use serde_json::json;

fn session() -> CallContext {
    CallContext::new("s")
}

/// One checkpointed call of `code` (timeout in seconds).
fn call(code: &str, timeout: f64) -> serde_json::Value {
    json!({"checkpoint": true, "cells": [{"code": code, "timeout": timeout}]})
}

#[tokio::test(flavor = "multi_thread")]
async fn undo_brings_back_a_dataframe_changed_in_place() {
    let fx = fixture(|_| {});
    let engine = &fx.engine;
    eval_json(engine, call("import pandas as pd\ndf = pd.DataFrame({'a': [1, 2], 'b': [3, 4]})", 60.0)).await;
    let changed = eval_json(engine, call("del df['a']; df['b'] *= 100; list(df.columns)", 60.0)).await;
    assert_eq!(changed.text, "['b']\n");
    let report = engine.undo(&session(), 1).await.unwrap();
    // The first call had no kernel to copy yet: one checkpoint, now used.
    assert_eq!((report.steps, report.left), (1, 0));
    let back = eval_json(engine, json!({"cells": [{"code": "list(df.columns), int(df['b'].sum())"}]})).await;
    assert_eq!(back.text, "(['a', 'b'], 7)\n");
    assert_eq!(engine.history_len("s"), 2, "the undone call left the history");
    engine.dispose_all().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn undo_after_a_crash_brings_back_the_state_before_it() {
    let fx = fixture(|_| {});
    let engine = &fx.engine;
    eval_json(engine, call("model = {'weights': [0.5] * 3}", 60.0)).await;
    let crashed = eval_json(engine, call("import os, signal; os.kill(os.getpid(), signal.SIGKILL)", 60.0)).await;
    assert!(crashed.is_error && crashed.text.contains("killed by signal 9"), "{}", crashed.text);
    engine.undo(&session(), 1).await.unwrap();
    let back = eval_json(engine, json!({"cells": [{"code": "model"}]})).await;
    assert_eq!(back.text, "{'weights': [0.5, 0.5, 0.5]}\n");
    engine.dispose_all().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn undo_after_a_timeout_brings_back_the_state_before_it() {
    let fx = fixture(|_| {});
    let engine = &fx.engine;
    eval_json(engine, call("rows = [1, 2, 3]", 60.0)).await;
    let slow = eval_json(engine, call("rows.clear()\nimport time\nwhile True: time.sleep(0.05)", 1.0)).await;
    assert_eq!(slow.cells[0].status, CellStatus::Timeout, "{}", slow.text);
    engine.undo(&session(), 1).await.unwrap();
    let back = eval_json(engine, json!({"cells": [{"code": "rows"}]})).await;
    assert_eq!(back.text, "[1, 2, 3]\n");
    engine.dispose_all().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn undo_goes_several_steps_back_and_the_count_bounds_the_checkpoints() {
    let fx = fixture(|config| config.checkpoints.count = 2);
    let engine = &fx.engine;
    // Checkpoints are on for every call: the first call has no kernel to copy yet.
    for step in 1..=4 {
        eval_json(engine, json!({"cells": [{"code": format!("step = {step}")}]})).await;
    }
    assert_eq!(engine.checkpoint_count("s"), 2);
    // They wait stopped, and are the OOM killer's first choice. A SIGSTOP takes
    // effect when its target next runs, so a loaded machine may show one still
    // running for a moment.
    for pid in engine.checkpoint_pids("s") {
        let state = || {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
            stat.rsplit_once(')').unwrap().1.split_whitespace().next().unwrap().to_string()
        };
        let stopped = common::eventually(common::PATIENCE, || state() == "T").await;
        assert!(stopped, "checkpoint {pid} is stopped (state {})", state());
        assert_eq!(std::fs::read_to_string(format!("/proc/{pid}/oom_score_adj")).unwrap().trim(), "1000");
    }
    match engine.undo(&session(), 3).await {
        Err(BranchError::NotEnoughCheckpoints { steps: 3, kept: 2 }) => {}
        other => panic!("expected too few checkpoints, got {other:?}"),
    }
    engine.undo(&session(), 2).await.unwrap();
    let back = eval_json(engine, json!({"cells": [{"code": "step"}], "checkpoint": false})).await;
    assert_eq!(back.text, "2\n");
    assert_eq!(engine.checkpoint_count("s"), 0);
    engine.dispose_all().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_memory_budget_drops_the_oldest_checkpoints() {
    let fx = fixture(|config| {
        config.checkpoints.count = 10;
        config.checkpoints.memory_bytes = 64 << 20;
    });
    let engine = &fx.engine;
    eval_json(engine, json!({"cells": [{"code": "blob = bytearray(b'x') * (40 << 20); n = 0"}]})).await;
    // Each call replaces 40 MB the kernel had: the checkpoints taken before
    // it are then the only ones holding the old pages, and old ones fall to the budget.
    for _ in 0..4 {
        let grow = eval_json(engine, json!({"cells": [{"code": "blob = bytearray(b'y') * (40 << 20); n += 1"}]})).await;
        assert!(!grow.is_error, "{}", grow.text);
    }
    let kept = engine.checkpoint_count("s");
    assert!((1..4).contains(&kept), "kept {kept} checkpoints within 64 MiB");
    engine.undo(&session(), 1).await.unwrap();
    let back = eval_json(engine, json!({"cells": [{"code": "n"}], "checkpoint": false})).await;
    assert_eq!(back.text, "3\n");
    engine.dispose_all().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn undo_without_checkpoints_says_how_to_turn_them_on() {
    let fx = fixture(|_| {});
    let engine = &fx.engine;
    eval_json(engine, json!({"cells": [{"code": "x = 1"}]})).await;
    let error = engine.undo(&session(), 1).await.unwrap_err().to_string();
    assert!(error.contains("checkpoints are off") && error.contains("\"checkpoint\": true"), "{error}");
    engine.dispose_all().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_reset_drops_the_checkpoints() {
    let fx = fixture(|_| {});
    let engine = &fx.engine;
    eval_json(engine, call("x = 1", 60.0)).await;
    eval_json(engine, call("x = 2", 60.0)).await;
    assert_eq!(engine.checkpoint_count("s"), 1);
    engine.reset_session("s").await;
    assert_eq!(engine.checkpoint_count("s"), 0);
    assert!(engine.undo(&session(), 1).await.is_err());
    engine.dispose_all().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_checkpoint_shares_the_kernels_memory_limit_and_an_undone_kernel_keeps_it() {
    use cellbox_kernels::sandbox::SandboxPolicy;
    let fx = fixture(|config| config.sandbox = SandboxPolicy { memory_limit: Some(256 << 20), ..SandboxPolicy::off() });
    let engine = &fx.engine;
    eval_json(engine, call("state = 'before'", 60.0)).await;
    eval_json(engine, call("state = 'after'", 60.0)).await;
    let cgroup = |pid: u32| std::fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap();
    let live = engine.kernel_pids()[0];
    let checkpoint = engine.checkpoint_pids("s")[0];
    assert_eq!(cgroup(checkpoint), cgroup(live), "the checkpoint stays under the kernel's limits");
    engine.undo(&session(), 1).await.unwrap();
    let hog = "x = bytearray(512 << 20)\nfor i in range(0, len(x), 4096):\n    x[i] = 1";
    let over = eval_json(engine, json!({"cells": [{"code": hog, "timeout": 60}]})).await;
    assert!(over.is_error && over.text.contains("memory limit exceeded"), "{}", over.text);
    engine.dispose_all().await;
}
