//! Interpreter resolution with real virtual environments, one per source,
//! and the kernel really running inside the chosen one.
//!
//! Unix only: its fixtures are shell-script shims with execute bits, and symlinks.
#![cfg(unix)]

use crate::common;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use cellbox_kernels::discovery::{self, DiscoveryInput, EnvActivation, PythonSource, env};
use cellbox_kernels::kernel::{Kernel, KernelOptions};

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

fn resolve(input: &DiscoveryInput) -> discovery::ResolvedPython {
    discovery::resolve(input, false).unwrap_or_else(|e| panic!("{e}"))
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
    let error = discovery::resolve(&input, false).unwrap_err();
    assert_eq!(error.attempts.len(), 1, "no fallback after an explicit setting");
    assert!(error.to_string().contains("/no/such/python (does not exist)"), "{error}");
}

#[test]
fn an_environment_with_only_python3_is_used_and_every_missing_candidate_is_named_on_failure() {
    let root = tempfile::tempdir().unwrap();
    let cwd = root.path().join("project");
    // Some tools make `bin/python3` and no `bin/python`.
    std::fs::create_dir_all(cwd.join("venv/bin")).unwrap();
    std::os::unix::fs::symlink(common::python(), cwd.join("venv/bin/python3")).unwrap();
    let mut input = bare_input(&cwd);
    input.home = Some(root.path().join("home"));
    let found = resolve(&input);
    assert_eq!(found.source, PythonSource::ProjectVenv);
    assert_eq!(found.interpreter, cwd.join("venv/bin/python3"));

    // A `python` that is not executable, a `.venv` and a home without environments, an empty PATH:
    // each is named, with why it was passed over, in order.
    std::fs::remove_file(cwd.join("venv/bin/python3")).unwrap();
    std::fs::write(cwd.join("venv/bin/python"), "not a program").unwrap();
    let text = discovery::resolve(&input, false).unwrap_err().to_string();
    let expected = [
        format!("project .venv: {} (does not exist)", cwd.join(".venv/bin/python").display()),
        format!("project venv: {} (not an executable file)", cwd.join("venv/bin/python").display()),
        format!("python-env: {} (does not exist)", root.path().join("home/.cellbox/python-env/bin/python").display()),
        "PATH: python (not found on PATH)".to_string(),
        "PATH: python3 (not found on PATH)".to_string(),
    ];
    let mut rest = text.as_str();
    for line in &expected {
        let at = rest.find(line.as_str()).unwrap_or_else(|| panic!("{line:?} missing or out of order in:\n{text}"));
        rest = &rest[at + line.len()..];
    }
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
    let error = discovery::resolve(&input, false).unwrap_err();
    let text = error.to_string();
    assert!(text.contains("project .venv") && text.contains("broken"), "{text}");
    assert!(text.contains("Python 3.6.15; cellbox needs 3.8 or newer"), "{text}");
    assert!(text.contains("python (not found on PATH)"), "{text}");
    assert!(text.contains("--python"), "the message says what to do next: {text}");

    let skipped = discovery::resolve(&input, true).unwrap();
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

// ---------------------------------------------------------------- version-manager shims

use cellbox_kernels::discovery::shims::{self, Manager, Outcome};
use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, SystemTime};

fn write_executable(file: &Path, text: &str) {
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(file, text).unwrap();
    std::fs::set_permissions(file, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// A real interpreter at `<prefix>/bin/python3` (a link to the test Python).
fn install_python(prefix: &Path) -> PathBuf {
    let bin = prefix.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(common::python(), bin.join("python3")).unwrap();
    bin.join("python3")
}

/// Give `path` another modification time (no sleeping for the clock to move).
fn touch(path: &Path, seconds_ago: u64) {
    let file = std::fs::File::options().read(true).open(path).unwrap();
    file.set_modified(SystemTime::now() - Duration::from_secs(seconds_ago)).unwrap();
}

/// The inode of the cached resolution for (`shim`, cwd): a new answer is written as a new file.
fn cache_inode(cache: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let entries: Vec<_> = std::fs::read_dir(cache.join("shims")).unwrap().flatten().collect();
    assert_eq!(entries.len(), 1, "one resolution is cached");
    entries[0].metadata().unwrap().ino()
}

/// A fake pyenv: a shim like pyenv's own (which cannot run: there is no
/// libexec, so only following it can find Python), versions 3.99.1 and 3.99.2.
struct FakePyenv {
    dir: tempfile::TempDir,
}

impl FakePyenv {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let fake = FakePyenv { dir };
        let root = fake.root();
        write_executable(
            &root.join("shims/python3"),
            &format!(
                "#!/usr/bin/env bash\nset -e\nprogram=\"${{0##*/}}\"\nexport PYENV_ROOT=\"{}\"\nexec \"{}/libexec/pyenv\" exec \"$program\" \"$@\"\n",
                root.display(),
                root.display()
            ),
        );
        install_python(&root.join("versions/3.99.1"));
        install_python(&root.join("versions/3.99.2"));
        std::fs::write(root.join("version"), "3.99.1\n").unwrap();
        std::fs::create_dir_all(fake.path("project/src/deep")).unwrap();
        std::fs::create_dir_all(fake.path("cache")).unwrap();
        fake
    }
    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
    fn root(&self) -> PathBuf {
        self.path("pyenv")
    }
    fn shim(&self) -> PathBuf {
        self.root().join("shims/python3")
    }
    fn input(&self, cwd: &str) -> DiscoveryInput {
        DiscoveryInput {
            cwd: self.path(cwd),
            home: Some(self.path("home")),
            path: Some(std::env::join_paths([self.root().join("shims"), self.path("system-bin")]).unwrap()),
            ..Default::default()
        }
    }
    fn follow(&self, input: &DiscoveryInput) -> Outcome {
        shims::follow_cached_in(&self.path("cache"), &self.shim(), input)
    }
}

fn followed(outcome: Outcome) -> shims::Followed {
    match outcome {
        Outcome::Followed(followed, _) => followed,
        other => panic!("not followed: {other:?}"),
    }
}

#[test]
fn an_interpreter_found_to_be_no_shim_is_asked_again_once_it_changes() {
    let fake = FakePyenv::new();
    let shim_text = std::fs::read(fake.shim()).unwrap();
    let candidate = fake.path("system-bin/python3");
    write_executable(&candidate, "\x7fELF, not a script\n");
    let input = fake.input("project");
    let follow = || shims::follow_cached_in(&fake.path("cache"), &candidate, &input);
    assert!(matches!(follow(), Outcome::NotAShim));
    assert!(matches!(follow(), Outcome::NotAShim), "the answer remembered");
    // The same path now holds pyenv's shim: the remembered answer no longer counts.
    std::fs::remove_file(&candidate).unwrap();
    std::fs::write(&candidate, &shim_text).unwrap();
    std::fs::set_permissions(&candidate, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    assert_eq!(followed(follow()).interpreter, fake.root().join("versions/3.99.1/bin/python3"));
}

#[test]
fn pyenv_global_version_nested_python_version_and_pyenv_version() {
    let fake = FakePyenv::new();
    let found = followed(fake.follow(&fake.input("project/src/deep")));
    assert_eq!(found.manager, Manager::Pyenv);
    assert_eq!(found.interpreter, fake.root().join("versions/3.99.1/bin/python3"));
    assert_eq!(found.origin, fake.root().join("version").display().to_string());

    // A `.python-version` two folders up wins over the global version.
    std::fs::write(fake.path("project/.python-version"), "# pinned\n\n3.99.2 \n").unwrap();
    let found = followed(fake.follow(&fake.input("project/src/deep")));
    assert_eq!(found.interpreter, fake.root().join("versions/3.99.2/bin/python3"));
    assert_eq!(found.origin, fake.path("project/.python-version").display().to_string());
    assert_eq!(found.version, "3.99.2");

    // PYENV_DIR is looked at first, then the working folder.
    let mut input = fake.input("project/src/deep");
    std::fs::create_dir_all(fake.path("elsewhere/pinned")).unwrap();
    input.manager_vars.insert("PYENV_DIR".into(), fake.path("elsewhere").display().to_string());
    assert_eq!(followed(fake.follow(&input)).version, "3.99.2", "nothing under PYENV_DIR: the cwd's file");
    std::fs::write(fake.path("elsewhere/.python-version"), "3.99.1\n").unwrap();
    assert_eq!(followed(fake.follow(&input)).version, "3.99.1");
    input.manager_vars.remove("PYENV_DIR");

    // PYENV_VERSION wins over both; `python-` prefixes are pyenv's too.
    input.manager_vars.insert("PYENV_VERSION".into(), "python-3.99.1".into());
    let found = followed(fake.follow(&input));
    assert_eq!(found.interpreter, fake.root().join("versions/3.99.1/bin/python3"));
    assert_eq!(found.origin, "PYENV_VERSION");

    // A version pyenv would pick by prefix (`3.99` → newest 3.99.x) is left to pyenv.
    input.manager_vars.insert("PYENV_VERSION".into(), "3.99".into());
    assert!(matches!(fake.follow(&input), Outcome::Uncertain { manager: Manager::Pyenv, .. }));
}

#[test]
fn pyenv_system_is_the_next_python_on_path() {
    let fake = FakePyenv::new();
    std::fs::write(fake.path("project/.python-version"), "system\n").unwrap();
    let expected = install_python(&fake.path("system"));
    std::os::unix::fs::symlink(fake.path("system/bin"), fake.path("system-bin")).unwrap();
    let found = followed(fake.follow(&fake.input("project")));
    assert_eq!(found.version, "system");
    assert_eq!(found.interpreter, fake.path("system-bin/python3"));
    assert_eq!(std::fs::canonicalize(found.interpreter).unwrap(), std::fs::canonicalize(expected).unwrap());

    // A version without the program falls through to the system one, as `pyenv which` does.
    std::fs::create_dir_all(fake.root().join("versions/2.7.18/bin")).unwrap();
    std::fs::write(fake.path("project/.python-version"), "2.7.18\n").unwrap();
    assert_eq!(followed(fake.follow(&fake.input("project"))).version, "system");
}

#[test]
fn pyenv_resolution_is_cached_until_a_file_it_read_changes() {
    let fake = FakePyenv::new();
    let cache = fake.path("cache");
    std::fs::write(fake.path("project/.python-version"), "3.99.2\n").unwrap();
    let input = fake.input("project/src");
    assert_eq!(followed(fake.follow(&input)).version, "3.99.2");
    let first = cache_inode(&cache);
    assert_eq!(followed(fake.follow(&input)).version, "3.99.2");
    assert_eq!(cache_inode(&cache), first, "the second start read the cached answer");

    // The same length, so only the modification time tells the edit apart.
    std::fs::write(fake.path("project/.python-version"), "3.99.1\n").unwrap();
    touch(&fake.path("project/.python-version"), 60);
    assert_eq!(followed(fake.follow(&input)).version, "3.99.1", "an edited .python-version is read again");
    let second = cache_inode(&cache);
    assert_ne!(second, first);

    // A new .python-version closer to the cwd (absent before) is seen.
    std::fs::write(fake.path("project/src/.python-version"), "3.99.2\n").unwrap();
    assert_eq!(followed(fake.follow(&input)).version, "3.99.2");
    let third = cache_inode(&cache);

    // A newly installed version changes `versions/`: resolved again.
    std::fs::create_dir_all(fake.root().join("versions/3.99.3")).unwrap();
    touch(&fake.root().join("versions"), 120);
    assert_eq!(followed(fake.follow(&input)).version, "3.99.2");
    assert_ne!(cache_inode(&cache), third, "the new version invalidated the cached answer");

    // Another PYENV_VERSION is another question.
    let mut other = input.clone();
    other.manager_vars.insert("PYENV_VERSION".into(), "3.99.1".into());
    assert_eq!(followed(fake.follow(&other)).version, "3.99.1");
}

#[test]
fn pyenv_hooks_that_may_change_the_choice_leave_the_shim_to_be_probed() {
    let fake = FakePyenv::new();
    let hook = fake.root().join("plugins/some-plugin/etc/pyenv.d/which/redirect.bash");
    std::fs::create_dir_all(hook.parent().unwrap()).unwrap();
    std::fs::write(&hook, "PYENV_COMMAND_PATH=/elsewhere/python3\n").unwrap();
    match fake.follow(&fake.input("project")) {
        Outcome::Uncertain { manager: Manager::Pyenv, why } => assert!(why.contains("redirect.bash"), "{why}"),
        other => panic!("{other:?}"),
    }
    // pyenv-virtualenv's kind, acting only when nothing was found, changes nothing.
    std::fs::write(
        &hook,
        "# fallback\nif [ ! -x \"${PYENV_COMMAND_PATH}\" ]; then\n  if true; then\n    :\n  fi\nfi\n",
    )
    .unwrap();
    assert_eq!(followed(fake.follow(&fake.input("project"))).version, "3.99.1");
}

#[test]
fn a_pyenv_shim_on_path_is_followed_not_run() {
    let fake = FakePyenv::new();
    let mut input = fake.input("project");
    input.path = Some(fake.root().join("shims").into_os_string());
    let found = resolve(&input);
    assert_eq!(found.interpreter, fake.shim(), "discovery found the shim");
    let via = found.via.as_ref().expect("the shim was followed");
    assert_eq!(via.interpreter, fake.root().join("versions/3.99.1/bin/python3"));
    // The shim cannot run (no pyenv behind it): only following it gives a version.
    assert!(found.version.as_deref().unwrap().starts_with("3."));
    assert!(found.how_found(input.home.as_deref()).contains("pyenv shim"), "{}", found.how_found(None));
}

#[test]
fn asdf_tool_versions_upward_and_its_variable() {
    let root = tempfile::tempdir().unwrap();
    let data = root.path().join("asdf");
    let shim = data.join("shims/python3");
    write_executable(
        &shim,
        "#!/usr/bin/env bash\n# asdf-plugin: python 3.99.1\n# asdf-plugin: python 3.99.2\nexec asdf exec \"python3\" \"$@\" # asdf_allow: ' asdf '\n",
    );
    install_python(&data.join("installs/python/3.99.1"));
    install_python(&data.join("installs/python/3.99.2"));
    std::fs::create_dir_all(root.path().join("project/sub")).unwrap();
    std::fs::write(root.path().join("project/.tool-versions"), "nodejs 20.0.0\npython 3.99.2 3.99.1 # pinned\n")
        .unwrap();
    let cache = root.path().join("cache");
    let mut input = DiscoveryInput {
        cwd: root.path().join("project/sub"),
        home: Some(root.path().join("home")),
        ..Default::default()
    };
    input.manager_vars.insert("ASDF_DATA_DIR".into(), data.display().to_string());
    let found = followed(shims::follow_cached_in(&cache, &shim, &input));
    assert_eq!((found.manager, found.version.as_str()), (Manager::Asdf, "3.99.2"));
    assert_eq!(found.interpreter, data.join("installs/python/3.99.2/bin/python3"));

    std::fs::write(root.path().join("project/.tool-versions"), "python 3.99.1\n").unwrap();
    touch(&root.path().join("project/.tool-versions"), 60);
    assert_eq!(followed(shims::follow_cached_in(&cache, &shim, &input)).version, "3.99.1");

    input.manager_vars.insert("ASDF_PYTHON_VERSION".into(), "3.99.2".into());
    let found = followed(shims::follow_cached_in(&cache, &shim, &input));
    assert_eq!((found.version.as_str(), found.origin.as_str()), ("3.99.2", "ASDF_PYTHON_VERSION"));
}

#[test]
fn mise_config_upward_its_variable_and_what_it_leaves_to_mise() {
    let root = tempfile::tempdir().unwrap();
    let data = root.path().join("mise-data");
    write_executable(&root.path().join("bin/mise"), "\x7fELF not really mise\n");
    std::fs::create_dir_all(data.join("shims")).unwrap();
    let shim = data.join("shims/python3");
    std::os::unix::fs::symlink(root.path().join("bin/mise"), &shim).unwrap();
    install_python(&data.join("installs/python/3.99.1"));
    install_python(&data.join("installs/python/3.99.2"));
    std::fs::create_dir_all(root.path().join("project/sub")).unwrap();
    std::fs::write(root.path().join("project/mise.toml"), "[tools]\nnode = \"20\"\npython = \"3.99.2\"\n").unwrap();
    let cache = root.path().join("cache");
    let mut input = DiscoveryInput {
        cwd: root.path().join("project/sub"),
        home: Some(root.path().join("home")),
        ..Default::default()
    };
    input.manager_vars.insert("MISE_DATA_DIR".into(), data.display().to_string());
    let found = followed(shims::follow_cached_in(&cache, &shim, &input));
    assert_eq!((found.manager, found.version.as_str()), (Manager::Mise, "3.99.2"));
    assert_eq!(found.interpreter, data.join("installs/python/3.99.2/bin/python3"));

    // A .tool-versions nearer the cwd wins.
    std::fs::write(root.path().join("project/sub/.tool-versions"), "python 3.99.1\n").unwrap();
    assert_eq!(followed(shims::follow_cached_in(&cache, &shim, &input)).version, "3.99.1");

    input.manager_vars.insert("MISE_PYTHON_VERSION".into(), "3.99.2".into());
    assert_eq!(followed(shims::follow_cached_in(&cache, &shim, &input)).origin, "MISE_PYTHON_VERSION");
    input.manager_vars.remove("MISE_PYTHON_VERSION");

    // An idiomatic .python-version: whether mise reads it is its setting, so mise is asked.
    std::fs::write(root.path().join("project/sub/.python-version"), "3.99.2\n").unwrap();
    assert!(matches!(
        shims::follow_cached_in(&cache, &shim, &input),
        Outcome::Uncertain { manager: Manager::Mise, .. }
    ));
}

/// What the engine asks before every call, on its own thread: an answer only
/// from probes made before, and none (so the caller probes on the blocking
/// pool) as soon as a candidate appears that was never probed.
#[test]
fn a_known_answer_needs_an_earlier_probe_and_a_new_venv_goes_back_to_probing() {
    let root = tempfile::tempdir().unwrap();
    let cwd = root.path().join("project");
    let bin_dir = root.path().join("pathbin");
    std::fs::create_dir_all(&cwd).unwrap();
    std::fs::create_dir_all(&bin_dir).unwrap();
    std::os::unix::fs::symlink(common::python(), bin_dir.join("python3")).unwrap();
    let input = DiscoveryInput { path: Some(bin_dir.clone().into_os_string()), ..bare_input(&cwd) };
    assert!(discovery::resolve_known(&input, false).is_none(), "never probed in this folder");
    let probed = resolve(&input);
    let known = discovery::resolve_known(&input, false).expect("probed now").unwrap();
    assert_eq!((known.source, known.executable), (probed.source, probed.executable));

    make_venv(&cwd.join(".venv"));
    assert!(discovery::resolve_known(&input, false).is_none(), "the new venv is not probed yet");
    let venv = resolve(&input);
    assert_eq!(venv.source, PythonSource::ProjectDotVenv);
    assert_eq!(discovery::resolve_known(&input, false).unwrap().unwrap().source, PythonSource::ProjectDotVenv);
    assert!(discovery::resolve_known(&input, true).is_some(), "skipping the check never needs a probe");
}
