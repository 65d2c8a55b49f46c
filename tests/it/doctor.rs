//! `cellbox doctor` on machines made with PATH tricks: no Python and no Node,
//! both, one of them; the gateway token never shows.
//!
//! Unix only: its machines are made of symlinks and shell-script shims.
#![cfg(unix)]

use crate::common;

use std::path::Path;
use std::process::Output;

use serde_json::Value;

/// A fixture machine: an empty home, a cwd, and a `bin` folder that is the whole PATH.
struct Machine {
    root: tempfile::TempDir,
}

impl Machine {
    fn new() -> Self {
        let root = tempfile::tempdir().unwrap();
        for dir in ["home", "cwd", "bin", "cache"] {
            std::fs::create_dir(root.path().join(dir)).unwrap();
        }
        Machine { root }
    }

    fn path(&self, name: &str) -> std::path::PathBuf {
        self.root.path().join(name)
    }

    /// Put `target` on this machine's PATH as `name`.
    fn link(&self, name: &str, target: &Path) -> &Self {
        std::os::unix::fs::symlink(target, self.path("bin").join(name)).unwrap();
        self
    }

    fn doctor(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        let mut command = common::binary::bare(["doctor"]);
        command.args(args).current_dir(self.path("cwd"));
        for var in ["VIRTUAL_ENV", "CONDA_PREFIX", "CELLBOX_PYTHON", "CELLBOX_NODE", "CELLBOX_PY", "CELLBOX_JS"] {
            command.env_remove(var);
        }
        for var in
            ["CELLBOX_GATEWAY_URL", "CELLBOX_GATEWAY_TOKEN", "XDG_CACHE_HOME", "XDG_DATA_HOME", "CELLBOX_SANDBOX"]
        {
            command.env_remove(var);
        }
        command
            .env("PATH", self.path("bin"))
            .env("HOME", self.path("home"))
            .env("CELLBOX_CACHE_DIR", self.path("cache"))
            .env_remove("CELLBOX_ARTIFACTS_DIR")
            .env_remove("CELLBOX_NETWORK")
            .envs(env.iter().copied())
            .output()
            .unwrap()
    }

    fn json(&self, env: &[(&str, &str)]) -> (Value, i32) {
        let output = self.doctor(&["--json"], env);
        let text = String::from_utf8_lossy(&output.stdout);
        let report = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}\n{output:?}"));
        (report, output.status.code().unwrap())
    }
}

fn node() -> std::path::PathBuf {
    std::env::var_os("CELLBOX_TEST_NODE")
        .map(Into::into)
        .or_else(|| cellbox_kernels::discovery::sources::search_path(std::env::var_os("PATH").as_ref(), "node"))
        .expect("tests need Node.js on PATH (or CELLBOX_TEST_NODE)")
}

fn problems(report: &Value) -> Vec<(String, String, String)> {
    report["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["severity"].as_str().unwrap().into(),
                p["what"].as_str().unwrap().into(),
                p["fix"].as_str().unwrap().into(),
            )
        })
        .collect()
}

#[test]
fn without_python_or_node_every_candidate_is_listed_and_the_fix_is_given() {
    let machine = Machine::new();
    let (report, code) = machine.json(&[]);
    assert_eq!(code, 1, "nothing can run: {report:#}");
    assert!(report["python"]["chosen"].is_null());
    let sources: Vec<&str> =
        report["python"]["candidates"].as_array().unwrap().iter().map(|c| c["source"].as_str().unwrap()).collect();
    assert_eq!(sources[..2], ["project .venv", "project venv"], "{sources:?}");
    assert!(sources.contains(&"PATH"));
    assert!(report["python"]["candidates"].as_array().unwrap().iter().all(|c| c["state"] == "missing"));
    assert_eq!(report["node"]["found"], false);
    let problems = problems(&report);
    assert!(
        problems
            .iter()
            .any(|(severity, what, fix)| severity == "error" && what.contains("Python") && fix.contains("--python")),
        "{problems:?}"
    );
    assert!(
        problems.iter().any(|(_, what, fix)| what.contains("Node.js") && fix.contains("CELLBOX_NODE")),
        "{problems:?}"
    );
    let text = machine.doctor(&[], &[]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("Problems") && text.contains("fix: install Python 3.8"), "{text}");
}

#[test]
fn with_python_and_node_on_path_both_are_chosen_and_nothing_is_wrong() {
    let machine = Machine::new();
    machine.link("python3", common::python()).link("node", &node());
    let (report, code) = machine.json(&[]);
    assert_eq!(code, 0, "{report:#}");
    let chosen: Vec<&Value> =
        report["python"]["candidates"].as_array().unwrap().iter().filter(|c| c["state"] == "chosen").collect();
    assert_eq!(chosen.len(), 1, "{report:#}");
    assert_eq!(chosen[0]["source"], "PATH");
    assert!(chosen[0]["interpreter"].as_str().unwrap().ends_with("bin/python3"), "{chosen:?}");
    assert!(report["python"]["why"].as_str().unwrap().contains("first working candidate"));
    assert!(report["python"]["version"].as_str().unwrap().starts_with("3."));
    assert_eq!(report["node"]["found"], true);
    assert_eq!(report["languages"]["javascript_available"], true);
    assert!(problems(&report).iter().all(|(severity, ..)| severity != "error"), "{report:#}");
    assert!(!report["revision"].as_str().unwrap().is_empty());
    // The sandbox section comes from the OS probe: Landlock first, the policy in force last.
    let sandbox = report["sandbox"].as_array().unwrap();
    assert!(sandbox[0]["name"].as_str().unwrap().contains("Landlock"), "{sandbox:?}");
    assert!(["supported", "unsupported"].contains(&sandbox[0]["status"].as_str().unwrap()), "{sandbox:?}");
    // The test command runs where Landlock works (tests/it/sandbox.rs checks it), so the default is enforced.
    assert_eq!(
        sandbox.last().unwrap()["detail"],
        "sandbox workspace-write (the default), network on: enforced",
        "{sandbox:?}"
    );
    let gateway = &sandbox[sandbox.len() - 2];
    assert!(gateway["detail"].as_str().unwrap().contains("the sandbox does not apply to them"), "{sandbox:?}");
    let cache = &report["folders"][0];
    assert_eq!(cache["path"], machine.path("cache").to_str().unwrap());
    let text = machine.doctor(&[], &[]);
    assert!(text.status.success());
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("* PATH") && text.contains("node "), "{text}");
    // Every supported Node runs TypeScript cells; the report says whose stripper.
    assert!(text.contains("TypeScript types stripped by "), "{text}");
    assert!(report["node"]["detail"].as_str().unwrap().contains("TypeScript types stripped by "), "{report:#}");
}

#[test]
fn python_alone_is_enough_to_run_and_node_is_a_warning() {
    let machine = Machine::new();
    machine.link("python3", common::python());
    let (report, code) = machine.json(&[]);
    assert_eq!(code, 0, "{report:#}");
    let problems = problems(&report);
    assert_eq!(problems.len(), problems.iter().filter(|(s, ..)| s == "warning").count(), "{problems:?}");
    assert!(
        problems.iter().any(|(_, what, fix)| what.contains("Node.js") && fix.contains("CELLBOX_JS=0")),
        "{problems:?}"
    );
}

#[test]
fn an_explicit_interpreter_that_does_not_exist_is_the_only_candidate() {
    let machine = Machine::new();
    machine.link("node", &node());
    let (report, code) = machine.json(&[("CELLBOX_PYTHON", "/nowhere/python")]);
    assert_eq!(code, 0, "JavaScript still runs: {report:#}");
    let candidates = report["python"]["candidates"].as_array().unwrap();
    assert_eq!(candidates.len(), 1);
    assert_eq!(candidates[0]["source"], "explicit interpreter setting");
    assert_eq!(candidates[0]["state"], "missing");
}

#[test]
fn a_candidate_passed_over_before_the_winner_says_why() {
    use std::os::unix::fs::PermissionsExt;
    let machine = Machine::new();
    machine.link("python3", common::python());
    let venv_bin = machine.path("cwd/.venv/bin");
    std::fs::create_dir_all(&venv_bin).unwrap();
    std::fs::write(venv_bin.join("python"), "not a program").unwrap();
    std::fs::set_permissions(venv_bin.join("python"), std::fs::Permissions::from_mode(0o644)).unwrap();
    let (report, code) = machine.json(&[]);
    assert_eq!(code, 0, "{report:#}");
    let detail = |source: &str| {
        let candidates = report["python"]["candidates"].as_array().unwrap();
        let found = candidates.iter().find(|c| c["source"] == source).unwrap_or_else(|| panic!("{report:#}"));
        (found["state"].as_str().unwrap().to_string(), found["detail"].as_str().unwrap().to_string())
    };
    assert_eq!(detail("project .venv"), ("missing".into(), "not an executable file".into()));
    assert_eq!(detail("project venv"), ("missing".into(), "does not exist".into()));
    let on_path = report["python"]["candidates"].as_array().unwrap().iter().filter(|c| c["source"] == "PATH");
    let states: Vec<_> = on_path.map(|c| (c["state"].as_str().unwrap(), c["detail"].as_str().unwrap())).collect();
    assert_eq!(states[0], ("missing", "not found on PATH"), "`python` is not on this PATH: {report:#}");
    assert_eq!(states[1].0, "chosen", "{report:#}");
}

#[test]
fn the_gateway_token_and_url_credentials_never_show() {
    let machine = Machine::new();
    let env =
        [("CELLBOX_GATEWAY_URL", "http://alice:hunter2@gateway.test:8888"), ("CELLBOX_GATEWAY_TOKEN", "s3cr3t-token")];
    for args in [&["--json"][..], &[][..]] {
        let output = machine.doctor(args, &env);
        let text = String::from_utf8_lossy(&output.stdout);
        assert!(text.contains("gateway.test:8888"), "{text}");
        assert!(!text.contains("s3cr3t-token") && !text.contains("hunter2"), "{text}");
    }
    let (report, _) = machine.json(&env);
    assert_eq!(report["gateway"]["token_set"], true);
}

#[test]
fn a_pyenv_shim_is_shown_followed_to_its_interpreter() {
    use std::os::unix::fs::PermissionsExt;
    let machine = Machine::new();
    let root = machine.path("home/.pyenv");
    let shim = root.join("shims/python3");
    std::fs::create_dir_all(shim.parent().unwrap()).unwrap();
    std::fs::write(
        &shim,
        format!(
            "#!/usr/bin/env bash\nexport PYENV_ROOT=\"{0}\"\nexec \"{0}/libexec/pyenv\" exec \"python3\" \"$@\"\n",
            root.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&shim, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::create_dir_all(root.join("versions/3.99.1/bin")).unwrap();
    std::os::unix::fs::symlink(common::python(), root.join("versions/3.99.1/bin/python3")).unwrap();
    std::fs::write(root.join("version"), "3.99.1\n").unwrap();
    let path = root.join("shims").display().to_string();
    let env = [("PATH", path.as_str()), ("PYENV_VERSION", "")];
    let (report, _) = machine.json(&env);
    let found = report["python"]["found"].as_str().unwrap();
    assert_eq!(
        found,
        "PATH: pyenv shim ~/.pyenv/shims/python3 → ~/.pyenv/versions/3.99.1/bin/python3 (version 3.99.1, from ~/.pyenv/version)"
    );
    assert_eq!(report["python"]["shim"]["manager"], "pyenv");
    assert_eq!(report["python"]["shim"]["origin"], root.join("version").display().to_string());
    let text = String::from_utf8(machine.doctor(&[], &env).stdout).unwrap();
    assert!(text.contains(&format!("  found:  {found}")), "{text}");
}
