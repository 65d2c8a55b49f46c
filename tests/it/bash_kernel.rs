//! Bash cells (`"language": "bash"`): one long-lived shell per session on a
//! real `bash`, through the eval tool, the kernel layer and the CLI.
#![cfg(target_os = "linux")]

use crate::common;

use std::time::Duration;

use cellbox_engine::tool::{CellStatus, EvalEngine, EvalResult};
use cellbox_kernels::kernel::process::{Signal, signal_pid};
use cellbox_kernels::kernel::{Kernel, KernelOptions};
use cellbox_kernels::runtime::{self, Runtime};
use common::engine::{Fixture, try_eval_json as eval_params};
use serde_json::json;

async fn sh(engine: &EvalEngine, code: &str) -> EvalResult {
    eval_params(engine, json!({"cells": [{"code": code, "language": "bash"}]})).await.unwrap()
}

#[tokio::test]
async fn the_shell_keeps_its_cwd_variables_functions_and_aliases() {
    let f = Fixture::new(|_| {});
    let sub = f.dir.path().join("sub");
    std::fs::create_dir_all(&sub).unwrap();
    let first = sh(
        &f.engine,
        "cd sub\nexport GREETING='hi \"there\" \\ ü'\ncount=41\ngreet() { echo \"$GREETING $1\"; }\nalias ll='echo aliased'",
    )
    .await;
    assert!(!first.is_error, "{}", first.text);
    let second = sh(&f.engine, "pwd\ngreet you\nll\necho $((count + 1))\nbash -c 'echo child sees $GREETING'").await;
    assert_eq!(
        second.text,
        format!(
            "{}\nhi \"there\" \\ ü you\naliased\n42\nchild sees hi \"there\" \\ ü\n",
            sub.canonicalize().unwrap().display()
        )
    );
    assert_eq!(second.cells[0].execution_count, Some(2));
    // A cell's declarations are the shell's own, whatever their names (the runner's are its own too).
    sh(&f.engine, "declare -A colors=([sky]=blue)\nid=7 status=3 i=1 name=a\nset -e -o pipefail").await;
    let kept =
        sh(&f.engine, "echo ${colors[sky]} $id $status $i $name\nfalse\necho set -e does not end the shell").await;
    assert_eq!(kept.text, "blue 7 3 1 a\nset -e does not end the shell\n", "{}", kept.text);
    f.engine.dispose_all().await;
}

#[tokio::test]
async fn a_failing_command_fails_the_cell_with_its_stderr_and_exit_ends_only_the_cell() {
    let f = Fixture::new(|_| {});
    let failed = sh(&f.engine, "kept=yes\necho to-out\nls /no/such/place\n").await;
    assert!(failed.is_error, "{}", failed.text);
    assert!(failed.text.contains("to-out") && failed.text.contains("/no/such/place"), "{}", failed.text);
    assert_eq!(failed.cells[0].error.as_ref().unwrap().ename, "ExitStatus");
    assert!(failed.cells[0].error.as_ref().unwrap().evalue.contains("exit status 2"), "{}", failed.text);
    let exited = sh(&f.engine, "leave() { echo leaving; exit 7; echo never; }\nleave\necho never either").await;
    assert!(exited.is_error && exited.text.contains("leaving") && !exited.text.contains("never"), "{}", exited.text);
    assert!(exited.cells[0].error.as_ref().unwrap().evalue.contains("exit status 7"), "{}", exited.text);
    let after = sh(&f.engine, "echo still $kept; (exit 3) || echo subshell exits are its own").await;
    assert_eq!(after.text, "still yes\nsubshell exits are its own\n");
    assert!(!after.is_error);
    f.engine.dispose_all().await;
}

#[tokio::test]
async fn a_timeout_interrupts_the_foreground_job_and_keeps_the_shell() {
    let f = Fixture::new(|_| {});
    sh(&f.engine, "kept='still here'").await;
    for stuck in ["sleep 600", "while :; do :; done"] {
        let result = eval_params(&f.engine, json!({"cells": [{"code": stuck, "language": "bash", "timeout": 1}]}))
            .await
            .unwrap();
        assert_eq!(result.cells[0].status, CellStatus::Timeout, "{stuck}: {}", result.text);
        assert_eq!(sh(&f.engine, "echo $kept").await.text, "still here\n", "after {stuck}");
    }
    let waited = sh(&f.engine, "sleep 0 & wait; echo waited").await;
    assert_eq!(waited.text, "waited\n", "a cell's `wait` does not wait for the runner's own watcher");
    f.engine.dispose_all().await;
}

#[tokio::test]
async fn a_killed_shell_is_reported_and_a_fresh_one_follows() {
    let f = Fixture::new(|_| {});
    sh(&f.engine, "kept=yes").await;
    let died = sh(&f.engine, "echo last words $kept; kill -9 $$").await;
    assert!(died.is_error);
    assert!(died.text.contains("last words yes") && died.text.contains("Bash kernel died"), "{}", died.text);
    sh(&f.engine, "kept=again").await;
    let pid: u32 = sh(&f.engine, "echo $$").await.text.trim().parse().unwrap();
    signal_pid(pid, Signal::SIGKILL).unwrap();
    assert!(common::eventually(Duration::from_secs(60), || common::group_members(pid).is_empty()).await);
    let next = sh(&f.engine, "echo ${kept-fresh}").await;
    assert!(next.text.contains("previous kernel had died"), "{}", next.text);
    assert!(next.text.starts_with("fresh\n"), "{}", next.text);
    f.engine.dispose_all().await;
}

#[tokio::test]
async fn mixed_calls_keep_a_kernel_per_language() {
    let f = Fixture::new(|_| {});
    let mixed = eval_params(
        &f.engine,
        json!({"cells": [
            {"code": "x = 6 * 7\nprint(x)"},
            {"code": "y=7; echo bash $y", "language": "bash"},
            {"code": "print(x)"},
            {"code": "echo bash again $y", "language": "sh"},
        ]}),
    )
    .await
    .unwrap();
    assert!(!mixed.is_error, "{}", mixed.text);
    let expected = "── cell 1 ──\n42\n── cell 2 ──\nbash 7\n── cell 3 ──\n42\n── cell 4 ──\nbash again 7\n";
    assert!(mixed.text.starts_with(expected), "{}", mixed.text);
    // reset on a bash cell resets bash only.
    let reset = eval_params(
        &f.engine,
        json!({"cells": [
            {"code": "echo ${y-unset}", "language": "bash", "reset": true},
            {"code": "print(x)"},
        ]}),
    )
    .await
    .unwrap();
    assert!(reset.text.starts_with("── cell 1 ──\nunset\n── cell 2 ──\n42\n"), "{}", reset.text);
    f.engine.dispose_all().await;
}

#[tokio::test]
async fn the_sandbox_holds_for_bash_cells() {
    let secret = tempfile::tempdir().unwrap();
    std::fs::write(secret.path().join("key"), "sk-secret").unwrap();
    let outside = tempfile::tempdir().unwrap();
    let marker = outside.path().join("marker");
    let denied = secret.path().to_path_buf();
    let f = Fixture::new(|config| config.sandbox.deny_read.push(denied));
    let code = format!(
        "cat {}/key 2>/dev/null || echo read-refused\ntouch {} 2>/dev/null && echo wrote-outside || echo write-refused\n",
        secret.path().display(),
        marker.display()
    );
    let result = sh(&f.engine, &code).await;
    assert_eq!(result.text, "read-refused\nwrite-refused\n", "{}", result.text);
    assert!(!marker.exists(), "a marker outside the workspace appeared");
    f.engine.dispose_all().await;
}

#[tokio::test]
async fn the_kernel_layer_drives_bash_directly() {
    let bash = runtime::bash::resolve_from_env(&std::env::temp_dir(), &Default::default()).expect("bash on PATH");
    let options =
        KernelOptions::for_runtime(Runtime::Bash, &bash.executable, std::env::temp_dir(), common::test_env(&[]));
    let kernel = Kernel::start(options).await.expect("a bash kernel starts");
    let mut execution =
        kernel.execute("n=0; while :; do n=$((n + 1)); ((n == 1000)) && echo spinning; done").await.unwrap();
    loop {
        match execution.next().await {
            Some(Ok(cellbox_kernels::kernel::ExecEvent::Stdout(_))) => break,
            Some(Ok(_)) => {}
            other => panic!("the cell ended before its loop: {other:?}"),
        }
    }
    kernel.interrupt().unwrap();
    let out = execution.collect().await.unwrap();
    assert!(out.done.cancelled, "{out:?}");
    let after = common::run(&kernel, "(( n > 0 )) && echo counted").await;
    assert_eq!(after.stdout(), "counted\n");
    // An interrupt between cells changes nothing.
    kernel.interrupt().unwrap();
    let idle = common::run(&kernel, "echo after an idle interrupt").await;
    assert_eq!(idle.stdout(), "after an idle interrupt\n");
    assert_eq!(kernel.check_complete("if true; then\n").await.unwrap().status, "incomplete");
    assert_eq!(kernel.check_complete("echo hi\n").await.unwrap().status, "complete");
    let pid = kernel.pid();
    kernel.shutdown().await;
    assert!(common::eventually(common::PATIENCE, || common::group_members(pid).is_empty()).await);
}

#[test]
fn the_cli_runs_bash_code_and_files() {
    let out = common::binary::cellbox(["run", "--lang", "bash", "-c", "x=6; echo $((x * 7))"])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "42\n");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("script.sh");
    std::fs::write(&file, "echo from a file\nfalse\n").unwrap();
    let failed =
        common::binary::cellbox(["run", file.to_str().unwrap()]).stdin(std::process::Stdio::null()).output().unwrap();
    assert_ne!(failed.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&failed.stdout).contains("from a file"));
}

#[tokio::test]
async fn long_cells_quotes_globs_and_the_users_noglob_reach_the_shell_as_written() {
    let f = Fixture::new(|_| {});
    // Longer than any pipe: bash puts the cell in a file in the kernel's private temp dir.
    let long = format!("x='{}'\necho ${{#x}}", "a".repeat(300_000));
    assert_eq!(sh(&f.engine, &long).await.text, "300000\n");
    let tricky = "mkdir g && cd g && touch f1 f2\nprintf '%s|' * \"*\" '\\\\u0041' $'tab\\there' \"q\\\"q\"\necho";
    assert_eq!(sh(&f.engine, tricky).await.text, "f1|f2|*|\\\\u0041|tab\there|q\"q|\n");
    // The runner turns globbing off only while it reads a request: a user's `set -f` stays theirs.
    assert_eq!(sh(&f.engine, "set -f\necho *").await.text, "*\n");
    assert_eq!(sh(&f.engine, "echo *; set +f").await.text, "*\n");
    assert_eq!(sh(&f.engine, "echo f*").await.text, "f1 f2\n");
    f.engine.dispose_all().await;
}
