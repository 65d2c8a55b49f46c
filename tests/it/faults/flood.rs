//! Floods: more output, or stranger output, than a cell should write.

use std::collections::BTreeSet;

use super::harness::{assert_has, harness};
use crate::common;
use crate::common::{PATIENCE, eventually};

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
