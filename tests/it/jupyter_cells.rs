//! Cells for installed Jupyter kernels through the eval tool: `"language":
//! "r"` on a real IRkernel (installed by the test command from the system's
//! packages; skipped with the reason where it cannot be) and `"kernel":
//! "python3"` on the test environment's real ipykernel.
#![cfg(target_os = "linux")]

use crate::common;
use crate::jupyter_kernel::irkernel;

use cellbox_engine::tool::{CellStatus, EvalEngine, EvalResult};
use common::engine::{Fixture, try_eval_json as eval_params};
use serde_json::json;

async fn r(engine: &EvalEngine, code: &str) -> EvalResult {
    eval_params(engine, json!({"cells": [{"code": code, "language": "r"}]})).await.unwrap()
}

async fn py3(engine: &EvalEngine, code: &str, timeout: u32) -> EvalResult {
    let params = json!({"cells": [{"code": code, "kernel": "python3", "timeout": timeout}]});
    eval_params(engine, params).await.unwrap()
}

#[tokio::test]
async fn r_cells_keep_state_plot_fail_and_survive_a_timeout() {
    if irkernel().is_none() {
        return;
    }
    let f = Fixture::new(|_| {});
    assert!(!r(&f.engine, "x <- 41").await.is_error);
    let value = r(&f.engine, "cat('hello\\n'); x + 1").await;
    assert_eq!(value.text, "hello\n42\n", "{}", value.text);
    let plot = r(&f.engine, "plot(1:10)").await;
    assert_eq!(plot.images.len(), 1, "{}", plot.text);
    assert_eq!(plot.images[0].image.mime, "image/png");
    let failed = r(&f.engine, "f <- function() stop('boom')\nf()").await;
    assert!(failed.is_error && failed.text.contains("boom"), "{}", failed.text);
    let slept = eval_params(&f.engine, json!({"cells": [{"code": "Sys.sleep(600)", "language": "r", "timeout": 1}]}))
        .await
        .unwrap();
    assert_eq!(slept.cells[0].status, CellStatus::Timeout, "{}", slept.text);
    assert!(r(&f.engine, "cat(x)").await.text.contains("41"), "the state outlives the interrupt");
    // Variables for one cell only (a library caller's, as E2B's `envs=`), put back even after a failure.
    for code in ["cat(Sys.getenv('FOO'))", "cat(Sys.getenv('FOO')); stop('failed')"] {
        let mut params =
            cellbox_engine::tool::EvalParams::from_json(json!({"cells": [{"code": code, "language": "r"}]})).unwrap();
        params.cells[0].env = Some([("FOO".to_string(), Some("bar \"quoted\"".to_string()))].into());
        let with_env = common::engine::try_eval_in(&f.engine, "s", params).await.unwrap();
        assert!(with_env.text.starts_with("bar \"quoted\""), "{}", with_env.text);
        assert_eq!(r(&f.engine, "cat(Sys.getenv('FOO', unset = 'unset'))").await.text, "unset");
    }
    // An R session is saved as an R notebook, with IRkernel's own language_info.
    let notebook = serde_json::to_value(f.engine.export_notebook("s").unwrap()).unwrap();
    assert_eq!(notebook["metadata"]["kernelspec"]["name"], "ir", "{:#}", notebook["metadata"]);
    assert_eq!(notebook["metadata"]["language_info"]["name"], "R");
    assert_eq!(notebook["cells"][0]["source"], json!(["x <- 41"]));
    assert!(notebook["cells"][0]["metadata"].get("cellbox").is_none());
    // Once Python joins, it is a Python notebook whose R cells say what ran them.
    eval_params(&f.engine, json!({"cells": [{"code": "print(1)"}, {"code": "echo hi", "language": "bash"}]}))
        .await
        .unwrap();
    let notebook = serde_json::to_value(f.engine.export_notebook("s").unwrap()).unwrap();
    assert_eq!(notebook["metadata"]["kernelspec"]["name"], "python3");
    assert_eq!(notebook["cells"][0]["metadata"]["cellbox"], json!({"language": "r", "kernel": "ir"}));
    let last = notebook["cells"].as_array().unwrap().len() - 1;
    assert_eq!(notebook["cells"][last]["metadata"]["cellbox"], json!({"language": "bash"}));
    assert!(notebook["cells"][last - 1]["metadata"].get("cellbox").is_none(), "Python cells are the notebook's own");
    f.engine.dispose_all().await;
}

#[tokio::test]
async fn the_sandbox_holds_for_r_cells() {
    if irkernel().is_none() {
        return;
    }
    let secret = common::planted_key();
    let outside = tempfile::tempdir().unwrap();
    let marker = outside.path().join("marker");
    let denied = secret.path().to_path_buf();
    let f = Fixture::new(|config| config.sandbox.deny_read.push(denied));
    let code = format!(
        "tryCatch(cat(readLines('{}/id_rsa')), error = function(e) cat('read-refused\\n'), warning = function(w) \
         cat('read-refused\\n'))\nok <- suppressWarnings(file.create('{}'))\ncat(if (ok) 'wrote-outside' else \
         'write-refused', '\\n')",
        secret.path().display(),
        marker.display()
    );
    let result = r(&f.engine, &code).await;
    assert!(result.text.contains("read-refused") && result.text.contains("write-refused"), "{}", result.text);
    assert!(!result.text.contains("sk-secret"), "a secret came back");
    assert!(!marker.exists(), "a marker outside the workspace appeared");
    f.engine.dispose_all().await;
}

#[tokio::test]
async fn a_kernel_cell_runs_in_the_named_kernelspec_and_a_stuck_one_is_killed() {
    let f = Fixture::new(|_| {});
    // Per-cell variables are refused before the kernel is touched (a library caller's).
    let mut params =
        cellbox_engine::tool::EvalParams::from_json(json!({"cells": [{"code": "1", "kernel": "python3"}]})).unwrap();
    params.cells[0].env = Some([("FOO".to_string(), Some("bar".to_string()))].into());
    let refused = common::engine::try_eval_in(&f.engine, "s", params).await.unwrap_err().to_string();
    assert!(refused.contains("take no per-cell environment variables"), "{refused}");
    let first = py3(&f.engine, "import sys\nkept = 7\nprint(sys.argv[0].endswith('ipykernel_launcher.py'))", 30).await;
    assert_eq!(first.text, "True\n", "the cell ran in ipykernel, not cellbox's runner");
    let stuck = "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True: pass";
    let killed = py3(&f.engine, stuck, 1).await;
    assert_eq!(killed.cells[0].status, CellStatus::Killed, "{}", killed.text);
    let after = py3(&f.engine, "print('kept' in globals())", 30).await;
    assert_eq!(after.text, "False\n", "a killed kernel starts afresh: {}", after.text);
    let crashed = py3(&f.engine, "import os\nos._exit(9)", 30).await;
    assert!(crashed.is_error, "{}", crashed.text);
    assert!(crashed.text.contains("exit code 9"), "the crash is attributed to the cell: {}", crashed.text);
    f.engine.dispose_all().await;
}

#[tokio::test]
async fn hostile_and_unknown_kernel_names_are_refused_with_what_is_installed() {
    let f = Fixture::new(|_| {});
    for name in ["../../etc", "/usr/share/jupyter/kernels/ir", "ir\u{0}", ""] {
        let error = eval_params(&f.engine, json!({"cells": [{"code": "1", "kernel": name}]})).await.unwrap_err();
        assert!(error.to_string().contains("is not a kernel name"), "{name:?}: {error}");
    }
    let unknown = eval_params(&f.engine, json!({"cells": [{"code": "1", "kernel": "no-such-kernel"}]})).await;
    let message = match unknown {
        Err(error) => error.to_string(),
        Ok(result) => result.text,
    };
    assert!(message.contains("no Jupyter kernel named \"no-such-kernel\" is installed"), "{message}");
    assert!(message.contains("python3"), "the installed kernels are listed: {message}");
    let mixed = eval_params(&f.engine, json!({"cells": [{"code": "1", "kernel": "python3", "language": "js"}]})).await;
    assert!(mixed.unwrap_err().to_string().contains("pass one or the other"));
    let nameless = eval_params(&f.engine, json!({"cells": [{"code": "1", "language": "jupyter"}]})).await;
    assert!(nameless.unwrap_err().to_string().contains("names its kernel"));
    let not_r = eval_params(&f.engine, json!({"cells": [{"code": "1", "kernel": "python3", "language": "r"}]})).await;
    let not_r = not_r.unwrap_err().to_string();
    assert!(not_r.contains("python3 is a python kernel"), "{not_r}");
    f.engine.dispose_all().await;
}

fn notebook(kernelspec: serde_json::Value, cells: Vec<serde_json::Value>) -> String {
    json!({"nbformat": 4, "nbformat_minor": 5, "metadata": {"kernelspec": kernelspec}, "cells": cells}).to_string()
}

fn code_cell(source: &str, metadata: serde_json::Value) -> serde_json::Value {
    json!({"cell_type": "code", "metadata": metadata, "source": source, "outputs": [], "execution_count": null})
}

fn run_notebook(dir: &std::path::Path, args: &[&str]) -> (std::process::Output, serde_json::Value) {
    let out = common::binary::cellbox(args)
        .current_dir(dir)
        .env("CELLBOX_ARTIFACTS_DIR", dir.join("artifacts"))
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let written = std::fs::read_to_string(dir.join("out.ipynb")).unwrap_or_else(|_| "null".into());
    (out, serde_json::from_str(&written).unwrap())
}

#[test]
fn an_r_notebook_runs_in_its_kernel_and_a_mixed_one_cell_by_cell() {
    let dir = tempfile::tempdir().unwrap();
    // A Python notebook whose second cell cellbox saved from a bash cell.
    let mixed = notebook(
        json!({"name": "python3", "display_name": "Python 3", "language": "python"}),
        vec![
            code_cell("print(40 + 2)", json!({})),
            code_cell("echo $((40 + 2))", json!({"cellbox": {"language": "bash"}})),
        ],
    );
    std::fs::write(dir.path().join("mixed.ipynb"), mixed).unwrap();
    let (out, nb) = run_notebook(dir.path(), &["run", "mixed.ipynb", "-o", "out.ipynb"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(nb["cells"][1]["outputs"][0]["text"], json!(["42\n"]), "{:#}", nb["cells"][1]);
    if irkernel().is_none() {
        return;
    }
    let r_notebook = notebook(
        json!({"name": "ir", "display_name": "R", "language": "R"}),
        vec![code_cell("x <- 40", json!({})), code_cell("x + 2", json!({}))],
    );
    std::fs::write(dir.path().join("r.ipynb"), r_notebook).unwrap();
    let (out, nb) = run_notebook(dir.path(), &["run", "r.ipynb", "-o", "out.ipynb"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(nb["cells"][1]["outputs"][0]["data"]["text/plain"], json!(["[1] 42"]), "{:#}", nb["cells"][1]);
    let (refused, _) = run_notebook(dir.path(), &["run", "r.ipynb", "-p", "x", "1"]);
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("-p and -r write Python assignments"));
}

#[tokio::test]
async fn an_r_kernel_stuck_is_killed_crashed_is_named_and_reset_starts_afresh() {
    if irkernel().is_none() {
        return;
    }
    let f = Fixture::new(|_| {});
    assert!(!r(&f.engine, "x <- 41").await.is_error);
    // R defers SIGINT for the whole of `suspendInterrupts`: the interrupt cannot land, the kill must.
    let stuck = json!({"cells": [{"code": "suspendInterrupts(repeat {})", "language": "r", "timeout": 1}]});
    let killed = eval_params(&f.engine, stuck).await.unwrap();
    assert_eq!(killed.cells[0].status, CellStatus::Killed, "{}", killed.text);
    let after = r(&f.engine, "cat(exists('x'))").await;
    assert_eq!(after.text, "FALSE", "a killed kernel starts afresh: {}", after.text);
    let crashed = r(&f.engine, "y <- 1\ntools::pskill(Sys.getpid(), 9L)").await;
    assert!(crashed.is_error, "{}", crashed.text);
    assert!(crashed.text.contains("signal 9"), "the crash is attributed to the cell: {}", crashed.text);
    assert!(!r(&f.engine, "z <- 2").await.is_error, "the next cell starts a fresh kernel");
    assert_eq!(f.engine.reset_session("s").await, 1, "reset stops the R kernel");
    let reset = r(&f.engine, "cat(exists('z'))").await;
    assert_eq!(reset.text, "FALSE", "state is gone after reset: {}", reset.text);
    f.engine.dispose_all().await;
}

#[tokio::test]
async fn a_spare_r_kernel_serves_a_reset_and_never_ran_user_code() {
    if irkernel().is_none() {
        return;
    }
    let f = Fixture::new(|config| config.spare = cellbox_engine::session::SpareLimits { count: 1, idle: None });
    let first = r(&f.engine, "secret <- 42\ncat(Sys.getpid())").await;
    assert!(!first.is_error, "{}", first.text);
    assert!(
        common::eventually(common::PATIENCE, || !f.engine.spare_pids().is_empty()).await,
        "no spare R kernel became ready"
    );
    let spare = f.engine.spare_pids()[0];
    assert_ne!(spare.to_string(), first.text, "the spare is another kernel");
    let params = json!({"reset": true, "cells": [{"code": "cat(Sys.getpid(), exists('secret'))", "language": "r"}]});
    let reset = eval_params(&f.engine, params).await.unwrap();
    assert_eq!(reset.text, format!("{spare} FALSE"), "the reset took the spare, which holds no state");
    f.engine.dispose_all().await;
    assert!(common::reaped(spare), "the spare's kernel ended with its engine");
}
