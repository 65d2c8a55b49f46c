//! Hangs: cells that cannot be interrupted, and threads that will not end.

use cellbox_engine::tool::CellStatus;

use super::harness::{HANG_SLACK, assert_has, harness, status};
use crate::common::group_members;

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
