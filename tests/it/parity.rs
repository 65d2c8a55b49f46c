//! Notebook parity against ipykernel: `bench/parity/parity.py` runs the notebooks of
//! `tests/notebooks/` cell by cell through ipykernel and through this build's `cellbox mcp`, and
//! fails when a cell that works under ipykernel fails under cellbox, when a deterministic cell's
//! result text differs (see the harness's docstring), or when the corpus itself is wrong. The
//! default run takes the magic-heavy notebooks, which start no heavy library and so stay quick;
//! `CELLBOX_PARITY_FULL=1` runs the whole corpus (about a minute on 2 cores) and
//! `CELLBOX_PARITY_ONLY=NAME,NAME` the named notebooks.

use crate::common;

use std::process::Command;

/// Notebooks whose cells exercise the notebook-only features (magics, help, history, pickling).
const QUICK: &str = "05_magics_timing,06_shell_and_files,07_who_and_history,08_help_and_introspection,\
                     10_pickle_multiprocessing,11_exceptions_xmode";

#[test]
fn notebooks_run_under_cellbox_as_under_ipykernel() {
    let python = common::python();
    let probe = Command::new(python).args(["-c", "import ipykernel, jupyter_client"]).output().unwrap();
    if !probe.status.success() {
        eprintln!(
            "skipped: ipykernel/jupyter_client are not installed in {} (scripts/test installs them)",
            python.display()
        );
        return;
    }
    let root = env!("CARGO_MANIFEST_DIR");
    let out = tempfile::tempdir().unwrap();
    let mut command = Command::new(python);
    command
        .arg(format!("{root}/bench/parity/parity.py"))
        .arg("--cellbox")
        .arg(common::binary::BIN)
        .arg("--out")
        .arg(out.path());
    if let Ok(only) = std::env::var("CELLBOX_PARITY_ONLY") {
        command.args(["--only", &only]);
    } else if std::env::var_os("CELLBOX_PARITY_FULL").is_none() {
        command.args(["--only", &QUICK.replace(' ', "")]);
    }
    let output = command.output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    println!("{stdout}");
    assert!(
        !stderr.contains("No module named 'mcp'"),
        "the MCP client is missing: run scripts/test, which installs it (python: {})",
        python.display()
    );
    assert!(
        output.status.success(),
        "cells that work under ipykernel fail under cellbox, or their results read differently \
         (see the lists above; bench/parity/run reproduces it)\nstderr:\n{stderr}"
    );
    let report = std::fs::read_to_string(out.path().join("parity.json")).expect("the harness writes its report");
    let report: serde_json::Value = serde_json::from_str(&report).unwrap();
    let total = &report["total"];
    assert!(total["cells"].as_u64().unwrap() > 0, "no cell ran: {total}");
    assert_eq!(total["fail_under_cellbox"], 0, "{total}");
    assert_eq!(total["corpus_errors"], 0, "{total}");
    assert_eq!(total["result_differences"], 0, "results read differently under cellbox: {total}");
}

/// The harness itself: ipykernel against ipykernel must compare identical cell for cell, so the
/// normalisation (timings, addresses, folders, profiles) is neither too weak nor tied to cellbox.
#[test]
fn harness_finds_ipykernel_identical_to_itself() {
    let python = common::python();
    let probe = Command::new(python).args(["-c", "import ipykernel, jupyter_client"]).output().unwrap();
    if !probe.status.success() {
        eprintln!("skipped: ipykernel/jupyter_client are not installed in {}", python.display());
        return;
    }
    let out = tempfile::tempdir().unwrap();
    let output = Command::new(python)
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/bench/parity/parity.py"))
        .args(["--self-check", "--only", "05_magics_timing,08_help_and_introspection"])
        .arg("--out")
        .arg(out.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    println!("{stdout}");
    assert!(output.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.path().join("parity.json")).unwrap()).unwrap();
    let total = &report["total"];
    assert!(total["cells"].as_u64().unwrap() >= 20, "{total}");
    assert_eq!(total["same_text"], total["cells"], "{total}");
}

/// The harness's normalisation and display picking, on fixed texts (no kernel needed).
#[test]
fn harness_normalisation_unit_tests() {
    let output = Command::new(common::python())
        .args(["-m", "unittest", "-q", concat!(env!("CARGO_MANIFEST_DIR"), "/bench/parity/test_parity.py")])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
}
