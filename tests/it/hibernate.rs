//! Hibernation on real Python kernels: an idle session, the least recently
//! used one over the live-kernel limit, and every session at a stop are saved
//! to disk and stopped; the next call brings the variables back and says so,
//! naming what was not kept. A state folder carries sessions into a new
//! engine, `cellbox mcp` and `cellbox serve` across a restart. Kernels can
//! neither read nor plant anything in the folder, and keep no handle on it.

use crate::common;

use std::path::Path;
use std::time::Duration;

use cellbox_engine::tool::{EngineConfig, EvalParams};
use common::engine::{eval, eval_in, fixture};
use common::{PATIENCE, eventually, group_members};

/// A session worth keeping: data, a cell-defined function, an import, and
/// two things that cannot be saved.
const STATE: &str = "import os, json as j, threading\n\
                     x = 41\n\
                     big = bytes(10_000_000)\n\
                     def bump(v):\n    return v + 1\n\
                     handle = open(os.devnull)\n\
                     lock = threading.Lock()\n\
                     os.getpid()";

const CHECK: &str = "(bump(x), j.dumps([1]), len(big), 'handle' in dir(), os.getpid())";

fn pid_of(text: &str) -> u32 {
    text.lines().next().unwrap().trim().parse().unwrap_or_else(|_| panic!("not a pid: {text}"))
}

/// `(42, '[1]', 10000000, False, PID)`: the pid.
fn checked(text: &str) -> u32 {
    let line = text.lines().next().unwrap();
    assert!(line.starts_with("(42, '[1]', 10000000, False, "), "{text}");
    line.trim_end_matches(')').rsplit(", ").next().unwrap().parse().unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn an_idle_session_hibernates_and_wakes_with_its_variables_naming_what_was_not_kept() {
    let f = fixture(|c| c.pool.hibernate_after = Some(Duration::from_millis(300)));
    let pid = pid_of(&eval(&f.engine, STATE).await.text);
    assert!(eventually(PATIENCE, || f.engine.is_hibernated("s") && group_members(pid).is_empty()).await);
    let woken = eval(&f.engine, CHECK).await;
    assert_ne!(checked(&woken.text), pid, "a new kernel");
    for part in ["This session was hibernated (unused for ", "x, big", "bump", "not restored: ", "handle (", "lock ("] {
        assert!(woken.text.contains(part), "{part:?} missing from:\n{}", woken.text);
    }
    assert!(!f.engine.is_hibernated("s"));
    let again = eval(&f.engine, "x").await;
    assert!(!again.text.contains("hibernated"), "told once:\n{}", again.text);
    f.engine.dispose_all().await;
}

/// An engine of one live kernel: session a set `v = 1`, then session b's call hibernated it (`hibernate`
/// on) or stopped it (off).
async fn a_pushed_out(hibernate: bool) -> common::engine::Fixture {
    let f = fixture(|c| {
        c.pool.max_kernels = 1;
        c.hibernate = hibernate;
    });
    eval_in(&f.engine, "a", EvalParams::code("v = 1")).await;
    eval_in(&f.engine, "b", EvalParams::code("1")).await;
    assert_eq!(f.engine.is_hibernated("a"), hibernate);
    f
}

#[tokio::test(flavor = "multi_thread")]
async fn the_least_recently_used_session_hibernates_to_make_room_and_keeps_its_state() {
    let f = fixture(|c| c.pool.max_kernels = 1);
    eval_in(&f.engine, "a", EvalParams::code("v = 'kept in a'")).await;
    eval_in(&f.engine, "b", EvalParams::code("v = 'kept in b'")).await;
    assert!(f.engine.is_hibernated("a"));
    let a = eval_in(&f.engine, "a", EvalParams::code("v")).await;
    assert!(a.text.starts_with("'kept in a'\n"), "{}", a.text);
    assert!(a.text.contains("hibernated (to stay within 1 live kernels)"), "{}", a.text);
    let b = eval_in(&f.engine, "b", EvalParams::code("v")).await;
    assert!(b.text.starts_with("'kept in b'\n"), "{}", b.text);
    assert_eq!(f.engine.kernel_pids().len(), 1);
    f.engine.dispose_all().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_pool_whose_sessions_take_turns_keeps_a_spare_for_the_next_wake() {
    let f = fixture(|c| c.pool.max_kernels = 3);
    for session in ["a", "b", "c"] {
        eval_in(&f.engine, session, EvalParams::code(format!("v = {session:?}"))).await;
    }
    // Three live kernels and no room for a spare, as a spare never puts away a kernel in use...
    assert!(f.engine.spare_pids().is_empty() && !f.engine.is_hibernated("a"));
    // ...until the pool has had to: then b, the least recently used idle one, makes room for one.
    eval_in(&f.engine, "d", EvalParams::code("1")).await;
    assert!(f.engine.is_hibernated("a"));
    assert!(eventually(PATIENCE, || f.engine.is_hibernated("b")).await, "b was not put away");
    assert!(eventually(PATIENCE, || !f.engine.spare_pids().is_empty()).await, "no spare became ready");
    let spare = f.engine.spare_pids()[0];
    assert_eq!(f.engine.kernel_pids().len(), 2, "c and d live, the spare beside them");
    let a = eval_in(&f.engine, "a", EvalParams::code("import os\n(v, os.getpid())")).await;
    assert_eq!(a.text.lines().next().unwrap(), format!("('a', {spare})"), "{}", a.text);
    assert!(a.text.contains("woke now"), "{}", a.text);
    let b = eval_in(&f.engine, "b", EvalParams::code("v")).await;
    assert!(b.text.starts_with("'b'\n") && b.text.contains("a warm one kept ready"), "{}", b.text);
    f.engine.dispose_all().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn with_hibernation_off_an_evicted_session_loses_its_state_and_says_so() {
    let f = a_pushed_out(false).await;
    let a = eval_in(&f.engine, "a", EvalParams::code("'v' in dir()")).await;
    assert!(a.text.starts_with("False\n") && a.text.contains("its state was lost"), "{}", a.text);
    f.engine.dispose_all().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_reset_forgets_a_hibernated_session() {
    let f = a_pushed_out(true).await;
    // Counted as a kernel stopped: `eval_reset` says the session was restarted, not that nothing ran.
    assert_eq!(f.engine.reset_session("a").await, 1);
    assert!(!f.engine.is_hibernated("a"));
    assert_eq!(f.engine.reset_session("a").await, 0);
    let a = eval_in(&f.engine, "a", EvalParams::code("'v' in dir()")).await;
    assert!(a.text.starts_with("False\n") && !a.text.contains("hibernated"), "{}", a.text);
    f.engine.dispose_all().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_reset_cell_in_a_hibernated_session_starts_empty_without_waking_it() {
    for check in ["off", "syntax"] {
        let f = a_pushed_out(true).await;
        let params = common::engine::params(serde_json::json!({
            "check": check, "cells": [{"code": "'v' in dir()", "reset": true}]
        }));
        let a = eval_in(&f.engine, "a", params).await;
        assert!(a.text.starts_with("False\n"), "check {check}: {}", a.text);
        assert!(!f.engine.is_hibernated("a"));
        f.engine.dispose_all().await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_kernel_busy_at_the_stop_leaves_a_record_that_its_next_call_reports() {
    let state = tempfile::tempdir().unwrap();
    let first = fixture(keeping(state.path()));
    eval(&first.engine, "x = 1").await;
    let engine = first.engine.clone();
    let busy = tokio::spawn(async move { eval(&engine, "import time; time.sleep(30)").await });
    assert!(eventually(PATIENCE, || first.engine.load().kernels.busy == 1).await);
    // hibernate_all gives a running call 5 s, then records that the session could not be saved.
    assert_eq!(first.engine.hibernate_all("the test stopped it").await, 0);
    first.engine.dispose_all().await;
    let _ = busy.await;

    let next = restarted(first.dir.path(), state.path());
    assert!(next.engine.is_hibernated("s"));
    let after = eval(&next.engine, "'x' in dir()").await;
    assert!(after.text.starts_with("False\n"), "{}", after.text);
    assert!(
        after.text.contains("stopped without its variables being saved (the test stopped it, while a call"),
        "{}",
        after.text
    );
    next.engine.dispose_all().await;
}

fn keeping(state: &Path) -> impl FnOnce(&mut EngineConfig) {
    let state = state.to_path_buf();
    move |c| c.state_dir = Some(state)
}

/// A new engine on `first`'s working folder and `state` (a restart).
fn restarted(first: &Path, state: &Path) -> common::engine::Fixture {
    let (first, state) = (first.to_path_buf(), state.to_path_buf());
    fixture(move |c| {
        c.default_cwd = first;
        c.state_dir = Some(state);
    })
}

#[tokio::test(flavor = "multi_thread")]
async fn sessions_hibernated_into_a_state_folder_wake_in_the_next_engine() {
    let state = tempfile::tempdir().unwrap();
    let first = fixture(keeping(state.path()));
    let pid = pid_of(&eval(&first.engine, STATE).await.text);
    eval_in(&first.engine, "other", EvalParams::code("w = [1, 2, 3]")).await;
    assert_eq!(first.engine.hibernate_all("the test stopped it").await, 2);
    first.engine.dispose_all().await;
    assert!(group_members(pid).is_empty());

    let next = restarted(first.dir.path(), state.path());
    assert!(next.engine.is_hibernated("s") && next.engine.is_hibernated("other"));
    let woken = eval(&next.engine, CHECK).await;
    checked(&woken.text);
    assert!(woken.text.contains("hibernated (the test stopped it)"), "{}", woken.text);
    let other = eval_in(&next.engine, "other", EvalParams::code("sum(w)")).await;
    assert!(other.text.starts_with("6\n"), "{}", other.text);
    let left: Vec<_> =
        std::fs::read_dir(state.path().join("sessions")).unwrap().flatten().map(|e| e.file_name()).collect();
    assert!(left.iter().all(|name| !name.to_string_lossy().ends_with(".snap")), "woken files are removed: {left:?}");
    next.engine.dispose_all().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_damaged_or_hostile_record_says_what_was_lost_and_points_nowhere_else() {
    let state = tempfile::tempdir().unwrap();
    let first = fixture(keeping(state.path()));
    eval(&first.engine, "x = 1; y = 2").await;
    eval_in(&first.engine, "forged", EvalParams::code("z = 3")).await;
    assert_eq!(first.engine.hibernate_all("stopped").await, 2);
    first.engine.dispose_all().await;
    // Session s's file is cut short; session forged's record is edited to name a file outside the folder.
    let mut snaps = Vec::new();
    let records = state.path().join("sessions");
    for entry in std::fs::read_dir(&records).unwrap().flatten() {
        let path = entry.path();
        if path.extension().is_some_and(|e| e == "json") {
            let mut record: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
            if record["session"] == "forged" {
                record["file"] = "../../../../etc/hostname".into();
                std::fs::write(&path, record.to_string()).unwrap();
            } else {
                snaps.push(records.join(record["file"].as_str().unwrap()));
            }
        }
    }
    let [snap] = snaps.as_slice() else { panic!("{snaps:?}") };
    let bytes = std::fs::read(snap).unwrap();
    std::fs::write(snap, &bytes[..bytes.len() / 2]).unwrap();

    let next = restarted(first.dir.path(), state.path());
    assert!(!next.engine.is_hibernated("forged"), "a record that points outside the folder is set aside");
    assert!(std::fs::read_dir(&records).unwrap().flatten().any(|e| e.path().extension().is_some_and(|x| x == "bad")));
    let woken = eval(&next.engine, "'x' in dir()").await;
    assert!(woken.text.starts_with("False\n"), "{}", woken.text);
    for part in ["could not be brought back", "truncated", "It starts empty; lost: x, y."] {
        assert!(woken.text.contains(part), "{part:?} missing from:\n{}", woken.text);
    }
    next.engine.dispose_all().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn kernels_can_neither_reach_the_state_folder_nor_keep_a_handle_on_their_file() {
    let state = tempfile::tempdir().unwrap();
    let f = fixture(|c| {
        c.state_dir = Some(state.path().to_path_buf());
        c.pool.max_kernels = 1;
    });
    eval_in(&f.engine, "a", EvalParams::code("secret = 'a-only'")).await;
    eval_in(&f.engine, "b", EvalParams::code("1")).await; // a hibernates
    assert!(f.engine.is_hibernated("a"));
    let marker = state.path().join("planted.json");
    let code = format!(
        "import os\nstate = {state:?}\nseen = []\n\
         for attempt in (lambda: os.listdir(state),\n\
                         lambda: [open(os.path.join(state, n), 'rb').read() for n in os.listdir(state)],\n\
                         lambda: open({marker:?}, 'w').write('{{}}'),\n\
                         lambda: os.symlink('/etc/hostname', {marker:?})):\n    \
             try:\n        attempt(); seen.append('reached')\n    \
             except OSError as e:\n        seen.append(type(e).__name__)\n\
         seen",
        state = state.path().display().to_string(),
        marker = marker.display().to_string(),
    );
    let b = eval_in(&f.engine, "b", EvalParams::code(code.as_str())).await;
    assert!(!b.text.contains("reached"), "{}", b.text);
    assert!(!marker.exists() && std::fs::symlink_metadata(&marker).is_err());
    // Woken, a keeps no descriptor of the file it was restored from.
    let fds = "import os\n[os.readlink(f'/proc/self/fd/{n}') for n in os.listdir('/proc/self/fd') \
               if os.path.islink(f'/proc/self/fd/{n}')]";
    let a = eval_in(&f.engine, "a", EvalParams::code(format!("secret\n{fds}"))).await;
    assert!(a.text.contains("hibernated"), "{}", a.text);
    assert!(!a.text.contains(&state.path().display().to_string()), "{}", a.text);
    f.engine.dispose_all().await;
}

#[test]
fn one_process_at_a_time_holds_a_state_folder() {
    let state = tempfile::tempdir().unwrap();
    let held = cellbox_engine::session::hibernate::lock_state_dir(state.path()).unwrap();
    let error = cellbox_engine::session::hibernate::lock_state_dir(state.path()).unwrap_err();
    assert!(error.to_string().contains("is in use by another cellbox"), "{error}");
    drop(held);
    cellbox_engine::session::hibernate::lock_state_dir(state.path()).unwrap();
}

#[test]
fn cellbox_mcp_with_a_state_folder_keeps_sessions_across_a_restart() {
    use common::mcp::{RawServer, text};
    use serde_json::json;
    let (dir, state_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let state = state_dir.path().join("state");
    let start = || {
        let mut command = common::binary::cellbox(["mcp", "--spares", "0", "--cwd"]);
        command.arg(dir.path()).arg("--state-dir").arg(&state).env("CELLBOX_ARTIFACTS_DIR", dir.path().join("a"));
        RawServer::started(command)
    };
    // A state folder where kernels work is refused.
    let inside = common::binary::cellbox(["mcp", "--cwd"])
        .arg(dir.path())
        .arg("--state-dir")
        .arg(dir.path().join("s"))
        .output()
        .unwrap();
    assert_eq!(inside.status.code(), Some(2));
    assert!(
        common::binary::text(&inside.stderr).contains("overlaps the workspace"),
        "{}",
        common::binary::text(&inside.stderr)
    );
    let mut first = start();
    let set = first.eval(json!({"cells": [{"code": "x = 7"}], "session": "work"}));
    assert_eq!(set["isError"], false, "{set}");
    first.eval(json!({"cells": [{"code": "y = 8"}]}));
    // A second server on the same folder is refused while the first runs.
    let second = common::binary::cellbox(["mcp", "--state-dir"]).arg(&state).output().unwrap();
    assert_eq!(second.status.code(), Some(2));
    assert!(common::binary::text(&second.stderr).contains("in use by another cellbox"));
    assert!(first.terminate().success());

    let mut next = start();
    let work = text(&next.eval(json!({"cells": [{"code": "x * 6"}], "session": "work"})));
    assert!(work.starts_with("42\n") && work.contains("hibernated (cellbox mcp stopped)"), "{work}");
    let default = text(&next.eval(json!({"cells": [{"code": "y"}]})));
    assert!(default.starts_with("8\n"), "{default}");
}

#[tokio::test(flavor = "multi_thread")]
async fn cellbox_serve_with_a_state_folder_keeps_sessions_across_a_restart() {
    use common::serve::{follow_stderr, raw_session, spawn_eval, token_add};
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens.json");
    let token = token_add(&tokens, "alice");
    let root = dir.path().join("root");
    std::fs::create_dir(&root).unwrap();
    let start = || {
        let child = common::binary::cellbox(["serve", "--listen", "127.0.0.1:0", "--spares", "0", "--tokens"])
            .arg(&tokens)
            .arg("--root")
            .arg(&root)
            .arg("--state-dir")
            .arg(dir.path().join("state"))
            .env("CELLBOX_ARTIFACTS_DIR", dir.path().join("artifacts"))
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut child = KilledAtEnd(child);
        let (_lines, url) = follow_stderr(&mut child.0);
        (child, url)
    };
    let (mut first, url) = start();
    let headers = raw_session(&url, &token).await;
    let (status, _, body) = spawn_eval(&url, &headers, 2, "kept = 'across restarts'", Some("notes")).await.unwrap();
    assert_eq!(status, 200, "{body}");
    use cellbox_kernels::kernel::process::{Signal, signal_pid};
    signal_pid(first.0.id(), Signal::SIGTERM).unwrap();
    assert!(first.0.wait().unwrap().success());

    let (next, url) = start();
    let headers = raw_session(&url, &token).await;
    let (status, _, body) = spawn_eval(&url, &headers, 2, "kept", Some("notes")).await.unwrap();
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("'across restarts'") && body.contains("hibernated (the server stopped)"), "{body}");
    drop(next);
}

/// A server that a failed assertion must not leave running: killed when the test ends.
struct KilledAtEnd(std::process::Child);

impl Drop for KilledAtEnd {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_woken_session_keeps_the_settings_its_magics_made() {
    let f = fixture(|c| c.pool.max_kernels = 1);
    let setup = "%precision 2\n%xmode Minimal\n%config InteractiveShell.cache_size = 40\nv = 1/3";
    eval_in(&f.engine, "a", EvalParams::code(setup)).await;
    eval_in(&f.engine, "b", EvalParams::code("1")).await;
    assert!(f.engine.is_hibernated("a"));
    let a = eval_in(&f.engine, "a", EvalParams::code("v")).await;
    assert!(a.text.starts_with("0.33\n"), "{}", a.text);
    assert!(
        a.text.contains("with its settings (%config InteractiveShell.cache_size = 40, %precision 2, %xmode Minimal)"),
        "{}",
        a.text
    );
    let a = eval_in(&f.engine, "a", EvalParams::code("1/0")).await;
    assert!(a.text.contains("ZeroDivisionError: division by zero") && !a.text.contains("Traceback"), "{}", a.text);
    f.engine.dispose_all().await;
}
