//! The channel between host and kernel: output survives the kernel's death,
//! and user code cannot break the protocol or lose later output.

use crate::common;

use std::time::Duration;

use cellbox_kernels::kernel::{ExecEvent, Kernel, KernelError};
use common::{Ended, run, run_to_end, start};

fn died(ended: &Ended) -> String {
    match &ended.outcome {
        Err(error @ KernelError::Died { .. }) => error.to_string(),
        other => {
            panic!("expected the kernel to die, got {other:?}\nstdout: {}\nstderr: {}", ended.stdout, ended.stderr)
        }
    }
}

fn ok(ended: &Ended) {
    assert!(
        matches!(&ended.outcome, Ok(done) if done.status == cellbox_protocol::DoneStatus::Ok),
        "{:?}\nstdout: {}\nstderr: {}",
        ended.outcome,
        ended.stdout,
        ended.stderr
    );
}

#[tokio::test]
async fn output_written_before_a_segfault_arrives_then_the_cells_stack() {
    let kernel = start().await;
    let code = "import os, ctypes\nprint('flushed print', flush=True)\n\
                os.write(1, b'filler\\n' * 2000 + b'last words\\n'); ctypes.string_at(0)";
    let mut execution = kernel.execute(code).await.expect("request sent");
    let (mut stdout, mut stderr, mut dumps, mut message) = (String::new(), String::new(), Vec::new(), None);
    let limit = Duration::from_secs(60);
    while let Some(item) = tokio::time::timeout(limit, execution.next()).await.expect("the cell ends") {
        match item {
            Ok(ExecEvent::Stdout(text)) => stdout.push_str(&text),
            Ok(ExecEvent::Stderr(text)) => stderr.push_str(&text),
            Ok(ExecEvent::CrashDump(dump)) => dumps.push(dump),
            Ok(_) => {}
            Err(error @ KernelError::Died { .. }) => message = Some(error.to_string()),
            Err(error) => panic!("{error}"),
        }
    }
    let message = message.expect("the kernel died");
    assert_eq!(stdout.matches("filler\n").count(), 2000);
    assert!(stdout.starts_with("flushed print\n"), "{}", &stdout[..40]);
    assert!(stdout.ends_with("last words\n"));
    // Stderr has the cell's part of faulthandler's dump: its headline and the cell's frames.
    assert!(stderr.starts_with("Fatal Python error: Segmentation fault\n"), "{stderr}");
    let traceback = "Traceback (most recent call last):\n  File \"<cell-1>\", line 3, in <module>\n";
    assert!(stderr.contains(traceback), "{stderr}");
    assert!(!stderr.contains("cellbox_kernel") && !stderr.contains("_tick"), "no runner frame or thread: {stderr}");
    // The whole dump follows, once: every thread, the runner's frames included.
    assert_eq!(dumps.len(), 1, "{dumps:?}");
    assert!(dumps[0].contains("_tick") && dumps[0].contains("cellbox_kernel/execute.py"), "{}", dumps[0]);
    assert!(message.contains("SIGSEGV"), "{message}");
    assert!(message.contains("Segmentation fault"), "the message quotes the last lines: {message}");
    assert!(!message.contains("cellbox_kernel"), "{message}");
    assert!(!kernel.is_alive());
}

#[tokio::test]
async fn abort_shows_the_stack_and_names_sigabrt() {
    let kernel = start().await;
    let ended = run_to_end(&kernel, "import os\nprint('before abort')\nos.abort()").await;
    let message = died(&ended);
    assert_eq!(ended.stdout, "before abort\n");
    assert!(ended.stderr.contains("Fatal Python error: Aborted"), "{}", ended.stderr);
    assert!(message.contains("SIGABRT"), "{message}");
}

#[tokio::test]
async fn os_exit_after_prints_keeps_the_prints_and_names_the_code() {
    let kernel = start().await;
    let ended = run_to_end(&kernel, "import os, sys\nprint('one')\nprint('two', file=sys.stderr)\nos._exit(3)").await;
    let message = died(&ended);
    assert_eq!(ended.stdout, "one\n");
    assert_eq!(ended.stderr, "two\n");
    assert!(message.contains("exit code 3"), "{message}");
}

async fn later_print_arrives(kernel: &Kernel, note: &str) {
    let ended = run_to_end(kernel, "print('later')").await;
    ok(&ended);
    assert_eq!(ended.stdout, "later\n");
    assert!(ended.stderr.contains(note), "expected a note {note:?}: {}", ended.stderr);
}

#[tokio::test]
async fn closing_fd_1_loses_nothing_later_and_says_so() {
    let kernel = start().await;
    let ended = run_to_end(&kernel, "import os\nprint('before')\nos.close(1)\nprint('after')").await;
    ok(&ended);
    assert_eq!(ended.stdout, "before\nafter\n");
    assert!(ended.stderr.contains("fd 1 (stdout) had been closed"), "{}", ended.stderr);
    let ended = run_to_end(&kernel, "os.close(1); os.close(2)").await;
    ok(&ended);
    assert!(ended.stderr.contains("fd 2 (stderr) had been closed"), "{}", ended.stderr);
    let ended = run_to_end(&kernel, "import sys\nprint('later')\nprint('to stderr', file=sys.stderr)").await;
    assert_eq!((ended.stdout.as_str(), ended.stderr.as_str()), ("later\n", "to stderr\n"));
}

#[tokio::test]
async fn redirecting_fd_1_lasts_until_the_cell_ends() {
    let kernel = start().await;
    let code = "import os\nnull = os.open(os.devnull, os.O_WRONLY)\nos.dup2(null, 1)\nos.write(1, b'hidden\\n')";
    let ended = run_to_end(&kernel, code).await;
    ok(&ended);
    assert!(!ended.stdout.contains("hidden"));
    assert!(ended.stderr.contains("fd 1 (stdout) had been redirected"), "{}", ended.stderr);
    let ended = run_to_end(&kernel, "print('later')").await;
    assert_eq!(ended.stdout, "later\n");
}

#[tokio::test]
async fn sys_stdout_set_to_none_or_closed_comes_back() {
    let kernel = start().await;
    let ended = run_to_end(&kernel, "import sys\nprint('kept')\nsys.stdout = None").await;
    ok(&ended);
    assert_eq!(ended.stdout, "kept\n", "printed before the switch still arrives");
    later_print_arrives(&kernel, "sys.stdout was None").await;
    ok(&run_to_end(&kernel, "sys.stdout.close()").await);
    later_print_arrives(&kernel, "sys.stdout was closed").await;
    ok(&run_to_end(&kernel, "sys.stderr = None").await);
    let ended = run_to_end(&kernel, "print('err', file=sys.stderr)").await;
    assert!(ended.stderr.contains("sys.stderr was None") && ended.stderr.ends_with("err\n"), "{}", ended.stderr);
}

#[tokio::test]
async fn a_stream_the_user_set_on_purpose_stays_theirs() {
    let kernel = start().await;
    ok(&run_to_end(&kernel, "import io, sys\nbuffer = io.StringIO()\nsys.stdout = buffer").await);
    let ended = run_to_end(&kernel, "print('into the buffer')").await;
    ok(&ended);
    assert_eq!(ended.stdout, "");
    assert_eq!(ended.stderr, "");
    let output = run(&kernel, "sys.stdout = sys.__stdout__\nbuffer.getvalue()").await;
    assert_eq!(output.results(), vec!["'into the buffer\\n'"]);
}

#[tokio::test]
async fn closerange_cannot_cut_the_channel() {
    let kernel = start().await;
    let ended =
        run_to_end(&kernel, "import os\nos.closerange(3, 256)\nos.closerange(3, 65536)\nprint('still here')").await;
    ok(&ended);
    assert_eq!(ended.stdout, "still here\n");
    let output = run(&kernel, "6 * 7").await;
    assert_eq!(output.results(), vec!["42"]);
    assert!(kernel.is_alive());
}

#[tokio::test]
async fn a_forked_child_writes_output_and_exits_without_harm() {
    let kernel = start().await;
    let code = "import os\npid = os.fork()\nif pid == 0:\n    print('from the child')\n    os._exit(0)\n\
                os.waitpid(pid, 0)\nprint('from the parent')";
    let ended = run_to_end(&kernel, code).await;
    ok(&ended);
    assert_eq!(ended.stdout, "from the child\nfrom the parent\n");
    // A child that exits through the normal path (atexit, flushes) is harmless too.
    let code = "import sys\npid = os.fork()\nif pid == 0:\n    print('child exits')\n    sys.exit(0)\nos.waitpid(pid, 0)\n'parent'";
    let output = run(&kernel, code).await;
    assert_eq!(output.results(), vec!["'parent'"]);
    assert!(output.stdout().contains("child exits"), "{}", output.stdout());
    assert_eq!(run(&kernel, "1 + 1").await.results(), vec!["2"]);
}

/// A forked child's crash is its own: its stacks are on the cell's stderr (not
/// on the runner's closed diagnostics fd) and the kernel goes on.
#[tokio::test]
async fn a_forked_childs_crash_shows_on_stderr_and_the_kernel_lives() {
    let kernel = start().await;
    let code = "import os, ctypes\npid = os.fork()\nif pid == 0:\n    ctypes.string_at(0)\n\
                print('child ended by signal', os.waitpid(pid, 0)[1] & 0x7f)";
    let ended = run_to_end(&kernel, code).await;
    ok(&ended);
    assert_eq!(ended.stdout, "child ended by signal 11\n");
    assert!(ended.stderr.starts_with("Fatal Python error: Segmentation fault"), "{}", ended.stderr);
    assert!(ended.stderr.contains("File \"<cell-1>\", line 4 in <module>"), "{}", ended.stderr);
    assert_eq!(run(&kernel, "1 + 1").await.results(), vec!["2"]);
}

#[tokio::test]
async fn a_forked_child_cannot_write_a_frame() {
    let kernel = start().await;
    let code = r#"import os
forged = b''.join(
    b'{"type":"stdout","id":"r%d","data":"FORGED"}\n{"type":"done","id":"r%d","status":"ok","executionCount":99,"cancelled":false}\n' % (n, n)
    for n in range(1, 30)
)
pid = os.fork()
if pid == 0:
    for fd in range(3, 4096):
        try:
            os.write(fd, forged)
        except OSError:
            pass
    os._exit(0)
os.waitpid(pid, 0)
'parent done'"#;
    let output = run(&kernel, code).await;
    assert_eq!(output.results(), vec!["'parent done'"]);
    // The child may reach the output pipes (its bytes are output, shown as
    // written), never the frame channel.
    let stdout = output.stdout();
    assert_eq!(stdout.matches("FORGED").count(), stdout.matches(r#""data":"FORGED""#).count());
    assert!(!output.stderr().contains("FORGED") || output.stderr().contains(r#""data":"FORGED""#));
    assert_ne!(output.done.execution_count, 99);
    let next = run(&kernel, "print('next')").await;
    assert_eq!(next.stdout(), "next\n");
    assert_eq!(next.done.execution_count, 2);
}

#[tokio::test]
async fn multiprocessing_children_print_with_every_start_method() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("mp_helper.py"), "def hello(tag):\n    print('hello from', tag)\n").unwrap();
    let kernel = Kernel::start(common::options(dir.path())).await.unwrap();
    for method in ["fork", "spawn", "forkserver"] {
        let code = format!(
            "import multiprocessing, mp_helper\nctx = multiprocessing.get_context('{method}')\n\
             p = ctx.Process(target=mp_helper.hello, args=('{method}',))\np.start(); p.join()\nprint('exit', p.exitcode)"
        );
        let ended = run_to_end(&kernel, &code).await;
        ok(&ended);
        assert_eq!(ended.stdout, format!("hello from {method}\nexit 0\n"), "{method}: {}", ended.stderr);
    }
    assert_eq!(run(&kernel, "1 + 1").await.results(), vec!["2"]);
    kernel.shutdown().await;
}

#[tokio::test]
async fn atexit_handlers_and_signal_handlers_do_not_break_the_channel() {
    let kernel = start().await;
    let code = "import atexit, signal\natexit.register(print, 'bye')\nsignal.signal(signal.SIGTERM, lambda *a: None)\n\
                signal.signal(signal.SIGUSR1, lambda *a: print('usr1'))\nimport os\nos.kill(os.getpid(), signal.SIGUSR1)";
    let ended = run_to_end(&kernel, code).await;
    ok(&ended);
    assert_eq!(ended.stdout, "usr1\n");
    assert_eq!(run(&kernel, "2 + 2").await.results(), vec!["4"]);
    let exit = kernel.shutdown().await;
    assert!(exit.is_some());
}

#[tokio::test]
async fn code_outside_python_closing_the_channel_is_named_and_ends_the_kernel() {
    let kernel = start().await;
    let code =
        "import ctypes\nlibc = ctypes.CDLL(None)\nfor fd in range(3, 1100):\n    libc.close(fd)\nprint('closed')";
    let ended = run_to_end(&kernel, code).await;
    let message = died(&ended);
    assert!(message.contains("protocol channel was closed"), "{message}");
    assert_eq!(ended.stdout, "closed\n");
    assert!(!kernel.is_alive());
    assert!(matches!(kernel.execute("1").await, Err(KernelError::Died { .. } | KernelError::Closed)));
}

/// The events of one cell, in the order the host delivered them.
async fn events_of(kernel: &Kernel, code: &str) -> Vec<ExecEvent> {
    let mut execution = kernel.execute(code).await.expect("request sent");
    let mut events = Vec::new();
    while let Some(item) = tokio::time::timeout(common::PATIENCE, execution.next()).await.expect("the cell ends") {
        events.push(item.expect("the kernel lives"));
    }
    events
}

#[tokio::test]
async fn a_result_or_error_never_overtakes_the_prints_before_it() {
    // The runner holds a result (or error) frame back to send it with `done`,
    // and its output thread sends held frames and flushes Python's streams
    // while a cell runs. A hook after the result keeps the cell going while
    // that thread ticks, and a stream that takes a while to flush widens the
    // window between the two: the print must still arrive first.
    let kernel = start().await;
    let setup = "import sys, time, threading, posix\n\
                 get_ipython().events.register('post_run_cell', lambda result: time.sleep(0.2))\n\
                 class SlowStream:\n\
                 \x20   def __init__(self): self.parts, self.lock = [], threading.Lock()\n\
                 \x20   def write(self, text):\n\
                 \x20       with self.lock: self.parts.append(text)\n\
                 \x20       return len(text)\n\
                 \x20   def flush(self):\n\
                 \x20       with self.lock:\n\
                 \x20           if self.parts:\n\
                 \x20               time.sleep(0.05); posix.write(1, ''.join(self.parts).encode()); self.parts = []\n\
                 sys.stdout = SlowStream()";
    ok(&run_to_end(&kernel, setup).await);
    let result = (|e: &ExecEvent| matches!(e, ExecEvent::Result { .. })) as fn(&ExecEvent) -> bool;
    let error = (|e: &ExecEvent| matches!(e, ExecEvent::Error(_))) as fn(&ExecEvent) -> bool;
    for (code, is_end) in [("print('before')\n6 * 7", result), ("print('before')\n1 / 0", error)] {
        let events = events_of(&kernel, code).await;
        let printed = events.iter().position(|e| matches!(e, ExecEvent::Stdout(text) if text.contains("before")));
        let ended = events.iter().position(is_end);
        assert!(printed.is_some() && ended.is_some() && printed < ended, "{code}: {events:?}");
    }
}
