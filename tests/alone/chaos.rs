//! A bounded soak: random cells (prints, errors, displays, sleeps, big output)
//! and random faults (crashes, kills from outside, timeouts, resets) across
//! several sessions and owners at once, checking after every call that the
//! host answered, that a cell which finished kept its output, and at the end
//! that every session still works, no process is left and the host's memory
//! stayed flat.
//!
//! `CELLBOX_CHAOS_SECS` sets the duration (default 20); `CELLBOX_CHAOS_SEED`
//! replays a run's choices (the seed is printed at the start). Timing between
//! the workers is not replayed, only what each of them chooses to do.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use cellbox_engine::notebook::HistoryLimits;
use cellbox_engine::tool::{CallContext, CellStatus, EngineConfig, EvalEngine, EvalParams, EvalResult, ignore_events};
use cellbox_kernels::kernel::process::{Signal, signal_pid};
use common::{PATIENCE, eventually, group_members, reaped};
use serde_json::json;
use tokio_util::sync::CancellationToken;

const SESSIONS: usize = 3;
const OWNERS_PER_SESSION: usize = 2;
const WORKERS: usize = 4;
/// Past a cell's own timeout: the interrupt window and the kill fit many times
/// over, so a loaded machine is never the reason a call misses it.
const HANG_SLACK: Duration = PATIENCE;
/// How much the test process's resident memory may grow between the end of
/// the warm-up and the end of the run.
const RSS_GROWTH_LIMIT_KIB: u64 = 64 * 1024;

/// xorshift64*: small, seedable, good enough to pick actions.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Action {
    Print,
    Error,
    Display,
    Sleep,
    BigOutput,
    Crash,
    Segfault,
    Timeout,
    Stuck,
    ResetCell,
    ResetSession,
}

/// Weighted: mostly ordinary cells, with faults mixed in.
const MENU: &[(Action, u64)] = &[
    (Action::Print, 30),
    (Action::Error, 10),
    (Action::Display, 10),
    (Action::Sleep, 8),
    (Action::BigOutput, 4),
    (Action::Crash, 4),
    (Action::Segfault, 4),
    (Action::Timeout, 4),
    (Action::Stuck, 1),
    (Action::ResetCell, 3),
    (Action::ResetSession, 3),
];

fn pick(rng: &mut Rng) -> Action {
    let total: u64 = MENU.iter().map(|(_, w)| w).sum();
    let mut roll = rng.below(total);
    for (action, weight) in MENU {
        if roll < *weight {
            return *action;
        }
        roll -= weight;
    }
    unreachable!()
}

fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

struct Soak {
    engine: EvalEngine,
    groups: Mutex<BTreeSet<u32>>,
    counts: Mutex<BTreeMap<Action, usize>>,
    /// The kernels the killer sent SIGKILL to.
    killed_from_outside: Mutex<Vec<u32>>,
}

impl Soak {
    fn note_groups(&self) {
        self.groups.lock().unwrap().extend(self.engine.kernel_pids());
    }

    async fn call(&self, params: EvalParams, context: &CallContext, timeout: u64) -> EvalResult {
        self.note_groups();
        let deadline = Duration::from_secs(timeout) + HANG_SLACK;
        let result = tokio::time::timeout(
            deadline,
            self.engine.eval(&params, context, &CancellationToken::new(), &ignore_events),
        )
        .await
        .unwrap_or_else(|_| panic!("the host did not answer within {deadline:?}"))
        .expect("the call is accepted");
        self.note_groups();
        result
    }
}

/// One action on one session; checks what must hold whatever else happened meanwhile.
async fn act(soak: &Soak, rng: &mut Rng, worker: usize, step: usize) {
    let session = rng.below(SESSIONS as u64) as usize;
    let owner = rng.below(OWNERS_PER_SESSION as u64);
    let context = CallContext { session: format!("chaos-{session}"), owner: format!("chaos-{session}-owner-{owner}") };
    let action = pick(rng);
    *soak.counts.lock().unwrap().entry(action).or_default() += 1;
    let marker = format!("w{worker}-s{step}");
    let (code, timeout) = match action {
        Action::Print => (format!("for i in range({}): print('{marker}', i)", 1 + rng.below(50)), 10),
        Action::Error => (format!("print('{marker}')\nraise ValueError('{marker}')"), 10),
        Action::Display => (format!("print('{marker}')\ndisplay({{'marker': '{marker}'}})"), 10),
        Action::Sleep => {
            (format!("import time\nprint('{marker}')\ntime.sleep({})", rng.below(300) as f64 / 1000.0), 10)
        }
        Action::BigOutput => (format!("print('{marker}')\nfor i in range(200_000): print(i, 'x' * 40)"), 60),
        Action::Crash => (format!("print('{marker}')\nimport os\nos._exit(1)"), 10),
        Action::Segfault => (format!("print('{marker}')\nimport ctypes\nctypes.string_at(0)"), 10),
        Action::Timeout => (format!("import time\nprint('{marker}')\ntime.sleep(5)"), 1),
        Action::Stuck => (
            format!("import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nprint('{marker}')\nwhile True: pass"),
            1,
        ),
        Action::ResetCell => (format!("print('{marker}')"), 10),
        Action::ResetSession => {
            tokio::time::timeout(HANG_SLACK, soak.engine.reset_session(&context.session)).await.expect("reset answers");
            return;
        }
    };
    let params = EvalParams::from_json(
        json!({"cells": [{"code": code, "timeout": timeout, "reset": action == Action::ResetCell}]}),
    )
    .unwrap();
    let result = soak.call(params, &context, timeout).await;
    let status = result.cells[0].status;
    let died = result.text.contains("died during this cell");
    let expected = match action {
        Action::Print | Action::Display | Action::Sleep | Action::BigOutput | Action::ResetCell => CellStatus::Ok,
        Action::Error | Action::Crash | Action::Segfault => CellStatus::Error,
        Action::Timeout => CellStatus::Timeout,
        Action::Stuck => CellStatus::Killed,
        Action::ResetSession => unreachable!(),
    };
    // A kill from outside (or a timeout that finds the kernel dead) may turn any cell into an error.
    let external = died && !matches!(action, Action::Crash | Action::Segfault);
    // A cell's timeout also bounds its wait for a kernel that another owner's
    // call holds: a short-timeout cell queued behind a long one times out unrun.
    let queued = status == CellStatus::Timeout && result.text.contains("while waiting for the kernel");
    if queued {
        return;
    }
    assert!(
        status == expected || external,
        "{action:?} on {} ended {status:?}: {}",
        context.session,
        &result.text[..result.text.len().min(2000)]
    );
    if status == CellStatus::Ok {
        assert!(result.text.contains(&marker), "{action:?} lost its output: {}", result.text);
    }
    match action {
        Action::Error if !external => {
            assert_eq!(result.cells[0].error.as_ref().unwrap().ename, "ValueError", "{}", result.text);
            assert!(result.text.contains(&marker));
        }
        Action::Display if !external => {
            assert_eq!(result.json[0].value, json!({"marker": marker}));
        }
        Action::BigOutput if !external => {
            assert!(result.truncated && result.text.len() < 60 * 1024);
            let (_, size) = soak.engine.read_artifact(result.artifact.as_ref().unwrap(), 0, 1).unwrap();
            assert!(size > 8_000_000, "the artifact holds it all ({size} bytes)");
        }
        Action::Crash | Action::Segfault => assert!(died, "{}", result.text),
        _ => {}
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chaos() {
    let _alone = crate::ALONE.lock().await;
    let seed: u64 = match std::env::var("CELLBOX_CHAOS_SEED") {
        Ok(text) => text.parse().expect("CELLBOX_CHAOS_SEED is a number"),
        Err(_) => std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64,
    };
    let seconds: u64 = std::env::var("CELLBOX_CHAOS_SECS").ok().and_then(|v| v.parse().ok()).unwrap_or(20);
    println!("chaos: seed {seed} for {seconds} s (replay with CELLBOX_CHAOS_SEED={seed})");

    let dir = tempfile::tempdir().unwrap();
    let mut config = EngineConfig::new(dir.path());
    config.python = Some(common::python().display().to_string());
    config.artifacts_dir = dir.path().join("artifacts");
    config.runner_cache_dir = Some(dir.path().join("runner-cache"));
    config.artifact_retention = None;
    // The notebook history is a cache bounded by design (64 MiB a session by
    // default, tested in tests/it/notebook.rs); kept small here so that the soak
    // measures everything else staying flat.
    config.history =
        HistoryLimits { cell_output_bytes: 16 << 10, session_output_bytes: 256 << 10, ..HistoryLimits::default() };
    let soak = Arc::new(Soak {
        engine: EvalEngine::new(config),
        groups: Mutex::default(),
        counts: Mutex::default(),
        killed_from_outside: Mutex::default(),
    });
    let started = Instant::now();
    let run_for = Duration::from_secs(seconds);
    let stop = Arc::new(AtomicBool::new(false));

    let killer = {
        let (soak, stop) = (soak.clone(), stop.clone());
        let mut rng = Rng(seed ^ 0x05ee_d0fc_4a05);
        tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                tokio::time::sleep(Duration::from_millis(500 + rng.below(1500))).await;
                soak.note_groups();
                let pids = soak.engine.kernel_pids();
                if !pids.is_empty() && !stop.load(Ordering::Relaxed) {
                    let victim = pids[rng.below(pids.len() as u64) as usize];
                    let _ = signal_pid(victim, Signal::SIGKILL);
                    soak.killed_from_outside.lock().unwrap().push(victim);
                }
            }
        })
    };

    let mut warm_rss = None;
    let mut workers = Vec::new();
    for worker in 0..WORKERS {
        let soak = soak.clone();
        let mut rng = Rng(seed.wrapping_add(worker as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
        workers.push(tokio::spawn(async move {
            let mut step = 0;
            while started.elapsed() < run_for {
                act(&soak, &mut rng, worker, step).await;
                step += 1;
            }
            step
        }));
    }
    // The first quarter warms up allocators and caches; growth is measured after it.
    let mut peak_rss = 0;
    while workers.iter().any(|w| !w.is_finished()) {
        tokio::time::sleep(Duration::from_millis(250)).await;
        let now = rss_kib();
        peak_rss = peak_rss.max(now);
        if warm_rss.is_none() && started.elapsed() >= run_for / 4 {
            warm_rss = Some(now);
        }
    }
    let mut calls = 0;
    for worker in workers {
        calls += worker.await.unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    killer.await.unwrap();
    // The killer's last SIGKILL may land just before it stops: wait until the
    // host has collected every victim's exit, so the checks below are not
    // cells racing a kill.
    let killed = soak.killed_from_outside.lock().unwrap().clone();
    assert!(eventually(PATIENCE, || killed.iter().all(|pid| reaped(*pid))).await, "killed kernels were reaped");

    for session in 0..SESSIONS {
        let context = CallContext::new(format!("chaos-{session}"));
        let result = soak.call(EvalParams::code("print('after the storm')\n6 * 7"), &context, 10).await;
        assert!(result.text.contains("after the storm\n42\n"), "{}", result.text);
    }
    let end_rss = rss_kib();
    let warm = warm_rss.unwrap_or(end_rss);
    println!(
        "chaos: {calls} calls, {} kills from outside, actions {:?}; test process RSS {} MiB after warm-up, {} MiB at \
         the end, {} MiB peak",
        soak.killed_from_outside.lock().unwrap().len(),
        soak.counts.lock().unwrap(),
        warm / 1024,
        end_rss / 1024,
        peak_rss / 1024
    );
    assert!(end_rss.saturating_sub(warm) < RSS_GROWTH_LIMIT_KIB, "host memory grew from {warm} KiB to {end_rss} KiB");

    soak.note_groups();
    soak.engine.dispose_all().await;
    let groups: Vec<u32> = soak.groups.lock().unwrap().iter().copied().collect();
    for group in groups {
        assert!(eventually(PATIENCE, || group_members(group).is_empty()).await, "process group {group} left behind");
    }
}
