//! Pre-run checks (the eval tool's `check`, `--check`, `CELLBOX_CHECK`): a
//! syntax check of every Python cell before any runs, and `ruff check`
//! findings as notes, on real kernels and the real ruff (`scripts/test`
//! installs it beside the test interpreter).

use crate::common;

use std::process::Stdio;

use cellbox_engine::tool::{CellStatus, CheckMode, EngineConfig, EvalResult};
use common::engine::{Fixture, eval_json as eval};
use serde_json::json;

fn fixture(tweak: impl FnOnce(&mut EngineConfig)) -> Fixture {
    Fixture::new(|config| {
        config.check = CheckMode::Off;
        tweak(config);
    })
}

fn statuses(result: &EvalResult) -> Vec<CellStatus> {
    result.cells.iter().map(|cell| cell.status).collect()
}

#[tokio::test]
async fn a_syntax_error_in_cell_2_runs_no_cell() {
    let f = fixture(|_| {});
    let result = eval(
        &f.engine,
        json!({"check": "syntax", "cells": [
            {"code": "x = 1\nprint('ran 1')"},
            {"code": "y = 2\nz = (3,\n"},
            {"code": "print('ran 3')"},
        ]}),
    )
    .await;
    assert!(result.is_error);
    assert_eq!(statuses(&result), [CellStatus::Skipped, CellStatus::Error, CellStatus::Skipped]);
    assert!(!result.text.contains("ran 1") && !result.text.contains("ran 3"), "{}", result.text);
    assert!(result.text.contains("Cell 2, line 2"), "{}", result.text);
    // The caret under the source line (its column and the message vary across Python versions).
    let caret = result.text.split("    z = (3,\n").nth(1).unwrap_or_default();
    assert!(caret.trim_start_matches(' ').starts_with("^\n"), "the caret is shown: {}", result.text);
    assert!(result.text.contains("SyntaxError: "), "{}", result.text);
    let error = result.cells[1].error.as_ref().unwrap();
    assert_eq!(error.ename, "SyntaxError");
    assert!(!error.evalue.contains("<cell"), "{}", error.evalue);
    assert!(
        result.notes.iter().any(|n| n.contains("cell 2 (line 2) has a syntax error; no cell was run")),
        "{:?}",
        result.notes
    );
    // Nothing ran: cell 1's variable is absent and no execution was counted.
    let after = eval(&f.engine, json!({"cells": [{"code": "'x' in dir()"}]})).await;
    assert_eq!(after.text, "False\n");
    assert_eq!(after.cells[0].execution_count, Some(1), "the check counts no execution");
    f.engine.dispose_all().await;
}

#[tokio::test]
async fn magics_and_shell_lines_pass_the_check_and_run() {
    let f = fixture(|config| config.check = CheckMode::Syntax);
    let result = eval(
        &f.engine,
        json!({"cells": [
            {"code": "x = 5\n%time y = x * 2\n!echo shell-ok\nfiles = !echo listed\nprint(y, files)"},
            {"code": "%%bash\necho from bash ((("},
            {"code": "async def f():\n    return 7\nawait f()"},
        ]}),
    )
    .await;
    assert_eq!(statuses(&result), [CellStatus::Ok; 3], "{}", result.text);
    assert!(result.text.contains("shell-ok"), "{}", result.text);
    assert!(result.text.contains("10 ['listed']"), "{}", result.text);
    assert!(result.text.contains("from bash ((("), "{}", result.text);
    assert!(result.text.contains("7\n"), "{}", result.text);
    f.engine.dispose_all().await;
}

#[tokio::test]
async fn a_reset_waits_for_the_check() {
    let f = fixture(|_| {});
    eval(&f.engine, json!({"cells": [{"code": "kept = 1"}]})).await;
    let pid = f.engine.kernel_pids();
    // Blocked by the check: the reset did not happen either.
    let blocked = eval(&f.engine, json!({"check": "syntax", "reset": true, "cells": [{"code": "x = (\n"}]})).await;
    assert_eq!(statuses(&blocked), [CellStatus::Error]);
    assert_eq!(f.engine.kernel_pids(), pid);
    assert_eq!(eval(&f.engine, json!({"cells": [{"code": "kept"}]})).await.text, "1\n");
    // Passed: the reset happens.
    let reset =
        eval(&f.engine, json!({"check": "syntax", "reset": true, "cells": [{"code": "'kept' in dir()"}]})).await;
    assert_eq!(reset.text, "False\n");
    assert_ne!(f.engine.kernel_pids(), pid);
    f.engine.dispose_all().await;
    // A fresh session: the kernel started for the check serves the reset cell.
    let g = fixture(|config| config.spare = cellbox_engine::session::SpareLimits::OFF);
    let first =
        eval(&g.engine, json!({"check": "syntax", "reset": true, "cells": [{"code": "import os\nos.getpid()"}]})).await;
    assert_eq!(first.text.trim(), g.engine.kernel_pids()[0].to_string());
    assert_eq!(first.cells[0].execution_count, Some(1));
    g.engine.dispose_all().await;
}

#[tokio::test]
async fn compiler_errors_beyond_the_parser_are_caught() {
    let f = fixture(|_| {});
    let result = eval(&f.engine, json!({"check": "syntax", "cells": [{"code": "print('no')\nreturn 5"}]})).await;
    assert_eq!(statuses(&result), [CellStatus::Error]);
    assert!(!result.text.contains("no\n"), "{}", result.text);
    assert!(result.text.contains("'return' outside function"), "{}", result.text);
    assert!(result.notes.iter().any(|n| n.contains("it was not run")), "{:?}", result.notes);
    f.engine.dispose_all().await;
}

#[tokio::test]
async fn off_by_default_the_cells_run_as_before() {
    assert_eq!(CheckMode::default(), CheckMode::Off);
    let f = fixture(|_| {});
    let result =
        eval(&f.engine, json!({"cells": [{"code": "x = 1"}, {"code": "y = (\n"}, {"code": "print('never')"}]})).await;
    assert_eq!(statuses(&result), [CellStatus::Ok, CellStatus::Error, CellStatus::Skipped]);
    assert!(result.text.contains("<cell-2>"), "the ordinary compile error: {}", result.text);
    let after = eval(&f.engine, json!({"cells": [{"code": "x"}]})).await;
    assert_eq!(after.text, "1\n", "cell 1 ran");
    // "off" in the call wins over the engine's setting.
    let g = fixture(|config| config.check = CheckMode::Syntax);
    let result = eval(&g.engine, json!({"check": "off", "cells": [{"code": "x = 1"}, {"code": "y = (\n"}]})).await;
    assert_eq!(statuses(&result), [CellStatus::Ok, CellStatus::Error]);
    f.engine.dispose_all().await;
    g.engine.dispose_all().await;
}

#[tokio::test]
async fn lint_findings_are_notes_and_the_cells_still_run() {
    let f = fixture(|_| {});
    eval(&f.engine, json!({"cells": [{"code": "earlier = 3"}]})).await;
    let result = eval(
        &f.engine,
        json!({"check": "lint", "cells": [
            {"code": "import os\na = 1\nprint('ran 1')"},
            {"code": "!echo hi\nprint(a + earlier + undefined_thing)"},
        ]}),
    )
    .await;
    assert_eq!(statuses(&result), [CellStatus::Ok, CellStatus::Error], "{}", result.text);
    assert!(result.text.contains("ran 1"), "{}", result.text);
    assert!(result.text.contains("NameError"), "cell 2 ran: {}", result.text);
    let lint: Vec<&String> = result.notes.iter().filter(|n| n.starts_with("Lint")).collect();
    assert!(
        lint.iter().any(|n| n.starts_with("Lint (cell 1, line 1:8): F401") && n.contains("`os` imported but unused")),
        "{lint:?}"
    );
    assert!(lint.iter().any(|n| n.contains("cell 2, line 2") && n.contains("`undefined_thing`")), "{lint:?}");
    // Defined by the kernel (`earlier`), an earlier cell (`a`) or the runner (`!`): not reported.
    for name in ["`earlier`", "`a`", "__cellbox_magic__"] {
        assert!(!lint.iter().any(|n| n.contains(name)), "{name}: {lint:?}");
    }
    assert!(result.text.contains("Lint (cell 1, line 1:8)"), "notes are in the text too: {}", result.text);
    f.engine.dispose_all().await;
}

#[tokio::test]
async fn a_missing_ruff_is_a_note_not_an_error() {
    // The base interpreter has no ruff beside it, and PATH has none either.
    let base = std::fs::canonicalize(common::python()).unwrap();
    let f = fixture(|config| {
        config.python = Some(base.display().to_string());
        config.extra_env.insert("PATH".into(), "/usr/bin:/bin".into());
    });
    let result = eval(&f.engine, json!({"check": "lint", "cells": [{"code": "import os\nprint('ran')"}]})).await;
    assert!(!result.is_error, "{}", result.text);
    assert!(result.text.starts_with("ran\n"), "{}", result.text);
    assert!(result.notes.iter().any(|n| n.contains("ruff was not found")), "{:?}", result.notes);
    f.engine.dispose_all().await;
}

#[tokio::test]
async fn javascript_cells_are_parsed_by_the_node_runner() {
    let Ok(node) = cellbox_kernels::runtime::node::resolve_from_env(
        std::env::var("CELLBOX_TEST_NODE").ok().as_deref(),
        &std::env::temp_dir(),
        &Default::default(),
    ) else {
        eprintln!("skipped: no node");
        return;
    };
    let f = fixture(|config| config.node = Some(node.executable.display().to_string()));
    let ok = eval(
        &f.engine,
        json!({"check": "lint", "cells": [
            {"code": "const a = await Promise.resolve(20)\na + 1", "language": "js"},
            {"code": "x = 2\nx"},
        ]}),
    )
    .await;
    assert_eq!(statuses(&ok), [CellStatus::Ok, CellStatus::Ok], "{}", ok.text);
    assert!(ok.text.contains("21"), "{}", ok.text);
    assert!(ok.notes.iter().any(|n| n.contains("JavaScript/TypeScript cells are not linted")), "{:?}", ok.notes);

    let broken = eval(
        &f.engine,
        json!({"check": "syntax", "cells": [
            {"code": "globalThis.ranJs = 1", "language": "js"},
            {"code": "ran_py = 1"},
            {"code": "let b = ;", "language": "js"},
        ]}),
    )
    .await;
    assert_eq!(statuses(&broken), [CellStatus::Skipped, CellStatus::Skipped, CellStatus::Error], "{}", broken.text);
    assert!(broken.text.contains("Cell 3, line 1\nlet b = ;\n        ^\n"), "{}", broken.text);
    let after =
        eval(&f.engine, json!({"cells": [{"code": "typeof ranJs", "language": "js"}, {"code": "'ran_py' in dir()"}]}))
            .await;
    assert_eq!(after.text, "── cell 1 ──\n'undefined'\n── cell 2 ──\nFalse\n", "nothing ran");
    f.engine.dispose_all().await;
}

/// `cellbox run` with every protocol frame traced: (exit code, stdout, stderr).
fn run_traced(args: &[&str], env: &[(&str, &str)]) -> (Option<i32>, String, String) {
    let mut command = common::binary::cellbox(args);
    command.env("CELLBOX_PYTHON_IPC_TRACE", "1").env_remove("CELLBOX_CHECK").stdin(Stdio::null());
    for (key, value) in env {
        command.env(key, value);
    }
    let out = command.output().unwrap();
    let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
    (out.status.code(), text(&out.stdout), text(&out.stderr))
}

#[test]
fn off_sends_no_check_request_and_the_flag_and_variable_turn_it_on() {
    let (code, stdout, stderr) = run_traced(&["run", "-c", "print('plain')"], &[]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(stdout, "plain\n");
    assert!(stderr.contains("host → runner"), "the trace is on: {stderr}");
    assert!(!stderr.contains(r#""type":"check""#), "no check exchange when off: {stderr}");

    let (code, stdout, stderr) = run_traced(&["run", "--check", "syntax", "-c", "print('checked')"], &[]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(stdout, "checked\n");
    assert!(stderr.contains(r#""type":"check""#), "{stderr}");

    let (code, stdout, stderr) = run_traced(&["run", "-c", "print('never')\nx = (\n"], &[("CELLBOX_CHECK", "syntax")]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(!stdout.contains("never"), "{stdout}");
    assert!(stderr.contains("Cell 1, line 2") && stderr.contains('^'), "{stderr}");

    let (code, _, stderr) = run_traced(&["run", "--check", "bogus", "-c", "1"], &[]);
    assert_eq!(code, Some(2));
    assert!(stderr.contains("use off, syntax or lint"), "{stderr}");

    // A bad variable is an error too, not a silent "off".
    let (code, stdout, stderr) = run_traced(&["run", "-c", "print('never')"], &[("CELLBOX_CHECK", "bogus")]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stdout.is_empty() && stderr.contains("CELLBOX_CHECK=\"bogus\"") && stderr.contains("it takes off|syntax|lint"),
        "{stderr}"
    );
}

#[tokio::test]
async fn the_kernel_layer_checks_without_running() {
    use cellbox_protocol::CheckCell;
    let kernel = common::start().await;
    common::run(&kernel, "kept = 1").await;
    let cells = vec![
        CheckCell { number: 1, code: "gone = 2".into(), typescript: false },
        CheckCell { number: 2, code: "%time y = 1\nz = (\n".into(), typescript: false },
    ];
    let report = kernel.check(cells, false).await.unwrap();
    assert!(report.has_errors());
    assert_eq!(report.cells.len(), 2);
    assert!(report.cells[0].error.is_none());
    let error = report.cells[1].error.as_ref().unwrap();
    assert_eq!((error.ename.as_str(), error.line), ("SyntaxError", Some(2)));
    let output = common::run(&kernel, "(kept, 'gone' in dir())").await;
    assert_eq!(output.results(), ["(1, False)"]);
    assert_eq!(output.done.execution_count, 2, "the check counted no execution");
    kernel.shutdown().await;
}
