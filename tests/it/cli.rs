//! The `cellbox` binary as a person uses it.

use crate::common;

use std::process::{Output, Stdio};

use cellbox_kernels::kernel::process::{Signal, signal_pid};
use common::binary::text;

fn cellbox(args: &[&str], stdin: Option<&str>) -> Output {
    common::binary::output_with_input(&mut common::binary::cellbox(args), stdin.unwrap_or(""))
}

#[test]
fn run_prints_output_and_results_and_exits_zero() {
    let out = cellbox(&["run", "-c", "import sys\nprint('hi')\nprint('warn', file=sys.stderr)\n6 * 7"], None);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "hi\n42\n");
    assert_eq!(text(&out.stderr), "warn\n");
}

#[test]
fn run_reads_a_file_or_stdin() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("cell.py");
    std::fs::write(&file, "print('from file')").unwrap();
    let out = cellbox(&["run", file.to_str().unwrap()], None);
    assert_eq!(text(&out.stdout), "from file\n");
    let out = cellbox(&["run"], Some("print('from stdin')"));
    assert_eq!(text(&out.stdout), "from stdin\n");
    let out = cellbox(&["run", "-"], Some("print('dash')"));
    assert_eq!(text(&out.stdout), "dash\n");
}

#[test]
fn run_reports_failures_with_exit_codes() {
    let out = cellbox(&["run", "-c", "1/0"], None);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("ZeroDivisionError: division by zero"));
    assert!(text(&out.stderr).contains("<cell-1>"));

    let out = cellbox(&["run", "--cwd", "/no/such/dir", "-c", "1"], None);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("/no/such/dir"), "{}", text(&out.stderr));

    let out = cellbox(&["run", "/no/such/file.py"], None);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("cannot read /no/such/file.py"));

    let out = cellbox(&["run", "-c", "import os; os._exit(9)"], None);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("exit code 9"), "{}", text(&out.stderr));
}

#[test]
fn setup_check_names_the_interpreter_or_explains() {
    let out = cellbox(&["setup", "python", "--check"], None);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("explicit interpreter setting"), "{stdout}");
    assert!(stdout.contains("Version:"), "{stdout}");

    let out = cellbox(&["setup", "python", "--check", "--python", "/no/such/python"], None);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("/no/such/python (does not exist)"), "{stderr}");
}

#[test]
fn ipc_trace_logs_frames_both_ways() {
    let out = common::binary::cellbox(["run", "-c", "print('traced')"])
        .env("CELLBOX_PYTHON_IPC_TRACE", "1")
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert!(stderr.contains("host → runner"), "{stderr}");
    assert!(stderr.contains("runner → host"), "{stderr}");
    assert!(stderr.contains(r#""type":"ready""#), "{stderr}");
    assert_eq!(text(&out.stdout), "traced\n");
}

#[test]
fn sigterm_to_the_host_leaves_no_kernel_behind() {
    use std::io::BufRead;
    let mut child = common::binary::cellbox(["run", "--timeout", "120", "-c"])
        .arg("import os, subprocess\np = subprocess.Popen(['sleep', '100'])\nprint(os.getpid(), flush=True)\nimport time\ntime.sleep(100)")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let kernel: u32 = line.trim().parse().unwrap();
    assert_eq!(common::group_members(kernel).len(), 2, "kernel and its child are running");
    signal_pid(child.id(), Signal::SIGTERM).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(143));
    assert!(common::group_members(kernel).is_empty(), "kernel group {kernel} survived the host");
}

#[test]
fn params_json_and_artifacts_round_trip() {
    let params = r#"{"cells": [{"code": "for i in range(5000): print(i)", "title": "count"}]}"#;
    let out = cellbox(&["run", "--json", "--params", "-"], Some(params));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let result: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result["cells"][0]["status"], "ok");
    assert_eq!(result["cells"][0]["title"], "count");
    let uri = result["artifact"].as_str().unwrap();
    let artifact = cellbox(&["artifact", uri], None);
    assert_eq!(artifact.status.code(), Some(0), "{}", text(&artifact.stderr));
    let full = text(&artifact.stdout);
    assert_eq!(full.lines().count(), 5000);
    assert!(full.ends_with("4999\n"));
    let bad = cellbox(&["artifact", "../../etc/passwd"], None);
    assert_eq!(bad.status.code(), Some(1));
    assert!(text(&bad.stderr).contains("is not an artifact id"));
    let broken = cellbox(&["run", "--params", "-"], Some("{\"cells\": [{\"cod\": 1}]}"));
    assert_eq!(broken.status.code(), Some(2));
    assert!(text(&broken.stderr).contains("cod"), "{}", text(&broken.stderr));
}

#[test]
fn a_timeout_exits_124_with_the_annotation() {
    let out = cellbox(&["run", "--timeout", "1", "-c", "while True: pass"], None);
    assert_eq!(out.status.code(), Some(124));
    assert!(text(&out.stderr).contains("timed out after 1s; kernel interrupted"), "{}", text(&out.stderr));
}

/// `--help` names, beside each flag, the variable that sets the same thing: every variable declared
/// with a `flag` in `cellbox_settings` shows up where that flag does (clap's `[env: …]`).
#[test]
fn help_shows_each_flags_variable() {
    let mut help = String::new();
    for command in ["run", "repl", "mcp", "serve"] {
        help.push_str(&text(&cellbox(&[command, "--help"], None).stdout));
    }
    for var in cellbox_settings::ENV_VARS {
        let Some(flag) = var.flag else { continue };
        // The two path lists add to their flags' paths, so their help names them in words.
        let additive = [cellbox_settings::ALLOW_WRITE.name, cellbox_settings::DENY_READ.name].contains(&var.name);
        let shown = help.lines().any(|line| {
            line.contains(&format!("{flag} "))
                && (line.contains(&format!("[env: {}]", var.name)) || additive && line.contains(var.name))
        });
        assert!(shown, "{flag} should show [env: {}] in --help:\n{help}", var.name);
    }
}

/// A variable set to a value it does not take stops every front end the same way, before anything
/// starts: exit 2 and one line naming the variable and what it takes.
#[test]
fn a_bad_setting_is_the_same_error_in_every_front_end() {
    let fronts: [&[&str]; 6] = [
        &["run", "-c", "1"],
        &["repl"],
        &["mcp"],
        &["serve", "--no-auth", "--listen", "127.0.0.1:0"],
        &["sdk-server"],
        &["doctor"],
    ];
    let cases = [
        ("CELLBOX_BACKEND", "docker", "CELLBOX_BACKEND=\"docker\" is not a valid value: it takes process|gateway"),
        ("CELLBOX_PYTHON_SKIP_CHECK", "sure", "it takes 1|0, true|false, yes|no or on|off"),
        ("CELLBOX_PY", "1", "CELLBOX_PY=\"1\" is not a valid value: it takes on, off or only"),
        (
            "CELLBOX_SANDBOX",
            "nope",
            "CELLBOX_SANDBOX=\"nope\" is not a valid value: it takes workspace-write|read-only|off",
        ),
        ("CELLBOX_CHECKPOINTS", "many", "CELLBOX_CHECKPOINTS=\"many\" is not a valid value: it takes count"),
    ];
    for (name, value, message) in cases {
        for args in fronts {
            let out = common::binary::output_with_input(common::binary::cellbox(args).env(name, value), "");
            let stderr = text(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{args:?} with {name}={value}: {stderr}");
            assert!(
                stderr.starts_with("cellbox: ") && stderr.contains(message),
                "{args:?} with {name}={value}: {stderr}"
            );
        }
    }
    // Blank is "not given", and a flag bound to a variable wins over it.
    let blank =
        common::binary::output_with_input(common::binary::cellbox(["run", "-c", "1"]).env("CELLBOX_SANDBOX", " "), "");
    assert!(blank.status.success(), "{}", text(&blank.stderr));
    let flag_wins = common::binary::output_with_input(
        common::binary::cellbox(["run", "--backend", "process", "-c", "print(3)"]).env("CELLBOX_BACKEND", "gateway"),
        "",
    );
    assert_eq!(text(&flag_wins.stdout), "3\n", "{}", text(&flag_wins.stderr));
}

#[test]
fn run_saves_a_snapshot_and_a_later_run_restores_it() {
    let dir = tempfile::tempdir().unwrap();
    let in_dir =
        |args: &[&str]| common::binary::cellbox(args).current_dir(dir.path()).stdin(Stdio::null()).output().unwrap();
    let saved =
        in_dir(&["run", "-c", "def f(x):\n    return x + 1\nlines = (l for l in 'ab')", "--snapshot", "s.cellbox"]);
    assert!(saved.status.success(), "{}", text(&saved.stderr));
    let stderr = text(&saved.stderr);
    assert!(stderr.contains("--snapshot: lines was not saved: generator"), "{stderr}");
    let restored = in_dir(&["run", "-c", "print(f(41))", "--restore", "s.cellbox"]);
    assert!(restored.status.success(), "{}", text(&restored.stderr));
    assert_eq!(text(&restored.stdout).trim(), "42");
    let missing = in_dir(&["run", "-c", "1", "--restore", "missing.cellbox"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(text(&missing.stderr).contains("missing.cellbox"), "{}", text(&missing.stderr));
}
