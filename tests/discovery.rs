//! Interpreter resolution with real virtual environments, one per source,
//! and the kernel really running inside the chosen one.

mod common;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use cellbox::kernel::{Kernel, KernelOptions};
use cellbox::runtime::{self, DiscoveryInput, EnvActivation, PythonSource, env};

/// One real venv, made once, copied into place for each case (copying keeps
/// the tests fast; a venv's `bin/python` symlink stays valid when moved).
fn template_venv() -> &'static Path {
    static VENV: OnceLock<tempfile::TempDir> = OnceLock::new();
    VENV.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let status = Command::new(common::python())
            .args(["-m", "venv", "--without-pip"])
            .arg(dir.path().join("venv"))
            .status()
            .unwrap();
        assert!(status.success(), "python -m venv failed");
        dir
    })
    .path()
    .join("venv")
    .leak()
}

fn make_venv(at: &Path) -> PathBuf {
    std::fs::create_dir_all(at.parent().unwrap()).unwrap();
    let status = Command::new("cp").arg("-a").arg(template_venv()).arg(at).status().unwrap();
    assert!(status.success());
    at.to_path_buf()
}

fn bare_input(cwd: &Path) -> DiscoveryInput {
    DiscoveryInput { cwd: cwd.to_path_buf(), path: Some(OsString::from("")), ..Default::default() }
}

fn resolve(input: &DiscoveryInput) -> runtime::ResolvedPython {
    runtime::resolve(input, false).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn each_source_in_order() {
    let root = tempfile::tempdir().unwrap();
    let cwd = root.path().join("project");
    std::fs::create_dir_all(&cwd).unwrap();
    let home = root.path().join("home");
    let bin_dir = root.path().join("pathbin");
    std::fs::create_dir_all(&bin_dir).unwrap();
    std::os::unix::fs::symlink(common::python(), bin_dir.join("python3")).unwrap();

    let mut input = bare_input(&cwd);
    input.path = Some(bin_dir.clone().into_os_string());
    let found = resolve(&input);
    assert_eq!(found.source, PythonSource::Path);
    assert_eq!(found.interpreter, bin_dir.join("python3"), "python is missing, python3 is next");
    assert_eq!(found.activation, EnvActivation::None);

    input.home = Some(home.clone());
    let managed = make_venv(&home.join(".cellbox/python-env"));
    assert_eq!(resolve(&input).source, PythonSource::Managed);
    assert_eq!(resolve(&input).activation, EnvActivation::Venv(managed));

    make_venv(&cwd.join("venv"));
    assert_eq!(resolve(&input).source, PythonSource::ProjectVenv);
    make_venv(&cwd.join(".venv"));
    assert_eq!(resolve(&input).source, PythonSource::ProjectDotVenv);

    let conda = make_venv(&root.path().join("conda-env"));
    input.conda_prefix = Some(conda.clone().into_os_string());
    let found = resolve(&input);
    assert_eq!(found.source, PythonSource::CondaPrefix);
    assert_eq!(found.activation, EnvActivation::Conda(conda));

    let active = make_venv(&root.path().join("active"));
    input.virtual_env = Some(active.clone().into_os_string());
    let found = resolve(&input);
    assert_eq!(found.source, PythonSource::VirtualEnv);
    assert_eq!(found.executable, active.join("bin/python"), "a venv runs through its own bin/python");
    assert!(found.version.as_deref().unwrap().starts_with("3."));

    input.explicit = Some("../pathbin/python3".into());
    let found = resolve(&input);
    assert_eq!(found.source, PythonSource::Explicit, "explicit wins over everything");
    assert_eq!(found.interpreter, cwd.join("../pathbin/python3"));
}

#[test]
fn explicit_setting_expands_home_and_never_falls_back() {
    let root = tempfile::tempdir().unwrap();
    let venv = make_venv(&root.path().join("home/envs/tool"));
    let mut input = bare_input(root.path());
    input.home = Some(root.path().join("home"));
    input.explicit = Some("~/envs/tool/bin/python".into());
    let found = resolve(&input);
    assert_eq!(found.interpreter, venv.join("bin/python"));
    assert_eq!(found.activation, EnvActivation::Venv(venv), "an explicit venv interpreter activates its venv");

    make_venv(&root.path().join(".venv"));
    input.explicit = Some("/no/such/python".into());
    let error = runtime::resolve(&input, false).unwrap_err();
    assert_eq!(error.attempts.len(), 1, "no fallback after an explicit setting");
    assert!(error.to_string().contains("/no/such/python (does not exist)"), "{error}");
}

#[test]
fn failures_say_what_was_tried_and_why() {
    let root = tempfile::tempdir().unwrap();
    let cwd = root.path();
    // A broken .venv: bin/python exists but is not a working interpreter.
    std::fs::create_dir_all(cwd.join(".venv/bin")).unwrap();
    std::fs::write(cwd.join(".venv/bin/python"), "#!/bin/sh\necho broken >&2\nexit 1\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(cwd.join(".venv/bin/python"), std::fs::Permissions::from_mode(0o755)).unwrap();
    // An old interpreter pretending to be 3.6.
    std::fs::create_dir_all(cwd.join("venv/bin")).unwrap();
    std::fs::write(
        cwd.join("venv/bin/python"),
        "#!/bin/sh\necho '{\"executable\": \"/x\", \"version\": \"3.6.15\"}'\n",
    )
    .unwrap();
    std::fs::set_permissions(cwd.join("venv/bin/python"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let input = bare_input(cwd);
    let error = runtime::resolve(&input, false).unwrap_err();
    let text = error.to_string();
    assert!(text.contains("project .venv") && text.contains("broken"), "{text}");
    assert!(text.contains("Python 3.6.15; cellbox needs 3.8 or newer"), "{text}");
    assert!(text.contains("python (not found on PATH)"), "{text}");
    assert!(text.contains("--python"), "the message says what to do next: {text}");

    let skipped = runtime::resolve(&input, true).unwrap();
    assert_eq!(skipped.source, PythonSource::ProjectDotVenv, "skip-check takes the first existing candidate");
    assert_eq!(skipped.version, None);
}

#[tokio::test]
async fn a_kernel_runs_inside_the_chosen_venv() {
    let root = tempfile::tempdir().unwrap();
    let venv = make_venv(&root.path().join(".venv"));
    let input = bare_input(root.path());
    let found = resolve(&input);
    let env = env::kernel_env(std::env::vars_os(), &found.activation, &Default::default());
    let kernel = Kernel::start(KernelOptions::new(&found.executable, root.path(), env)).await.unwrap();
    let output = common::run(
        &kernel,
        "import os, sys\n(sys.prefix, os.environ['VIRTUAL_ENV'], os.environ['PATH'].split(':')[0])",
    )
    .await;
    let venv = venv.display().to_string();
    let bin = format!("{venv}/bin");
    assert_eq!(output.results(), [format!("({venv:?}, {venv:?}, {bin:?})").replace('"', "'")]);
    kernel.shutdown().await;
}

#[test]
fn probes_record_the_real_executable_behind_a_shim() {
    let root = tempfile::tempdir().unwrap();
    let shim = root.path().join("python");
    std::fs::write(&shim, format!("#!/bin/sh\nexec {} \"$@\"\n", common::python().display())).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&shim, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut input = bare_input(root.path());
    input.path = Some(root.path().as_os_str().to_owned());
    let found = resolve(&input);
    assert_eq!(found.interpreter, shim);
    assert_ne!(found.executable, shim, "the kernel is spawned on the real binary, not the shim");
}
