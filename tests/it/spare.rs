//! Warm spares through the library API, on real kernels: a spare is handed out
//! once, only to a call that would have started the same kernel, never after
//! running user code, and never outlives its engine or its idle limit.

use crate::common;

use std::time::Duration;

use cellbox_engine::session::SpareLimits;
use cellbox_engine::tool::{EngineConfig, EvalEngine, KernelMode};
use cellbox_kernels::kernel::process::{Signal, signal_pid};
use common::engine::{Fixture, eval_json_in as eval_params};
use common::{PATIENCE, eventually, group_members, reaped};
use serde_json::json;

fn fixture(tweak: impl FnOnce(&mut EngineConfig)) -> Fixture {
    Fixture::new(|config| {
        config.spare = SpareLimits { count: 1, idle: None };
        tweak(config);
    })
}

/// The pid of the kernel that runs a call in `session`.
async fn pid_in(engine: &EvalEngine, session: &str) -> u32 {
    let result = eval_params(engine, session, json!({"cells": [{"code": "import os\nos.getpid()"}]})).await;
    assert!(!result.is_error, "{}", result.text);
    result.text.trim().parse().unwrap()
}

/// Wait for a ready spare and return its pid.
async fn ready_spare(engine: &EvalEngine) -> u32 {
    assert!(eventually(PATIENCE, || !engine.spare_pids().is_empty()).await, "no spare became ready");
    engine.spare_pids()[0]
}

#[tokio::test]
async fn a_new_session_gets_the_spare_exactly_once() {
    let f = fixture(|_| {});
    let first = pid_in(&f.engine, "a").await;
    let spare = ready_spare(&f.engine).await;
    assert_ne!(spare, first);
    assert_eq!(pid_in(&f.engine, "b").await, spare, "the new session took the spare");
    // A new spare replaces it; the old one is never handed out again.
    let next = ready_spare(&f.engine).await;
    assert_ne!(next, spare);
    assert_eq!(pid_in(&f.engine, "c").await, next);
    let mut pids = f.engine.kernel_pids();
    pids.sort();
    let mut expected = vec![first, spare, next];
    expected.sort();
    assert_eq!(pids, expected, "three sessions, three distinct kernels");
    f.engine.dispose_all().await;
}

#[tokio::test]
async fn concurrent_new_sessions_never_share_a_spare() {
    let f = fixture(|_| {});
    pid_in(&f.engine, "warm").await;
    ready_spare(&f.engine).await;
    let (a, b, c) = tokio::join!(pid_in(&f.engine, "a"), pid_in(&f.engine, "b"), pid_in(&f.engine, "c"));
    assert!(a != b && b != c && a != c, "each session has its own kernel: {a} {b} {c}");
    f.engine.dispose_all().await;
}

#[tokio::test]
async fn reset_takes_the_spare_and_it_never_ran_user_code() {
    let f = fixture(|_| {});
    eval_params(&f.engine, "s", json!({"cells": [{"code": "secret = 42\nimport os\nos.getpid()"}]})).await;
    let spare = ready_spare(&f.engine).await;
    let result = eval_params(
        &f.engine,
        "s",
        json!({"reset": true, "cells": [{"code": "import os\n(os.getpid(), 'secret' in dir())"}]}),
    )
    .await;
    assert!(!result.is_error, "{}", result.text);
    assert_eq!(result.text.trim(), format!("({spare}, False)"));
    assert_eq!(result.cells[0].execution_count, Some(1), "the spare's first user cell is cell 1");
    f.engine.dispose_all().await;
}

#[tokio::test]
async fn a_spare_only_serves_the_same_configuration() {
    let f = fixture(|_| {});
    pid_in(&f.engine, "a").await;
    let spare = ready_spare(&f.engine).await;
    let other = f.dir.path().join("elsewhere");
    std::fs::create_dir(&other).unwrap();
    let result = eval_params(
        &f.engine,
        "b",
        json!({"cwd": other.display().to_string(), "cells": [{"code": "import os\n(os.getpid(), os.getcwd())"}]}),
    )
    .await;
    assert!(!result.is_error, "{}", result.text);
    assert!(!result.text.contains(&spare.to_string()), "another cwd must not get the spare: {}", result.text);
    assert!(result.text.contains("elsewhere"), "{}", result.text);
    assert!(f.engine.spare_pids().contains(&spare) || !group_members(spare).is_empty(), "the spare was kept");
    f.engine.dispose_all().await;
}

#[tokio::test]
async fn per_call_calls_take_the_spare() {
    let f = fixture(|c| c.mode = KernelMode::PerCall);
    let first = pid_in(&f.engine, "s").await;
    let spare = ready_spare(&f.engine).await;
    assert_eq!(pid_in(&f.engine, "s").await, spare);
    assert!(eventually(PATIENCE, || group_members(first).is_empty()).await);
    assert!(eventually(PATIENCE, || group_members(spare).is_empty()).await);
    f.engine.dispose_all().await;
}

#[tokio::test]
async fn a_dead_kernel_is_replaced_by_the_spare() {
    let f = fixture(|_| {});
    let first = pid_in(&f.engine, "s").await;
    let spare = ready_spare(&f.engine).await;
    signal_pid(first, Signal::SIGKILL).unwrap();
    // Once its exit is collected the host knows it is dead: the next call is no race with the kill.
    assert!(eventually(PATIENCE, || reaped(first)).await);
    let result = eval_params(&f.engine, "s", json!({"cells": [{"code": "import os\nos.getpid()"}]})).await;
    assert!(result.text.starts_with(&spare.to_string()), "{}", result.text);
    assert!(result.text.contains("had died"), "the call is told: {}", result.text);
    f.engine.dispose_all().await;
}

#[tokio::test]
async fn spares_expire_and_dispose_leaves_nothing() {
    let f = fixture(|c| c.spare = SpareLimits { count: 1, idle: Some(Duration::from_millis(300)) });
    pid_in(&f.engine, "a").await;
    let spare = ready_spare(&f.engine).await;
    assert!(
        eventually(PATIENCE, || f.engine.spare_pids().is_empty() && group_members(spare).is_empty()).await,
        "an idle spare is shut down"
    );
    let g = fixture(|_| {});
    pid_in(&g.engine, "a").await;
    let spare = ready_spare(&g.engine).await;
    let kernels = g.engine.kernel_pids();
    g.engine.dispose_all().await;
    assert!(group_members(spare).is_empty(), "dispose_all stops spares");
    assert!(kernels.iter().all(|pid| group_members(*pid).is_empty()));
    f.engine.dispose_all().await;
}

#[tokio::test]
async fn spares_count_in_the_live_kernel_limit() {
    let f = fixture(|c| c.pool.max_kernels = 2);
    let a = pid_in(&f.engine, "a").await;
    let spare = ready_spare(&f.engine).await;
    // Session b takes the spare: two live kernels, no room for another spare.
    assert_eq!(pid_in(&f.engine, "b").await, spare);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(f.engine.spare_pids().is_empty());
    assert!(!group_members(a).is_empty(), "a spare never evicts a kernel in use");
    let g = fixture(|c| c.pool.max_kernels = 1);
    pid_in(&g.engine, "a").await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(g.engine.spare_pids().is_empty(), "no room, no spare");
    f.engine.dispose_all().await;
    g.engine.dispose_all().await;
}

#[tokio::test]
async fn prewarm_starts_the_first_kernel_and_off_means_off() {
    let f = fixture(|_| {});
    f.engine.prewarm().await;
    let spare = ready_spare(&f.engine).await;
    assert_eq!(pid_in(&f.engine, "first").await, spare);
    f.engine.dispose_all().await;
    let g = fixture(|c| c.spare = SpareLimits::OFF);
    g.engine.prewarm().await;
    pid_in(&g.engine, "a").await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(g.engine.spare_pids().is_empty());
    g.engine.dispose_all().await;
}
