//! `cellbox repl` in a real pseudo-terminal (rexpect): multi-line input,
//! Ctrl-C on a busy cell, history, and leaving no process behind.
//!
//! Unix only: Windows has no pseudo-terminal for rexpect to drive.
#![cfg(unix)]

use crate::common;

use std::path::Path;
use std::process::Command;

use rexpect::session::{PtySession, spawn_command};

/// `cellbox repl ARGS --cwd HOME` with HOME its home, state and artifacts, uncoloured.
fn repl_command(args: &[&str], home: &Path) -> Command {
    let mut command = common::binary::cellbox(["repl"]);
    command
        .args(args)
        .arg("--cwd")
        .arg(home)
        .env("HOME", home)
        .env("XDG_STATE_HOME", home.join("state"))
        .env("CELLBOX_ARTIFACTS_DIR", home.join("artifacts"))
        .env("NO_COLOR", "1")
        .env("TERM", "xterm");
    command
}

fn repl() -> (PtySession, tempfile::TempDir) {
    let home = tempfile::tempdir().unwrap();
    let command = repl_command(&[], home.path());
    // Each expectation waits up to this long: far above what a loaded machine needs.
    let patience = common::PATIENCE.as_millis() as u64;
    let mut session = spawn_command(command, Some(patience)).expect("the repl starts");
    session.exp_string(">>> ").expect("first prompt");
    (session, home)
}

fn run(session: &mut PtySession, line: &str) {
    session.send_line(line).unwrap();
}

/// Whether `check` holds within [`common::PATIENCE`] (checked every 20 ms).
fn wait_until(check: impl Fn() -> bool) -> bool {
    let deadline = std::time::Instant::now() + common::PATIENCE;
    while !check() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    check()
}

#[test]
fn multi_line_cells_run_when_complete() {
    let (mut s, _home) = repl();
    run(&mut s, "total = 0");
    s.exp_string(">>> ").unwrap();
    run(&mut s, "for i in range(3):");
    s.exp_string("... ").unwrap();
    run(&mut s, "total += i * 10");
    s.exp_string("... ").unwrap();
    run(&mut s, "");
    s.exp_string(">>> ").unwrap();
    run(&mut s, "print('total is', total)");
    s.exp_string("total is 30").unwrap();
    run(&mut s, "%%bash");
    s.exp_string("... ").unwrap();
    run(&mut s, "echo from-bash-$((2 + 3))");
    s.exp_string("... ").unwrap();
    run(&mut s, "");
    s.exp_string("from-bash-5").unwrap();
    s.exp_string(">>> ").unwrap();
    s.send_control('d').unwrap();
    s.exp_eof().unwrap();
}

#[test]
fn ctrl_c_interrupts_a_cell_and_keeps_state() {
    let (mut s, _home) = repl();
    run(&mut s, "kept = 'still here'");
    s.exp_string(">>> ").unwrap();
    // One line that keeps printing a marker (not in its own echo; the repeats
    // get past the renderer's redraw throttle): Ctrl-C comes once the loop
    // runs, not after a guess at how long that takes.
    run(&mut s, r#"exec("import time\nwhile True:\n    print('spin' + 'ning', flush=True)\n    time.sleep(0.2)")"#);
    s.exp_string("spinning").unwrap();
    s.send_control('c').unwrap();
    s.exp_string("KeyboardInterrupt").unwrap();
    s.exp_string("cancelled").unwrap();
    s.exp_string(">>> ").unwrap();
    run(&mut s, "kept");
    s.exp_string("'still here'").unwrap();
    s.exp_string(">>> ").unwrap();
    // Ctrl-C at the prompt clears the line and keeps the session.
    s.send("half typed").unwrap();
    s.flush().unwrap();
    s.exp_string("half typed").unwrap();
    s.send_control('c').unwrap();
    s.exp_string(">>> ").unwrap();
    run(&mut s, "1 + 1");
    s.exp_string("  2\r\n").unwrap();
    s.exp_string(">>> ").unwrap();
    s.send_control('d').unwrap();
    s.exp_eof().unwrap();
}

#[test]
fn history_recalls_earlier_cells() {
    let (mut s, home) = repl();
    run(&mut s, "counter = [0]");
    s.exp_string(">>> ").unwrap();
    run(&mut s, "counter[0] += 1; print('count', counter[0])");
    s.exp_string("count 1").unwrap();
    s.exp_string(">>> ").unwrap();
    s.send("\x1b[A").unwrap(); // up arrow
    s.flush().unwrap();
    s.send_line("").unwrap();
    s.exp_string("count 2").unwrap();
    s.send_control('d').unwrap();
    s.exp_eof().unwrap();
    let saved = std::fs::read_to_string(home.path().join("state/cellbox/repl_history")).unwrap();
    assert!(saved.contains("print('count', counter[0])"), "{saved}");
}

#[test]
fn leaving_stops_the_kernel() {
    let (mut s, _home) = repl();
    run(&mut s, "import os, subprocess; p = subprocess.Popen(['sleep', '60']); print('pid', os.getpid())");
    let (_, pid) = s.exp_regex(r"pid (\d+)").unwrap();
    let pid: u32 = pid.trim_start_matches("pid ").parse().unwrap();
    assert_eq!(common::group_members(pid).len(), 2);
    s.exp_string(">>> ").unwrap();
    run(&mut s, ":reset");
    s.exp_string("kernel restarted").unwrap();
    // The runner is gone; its `sleep` child was sent SIGTERM, then SIGKILL at the latest.
    let gone = || common::group_members(pid).is_empty();
    assert!(wait_until(gone), ":reset stops the old kernel: {:?} left", common::group_members(pid));
    run(&mut s, "print('pid', __import__('os').getpid())");
    let (_, pid) = s.exp_regex(r"pid (\d+)").unwrap();
    let pid: u32 = pid.trim_start_matches("pid ").parse().unwrap();
    s.exp_string(">>> ").unwrap();
    s.send_control('d').unwrap();
    s.exp_eof().unwrap();
    assert!(wait_until(|| common::group_members(pid).is_empty()), "kernel {pid} outlived the repl");
}

#[test]
fn save_writes_the_session_as_a_notebook() {
    let (mut s, home) = repl();
    run(&mut s, ":save early.ipynb");
    s.exp_string("has not run any cell").unwrap();
    s.exp_string(">>> ").unwrap();
    run(&mut s, "greeting = 'hel' + 'lo'");
    s.exp_string(">>> ").unwrap();
    run(&mut s, "print(greeting)");
    s.exp_string("hello").unwrap();
    s.exp_string(">>> ").unwrap();
    run(&mut s, ":save session.ipynb");
    s.exp_string("saved 2 cell(s)").unwrap();
    s.exp_string(">>> ").unwrap();
    s.send_control('d').unwrap();
    s.exp_eof().unwrap();
    let notebook: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(home.path().join("session.ipynb")).unwrap()).unwrap();
    assert_eq!(notebook["cells"][0]["source"], serde_json::json!(["greeting = 'hel' + 'lo'\n"]));
    assert_eq!(notebook["cells"][1]["outputs"][0]["text"], serde_json::json!(["hello\n"]));
    assert_eq!(notebook["cells"][1]["execution_count"], 2);
    assert!(!home.path().join("early.ipynb").exists());
}

#[test]
fn a_javascript_session_continues_open_brackets_like_node() {
    let home = tempfile::tempdir().unwrap();
    let command = repl_command(&["--lang", "js"], home.path());
    let mut s = spawn_command(command, Some(20_000)).expect("the repl starts");
    s.exp_string("JavaScript kernel").unwrap();
    s.exp_string(">>> ").unwrap();
    run(&mut s, "function twice(x) {");
    s.exp_string("... ").unwrap();
    run(&mut s, "return x * 2 }");
    s.exp_string(">>> ").unwrap();
    run(&mut s, "console.log('twice is', twice(21))");
    s.exp_string("twice is 42").unwrap();
    s.send_control('d').unwrap();
    s.exp_eof().unwrap();
}

#[test]
fn undo_fork_switch_snapshot_and_restore_at_the_prompt() {
    // The workspace is the home folder here, whose own entries the sandbox
    // keeps (it guards the secrets in it): the file goes in a folder of it,
    // made before the kernel starts (its rules name what exists then).
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir(home.path().join("saved")).unwrap();
    let patience = common::PATIENCE.as_millis() as u64;
    let mut s = spawn_command(repl_command(&[], home.path()), Some(patience)).expect("the repl starts");
    s.exp_string(">>> ").expect("first prompt");
    run(&mut s, "items = [1, 2]");
    s.exp_string(">>> ").unwrap();
    run(&mut s, "items.append(3)");
    s.exp_string(">>> ").unwrap();
    run(&mut s, ":undo");
    s.exp_string("undid 1 cell(s)").unwrap();
    run(&mut s, "print('items', items)");
    s.exp_string("items [1, 2]").unwrap();
    run(&mut s, ":fork other");
    s.exp_string("forked into other").unwrap();
    run(&mut s, ":switch other");
    s.exp_string("now in session other").unwrap();
    run(&mut s, "items.append(9); print('other', items)");
    s.exp_string("other [1, 2, 9]").unwrap();
    run(&mut s, ":snapshot saved/other.cellbox");
    s.exp_string("saved 1 name(s)").unwrap();
    run(&mut s, ":switch main");
    s.exp_string("now in session main").unwrap();
    run(&mut s, "print('main', items)");
    s.exp_string("main [1, 2]").unwrap();
    run(&mut s, ":restore saved/other.cellbox");
    s.exp_string("restored items").unwrap();
    run(&mut s, "print('back', items)");
    s.exp_string("back [1, 2, 9]").unwrap();
    assert!(home.path().join("saved/other.cellbox").exists());
    run(&mut s, ":quit");
    s.exp_eof().unwrap();
}
