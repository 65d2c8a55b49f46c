//! Concurrency: many owners and sessions at once, with kills from outside.

use std::sync::Arc;
use std::time::Duration;

use cellbox_engine::tool::{CallContext, EvalParams};
use cellbox_kernels::kernel::process::{Signal, signal_pid};

use super::harness::harness;
use crate::common::{PATIENCE, eventually, group_members, reaped};

#[tokio::test]
async fn concurrency_many_owners_on_one_session() {
    let h = Arc::new(harness());
    h.start("shared").await;
    h.run("shared", "count = 0", 10).await;
    let mut calls = Vec::new();
    for owner in 0..12 {
        let h = h.clone();
        calls.push(tokio::spawn(async move {
            let context = CallContext { session: "shared".into(), owner: format!("owner-{owner}") };
            let params = EvalParams::code(format!("print('owner {owner}')\ncount += 1"));
            let result = h.call(&params, &context, 20).await.unwrap();
            assert!(!result.is_error, "{}", result.text);
            assert_eq!(result.text, format!("owner {owner}\n"));
        }));
    }
    for call in calls {
        call.await.unwrap();
    }
    assert_eq!(h.run("shared", "count", 10).await.text, "12\n");
    let pid = h.engine.kernel_pids()[0];
    for owner in 0..12 {
        h.engine.dispose_owner(&format!("owner-{owner}")).await;
    }
    assert!(!group_members(pid).is_empty(), "the session's own owner still holds it");
    h.engine.dispose_owner("shared").await;
    assert!(group_members(pid).is_empty());
    Arc::into_inner(h).unwrap().finish().await;
}

#[tokio::test]
async fn concurrency_eight_sessions_with_random_kills() {
    let h = Arc::new(harness());
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let killer = {
        let (h, stop) = (h.clone(), stop.clone());
        tokio::spawn(async move {
            let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
            let mut kills = Vec::new();
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                tokio::time::sleep(Duration::from_millis(150)).await;
                h.note_groups();
                let pids = h.engine.kernel_pids();
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                if !pids.is_empty() {
                    let victim = pids[state as usize % pids.len()];
                    let _ = signal_pid(victim, Signal::SIGKILL);
                    kills.push(victim);
                }
            }
            kills
        })
    };
    let mut sessions = Vec::new();
    for session in 0..8 {
        let h = h.clone();
        sessions.push(tokio::spawn(async move {
            let name = format!("s{session}");
            for step in 0..8 {
                let code = format!("import time\nprint('{name} step {step}')\ntime.sleep(0.05)");
                let result = h.run(&name, &code, 20).await;
                if result.is_error {
                    assert!(result.text.contains("died"), "only kills fail a cell: {}", result.text);
                } else {
                    assert!(result.text.starts_with(&format!("{name} step {step}\n")), "{}", result.text);
                }
            }
        }));
    }
    for session in sessions {
        session.await.unwrap();
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let killed = killer.await.unwrap();
    assert!(!killed.is_empty(), "the test killed something");
    // The killer's last SIGKILL may land just before it stops: wait until the
    // host has collected every victim's exit, so the check below is not a
    // cell racing the kill.
    assert!(eventually(PATIENCE, || killed.iter().all(|pid| reaped(*pid))).await, "killed kernels were reaped");
    for session in 0..8 {
        h.next_call_works(&format!("s{session}")).await;
    }
    Arc::into_inner(h).unwrap().finish().await;
}
