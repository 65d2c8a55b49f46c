//! `%pip` for real: install, upgrade and uninstall wheels built on the spot
//! (no network) into a workspace `.venv`, which is where the default sandbox
//! lets a kernel install. The distribution's name differs from its import
//! name, so eviction must go through the package metadata.

use crate::common;

use std::path::{Path, PathBuf};

use cellbox_kernels::kernel::{Kernel, KernelOptions};
use common::{BUILD_WHEEL, run, test_env};

/// A venv with pip inside `workspace`, made from the test interpreter.
fn workspace_venv(workspace: &Path) -> PathBuf {
    let venv = workspace.join(".venv");
    let status = std::process::Command::new(common::python()).args(["-m", "venv"]).arg(&venv).status().unwrap();
    assert!(status.success(), "python -m venv failed");
    venv.join("bin/python")
}

#[tokio::test]
async fn pip_installs_upgrades_and_evicts_by_distribution() {
    let dir = tempfile::tempdir().unwrap();
    let python = workspace_venv(dir.path());
    // The default sandbox (workspace-write): the workspace's venv is writable, the test interpreter is not.
    let options = KernelOptions::new(&python, dir.path(), test_env(&[]));
    assert!(!options.sandbox.is_off());
    let kernel = Kernel::start(options).await.expect("kernel starts");
    run(&kernel, BUILD_WHEEL).await;
    let setup =
        format!("w1 = build_wheel({0:?}, '1.0')\nw2 = build_wheel({0:?}, '2.0')", dir.path().display().to_string());
    assert!(run(&kernel, &setup).await.is_ok());

    let install = run(&kernel, "%pip install --no-index --no-deps --disable-pip-version-check $w1\nimport cellbox_probe_mod\ncellbox_probe_mod.VERSION").await;
    assert!(install.is_ok(), "{:?}\n{}{}", install.errors(), install.stdout(), install.stderr());
    assert!(
        install.stdout().contains("Successfully installed cellbox-probe-dist-1.0"),
        "pip streams its output: {}",
        install.stdout()
    );
    assert_eq!(install.results(), ["1"]);
    let landed = run(&kernel, "import sys\ncellbox_probe_mod.__file__.startswith(sys.prefix + '/')").await;
    assert_eq!(landed.results(), ["True"], "installed into the workspace venv");

    let upgrade = run(&kernel, "%pip install --no-index --no-deps --disable-pip-version-check $w2\nimport cellbox_probe_mod\ncellbox_probe_mod.VERSION").await;
    assert_eq!(upgrade.results(), ["2"], "the old module was evicted, so the new code is imported without a restart");
    let event = upgrade
        .displays()
        .iter()
        .find_map(|b| b.get("application/x-cellbox-status").cloned())
        .expect("a pip status event");
    assert_eq!(event["op"], "pip");
    assert_eq!(event["exit_code"], 0);
    assert_eq!(event["installed"], serde_json::json!(["cellbox-probe-dist"]));
    assert_eq!(event["evicted"], serde_json::json!(["cellbox_probe_mod"]));

    let failing = run(&kernel, "%pip install --no-index /no/such/package.whl").await;
    assert!(!failing.is_ok());
    let error = &failing.errors()[0];
    assert_eq!(error.ename, "PipError");
    assert!(error.evalue.contains("pip exited with status"), "{}", error.evalue);
    assert!(!failing.stderr().is_empty() || !failing.stdout().is_empty(), "pip's own output stays visible");

    let removed = run(&kernel, "%pip uninstall -y cellbox-probe-dist").await;
    assert!(removed.is_ok(), "{:?}", removed.errors());
}
