//! The fault catalogue: one test per way user code (or the world around it)
//! can hurt a kernel. Every case checks the same four promises:
//!
//! 1. the host answers: no hang (each call runs under a deadline) and no panic;
//! 2. output written before the fault is in the result;
//! 3. the next call on the same session works;
//! 4. no process is left: every kernel group seen is empty at the end.
//!
//! The README's "Reliability" section lists the cases and what each guarantees.

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use cellbox::tool::{CallContext, CellStatus, EngineConfig, EvalEngine, EvalError, EvalParams, EvalResult};
use common::{PATIENCE, eventually, group_members, reaped};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// How long past a cell's own timeout a call may take before the host counts as hung:
/// the interrupt window (5 s) and the kill (< 1 s) fit many times over, so a
/// loaded machine is never the reason a call misses it.
const HANG_SLACK: Duration = PATIENCE;

struct Harness {
    engine: Arc<EvalEngine>,
    dir: tempfile::TempDir,
    /// Every kernel process group this test has seen.
    groups: Mutex<BTreeSet<u32>>,
}

fn harness() -> Harness {
    harness_with(|_, _| {})
}

fn harness_with(tweak: impl FnOnce(&mut EngineConfig, &Path)) -> Harness {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let mut config = EngineConfig::new(&work);
    config.python = Some(common::python().display().to_string());
    config.artifacts_dir = dir.path().join("artifacts");
    config.runner_cache_dir = Some(dir.path().join("runner-cache"));
    config.artifact_retention = None;
    // CELLBOX_SANDBOX=workspace-write (and the other CELLBOX_* sandbox
    // variables) run the whole catalogue inside the sandbox.
    config.sandbox = cellbox::sandbox::SandboxPolicy::from_env().expect("the CELLBOX_* sandbox variables are valid");
    tweak(&mut config, dir.path());
    Harness { engine: Arc::new(EvalEngine::new(config)), dir, groups: Mutex::default() }
}

impl Harness {
    fn note_groups(&self) {
        self.groups.lock().unwrap().extend(self.engine.kernel_pids());
    }

    /// One cell with `timeout` seconds, under a deadline that fails the test on a hang.
    async fn run(&self, session: &str, code: &str, timeout: u64) -> EvalResult {
        let params = EvalParams::from_json(json!({"cells": [{"code": code, "timeout": timeout}]})).unwrap();
        self.call(&params, &CallContext::new(session), timeout).await.expect("the call is accepted")
    }

    async fn call(&self, params: &EvalParams, context: &CallContext, timeout: u64) -> Result<EvalResult, EvalError> {
        self.note_groups();
        let deadline = Duration::from_secs(timeout) + HANG_SLACK;
        let answer = tokio::time::timeout(
            deadline,
            self.engine.eval(params, context, &CancellationToken::new(), &cellbox::tool::ignore_events),
        )
        .await
        .unwrap_or_else(|_| panic!("the host did not answer within {deadline:?}: {:?}", params));
        self.note_groups();
        answer
    }

    /// Start the session's kernel and return its pid (which is its group).
    async fn start(&self, session: &str) -> u32 {
        let result = self.run(session, "import os\nos.getpid()", 10).await;
        assert!(!result.is_error, "{}", result.text);
        result.text.lines().next().unwrap().parse().unwrap()
    }

    /// Promise 3: the session takes a new call, and prints arrive.
    async fn next_call_works(&self, session: &str) -> EvalResult {
        let result = self.next_call_answers(session).await;
        assert!(result.text.contains("still here\n42\n"), "prints do not arrive: {}", result.text);
        result
    }

    /// The session takes a new call and answers it (for cases where the user
    /// code itself sent its prints elsewhere).
    async fn next_call_answers(&self, session: &str) -> EvalResult {
        let result = self.run(session, "print('still', 'here')\n6 * 7", 10).await;
        assert!(!result.is_error, "the next call failed: {}", result.text);
        assert!(result.text.contains("42\n"), "{}", result.text);
        result
    }

    /// Promise 4: after disposal no process of any group seen is left.
    async fn finish(self) {
        self.note_groups();
        tokio::time::timeout(HANG_SLACK, self.engine.dispose_all()).await.expect("dispose_all answers");
        let groups: Vec<u32> = self.groups.lock().unwrap().iter().copied().collect();
        assert!(!groups.is_empty(), "the test saw a kernel");
        for group in groups {
            assert!(
                eventually(PATIENCE, || group_members(group).is_empty()).await,
                "process group {group} left behind: {:?}",
                group_members(group)
            );
        }
        assert!(self.engine.kernel_pids().is_empty());
    }
}

fn assert_has(result: &EvalResult, needle: &str) {
    assert!(result.text.contains(needle), "expected {needle:?} in:\n{}", result.text);
}

fn status(result: &EvalResult) -> CellStatus {
    result.cells[0].status
}

/// A cell that kills its kernel: the result has what it printed first and says the kernel died.
async fn crash_case(code: &str, how: &str) {
    let h = harness();
    let pid = h.start("s").await;
    let result = h.run("s", code, 10).await;
    assert_eq!(status(&result), CellStatus::Error, "{}", result.text);
    assert_has(&result, "before the crash");
    assert_has(&result, &format!("The Python kernel died during this cell ({how}"));
    assert!(eventually(PATIENCE, || group_members(pid).is_empty()).await);
    let next = h.next_call_works("s").await;
    assert_ne!(h.engine.kernel_pids(), vec![pid]);
    assert!(!next.text.contains("died"), "the death was reported once: {}", next.text);
    h.finish().await;
}

// ── crashes ─────────────────────────────────────────────────────────────

#[tokio::test]
async fn crash_os_exit() {
    crash_case("print('before the crash')\nimport os\nos._exit(3)", "exit code 3").await;
}

#[tokio::test]
async fn crash_segfault_after_writing() {
    // Flushed: Python text still in the 64 KiB stdout buffer when C code crashes
    // the process (at most 20 ms of it) cannot be saved; everything written to the fd is.
    crash_case(
        "print('before the crash', flush=True)\nimport ctypes\nctypes.string_at(0)",
        "killed by signal 11 (SIGSEGV)",
    )
    .await;
}

/// What a reader of the result sees of a segfault: faulthandler's headline
/// and the cell's frames as a cell's traceback shows them (with their lines),
/// nothing of the runner. The whole dump is in the call's full output.
#[tokio::test]
async fn crash_segfault_shows_the_cells_frames_and_keeps_the_whole_dump() {
    let h = harness();
    h.start("s").await; // cell 1
    let code = "import ctypes\ndef read(address):\n    return ctypes.string_at(address)\nread(0)";
    let result = h.run("s", code, 10).await;
    assert_eq!(status(&result), CellStatus::Error, "{}", result.text);
    assert!(
        result.text.starts_with(
            "Fatal Python error: Segmentation fault\n\nTraceback (most recent call last):\n  \
             File \"<cell-2>\", line 4, in <module>\n    read(0)\n  \
             File \"<cell-2>\", line 3, in read\n    return ctypes.string_at(address)\n  \
             File \""
        ),
        "{}",
        result.text
    );
    assert_has(&result, "ctypes/__init__.py\", line ");
    assert_has(&result, "The Python kernel died during this cell (killed by signal 11 (SIGSEGV))");
    assert_no_runner(&result.text);
    let full = whole_output(&h, &result);
    assert!(full.starts_with(&result.text[..result.text.find("The Python kernel died").unwrap()]), "{full}");
    assert!(full.contains("\n[cellbox: the kernel's whole crash dump"), "{full}");
    for runner in ["cellbox_kernel/execute.py", "runner.py", "_tick", "_watch_parent"] {
        assert!(full.contains(runner), "the whole dump has {runner:?}:\n{full}");
    }
    h.next_call_works("s").await;
    h.finish().await;
}

/// Threads the user's code started are shown (the crashing one first, from an
/// earlier cell's function with its line); the runner's own threads are not.
#[tokio::test]
async fn crash_in_a_users_thread_shows_the_users_threads_only() {
    let h = harness();
    let define = "import ctypes, threading, time\n\
                  def crash():\n    time.sleep(0.2)\n    ctypes.string_at(0)\n\
                  def idle():\n    while True:\n        time.sleep(0.01)";
    let defined = h.run("s", define, 10).await;
    assert_eq!(status(&defined), CellStatus::Ok, "{}", defined.text);
    let code = "threading.Thread(target=idle, daemon=True).start()\n\
                worker = threading.Thread(target=crash)\nworker.start()\nworker.join()";
    let result = h.run("s", code, 10).await;
    assert_eq!(status(&result), CellStatus::Error, "{}", result.text);
    assert_has(
        &result,
        "Traceback (most recent call last):\n  File \"<cell-1>\", line 4, in crash\n    ctypes.string_at(0)\n",
    );
    assert_has(&result, " (most recent call last):\n  File \"<cell-1>\", line 7, in idle\n    time.sleep(0.01)\n");
    assert_has(&result, " (most recent call last):\n  File \"<cell-2>\", line 4, in <module>\n    worker.join()\n");
    assert_eq!(result.text.matches("(most recent call last)").count(), 3, "three threads: {}", result.text);
    assert_no_runner(&result.text);
    h.next_call_works("s").await;
    h.finish().await;
}

/// What only the runner's files and threads name, and faulthandler's own order of frames.
const RUNNER_MARKS: [&str; 6] =
    ["cellbox_kernel", "runner.py", "_tick", "_watch_parent", "_read_requests", "most recent call first"];

/// Nothing of the runner.
fn assert_no_runner(text: &str) {
    for mark in RUNNER_MARKS {
        assert!(!text.contains(mark), "{mark:?} in:\n{text}");
    }
}

/// The call's whole saved output.
fn whole_output(h: &Harness, result: &EvalResult) -> String {
    let uri = result.artifact.as_deref().expect("the output is saved");
    let (text, _) = h.engine.read_artifact(uri, 0, 1 << 20).unwrap();
    text
}

#[tokio::test]
async fn crash_channel_closed_by_c_code_is_explained() {
    let code = "print('before the crash', flush=True)\nimport ctypes\nlibc = ctypes.CDLL(None)\n\
                for fd in range(3, 1100):\n    libc.close(fd)";
    let h = harness();
    h.start("s").await;
    let result = h.run("s", code, 10).await;
    assert_eq!(status(&result), CellStatus::Error, "{}", result.text);
    assert_has(&result, "before the crash");
    assert_has(&result, "The Python kernel died during this cell");
    assert_has(&result, "protocol channel was closed");
    h.next_call_works("s").await;
    h.finish().await;
}

#[tokio::test]
async fn crash_os_abort() {
    crash_case("print('before the crash')\nimport os\nos.abort()", "killed by signal 6").await;
}

#[tokio::test]
async fn crash_sys_exit_keeps_the_kernel() {
    let h = harness();
    let pid = h.start("s").await;
    h.run("s", "kept = 'yes'", 10).await;
    let result = h.run("s", "print('before exit')\nimport sys\nsys.exit(5)", 10).await;
    assert_eq!(status(&result), CellStatus::Error);
    assert_has(&result, "before exit");
    assert_eq!(result.cells[0].error.as_ref().unwrap().ename, "SystemExit");
    assert_eq!(h.run("s", "kept", 10).await.text, "'yes'\n", "state survives");
    assert_eq!(h.engine.kernel_pids(), vec![pid]);
    h.next_call_works("s").await;
    h.finish().await;
}

#[tokio::test]
async fn crash_sigkill_from_outside_during_a_cell() {
    let h = harness();
    let pid = h.start("s").await;
    // The kill comes once the cell has printed (it says so with a file), not after a guess at how long that takes.
    let printed = h.dir.path().join("work/printed");
    let code = format!(
        "import sys, time\nprint('before the crash')\nsys.stdout.flush()\nopen({:?}, 'w').close()\ntime.sleep(30)",
        printed.display().to_string()
    );
    let killer = tokio::spawn(async move {
        assert!(eventually(PATIENCE, || printed.exists()).await, "the cell never reached its sleep");
        kill(Pid::from_raw(pid as i32), Signal::SIGKILL).unwrap();
    });
    let result = h.run("s", &code, 30).await;
    killer.await.unwrap();
    assert_eq!(status(&result), CellStatus::Error, "{}", result.text);
    assert_has(&result, "before the crash");
    assert_has(&result, "died during this cell (killed by signal 9");
    h.next_call_works("s").await;
    h.finish().await;
}

#[tokio::test]
async fn crash_sigkill_from_outside_between_cells() {
    let h = harness();
    let pid = h.start("s").await;
    kill(Pid::from_raw(pid as i32), Signal::SIGKILL).unwrap();
    assert!(eventually(PATIENCE, || group_members(pid).is_empty()).await);
    let next = h.next_call_works("s").await;
    assert!(next.text.contains("previous kernel had died (killed by signal 9"), "{}", next.text);
    h.finish().await;
}

/// The kernel dies after it took the next request but before it began the
/// cell (as when the OOM killer strikes during a call): the cell never ran, so
/// it is not blamed; it runs on a fresh kernel, which the result mentions.
#[tokio::test]
async fn crash_after_the_request_before_the_cell_began() {
    let h = harness();
    let pid = h.start("s").await;
    // From now on this runner dies on taking a request, before it acknowledges it.
    let trap = "import os, signal, sys\n\
                runner = sys.modules['cellbox_kernel.main'].Kernel\n\
                runner.handle = lambda self, request: os.kill(os.getpid(), signal.SIGKILL)";
    let armed = h.run("s", trap, 10).await;
    assert_eq!(status(&armed), CellStatus::Ok, "{}", armed.text);
    let next = h.next_call_works("s").await;
    assert_eq!(status(&next), CellStatus::Ok, "{}", next.text);
    assert!(next.text.contains("previous kernel had died (killed by signal 9"), "{}", next.text);
    assert!(!next.text.contains("during this cell"), "{}", next.text);
    assert!(!h.engine.kernel_pids().contains(&pid));
    h.finish().await;
}

#[tokio::test]
async fn crash_memory_error_keeps_the_kernel() {
    let h = harness();
    let pid = h.start("s").await;
    let result = h.run("s", "print('before the error')\nx = bytearray(1 << 60)", 10).await;
    assert_eq!(status(&result), CellStatus::Error);
    assert_has(&result, "before the error");
    assert_eq!(result.cells[0].error.as_ref().unwrap().ename, "MemoryError");
    assert_eq!(h.engine.kernel_pids(), vec![pid]);
    h.next_call_works("s").await;
    h.finish().await;
}

#[tokio::test]
async fn crash_real_out_of_memory_under_rlimit_as() {
    let h = harness();
    h.start("s").await;
    // 200 MB above what the kernel maps now; then allocate until it runs out.
    let code = "import resource, sys\n\
                size = int(open('/proc/self/status').read().split('VmSize:')[1].split()[0]) * 1024\n\
                resource.setrlimit(resource.RLIMIT_AS, (size + 200 * 2**20, resource.RLIM_INFINITY))\n\
                print('before the allocation'); sys.stdout.flush()\n\
                hog = []\n\
                while True:\n    hog.append(b'x' * 2**20)";
    let result = h.run("s", code, 30).await;
    assert_eq!(status(&result), CellStatus::Error, "{}", result.text);
    assert_has(&result, "before the allocation");
    let error = result.cells[0].error.as_ref().unwrap();
    assert!(error.ename == "MemoryError" || error.ename == "KernelDied", "{error:?}");
    h.run("s", "hog = None", 10).await;
    h.next_call_works("s").await;
    h.finish().await;
}

// ── hangs ───────────────────────────────────────────────────────────────

/// A cell that cannot be interrupted is killed by the ladder, with what it printed.
async fn stuck_case(code: &str) {
    let h = harness();
    let pid = h.start("s").await;
    // The call answering at all (within HANG_SLACK of the 1 s budget) is the promise; how fast is bench/'s business.
    let result = h.run("s", code, 1).await;
    assert_eq!(status(&result), CellStatus::Killed, "{}", result.text);
    assert_has(&result, "before the hang");
    assert_has(&result, "the kernel has been killed and will be recreated on the next call");
    assert!(group_members(pid).is_empty(), "the stuck kernel is gone when the call returns");
    h.next_call_works("s").await;
    h.finish().await;
}

#[tokio::test]
async fn hang_c_code_holding_the_gil() {
    // PyDLL keeps the GIL through the call: no Python code (not even the
    // runner's own threads) runs until it returns; with SIGINT ignored the
    // sleep is not cut short either.
    stuck_case(
        "import ctypes, signal, sys\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n\
         print('before the hang'); sys.stdout.flush()\nctypes.PyDLL(None).sleep(100)",
    )
    .await;
}

#[tokio::test]
async fn hang_sigint_ignored() {
    stuck_case(
        "import signal, sys\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nprint('before the hang'); \
         sys.stdout.flush()\nwhile True: pass",
    )
    .await;
}

#[tokio::test]
async fn hang_user_signal_handlers_swallow_sigint_and_sigterm() {
    stuck_case(
        "import signal, sys, time\nsignal.signal(signal.SIGTERM, lambda *a: print('term swallowed'))\n\
         signal.signal(signal.SIGINT, lambda *a: print('interrupt swallowed'))\n\
         print('before the hang'); sys.stdout.flush()\nwhile True: time.sleep(0.01)",
    )
    .await;
}

#[tokio::test]
async fn hang_deadlocked_thread_is_interrupted() {
    let h = harness();
    let pid = h.start("s").await;
    h.run("s", "kept = 1", 10).await;
    let code = "import threading\nlock = threading.Lock()\nlock.acquire()\n\
                t = threading.Thread(target=lock.acquire, daemon=True); t.start()\n\
                print('before the hang')\nlock.acquire()";
    let result = h.run("s", code, 1).await;
    assert_eq!(status(&result), CellStatus::Timeout, "{}", result.text);
    assert_has(&result, "before the hang");
    assert_has(&result, "KeyboardInterrupt");
    assert_eq!(h.engine.kernel_pids(), vec![pid], "the kernel survives");
    assert_eq!(h.run("s", "kept", 10).await.text, "1\n");
    h.next_call_works("s").await;
    h.finish().await;
}

#[tokio::test]
async fn hang_non_daemon_thread_at_reset_and_exit() {
    let h = harness();
    let pid = h.start("s").await;
    let code =
        "import threading, time\nthreading.Thread(target=time.sleep, args=(1000,)).start()\nprint('before the reset')";
    assert_has(&h.run("s", code, 10).await, "before the reset");
    // The thread sleeps for 1000 s: a reset that answers at all did not wait for it.
    assert_eq!(tokio::time::timeout(HANG_SLACK, h.engine.reset_session("s")).await.expect("reset answers"), 1);
    assert!(group_members(pid).is_empty());
    h.next_call_works("s").await;
    h.run("s", code, 10).await;
    h.finish().await;
}

// ── floods ──────────────────────────────────────────────────────────────

#[tokio::test]
async fn flood_100_mb() {
    let h = harness();
    h.start("s").await;
    let code = "import sys\nline = 'x' * 99 + '\\n'\nw = sys.stdout.write\nfor _ in range(1_000_000): w(line)\n\
                print('the end')";
    let result = h.run("s", code, 120).await;
    assert!(!result.is_error, "{}", &result.text[..result.text.len().min(1000)]);
    assert!(result.truncated);
    assert!(result.text.len() < 60 * 1024);
    assert!(result.text.trim_end().ends_with("the end"));
    let (_, size) = h.engine.read_artifact(result.artifact.as_ref().unwrap(), 0, 1).unwrap();
    assert_eq!(size, 100_000_000 + 8);
    h.next_call_works("s").await;
    h.finish().await;
}

#[tokio::test]
async fn flood_10_mb_single_line() {
    let h = harness();
    h.start("s").await;
    let result = h.run("s", "import sys\nsys.stdout.write('y' * 10_000_000 + '\\n')\nprint('next line')", 60).await;
    assert!(!result.is_error);
    assert!(result.truncated);
    let uri = result.artifact.clone().unwrap();
    let lines: Vec<&str> = result.text.lines().collect();
    assert!(lines[0].starts_with("yyy") && lines[0].contains("chars omitted"));
    assert_eq!(lines[1], "next line");
    assert!(lines[2].contains(&uri), "{}", lines[2]);
    let (_, size) = h.engine.read_artifact(&uri, 0, 1).unwrap();
    assert_eq!(size, 10_000_001 + 10);
    h.next_call_works("s").await;
    h.finish().await;
}

#[tokio::test]
async fn flood_binary_and_invalid_utf8() {
    let h = harness();
    h.start("s").await;
    let code = "import os, sys\nos.write(1, bytes(range(256)) + b'\\n')\nsys.stdout.buffer.write(b'\\xff\\xfe half \\xe2\\x82\\n')\n\
                sys.stdout.flush()\nos.write(2, b'\\x80err\\n')\nprint('text after')";
    let result = h.run("s", code, 10).await;
    assert!(!result.is_error, "{}", result.text);
    assert_has(&result, "\u{fffd}\u{fffd} half \u{fffd}\n");
    assert_has(&result, "\u{fffd}err\n");
    assert_has(&result, "text after");
    h.next_call_works("s").await;
    h.finish().await;
}

#[tokio::test]
async fn flood_a_million_tiny_writes() {
    let h = harness();
    h.start("s").await;
    let code = "import sys\nw = sys.stdout.write\nfor i in range(1_000_000): w('.' if i % 1000 else '\\n')";
    let result = h.run("s", code, 60).await;
    assert!(!result.is_error);
    let (text, size) = h.engine.read_artifact(result.artifact.as_ref().unwrap(), 0, 2_000_000).unwrap();
    assert_eq!(size, 1_000_000);
    assert_eq!(text.matches('.').count(), 999_000);
    h.next_call_works("s").await;
    h.finish().await;
}

#[tokio::test]
async fn flood_fifty_threads_printing_at_once() {
    let h = harness();
    h.start("s").await;
    let code = "import sys, threading\n\
                def talk(n):\n    for i in range(1000): sys.stdout.write(f't{n}-{i}\\n')\n\
                threads = [threading.Thread(target=talk, args=(n,)) for n in range(50)]\n\
                for t in threads: t.start()\n\
                for t in threads: t.join()\nprint('all joined')";
    let result = h.run("s", code, 60).await;
    assert!(!result.is_error, "{}", result.text);
    let (text, _) = h.engine.read_artifact(result.artifact.as_ref().unwrap(), 0, 10_000_000).unwrap();
    let lines: BTreeSet<&str> = text.lines().collect();
    assert_eq!(lines.len(), 50 * 1000 + 1, "every line whole and present once");
    assert!(lines.contains("t49-999") && lines.contains("all joined"));
    h.next_call_works("s").await;
    h.finish().await;
}

#[tokio::test]
async fn flood_output_after_the_cell_ends_arrives_in_the_next() {
    let h = harness();
    h.start("s").await;
    // Both write once the test opens the gate (after the cell ended), then say so with a file.
    let work = h.dir.path().join("work");
    let (go, thread_done, child_done) = (work.join("go"), work.join("thread-done"), work.join("child-done"));
    let code = format!(
        "import subprocess, threading\n\
         def late():\n{gate}    print('late from a thread', flush=True)\n    open({thread_done:?}, 'w').close()\n\
         threading.Thread(target=late).start()\n\
         subprocess.Popen(['sh', '-c', 'while [ ! -e \"$1\" ]; do sleep 0.02; done; echo late from a child; : > \"$2\"', \
         'sh', {go:?}, {child_done:?}])\nprint('cell done')",
        gate = common::gate(&go).lines().map(|line| format!("    {line}\n")).collect::<String>(),
        thread_done = thread_done.display().to_string(),
        go = go.display().to_string(),
        child_done = child_done.display().to_string(),
    );
    let result = h.run("s", &code, 10).await;
    assert_eq!(result.text, "cell done\n");
    std::fs::write(&go, "").unwrap();
    assert!(eventually(PATIENCE, || thread_done.exists() && child_done.exists()).await, "the late writers wrote");
    let next = h.next_call_works("s").await;
    assert!(next.text.contains("late from a thread\n") && next.text.contains("late from a child\n"), "{}", next.text);
    h.finish().await;
}

// ── channel hazards ─────────────────────────────────────────────────────

#[tokio::test]
async fn channel_os_close_1() {
    let h = harness();
    let pid = h.start("s").await;
    let result =
        h.run("s", "import os, sys\nprint('before the close'); sys.stdout.flush()\nos.close(1)\n1 + 1", 10).await;
    assert_has(&result, "before the close");
    assert_has(&result, "2\n");
    assert_eq!(h.engine.kernel_pids(), vec![pid], "the kernel survives");
    h.next_call_works("s").await;
    h.finish().await;
}

#[tokio::test]
async fn channel_os_dup2_onto_1_and_2() {
    let h = harness();
    let pid = h.start("s").await;
    let code = "import os, sys\nprint('before the dup2'); sys.stdout.flush()\n\
                null = os.open(os.devnull, os.O_WRONLY)\nos.dup2(null, 1)\nos.dup2(null, 2)\n'result still arrives'";
    let result = h.run("s", code, 10).await;
    assert_has(&result, "before the dup2");
    assert_has(&result, "'result still arrives'");
    assert_eq!(h.engine.kernel_pids(), vec![pid]);
    h.next_call_answers("s").await; // the user sent fd 1/2 (or sys.stdout) away on purpose
    h.finish().await;
}

#[tokio::test]
async fn channel_sys_stdout_none() {
    let h = harness();
    let pid = h.start("s").await;
    let result = h.run("s", "import sys\nprint('before')\nsys.stdout = None\nprint('vanishes')\n'value'", 10).await;
    assert!(!result.is_error, "{}", result.text);
    assert_has(&result, "before\n");
    assert_has(&result, "'value'");
    assert_eq!(h.engine.kernel_pids(), vec![pid]);
    h.next_call_answers("s").await; // the user sent fd 1/2 (or sys.stdout) away on purpose
    h.finish().await;
}

#[tokio::test]
async fn channel_os_closerange() {
    let h = harness();
    let pid = h.start("s").await;
    h.run("s", "kept = 'yes'", 10).await;
    let result =
        h.run("s", "import os, sys\nprint('before the close'); sys.stdout.flush()\nos.closerange(3, 256)", 10).await;
    assert_has(&result, "before the close");
    assert_eq!(h.run("s", "kept", 10).await.text, "'yes'\n", "the session keeps its kernel and state");
    assert_eq!(h.engine.kernel_pids(), vec![pid]);
    h.next_call_works("s").await;
    h.finish().await;
}

#[tokio::test]
async fn channel_os_fork_child() {
    let h = harness();
    let pid = h.start("s").await;
    let code = "import os, sys\nprint('before the fork'); sys.stdout.flush()\nchild = os.fork()\n\
                if child == 0:\n    print('from the child'); sys.stdout.flush(); os._exit(0)\n\
                os.waitpid(child, 0)\nprint('parent after the child')";
    let result = h.run("s", code, 10).await;
    assert!(!result.is_error, "{}", result.text);
    assert_has(&result, "before the fork\n");
    assert_has(&result, "from the child\n");
    assert_has(&result, "parent after the child\n");
    assert_eq!(h.engine.kernel_pids(), vec![pid]);
    h.next_call_works("s").await;
    h.finish().await;
}

#[tokio::test]
async fn channel_os_fork_child_that_returns_into_the_runner() {
    let h = harness();
    let pid = h.start("s").await;
    // The child does not exit: it falls back into the cell's end, like a forgotten `os._exit`.
    let code = "import os, time\nprint('before the fork', flush=True)\nchild = os.fork()\n\
                if child: time.sleep(0.5)\nprint('pid', os.getpid() == child)";
    let result = h.run("s", code, 10).await;
    assert_has(&result, "before the fork\n");
    assert_has(&result, "pid False\n");
    assert_eq!(h.engine.kernel_pids(), vec![pid]);
    for _ in 0..3 {
        h.next_call_works("s").await;
    }
    h.finish().await;
}

#[tokio::test]
async fn channel_multiprocessing_children_print() {
    let h = harness();
    let pid = h.start("s").await;
    let code = "import multiprocessing as mp, sys\nprint('before the children'); sys.stdout.flush()\n\
                for method in ('fork', 'spawn', 'forkserver'):\n\
                \x20   p = mp.get_context(method).Process(target=print, args=(f'from a {method} child',))\n\
                \x20   p.start(); p.join()\n\
                \x20   print(method, 'exit', p.exitcode, flush=True)";
    let result = h.run("s", code, 60).await;
    assert!(!result.is_error, "{}", result.text);
    assert_has(&result, "before the children");
    for method in ["fork", "spawn", "forkserver"] {
        assert_has(&result, &format!("from a {method} child\n"));
        assert_has(&result, &format!("{method} exit 0\n"));
    }
    assert_eq!(h.engine.kernel_pids(), vec![pid]);
    h.next_call_works("s").await;
    h.finish().await;
}

#[tokio::test]
async fn channel_atexit_handlers_do_not_hold_shutdown() {
    let h = harness();
    let pid = h.start("s").await;
    let code = "import atexit, time\natexit.register(print, 'atexit ran')\natexit.register(time.sleep, 1000)\nprint('registered')";
    assert_has(&h.run("s", code, 10).await, "registered");
    // The handler sleeps for 1000 s: a reset that answers at all did not wait for it.
    tokio::time::timeout(HANG_SLACK, h.engine.reset_session("s")).await.expect("reset answers");
    assert!(group_members(pid).is_empty());
    h.next_call_works("s").await;
    h.finish().await;
}

// ── stdin ───────────────────────────────────────────────────────────────

async fn stdin_case(code: &str, expect: &str) {
    let h = harness();
    let pid = h.start("s").await;
    let result = h.run("s", &format!("print('before reading')\n{code}"), 5).await;
    assert_has(&result, "before reading");
    assert_has(&result, expect);
    assert_eq!(h.engine.kernel_pids(), vec![pid]);
    h.next_call_works("s").await;
    h.finish().await;
}

#[tokio::test]
async fn stdin_input_fails_at_once() {
    stdin_case("input('name? ')", "StdinNotSupportedError").await;
}

#[tokio::test]
async fn stdin_sys_stdin_read_is_empty() {
    stdin_case("import sys\nrepr(sys.stdin.read())", "''").await;
}

#[tokio::test]
async fn stdin_os_read_0_is_empty() {
    stdin_case("import os\nos.read(0, 10)", "b''").await;
}

// ── environment ─────────────────────────────────────────────────────────

fn runner_folder(h: &Harness) -> PathBuf {
    let cache = h.dir.path().join("runner-cache");
    std::fs::read_dir(&cache).unwrap().flatten().map(|e| e.path()).find(|p| p.is_dir()).expect("the runner folder")
}

#[tokio::test]
async fn environment_runner_file_deleted_between_calls() {
    let h = harness();
    h.start("s").await;
    let folder = runner_folder(&h);
    std::fs::remove_dir_all(&folder).unwrap();
    h.next_call_works("s").await;
    h.engine.reset_session("s").await;
    h.next_call_works("s").await;
    assert!(folder.join("runner.py").is_file(), "put back for the new kernel");
    h.finish().await;
}

#[tokio::test]
async fn environment_runner_file_modified_between_calls() {
    let h = harness();
    h.start("s").await;
    let main = runner_folder(&h).join("cellbox_kernel/main.py");
    let original = std::fs::read(&main).unwrap();
    // Same length, so only a content check can notice.
    let mut broken = b"raise SystemExit(9)\n".to_vec();
    broken.resize(original.len(), b'#');
    std::fs::write(&main, &broken).unwrap();
    h.next_call_works("s").await;
    h.engine.reset_session("s").await;
    h.next_call_works("s").await;
    assert_eq!(std::fs::read(&main).unwrap(), original);
    h.finish().await;
}

#[tokio::test]
async fn environment_cwd_deleted_during_a_session() {
    let h = harness();
    let pid = h.start("s").await;
    let work = h.dir.path().join("work");
    if h.engine.config().sandbox.mode == cellbox::sandbox::SandboxMode::Off {
        let result = h
            .run("s", "import os, shutil\nprint('before the delete')\nshutil.rmtree(os.getcwd())\nos.getcwd()", 10)
            .await;
        assert_has(&result, "before the delete");
        assert_has(&result, "FileNotFoundError");
    } else {
        // In the sandbox a cell cannot remove the workspace folder itself
        // (that is a write to its parent); the world around it still can.
        let code = "import os\nprint('before the delete')\ntry:\n    os.rmdir(os.getcwd())\nexcept OSError as e:\n    print(type(e).__name__)";
        let result = h.run("s", code, 10).await;
        assert_has(&result, "before the delete\nPermissionError");
        std::fs::remove_dir_all(&work).unwrap();
    }
    let error = h.call(&EvalParams::code("1"), &CallContext::new("s"), 10).await.unwrap_err();
    assert!(matches!(error, EvalError::InvalidCwd(_)), "{error}");
    assert!(error.to_string().contains(&work.display().to_string()), "{error}");
    std::fs::create_dir(&work).unwrap();
    h.next_call_works("s").await;
    assert_eq!(h.engine.kernel_pids(), vec![pid]);
    h.finish().await;
}

#[tokio::test]
async fn environment_artifacts_folder_not_writable() {
    // A path under a regular file cannot be created, even by root.
    let h = harness_with(|config, dir| {
        std::fs::write(dir.join("a-file"), "").unwrap();
        config.artifacts_dir = dir.join("a-file/artifacts");
    });
    h.start("s").await;
    let result = h.run("s", "print('before'); print('x' * 100)", 10).await;
    assert!(!result.is_error, "{}", result.text);
    assert_has(&result, "before\n");
    assert!(result.artifact.is_none());
    assert_has(&result, "The full output could not be saved");
    h.next_call_works("s").await;
    h.finish().await;
}

#[tokio::test]
async fn environment_artifacts_on_a_full_tmpfs() {
    let mount_point = tempfile::tempdir().unwrap();
    let mounted = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=1m", "tmpfs"])
        .arg(mount_point.path())
        .output();
    match mounted {
        Ok(out) if out.status.success() => {}
        Ok(out) => {
            eprintln!("skipped: cannot mount a tmpfs here ({})", String::from_utf8_lossy(&out.stderr).trim());
            return;
        }
        Err(e) => {
            eprintln!("skipped: cannot run mount ({e})");
            return;
        }
    }
    struct Unmount(PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = std::process::Command::new("umount").arg("-l").arg(&self.0).status();
        }
    }
    let _unmount = Unmount(mount_point.path().to_path_buf());
    let artifacts = mount_point.path().to_path_buf();
    let h = harness_with(|config, _| config.artifacts_dir = artifacts);
    h.start("s").await;
    let code =
        "print('before the flood')\nfor i in range(30_000): print(f'{i:06d}', 'z' * 93)\nprint('after the flood')";
    let result = h.run("s", code, 60).await;
    assert!(!result.is_error, "{}", &result.text[..result.text.len().min(500)]);
    assert!(result.text.starts_with("before the flood\n"));
    assert!(result.text.contains("after the flood\n"), "the text is whole even when the disk is not");
    assert_has(&result, "The full output could not be saved");
    h.next_call_works("s").await;
    h.finish().await;
}

// ── concurrency ─────────────────────────────────────────────────────────

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
                    let _ = kill(Pid::from_raw(victim as i32), Signal::SIGKILL);
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
