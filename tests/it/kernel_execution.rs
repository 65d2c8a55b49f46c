//! Cell semantics through the real runner: frames, results, tracebacks,
//! capture, stdin, odd values, and the errors that must not kill the kernel.

use crate::common;

use cellbox_kernels::kernel::ExecEvent;
use cellbox_protocol::DoneStatus;
use common::{run, start};
use serde_json::json;

#[tokio::test]
async fn every_frame_type_arrives_in_order() {
    let kernel = start().await;
    let mut execution = kernel
        .execute("import sys\nprint('out')\nprint('err', file=sys.stderr)\ndisplay({'k': 1})\nraise ValueError('boom')")
        .await
        .unwrap();
    let mut kinds = Vec::new();
    while let Some(event) = execution.next().await {
        kinds.push(match event.unwrap() {
            ExecEvent::Started => "started",
            ExecEvent::Stdout(_) => "stdout",
            ExecEvent::Stderr(_) => "stderr",
            ExecEvent::Display { .. } => "display",
            ExecEvent::Result { .. } => "result",
            ExecEvent::Error(_) => "error",
            ExecEvent::Done(_) => "done",
            ExecEvent::Completeness(_) => "completeness",
            ExecEvent::Checked(_) => "checked",
            ExecEvent::Budget(_) => "budget",
            ExecEvent::CrashDump(_) => "crash dump",
            ExecEvent::Snapshot(_) => "snapshot",
        });
    }
    assert_eq!(kinds, ["started", "stdout", "stderr", "display", "error", "done"]);
    let output = run(&kernel, "40 + 2").await;
    assert_eq!(output.results(), ["42"]);
}

#[tokio::test]
async fn last_expression_is_the_result_unless_none_or_semicolon() {
    let kernel = start().await;
    assert_eq!(run(&kernel, "x = 5\nx * 2").await.results(), ["10"]);
    assert!(run(&kernel, "x * 2;").await.results().is_empty());
    assert!(run(&kernel, "x * 2 ;  # quiet").await.results().is_empty());
    assert!(run(&kernel, "None").await.results().is_empty());
    assert_eq!(run(&kernel, "y = 1; y + 1").await.results(), ["2"], "two statements on one line");
    assert_eq!(run(&kernel, "'a;b'").await.results(), ["'a;b'"], "a ; inside a string is not a suppressor");
    assert_eq!(run(&kernel, "_").await.results(), ["'a;b'"], "_ holds the last result");
    assert!(run(&kernel, "if True:\n    x\n").await.results().is_empty(), "only a top-level expression");
}

#[tokio::test]
async fn top_level_await_works() {
    let kernel = start().await;
    let output =
        run(&kernel, "import asyncio\nawait asyncio.sleep(0.01)\nasync def f():\n    return 7\nawait f()").await;
    assert_eq!(output.results(), ["7"]);
}

#[tokio::test]
async fn tracebacks_show_cell_source_and_hide_the_runner() {
    let kernel = start().await;
    run(&kernel, "def helper(v):\n    return 1 / v\n").await;
    let output = run(&kernel, "value = 0\nhelper(value)").await;
    assert_eq!(output.done.status, DoneStatus::Error);
    let error = output.errors()[0].clone();
    assert_eq!(error.ename, "ZeroDivisionError");
    let text = error.traceback.concat();
    assert!(text.contains("File \"<cell-2>\", line 2"), "{text}");
    assert!(text.contains("helper(value)"), "{text}");
    assert!(text.contains("File \"<cell-1>\", line 2, in helper"), "{text}");
    assert!(text.contains("return 1 / v"), "source of an earlier cell: {text}");
    assert!(!text.contains("cellbox_kernel"), "runner frames leak: {text}");

    let syntax = run(&kernel, "x = (1,\ny = 2").await;
    let error = syntax.errors()[0].clone();
    assert_eq!(error.ename, "SyntaxError");
    let text = error.traceback.concat();
    assert!(text.contains("<cell-3>") && text.contains('^'), "{text}");
}

#[tokio::test]
async fn fatal_python_errors_are_reported_and_the_kernel_survives() {
    let kernel = start().await;
    run(&kernel, "kept = 'yes'").await;
    for (code, ename) in [
        ("import sys; sys.exit(3)", "SystemExit"),
        ("raise KeyboardInterrupt", "KeyboardInterrupt"),
        ("def f(): return f()\nf()", "RecursionError"),
        ("raise MemoryError('pretend')", "MemoryError"),
    ] {
        let output = run(&kernel, code).await;
        assert_eq!(output.errors()[0].ename, ename, "{code}");
        assert!(!output.done.cancelled, "{code}: no SIGINT was sent");
        assert!(kernel.is_alive());
    }
    assert_eq!(run(&kernel, "kept").await.results(), ["'yes'"]);
}

#[tokio::test]
async fn a_print_comes_before_a_child_started_on_the_first_import_of_subprocess() {
    let kernel = start().await;
    // The runner imports `subprocess` only when a cell does; its flush before
    // each child is put in place then. The print stays in Python's buffer
    // (no newline, no flush) unless that flush runs.
    let fresh = run(&kernel, "import sys\n'subprocess' in sys.modules").await;
    assert_eq!(fresh.results(), ["False"], "a kernel starts without subprocess");
    let code = "import subprocess, sys\nprint('parent', end='')\nsubprocess.run(['echo', 'child'])";
    let output = run(&kernel, code).await;
    assert!(output.is_ok(), "{:?}", output.errors());
    assert_eq!(output.stdout(), "parentchild\n");
    // The order above could also come from the output thread's flush (every 20 ms): the patch
    // itself must be in place.
    let patched = run(&kernel, "subprocess.Popen._execute_child.__module__").await;
    assert_eq!(patched.results(), ["'cellbox_kernel.main'"]);
}

#[tokio::test]
async fn captures_every_writer_on_both_streams() {
    let kernel = start().await;
    let code = r#"
import ctypes, os, subprocess, sys
libc = ctypes.CDLL(None)
print("print-out")
sys.stdout.write("write-out\n")
os.write(1, b"oswrite-out\n")
os.write(2, b"oswrite-err\n")
libc.write(1, b"c-out\n", 6)
libc.write(2, b"c-err\n", 6)
libc.printf(b"printf-out\n"); libc.fflush(None)
os.system("echo system-out; echo system-err >&2")
subprocess.run(["sh", "-c", "echo sub-out; echo sub-err >&2"])
print("last-out", end="")
"#;
    let output = run(&kernel, code).await;
    let out = output.stdout();
    let err = output.stderr();
    for expected in
        ["print-out", "write-out", "oswrite-out", "c-out", "printf-out", "system-out", "sub-out", "last-out"]
    {
        assert!(out.contains(expected), "{expected} missing from stdout: {out:?}");
    }
    for expected in ["oswrite-err", "c-err", "system-err", "sub-err"] {
        assert!(err.contains(expected), "{expected} missing from stderr: {err:?}");
    }
    let first = out.find("print-out").unwrap();
    assert!(first < out.find("sub-out").unwrap() && out.find("sub-out").unwrap() < out.find("last-out").unwrap());
    let next = run(&kernel, "pass").await;
    assert!(next.events.is_empty(), "output of the previous cell arrived late: {:?}", next.events);
}

#[tokio::test]
async fn prints_and_displays_keep_their_order() {
    let kernel = start().await;
    let output = run(&kernel, "for i in range(3):\n    print(i)\n    display(i)").await;
    let order: Vec<String> = output
        .events
        .iter()
        .map(|e| match e {
            ExecEvent::Stdout(t) => format!("out:{}", t.trim()),
            ExecEvent::Display { bundle, .. } => {
                format!("display:{}", bundle["text/plain"].as_str().unwrap())
            }
            other => format!("{other:?}"),
        })
        .collect();
    assert_eq!(order, ["out:0", "display:0", "out:1", "display:1", "out:2", "display:2"]);
}

#[tokio::test]
async fn invalid_utf8_and_lone_surrogates_never_break_frames() {
    let kernel = start().await;
    let output = run(&kernel, "import os\nos.write(1, b'bad \\xff\\xfe bytes\\n')\nprint('\\udc80')\n'\\udc81'").await;
    assert!(output.stdout().contains("bad \u{fffd}\u{fffd} bytes"), "{:?}", output.stdout());
    assert!(output.stdout().contains("\\udc80"));
    assert_eq!(output.results().len(), 1);
    assert!(output.is_ok());
}

#[tokio::test]
async fn values_json_cannot_carry_still_arrive() {
    let kernel = start().await;
    let output =
        run(&kernel, "display({'nan': float('nan'), 'inf': float('-inf'), 'b': b'\\x00\\xff', 'o': object()})").await;
    let bundle = output.displays()[0].clone();
    let data = &bundle["application/json"];
    assert_eq!(data["nan"], json!("nan"));
    assert_eq!(data["inf"], json!("-inf"));
    assert!(data["o"].as_str().unwrap().starts_with("<object object"));
    assert!(bundle["text/plain"].as_str().unwrap().contains("nan"));
}

#[tokio::test]
async fn stdin_is_an_empty_source_and_input_fails_at_once() {
    let kernel = start().await;
    // A read that waited for input would never end: a cell that ends at all did not wait.
    let output =
        tokio::time::timeout(common::PATIENCE, run(&kernel, "input('name? ')")).await.expect("input() returns");
    let error = output.errors()[0].clone();
    assert_eq!(error.ename, "StdinNotSupportedError");
    assert!(error.evalue.contains("not supported"), "{}", error.evalue);
    let output = run(&kernel, "import sys, subprocess\nprint(repr(sys.stdin.read()))\nprint(subprocess.run(['cat'], capture_output=True).stdout)\ntry:\n    input()\nexcept EOFError:\n    print('eof')").await;
    assert_eq!(output.stdout(), "''\nb''\neof\n");
}

#[tokio::test]
async fn execution_count_counts_user_cells_only() {
    let kernel = start().await;
    assert_eq!(run(&kernel, "1").await.done.execution_count, 1, "init and prelude do not count");
    assert_eq!(run(&kernel, "1/0").await.done.execution_count, 2, "failed cells count");
}

#[tokio::test]
async fn output_between_cells_is_delivered_with_the_next_one() {
    let kernel = start().await;
    // The thread prints once the first cell is over (the test opens the gate), then says so with a file.
    let dir = tempfile::tempdir().unwrap();
    let (go, printed) = (dir.path().join("go"), dir.path().join("printed"));
    let code = format!(
        "import threading\ndef late():\n{}    print('late', flush=True)\n    open({:?}, 'w').close()\n\
         threading.Thread(target=late).start()",
        common::gate(&go).lines().map(|line| format!("    {line}\n")).collect::<String>(),
        printed.display().to_string()
    );
    assert_eq!(run(&kernel, &code).await.stdout(), "");
    std::fs::write(&go, "").unwrap();
    assert!(common::eventually(common::PATIENCE, || printed.exists()).await, "the thread printed");
    assert_eq!(run(&kernel, "pass").await.stdout(), "late\n");
}

#[tokio::test]
async fn prelude_helpers_are_present() {
    let kernel = start().await;
    let output = run(&kernel, "[callable(f) for f in (display, env, read, write, log, phase)]").await;
    assert_eq!(output.results(), ["[True, True, True, True, True, True]"]);
}

#[tokio::test]
async fn memory_a_cell_freed_goes_back_to_the_system_before_the_next_cell() {
    if !cfg!(target_os = "linux") {
        return; // malloc_trim is glibc's
    }
    let kernel = start().await;
    if run(&kernel, "import ctypes\nhasattr(ctypes.CDLL(None), 'mallinfo2')").await.results() != ["True"] {
        return; // not glibc 2.33 or later: nothing is trimmed
    }
    // 100 MB of 1 kB blocks come from malloc's heap; every thousandth kept holds it in place.
    let freed = "blocks = [bytes(1000) for _ in range(100_000)]\nkept = blocks[::1000]\ndel blocks";
    let resident = "import os\nint(open('/proc/self/statm').read().split()[1]) * os.sysconf('SC_PAGE_SIZE') >> 20";
    // Twice: the second time takes the pieces the first trim gave back, and frees them again.
    for round in 1..=2 {
        run(&kernel, freed).await;
        let mib: u64 = run(&kernel, resident).await.results()[0].parse().unwrap();
        assert!(mib < 60, "{mib} MiB resident after a cell freed 100 MB of its 100-odd (round {round})");
    }
    assert_eq!(run(&kernel, "len(kept)").await.results(), ["100"]);
    // The runner keeps its statm open between cells. A cell that closes it and
    // puts a file of its own at that number keeps its file, and trims go on.
    let swap = "import os\nmine = None\nfor fd in os.listdir('/proc/self/fd'):\n    try:\n        \
                linked = os.readlink('/proc/self/fd/' + fd)\n    except OSError:\n        continue\n    \
                if linked.endswith('/statm'):\n        os.close(int(fd))\n        \
                import tempfile\n        held = tempfile.TemporaryFile()\n        \
                held.write(b'not a statm line')\n        held.flush()\n        mine = held.fileno()\n        \
                assert mine == int(fd), (mine, fd)\nmine is not None";
    assert_eq!(run(&kernel, swap).await.results(), ["True"]);
    run(&kernel, freed).await;
    let mib: u64 = run(&kernel, resident).await.results()[0].parse().unwrap();
    assert!(mib < 60, "{mib} MiB resident after a cell freed 100 MB with the statm fd taken");
    assert_eq!(run(&kernel, "os.pread(mine, 100, 0)").await.results(), ["b'not a statm line'"]);
}
