//! Attacks through interpreter discovery, over stdio MCP: what a cell plants
//! where discovery looks (a `.venv/bin/python`, a `json.py` beside the probe)
//! must neither run outside the sandbox, nor lie its way into the probe's
//! answer that later kernels (of other workspaces too) start with, nor hold
//! or flood the host that reads the probe.

use std::path::{Path, PathBuf};

use serde_json::json;

use super::common::mcp::{RawServer, text};
use super::common::{self, binary};
use super::scene::Scene;

/// A copy of the interpreter under test in its own venv (`--copies`): its file
/// is the scene's, so a cell may touch it as a user would own it.
fn own_interpreter(scene: &Scene) -> PathBuf {
    let venv = scene.dir.path().join("python-copy");
    let status = std::process::Command::new(common::python())
        .args(["-m", "venv", "--copies", "--without-pip"])
        .arg(&venv)
        .status()
        .unwrap();
    assert!(status.success());
    venv.join("bin/python")
}

/// `cellbox mcp` in `work` on `python`, the scene's home (and so the probe memo in its cache).
fn server(scene: &Scene, work: &Path, python: Option<&Path>) -> RawServer {
    let mut command = binary::bare(["mcp", "--cwd"]);
    command.arg(work);
    scene.hostile_env(&mut command);
    if let Some(python) = python {
        command.env("CELLBOX_PYTHON", python);
    }
    RawServer::started(command)
}

/// Processes whose command line has `marker`.
fn processes_with(marker: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        if String::from_utf8_lossy(&cmdline).contains(marker) {
            found.push(pid);
        }
    }
    found
}

#[test]
fn a_planted_module_cannot_answer_for_the_interpreter_nor_poison_other_workspaces() {
    let scene = Scene::new();
    let python = own_interpreter(&scene);
    let evil = scene.work.join("evil.sh");
    {
        let mut a = server(&scene, &scene.work, Some(&python));
        // The interpreter's answer is remembered on disk, for every workspace.
        assert!(text(&a.tool("eval", json!({"cells": [{"code": "1"}]}))).contains('1'));
        let plant = format!(
            "import os\nos.makedirs('sub', exist_ok=True)\n\
             open('sub/json.py', 'w').write('def dumps(o):\\n    return \\'{{\"executable\": \"{evil}\", \"version\": \"3.11.7\"}}\\'\\n')\n\
             open({evil:?}, 'w').write('#!/bin/sh\\necho pwned > \"$(pwd)/PWNED\"\\nexec {python} \"$@\"\\n')\n\
             os.chmod({evil:?}, 0o755)\n\
             os.chmod({python:?}, os.stat({python:?}).st_mode & 0o7777)  # a new ctime: the answer is asked again\n\
             print('planted')",
            evil = evil.display(),
            python = python.display()
        );
        assert!(text(&a.tool("eval", json!({"cells": [{"code": plant}]}))).contains("planted"));
        let ran = a.tool("eval", json!({"cells": [{"code": "import sys; sys.executable"}], "cwd": "sub"}));
        assert!(!text(&ran).contains("evil"), "the planted module answered for the interpreter: {ran}");
    }
    // Another workspace of the same user, later: its kernels start on the interpreter, not the plant.
    let other = scene.dir.path().join("other-work");
    std::fs::create_dir_all(&other).unwrap();
    let mut b = server(&scene, &other, Some(&python));
    let ran = b.tool("eval", json!({"cells": [{"code": "import os, sys; (sys.executable, os.path.exists('PWNED'))"}]}));
    assert!(!text(&ran).contains("evil") && text(&ran).contains("False"), "{ran}");
    assert!(!other.join("PWNED").exists() && !scene.work.join("sub/PWNED").exists());
    scene.assert_untouched();
}

#[test]
fn a_probe_that_lingers_or_floods_holds_nothing_of_the_host() {
    let scene = Scene::new();
    let real = common::python().display().to_string();
    let marker = "987654321";
    let plant = format!(
        "import os\nfor name, body in [\n\
         ('lingers', '(exec sleep {marker} </dev/null 2>/dev/null &)\\necho \\'{{\"executable\": \"{real}\", \"version\": \"3.11.7\"}}\\''),\n\
         ('floods', 'head -c 3000000000 /dev/zero'),\n\
         ('spins', 'for i in 1 2 3 4 5 6 7 8; do cat /dev/zero & done; wait'),\n\
         ]:\n    os.makedirs(name + '/.venv/bin', exist_ok=True)\n\
         \x20   open(name + '/.venv/bin/python', 'w').write('#!/bin/sh\\n' + body + '\\n')\n\
         \x20   os.chmod(name + '/.venv/bin/python', 0o755)\nprint('planted')"
    );
    let mut server = server(&scene, &scene.work, None);
    assert!(text(&server.tool("eval", json!({"cells": [{"code": plant}]}))).contains("planted"));
    for folder in ["lingers", "floods", "spins"] {
        // Answered (on another interpreter, or with an error), not held.
        let answer = server.tool("eval", json!({"cells": [{"code": "1", "timeout": 60}], "cwd": folder}));
        assert!(answer.get("content").is_some(), "{folder}: {answer}");
    }
    assert!(
        common::eventually_blocking(common::PATIENCE, || processes_with(&format!("sleep {marker}")).is_empty()),
        "a probe's child outlived it"
    );
    // The flood was read no further than the probe's answer needs.
    let status = std::fs::read_to_string(format!("/proc/{}/status", server.pid())).unwrap();
    let peak_kib: u64 = status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|value| value.split_whitespace().next()?.parse().ok())
        .unwrap();
    assert!(peak_kib < 1 << 20, "the host held {peak_kib} KiB for a probe's output");
    scene.assert_untouched();
}
