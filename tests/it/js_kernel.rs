//! JavaScript cells on a real `node`: the kernel, the eval tool, exposure and
//! fallback, mixed calls and the CLI.

use crate::common;

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use cellbox_engine::tool::{CellStatus, EngineConfig, EvalEngine, EvalError, EvalResult, Exposure};
use cellbox_kernels::kernel::process::{Signal, signal_pid};
use cellbox_kernels::kernel::{Kernel, KernelOptions};
use cellbox_kernels::runtime::{self, Runtime};
use common::engine::{Fixture, try_eval_json as eval_params};
use serde_json::json;

/// The node under test: `$CELLBOX_TEST_NODE`, else what discovery finds on PATH.
fn node() -> &'static PathBuf {
    static NODE: OnceLock<PathBuf> = OnceLock::new();
    NODE.get_or_init(|| {
        if let Some(explicit) = std::env::var_os("CELLBOX_TEST_NODE") {
            return PathBuf::from(explicit);
        }
        runtime::node::resolve_from_env(None, &std::env::temp_dir(), &Default::default())
            .expect("tests need Node 18+ on PATH")
            .executable
    })
}

fn fixture(tweak: impl FnOnce(&mut EngineConfig)) -> Fixture {
    Fixture::new(|config| {
        config.node = Some(node().display().to_string());
        config.exposure = Exposure { py: true, js: true };
        tweak(config);
    })
}

async fn js(engine: &EvalEngine, code: &str) -> EvalResult {
    eval_params(engine, json!({"cells": [{"code": code, "language": "js"}]})).await.unwrap()
}

#[tokio::test]
async fn declarations_and_top_level_await_persist_across_calls() {
    let f = fixture(|_| {});
    let first =
        js(&f.engine, "const base = 40\nfunction add(x) { return x + base }\nclass Box { get v() { return 1 } }").await;
    assert!(!first.is_error, "{}", first.text);
    let second =
        js(&f.engine, "const got = await new Promise((ok) => setTimeout(() => ok(add(1)), 5));\ngot + new Box().v")
            .await;
    assert_eq!(second.text, "42\n");
    assert_eq!(second.cells[0].execution_count, Some(2));
    let again = js(&f.engine, "const base = 1; add(1)").await;
    assert_eq!(again.text, "2\n", "a cell can be run again: const is re-declared");
    let printed = js(&f.engine, "console.log('hi', {a: [1, 2]}); 'text'").await;
    assert_eq!(printed.text, "hi { a: [ 1, 2 ] }\n'text'\n");
    f.engine.dispose_all().await;
}

#[tokio::test]
async fn errors_point_at_the_cells_own_lines() {
    let f = fixture(|_| {});
    let result = js(&f.engine, "const a = 1;\nfunction boom() {\n  throw new RangeError('too far');\n}\nboom()").await;
    assert!(result.is_error);
    assert_eq!(result.cells[0].status, CellStatus::Error);
    let error = result.cells[0].error.as_ref().unwrap();
    assert_eq!((error.ename.as_str(), error.evalue.as_str()), ("RangeError", "too far"));
    assert!(result.text.contains("<cell-1>:3:9"), "{}", result.text);
    assert!(result.text.contains("<cell-1>:5:1"), "{}", result.text);
    assert!(result.text.contains("throw new RangeError('too far');"), "{}", result.text);
    assert!(!result.text.contains("runner-js") && !result.text.contains("node:vm"), "{}", result.text);
    let syntax = js(&f.engine, "let x = 1\nx +* 2").await;
    assert!(syntax.text.contains("SyntaxError"), "{}", syntax.text);
    assert!(syntax.text.contains("<cell-2>:2:"), "{}", syntax.text);
    f.engine.dispose_all().await;
}

#[tokio::test]
async fn images_html_and_status_events() {
    let f = fixture(|_| {});
    let png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";
    let code = format!(
        "display(Buffer.from('{png}', 'base64'));\nlog('step one');\ndisplay({{rows: [1, 2]}});\ndisplay.html('<b>bold</b>')"
    );
    let result = js(&f.engine, &code).await;
    assert!(!result.is_error, "{}", result.text);
    assert_eq!(result.images.len(), 1, "{}", result.text);
    assert_eq!(result.images[0].image.mime, "image/png");
    assert_eq!(result.status_events.len(), 1);
    assert_eq!(result.json.len(), 1);
    assert!(result.text.contains("**bold**"), "{}", result.text);
    f.engine.dispose_all().await;
}

#[tokio::test]
async fn require_and_import_load_a_package_installed_with_npm() {
    let f = fixture(|_| {});
    let project = f.dir.path();
    std::fs::write(project.join("package.json"), r#"{"name": "t", "version": "1.0.0", "private": true}"#).unwrap();
    let npm = Command::new("npm")
        .args(["install", "--no-audit", "--no-fund", "--loglevel=error", "is-number@7.0.0"])
        .current_dir(project)
        .stdin(Stdio::null())
        .output();
    match npm {
        Ok(out) if out.status.success() => {}
        Ok(out) => {
            eprintln!("skipped: npm could not install is-number: {}", String::from_utf8_lossy(&out.stderr));
            return;
        }
        Err(error) => {
            eprintln!("skipped: npm could not run: {error}");
            return;
        }
    }
    let result = js(&f.engine, "const isNumber = require('is-number');\n[isNumber(5), isNumber('x')]").await;
    assert_eq!(result.text, "[ true, false ]\n");
    let imported = js(
        &f.engine,
        "import isNum from 'is-number';\nconst m = await import('is-number');\nisNum(1) && m.default('2')",
    )
    .await;
    assert_eq!(imported.text, "true\n");
    f.engine.dispose_all().await;
}

#[tokio::test]
async fn a_timeout_breaks_a_sync_loop_and_keeps_the_state() {
    let f = fixture(|_| {});
    js(&f.engine, "let kept = 'still here'").await;
    let result =
        eval_params(&f.engine, json!({"cells": [{"code": "while (true) {}", "language": "js", "timeout": 1}]}))
            .await
            .unwrap();
    assert_eq!(result.cells[0].status, CellStatus::Timeout);
    assert!(result.text.contains("remains running"), "{}", result.text);
    assert_eq!(js(&f.engine, "kept").await.text, "'still here'\n");
    f.engine.dispose_all().await;
}

#[tokio::test]
async fn a_crash_keeps_the_last_output() {
    let f = fixture(|_| {});
    let result = js(&f.engine, "console.log('last words');\nprocess.kill(process.pid, 'SIGKILL')").await;
    assert!(result.is_error);
    assert!(result.text.contains("last words"), "{}", result.text);
    assert!(result.text.contains("JavaScript kernel died"), "{}", result.text);
    let next = js(&f.engine, "typeof kept").await;
    assert_eq!(next.text, "'undefined'\n", "a fresh kernel follows");
    f.engine.dispose_all().await;
}

#[tokio::test]
async fn a_kernel_killed_between_calls_is_not_blamed_on_the_next_cell() {
    let f = fixture(|_| {});
    let pid: i32 = js(&f.engine, "process.pid").await.text.trim().parse().unwrap();
    signal_pid(pid as u32, Signal::SIGKILL).unwrap();
    assert!(common::eventually(Duration::from_secs(60), || common::group_members(pid as u32).is_empty()).await);
    let next = js(&f.engine, "process.pid").await;
    assert!(!next.is_error, "{}", next.text);
    assert!(next.text.contains("previous kernel had died (killed by signal 9"), "{}", next.text);
    assert!(!next.text.contains("during this cell"), "{}", next.text);
    assert_ne!(next.text.lines().next().unwrap().parse::<i32>().unwrap(), pid);
    f.engine.dispose_all().await;
}

#[tokio::test]
async fn stdin_reads_fail_fast() {
    let f = fixture(|_| {});
    let result = js(&f.engine, "require('fs').readFileSync(0, 'utf8')").await;
    assert_eq!(result.cells[0].error.as_ref().unwrap().ename, "StdinNotSupportedError");
    f.engine.dispose_all().await;
}

#[tokio::test]
async fn mixed_calls_keep_a_kernel_per_language() {
    let f = fixture(|_| {});
    let result = eval_params(
        &f.engine,
        json!({"cells": [
            {"code": "x = 'py'", "language": "py"},
            {"code": "const x = 'js'; x", "language": "js"},
            {"code": "x", "language": "py"},
        ]}),
    )
    .await
    .unwrap();
    assert!(!result.is_error, "{}", result.text);
    assert!(result.text.contains("'js'") && result.text.contains("'py'"), "{}", result.text);
    // reset on a JavaScript cell resets JavaScript only.
    let reset = eval_params(
        &f.engine,
        json!({"cells": [
            {"code": "typeof x", "language": "js", "reset": true},
            {"code": "x", "language": "py"},
        ]}),
    )
    .await
    .unwrap();
    assert!(reset.text.contains("'undefined'") && reset.text.contains("'py'"), "{}", reset.text);
    // The first failing cell stops the call, whatever its language.
    let failing = eval_params(
        &f.engine,
        json!({"cells": [
            {"code": "null.x", "language": "js"},
            {"code": "print('never')", "language": "py"},
        ]}),
    )
    .await
    .unwrap();
    assert_eq!(failing.cells[1].status, CellStatus::Skipped);
    assert!(!failing.text.contains("never"));
    f.engine.dispose_all().await;
}

#[tokio::test]
async fn exposure_modes_and_the_javascript_fallback() {
    let exposure = |pairs: &[(&str, &str)]| {
        Exposure::from_environment(&cellbox_settings::Environment::from_pairs(pairs.iter().copied()).unwrap())
    };
    assert_eq!(exposure(&[]), Ok(Exposure { py: true, js: true }));
    assert_eq!(exposure(&[("CELLBOX_PY", "off")]), Ok(Exposure { py: false, js: true }));
    assert_eq!(exposure(&[("CELLBOX_PY", "0")]), Ok(Exposure { py: false, js: true }));
    assert_eq!(exposure(&[("CELLBOX_PY", "only")]), Ok(Exposure { py: true, js: false }));
    assert_eq!(exposure(&[("CELLBOX_JS", "only")]), Ok(Exposure { py: false, js: true }));
    assert_eq!(exposure(&[("CELLBOX_PY", "both"), ("CELLBOX_JS", "no")]), Ok(Exposure { py: true, js: false }));
    let contradiction = exposure(&[("CELLBOX_PY", "only"), ("CELLBOX_JS", "only")]).unwrap_err();
    assert!(contradiction.contains("CELLBOX_PY=only") && contradiction.contains("CELLBOX_JS=only"), "{contradiction}");

    // JavaScript only: cells without a language run as JavaScript; py cells are refused.
    let js_only = fixture(|c| c.exposure = Exposure { py: false, js: true });
    let implicit =
        eval_params(&js_only.engine, json!({"cells": [{"code": "typeof process.versions.node"}]})).await.unwrap();
    assert_eq!(implicit.text, "'string'\n");
    let refused = eval_params(&js_only.engine, json!({"cells": [{"code": "1", "language": "py"}]})).await;
    assert!(matches!(refused, Err(EvalError::LanguageDisabled(_))));
    js_only.engine.dispose_all().await;

    // Python only: js cells are refused.
    let py_only = fixture(|c| c.exposure = Exposure { py: true, js: false });
    let refused = eval_params(&py_only.engine, json!({"cells": [{"code": "1", "language": "js"}]})).await;
    assert!(matches!(refused, Err(EvalError::LanguageDisabled(_))));

    // Python unavailable: cells without a language fall back to JavaScript (said once);
    // an explicit py cell gets the Python error.
    let missing = fixture(|c| c.python = Some("/no/such/python".into()));
    let first = eval_params(&missing.engine, json!({"cells": [{"code": "1 + 1"}]})).await.unwrap();
    assert!(first.text.starts_with("2\n"), "{}", first.text);
    assert!(first.text.contains("run as JavaScript"), "{}", first.text);
    let second = eval_params(&missing.engine, json!({"cells": [{"code": "2 + 2"}]})).await.unwrap();
    assert_eq!(second.text, "4\n", "the fallback is said once");
    let explicit = eval_params(&missing.engine, json!({"cells": [{"code": "1", "language": "py"}]})).await;
    assert!(matches!(explicit, Err(EvalError::PythonUnavailable(_))), "{explicit:?}");
    missing.engine.dispose_all().await;
}

#[tokio::test]
async fn the_kernel_layer_drives_node_directly() {
    let env = common::test_env(&[]);
    let options = KernelOptions::for_runtime(Runtime::Node, node(), std::env::temp_dir(), env);
    let kernel = Kernel::start(options).await.expect("a node kernel starts");
    let mut execution = kernel.execute("let n = 0; console.log('spinning'); while (true) { n++ }").await.unwrap();
    // Interrupted once the loop runs (console.log writes at once), not after a guess at how long that takes.
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
    let after = common::run(&kernel, "typeof n").await;
    assert_eq!(after.results(), vec!["'number'"]);
    let complete = kernel.check_complete("function f() {\n").await.unwrap();
    assert_eq!(complete.status, "incomplete");
    let pid = kernel.pid();
    kernel.shutdown().await;
    assert!(common::eventually(common::PATIENCE, || common::group_members(pid).is_empty()).await);
}

fn cellbox(args: &[&str]) -> std::process::Output {
    common::binary::cellbox(args)
        .env("CELLBOX_NODE", node())
        .env_remove("CELLBOX_PY")
        .env_remove("CELLBOX_JS")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn the_cli_runs_javascript_code_and_files() {
    let out = cellbox(&["run", "--lang", "js", "-c", "console.log('hi'); 6 * 7"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "hi\n42\n");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("cell.mjs");
    std::fs::write(&file, "const x = await Promise.resolve(5);\nconsole.log(x * 2)").unwrap();
    let out = cellbox(&["run", file.to_str().unwrap()]);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "10\n", "{}", String::from_utf8_lossy(&out.stderr));
    let failing = cellbox(&["run", "--lang", "js", "-c", "undefinedName"]);
    assert_eq!(failing.status.code(), Some(1));
    let setup = cellbox(&["setup", "node", "--check"]);
    assert_eq!(setup.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&setup.stdout).contains("Version:"));
}

async fn ts(engine: &EvalEngine, code: &str) -> EvalResult {
    eval_params(engine, json!({"cells": [{"code": code, "language": "ts"}]})).await.unwrap()
}

/// Every supported Node runs TypeScript cells: Node 22.13+ strips the types itself, an older one
/// with the stripper the runner ships (runner-js/vendor/amaro). Positions are kept either way.
#[tokio::test]
async fn typescript_cells_run_on_every_supported_node() {
    let f = fixture(|_| {});
    let first = ts(
        &f.engine,
        "interface Point { x: number; y: number }\ntype Pair<T> = [T, T];\n\
         function swap<T>(p: Pair<T>): Pair<T> { return [p[1], p[0]] }\nconst n: number = 20;\nn + 1",
    )
    .await;
    assert_eq!(first.text, "21\n", "{}", first.text);
    let second = ts(
        &f.engine,
        "const p = { x: 1, y: 2 } as Point;\nconst v: number = await Promise.resolve(swap<number>([p.x, p.y])[0]);\nv",
    )
    .await;
    assert_eq!(second.text, "2\n", "state and top-level await across TypeScript cells");
    let thrown =
        ts(&f.engine, "function boom(n: number): never {\n  throw new RangeError(`at ${n}`);\n}\nboom(3 as number)")
            .await;
    assert_eq!(thrown.cells[0].error.as_ref().unwrap().ename, "RangeError");
    assert!(thrown.text.contains("<cell-3>:2:9"), "{}", thrown.text);
    assert!(thrown.text.contains("<cell-3>:4:1"), "{}", thrown.text);
    let refused = ts(&f.engine, "const before = 1;\nenum Color { Red, Green }").await;
    let error = refused.cells[0].error.as_ref().unwrap();
    assert_eq!(error.ename, "SyntaxError");
    assert!(
        error.evalue.contains("enum is not supported") && error.evalue.contains("const object"),
        "{}",
        error.evalue
    );
    assert!(refused.text.contains("<cell-4>:2:1"), "{}", refused.text);
    f.engine.dispose_all().await;
}

#[tokio::test]
async fn a_javascript_session_says_it_cannot_be_forked_or_saved() {
    use cellbox_engine::tool::CallContext;
    let f = fixture(|_| {});
    let ran = js(&f.engine, "const kept = 1").await;
    assert!(!ran.is_error, "{}", ran.text);
    let session = CallContext::new("s");
    let fork = f.engine.fork_session(&session, &CallContext::new("copy"), "copy", Default::default()).await;
    let error = fork.expect_err("a JavaScript kernel is not forked").to_string();
    assert!(error.contains("only Python kernels can"), "{error}");
    let saved = f.engine.snapshot_session(&session, std::path::Path::new("s.cellbox")).await;
    let error = saved.expect_err("a JavaScript kernel is not saved").to_string();
    assert!(error.contains("snapshots are of Python kernels"), "{error}");
    f.engine.dispose_all().await;
}
