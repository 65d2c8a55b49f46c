//! Crashes: the kernel dies during a cell, or between cells.

use cellbox_engine::tool::{CellStatus, EvalResult};
use cellbox_kernels::kernel::process::{Signal, signal_pid};

use super::harness::{Harness, assert_has, harness, status};
use crate::common::{PATIENCE, eventually, group_members};

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
        signal_pid(pid, Signal::SIGKILL).unwrap();
    });
    let result = h.run("s", &code, 30).await;
    killer.await.unwrap();
    assert_eq!(status(&result), CellStatus::Error, "{}", result.text);
    assert_has(&result, "before the crash");
    assert_has(&result, "died during this cell (killed by signal 9");
    h.next_call_works("s").await;
    h.finish().await;
}

/// A cell that kills its kernel before writing anything: no output tells the
/// host it began, only the runner's started page (Linux) or `started` frame.
#[tokio::test]
async fn crash_before_any_output_is_the_cells_doing() {
    let h = harness();
    let pid = h.start("s").await;
    let result = h.run("s", "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)", 10).await;
    assert_eq!(status(&result), CellStatus::Error, "{}", result.text);
    assert_has(&result, "died during this cell (killed by signal 9");
    assert!(!result.text.contains("previous kernel had died"), "not taken for a death before it: {}", result.text);
    assert!(!h.engine.kernel_pids().contains(&pid));
    h.next_call_works("s").await;
    h.finish().await;
}

#[tokio::test]
async fn crash_sigkill_from_outside_between_cells() {
    let h = harness();
    let pid = h.start("s").await;
    signal_pid(pid, Signal::SIGKILL).unwrap();
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
