//! The eval tool through the library API, on real kernels.

use crate::common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use cellbox_engine::tool::{CallContext, CellStatus, EvalError, EvalEvent, EvalParams, KernelMode, ignore_events};
use cellbox_kernels::kernel::process::{Signal, signal_pid};
use common::engine::{eval, eval_in, fixture, params};
use common::{PATIENCE, eventually, gate, group_members, reaped};
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// A sink that sets `flag` at the first event `when` picks (a cell started, a line printed).
fn flag_on(flag: &Arc<AtomicBool>, when: fn(&EvalEvent) -> bool) -> impl Fn(EvalEvent) + Send + Sync + 'static {
    let flag = flag.clone();
    move |event| {
        if when(&event) {
            flag.store(true, Ordering::SeqCst);
        }
    }
}

#[tokio::test]
async fn state_persists_across_calls_in_session_mode() {
    let f = fixture(|_| {});
    eval(&f.engine, "x = 41").await;
    let result = eval(&f.engine, "x + 1").await;
    assert_eq!(result.text, "42\n");
    assert!(!result.is_error);
    assert_eq!(result.cells[0].execution_count, Some(2));
    let other = eval_in(&f.engine, "other-session", EvalParams::code("'x' in dir()")).await;
    assert_eq!(other.text, "False\n", "sessions do not share kernels");
    f.engine.dispose_all().await;
}

#[tokio::test]
async fn per_call_mode_starts_fresh_and_leaves_nothing() {
    let f = fixture(|c| c.mode = KernelMode::PerCall);
    let first = eval(&f.engine, "import os\nx = 1\nos.getpid()").await;
    let pid: u32 = first.text.trim().parse().unwrap();
    assert!(eventually(PATIENCE, || group_members(pid).is_empty()).await);
    assert_eq!(eval(&f.engine, "'x' in dir()").await.text, "False\n");
    assert!(f.engine.kernel_pids().is_empty());
}

#[tokio::test]
async fn owners_share_a_kernel_and_dispose_is_idempotent() {
    let f = fixture(|_| {});
    let a = CallContext { session: "shared".into(), owner: "a".into() };
    let b = CallContext { session: "shared".into(), owner: "b".into() };
    let cancel = CancellationToken::new();
    f.engine.eval(&EvalParams::code("v = 'set by a'"), &a, &cancel, &ignore_events).await.unwrap();
    let seen = f.engine.eval(&EvalParams::code("v"), &b, &cancel, &ignore_events).await.unwrap();
    assert_eq!(seen.text, "'set by a'\n");
    let pid = f.engine.kernel_pids()[0];
    f.engine.dispose_owner("a").await;
    f.engine.dispose_owner("a").await;
    assert!(!group_members(pid).is_empty(), "b still owns the kernel");
    f.engine.dispose_owner("b").await;
    assert!(group_members(pid).is_empty());
    f.engine.dispose_owner("b").await;
    assert!(f.engine.kernel_pids().is_empty());
}

#[tokio::test]
async fn dispose_all_leaves_no_process() {
    let f = fixture(|_| {});
    let mut pids = Vec::new();
    for session in ["one", "two", "three"] {
        let r = eval_in(
            &f.engine,
            session,
            EvalParams::code("import subprocess, os\np = subprocess.Popen(['sleep', '60'])\nos.getpid()"),
        )
        .await;
        pids.push(r.text.trim().parse::<u32>().unwrap());
    }
    for pid in &pids {
        assert_eq!(group_members(*pid).len(), 2);
    }
    f.engine.dispose_all().await;
    // The runners are gone when dispose_all returns; their `sleep` children
    // were sent SIGKILL at the latest, which the system carries out on its own time.
    for pid in pids {
        assert!(eventually(PATIENCE, || group_members(pid).is_empty()).await, "group {pid} left behind");
    }
}

#[tokio::test]
async fn calls_on_one_kernel_run_one_at_a_time() {
    let f = fixture(|_| {});
    eval(&f.engine, "log = []").await;
    // Every cell start and end, in the order the calls report them.
    let steps = Arc::new(Mutex::new(Vec::new()));
    let record = |call: usize| {
        let steps = steps.clone();
        move |event: EvalEvent| match event {
            EvalEvent::CellStarted { .. } => steps.lock().unwrap().push(format!("start {call}")),
            EvalEvent::CellFinished { .. } => steps.lock().unwrap().push(format!("end {call}")),
            _ => {}
        }
    };
    // The first call holds the kernel until the test opens the gate; the others arrive meanwhile.
    let go = f.dir.path().join("go");
    let holding = Arc::new(AtomicBool::new(false));
    let first = {
        let (engine, holding, record) = (f.engine.clone(), holding.clone(), record(0));
        let code = format!("log.append(0)\n{}", gate(&go));
        tokio::spawn(async move {
            let sink = move |event: EvalEvent| {
                if matches!(event, EvalEvent::CellStarted { .. }) {
                    holding.store(true, Ordering::SeqCst);
                }
                record(event);
            };
            engine
                .eval(&EvalParams::code(code), &CallContext::new("s"), &CancellationToken::new(), &sink)
                .await
                .unwrap()
        })
    };
    assert!(eventually(PATIENCE, || holding.load(Ordering::SeqCst)).await, "the first call started");
    let mut handles = vec![first];
    for i in 1..5 {
        let (engine, record) = (f.engine.clone(), record(i));
        handles.push(tokio::spawn(async move {
            let code = EvalParams::code(format!("log.append({i})"));
            engine.eval(&code, &CallContext::new("s"), &CancellationToken::new(), &record).await.unwrap()
        }));
    }
    std::fs::write(&go, "").unwrap();
    for handle in handles {
        let result = handle.await.unwrap();
        assert!(!result.is_error, "{}", result.text);
    }
    // Each call ran once, the one holding the kernel first, and no cell started before the one before it ended.
    let log = eval(&f.engine, "log").await.text;
    let mut ran: Vec<usize> = log.trim().trim_matches(['[', ']']).split(", ").map(|n| n.parse().unwrap()).collect();
    assert_eq!(ran[0], 0, "{log}");
    ran.sort();
    assert_eq!(ran, [0, 1, 2, 3, 4], "{log}");
    let steps = steps.lock().unwrap().clone();
    assert_eq!(steps.len(), 10, "{steps:?}");
    for pair in steps.chunks(2) {
        let call = pair[0].strip_prefix("start ").unwrap_or_else(|| panic!("calls overlapped: {steps:?}"));
        assert_eq!(pair[1], format!("end {call}"), "calls overlapped: {steps:?}");
    }
    f.engine.dispose_all().await;
}

#[tokio::test]
async fn concurrent_first_calls_share_one_startup() {
    let f = fixture(|_| {});
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let engine = f.engine.clone();
            tokio::spawn(async move { eval(&engine, "import os; os.getpid()").await.text })
        })
        .collect();
    let mut pids = Vec::new();
    for handle in handles {
        pids.push(handle.await.unwrap());
    }
    pids.dedup();
    assert_eq!(pids.len(), 1, "{pids:?}");
    assert_eq!(f.engine.kernel_pids().len(), 1);
    f.engine.dispose_all().await;
}

#[tokio::test]
async fn a_kernel_dead_before_the_cell_is_replaced() {
    let f = fixture(|_| {});
    let pid: i32 = eval(&f.engine, "import os; os.getpid()").await.text.trim().parse().unwrap();
    signal_pid(pid as u32, Signal::SIGKILL).unwrap();
    // Once its exit is collected the host knows it is dead: the next call is no race with the kill.
    assert!(eventually(PATIENCE, || reaped(pid as u32)).await);
    let result = eval(&f.engine, "import os; os.getpid()").await;
    assert!(!result.is_error, "{}", result.text);
    assert!(result.text.contains("previous kernel had died (killed by signal 9"), "{}", result.text);
    assert_ne!(result.text.lines().next().unwrap().parse::<i32>().unwrap(), pid);
    f.engine.dispose_all().await;
}

#[tokio::test]
async fn a_kernel_that_dies_mid_cell_is_not_replayed() {
    let f = fixture(|_| {});
    let marker = f.dir.path().join("runs.txt");
    let code = format!("open({:?}, 'a').write('ran\\n')\nimport os\nos._exit(7)", marker.display().to_string());
    let result = eval(&f.engine, &code).await;
    assert!(result.is_error);
    assert_eq!(result.cells[0].status, CellStatus::Error);
    assert!(result.text.contains("died during this cell (exit code 7)"), "{}", result.text);
    assert!(result.text.contains("side effects"), "{}", result.text);
    assert_eq!(std::fs::read_to_string(&marker).unwrap(), "ran\n", "the cell ran once");
    let next = eval(&f.engine, "1 + 1").await;
    assert_eq!(next.text, "2\n", "the next call gets a fresh kernel");
    f.engine.dispose_all().await;
}

#[tokio::test]
async fn timeouts_are_clamped_to_at_least_one_second() {
    let f = fixture(|_| {});
    eval(&f.engine, "import time").await;
    // Twice the asked-for budget, a fifth of the clamped one.
    let result =
        eval_in(&f.engine, "s", params(json!({"cells": [{"code": "time.sleep(0.2); 'done'", "timeout": 0.1}]}))).await;
    assert_eq!(result.cells[0].status, CellStatus::Ok, "{}", result.text);
    let endless =
        eval_in(&f.engine, "s", params(json!({"cells": [{"code": "while True: pass", "timeout": 0.1}]}))).await;
    assert_eq!(endless.cells[0].status, CellStatus::Timeout, "{}", endless.text);
    assert!(endless.text.contains("timed out after 1s"), "{}", endless.text);
    f.engine.dispose_all().await;
}

#[tokio::test]
async fn reset_per_cell_gives_later_cells_the_fresh_kernel() {
    let f = fixture(|_| {});
    let result = eval_in(
        &f.engine,
        "s",
        params(json!({"cells": [
            {"code": "x = 1"},
            {"code": "y = 2\n'x' in dir()", "reset": true},
            {"code": "('x' in dir(), y)"}
        ]})),
    )
    .await;
    assert!(result.text.contains("False\n── cell 3 ──\n(False, 2)\n"), "{}", result.text);
    let top = eval_in(&f.engine, "s", params(json!({"reset": true, "cells": [{"code": "'y' in dir()"}]}))).await;
    assert_eq!(top.text, "False\n");
    f.engine.dispose_all().await;
}

#[tokio::test]
async fn a_failing_cell_stops_the_call_and_is_named() {
    let f = fixture(|_| {});
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = {
        let events = events.clone();
        move |event: EvalEvent| events.lock().unwrap().push(event)
    };
    let p = params(json!({"cells": [
        {"code": "kept = 'yes'", "title": "setup"},
        {"code": "print('about to fail')\n{}['missing']", "title": "lookup"},
        {"code": "print('never')"},
        {"code": "print('never either')"}
    ]}));
    let result = f.engine.eval(&p, &CallContext::new("s"), &CancellationToken::new(), &sink).await.unwrap();
    let statuses: Vec<_> = result.cells.iter().map(|c| c.status).collect();
    assert_eq!(statuses, [CellStatus::Ok, CellStatus::Error, CellStatus::Skipped, CellStatus::Skipped]);
    assert_eq!(result.cells[1].error.as_ref().unwrap().ename, "KeyError");
    assert!(
        result.text.contains("Cell 2 (lookup) failed: KeyError: 'missing'. Cells 3–4 were not run."),
        "{}",
        result.text
    );
    assert!(!result.text.contains("never"));
    let finished = events.lock().unwrap().iter().filter(|e| matches!(e, EvalEvent::CellFinished { .. })).count();
    assert_eq!(finished, 2, "skipped cells are not started");
    assert_eq!(eval(&f.engine, "kept").await.text, "'yes'\n", "earlier state stays");
    f.engine.dispose_all().await;
}

#[tokio::test]
async fn a_timeout_interrupts_and_keeps_state() {
    let f = fixture(|_| {});
    eval(&f.engine, "data = list(range(5))").await;
    let result = eval_in(&f.engine, "s", params(json!({"timeout": 1, "cells": [{"code": "while True: pass"}]}))).await;
    assert_eq!(result.cells[0].status, CellStatus::Timeout);
    assert!(result.text.contains("eval cell timed out after 1s; kernel interrupted but remains running. Reset the kernel via { reset: true } if state appears corrupted."), "{}", result.text);
    assert_eq!(eval(&f.engine, "data").await.text, "[0, 1, 2, 3, 4]\n");
    f.engine.dispose_all().await;
}

#[tokio::test]
async fn caller_cancellation_interrupts_and_says_cancelled() {
    let f = fixture(|_| {});
    let cancel = CancellationToken::new();
    // Cancelled once the cell is running (it printed), not after a guess at how long that takes.
    let trigger = cancel.clone();
    let sink = move |event: EvalEvent| {
        if matches!(event, EvalEvent::Stdout { .. }) {
            trigger.cancel();
        }
    };
    let code = EvalParams::code("import time\nprint('sleeping', flush=True)\ntime.sleep(30)");
    let result = f.engine.eval(&code, &CallContext::new("s"), &cancel, &sink).await.unwrap();
    assert_eq!(result.cells[0].status, CellStatus::Cancelled);
    assert!(result.text.contains("eval cell was cancelled; kernel interrupted but remains running"), "{}", result.text);
    f.engine.dispose_all().await;
}

#[tokio::test]
async fn a_cell_stuck_in_c_is_killed_and_the_next_call_gets_a_fresh_kernel() {
    let f = fixture(|_| {});
    let first = eval(&f.engine, "import os; os.getpid()").await;
    let pid: u32 = first.text.trim().parse().unwrap();
    let code = "import ctypes, signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nctypes.CDLL(None).sleep(100)";
    // The call answers (the C sleep lasts 100 s) and the stuck kernel is gone; how fast is bench/'s business.
    let call = eval_in(&f.engine, "s", params(json!({"cells": [{"code": code, "timeout": 1}]})));
    let result = tokio::time::timeout(PATIENCE, call).await.expect("the kill ladder ends the call");
    assert_eq!(result.cells[0].status, CellStatus::Killed, "{}", result.text);
    assert!(
        result.text.contains("the kernel has been killed and will be recreated on the next call"),
        "{}",
        result.text
    );
    assert!(group_members(pid).is_empty());
    let next = eval(&f.engine, "import os; os.getpid()").await;
    assert_ne!(next.text.trim().parse::<u32>().unwrap(), pid);
    f.engine.dispose_all().await;
}

#[tokio::test]
async fn a_deadline_that_expires_in_the_queue_says_so() {
    let f = fixture(|_| {});
    // The busy call holds the kernel until the test opens the gate, after the queued call gave up.
    let go = f.dir.path().join("go");
    let started = Arc::new(AtomicBool::new(false));
    let busy = {
        let (engine, sink) = (f.engine.clone(), flag_on(&started, |e| matches!(e, EvalEvent::CellStarted { .. })));
        let code = EvalParams::code(gate(&go));
        tokio::spawn(async move {
            engine.eval(&code, &CallContext::new("s"), &CancellationToken::new(), &sink).await.unwrap()
        })
    };
    assert!(eventually(PATIENCE, || started.load(Ordering::SeqCst)).await, "the busy call started");
    let queued = eval_in(&f.engine, "s", params(json!({"cells": [{"code": "1", "timeout": 1}]}))).await;
    assert_eq!(queued.cells[0].status, CellStatus::Timeout);
    assert!(queued.text.contains("Command timed out after 1 seconds"), "{}", queued.text);
    std::fs::write(&go, "").unwrap();
    assert!(!busy.await.unwrap().is_error);
    f.engine.dispose_all().await;
}

#[tokio::test]
async fn head_and_tail_with_the_marker() {
    let f = fixture(|c| c.text_limits.max_lines = 20);
    let result = eval(&f.engine, "for i in range(1000): print(i)").await;
    assert!(result.truncated);
    let lines: Vec<&str> = result.text.lines().collect();
    assert_eq!(&lines[..3], ["0", "1", "2"]);
    assert!(lines[10].starts_with("[… 980 lines (") && lines[10].contains("artifact://"), "{}", result.text);
    assert_eq!(lines.last().unwrap(), &"999");
    f.engine.dispose_all().await;
}

#[tokio::test]
async fn artifact_ids_cannot_traverse() {
    let f = fixture(|_| {});
    for bad in ["../../../etc/passwd", "artifact://../../x", "abcdef01-1-1/../../../etc/passwd"] {
        assert!(f.engine.read_artifact(bad, 0, 10).is_err(), "{bad}");
    }
}

#[tokio::test]
async fn bad_input_is_refused_before_any_kernel_work() {
    let f = fixture(|_| {});
    let cancel = CancellationToken::new();
    let ctx = CallContext::new("s");
    let missing = f
        .engine
        .eval(&params(json!({"cwd": "no/such/dir", "cells": [{"code": "1"}]})), &ctx, &cancel, &ignore_events)
        .await;
    let error = missing.unwrap_err();
    assert!(matches!(error, EvalError::InvalidCwd(_)));
    assert!(error.to_string().contains("no/such/dir"), "{error}");
    // A folder outside the workspace is refused as such, before anything says whether it exists.
    for outside in ["/no/such/dir", "/tmp", "..", "~/"] {
        let refused = f
            .engine
            .eval(&params(json!({"cwd": outside, "cells": [{"code": "1"}]})), &ctx, &cancel, &ignore_events)
            .await
            .unwrap_err();
        assert!(matches!(refused, EvalError::OutsideWorkspace { what: "cwd", .. }), "{outside}: {refused}");
    }
    assert!(matches!(
        f.engine.eval(&params(json!({"cells": []})), &ctx, &cancel, &ignore_events).await,
        Err(EvalError::Params(_))
    ));
    assert!(f.engine.kernel_pids().is_empty());
}

#[tokio::test]
async fn languages_can_be_disabled() {
    let off = fixture(|c| c.exposure.js = false);
    let error = off
        .engine
        .eval(
            &params(json!({"cells": [{"language": "js", "code": "1"}]})),
            &CallContext::new("s"),
            &CancellationToken::new(),
            &ignore_events,
        )
        .await
        .unwrap_err();
    assert!(error.to_string().contains("CELLBOX_JS=on"), "{error}");
    let no_py = fixture(|c| c.exposure.py = false);
    let error = no_py
        .engine
        .eval(
            &params(json!({"cells": [{"language": "py", "code": "1"}]})),
            &CallContext::new("s"),
            &CancellationToken::new(),
            &ignore_events,
        )
        .await
        .unwrap_err();
    assert!(error.to_string().contains("CELLBOX_PY=only"), "{error}");
}

#[tokio::test]
async fn bloated_kernels_are_recycled_with_a_note() {
    let f = fixture(|c| c.pool.rss_limit_bytes = Some(1));
    eval(&f.engine, "x = 1").await;
    assert!(f.engine.kernel_pids().is_empty(), "recycled once idle");
    let next = eval(&f.engine, "'x' in dir()").await;
    assert!(next.text.starts_with("False\n"), "{}", next.text);
    assert!(next.text.contains("was restarted; its state was lost"), "{}", next.text);
    f.engine.dispose_all().await;
}

#[tokio::test]
async fn a_kernel_is_measured_anew_after_every_call() {
    // The host keeps each kernel's statm open between calls: it must see growth, and a new kernel.
    let f = fixture(|c| c.pool.rss_limit_bytes = Some(150 << 20));
    let pid = |text: &str| text.lines().next().unwrap().parse::<u32>().unwrap();
    let first = pid(&eval(&f.engine, "import os; os.getpid()").await.text);
    for _ in 0..3 {
        eval(&f.engine, "1").await;
    }
    assert_eq!(f.engine.kernel_pids(), [first], "small calls keep the kernel");
    eval(&f.engine, "held = b'x' * (200 << 20)").await;
    let next = eval(&f.engine, "import os; os.getpid()").await;
    assert!(next.text.contains("was restarted; its state was lost"), "{}", next.text);
    let second = pid(&next.text);
    assert_ne!(second, first);
    for _ in 0..3 {
        eval(&f.engine, "1").await;
    }
    assert_eq!(f.engine.kernel_pids(), [second], "the new kernel is measured as itself");
    f.engine.dispose_all().await;
}

#[tokio::test]
async fn idle_kernels_are_stopped() {
    // Hibernation off: the state is lost, and the next call says so (tests/it/hibernate.rs has it on).
    let f = fixture(|c| {
        c.pool.idle_timeout = Some(Duration::from_millis(300));
        c.hibernate = false;
    });
    let pid: u32 = eval(&f.engine, "import os; os.getpid()").await.text.trim().parse().unwrap();
    assert!(eventually(PATIENCE, || group_members(pid).is_empty()).await);
    let next = eval(&f.engine, "1").await;
    assert!(next.text.contains("unused; its state was lost"), "{}", next.text);
    f.engine.dispose_all().await;
}

#[tokio::test]
async fn the_least_recently_used_idle_kernel_makes_room() {
    let f = fixture(|c| c.pool.max_kernels = 1);
    let first: u32 =
        eval_in(&f.engine, "a", EvalParams::code("import os; os.getpid()")).await.text.trim().parse().unwrap();
    eval_in(&f.engine, "b", EvalParams::code("1")).await;
    // Hibernated, it ends in the background.
    assert!(eventually(PATIENCE, || group_members(first).is_empty()).await);
    assert_eq!(f.engine.kernel_pids().len(), 1);
    let back = eval_in(&f.engine, "a", EvalParams::code("1")).await;
    assert!(back.text.contains("to stay within 1 live kernels"), "{}", back.text);
    f.engine.dispose_all().await;
}

#[tokio::test]
async fn displays_become_text_images_json_and_status() {
    let f = fixture(|_| {});
    let png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC";
    let code = format!(
        "display({{'a': 1}})\nclass Pic:\n    def _repr_png_(self): import base64; return base64.b64decode('{png}')\ndisplay(Pic())\nclass H:\n    def _repr_html_(self): return '<p>Hi <b>there</b></p>'\ndisplay(H())\nlog('step one')"
    );
    let result = eval(&f.engine, &code).await;
    assert_eq!(result.json[0].value, json!({"a": 1}));
    assert_eq!(result.images.len(), 1);
    assert_eq!((result.images[0].image.width, result.images[0].image.height), (Some(1), Some(1)));
    assert_eq!(result.status_events[0].event, json!({"op": "log", "message": "step one"}));
    assert!(result.text.contains("[image 1: image/png 1×1]"), "{}", result.text);
    assert!(result.text.contains("Hi **there**"), "{}", result.text);
    f.engine.dispose_all().await;
}

#[tokio::test]
async fn a_paused_budget_lets_the_cell_run_past_its_timeout() {
    let f = fixture(|_| {});
    // The cell (1 s budget) runs until the test opens the gate; the test pauses
    // its budget once it runs, holds the pause well past the budget, then opens
    // the gate while still paused.
    let go = f.dir.path().join("go");
    let running = Arc::new(AtomicBool::new(false));
    let engine = f.engine.clone();
    let pauser = {
        let (running, go) = (running.clone(), go.clone());
        tokio::spawn(async move {
            assert!(eventually(PATIENCE, || running.load(Ordering::SeqCst)).await, "the cell runs");
            let outer = engine.pause_budget("s").expect("a cell is running");
            let inner = engine.pause_budget("s").unwrap();
            // Longer than the budget: a cell whose budget kept running would time out now.
            tokio::time::sleep(Duration::from_millis(1500)).await;
            std::fs::write(&go, "").unwrap();
            (outer, inner)
        })
    };
    let code = format!("print('running', flush=True)\n{}'finished'", gate(&go));
    let p = params(json!({"cells": [{"code": code, "timeout": 1}]}));
    let sink = flag_on(&running, |e| matches!(e, EvalEvent::Stdout { .. }));
    let result = f.engine.eval(&p, &CallContext::new("s"), &CancellationToken::new(), &sink).await.unwrap();
    drop(pauser.await.unwrap());
    assert_eq!(result.cells[0].status, CellStatus::Ok, "{}", result.text);
    assert_eq!(result.text, "running\n'finished'\n");
    assert!(f.engine.pause_budget("s").is_none(), "no cell is running any more");
    f.engine.dispose_all().await;
}

#[tokio::test]
async fn a_line_longer_than_64_kib_is_clamped_keeps_its_newline_and_names_the_artifact() {
    let f = fixture(|_| {});
    let result = eval(&f.engine, "print('L' * 100_000)\nprint('after')").await;
    assert!(!result.is_error, "{}", result.text);
    assert!(result.truncated, "a clamped line is truncation");
    let uri = result.artifact.clone().expect("the full output is saved");
    let lines: Vec<&str> = result.text.lines().collect();
    assert_eq!(lines.len(), 3, "{}", result.text);
    assert!(
        lines[0].starts_with("LLL") && lines[0].contains("chars omitted"),
        "{}",
        &lines[0][..200.min(lines[0].len())]
    );
    assert_eq!(lines[1], "after", "the next line is not glued on");
    assert_eq!(lines[2], format!("[1 long line was clamped; full output: {uri}]"));
    let (_, size) = f.engine.read_artifact(&uri, 0, 1).unwrap();
    assert_eq!(size, 100_000 + 1 + 6, "the artifact holds the whole line");
    f.engine.dispose_all().await;
}
