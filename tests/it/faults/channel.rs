//! Channel hazards: user code that closes, redirects or forks the kernel's output.

use super::harness::{HANG_SLACK, assert_has, harness};
use crate::common::group_members;

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
