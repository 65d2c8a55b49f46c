//! The code run once in every new gateway kernel, before any cell.
//!
//! A gateway starts kernels with its own environment and working directory,
//! and passes on only the variables it whitelists (`KG_ENV_WHITELIST`,
//! `KERNEL_*`; Enterprise Gateway: `EG_CLIENT_ENVS`, and no `$`, backquote or
//! newline in values). So the kernel's cwd, its filtered environment and
//! `sys.path` are set by code instead, then the prelude installs cellbox's
//! helpers.

use std::collections::BTreeMap;
use std::path::Path;

/// The glue that installs cellbox's helpers in an IPython kernel.
const PRELUDE: &str = include_str!("prelude.py");

/// The runner's own helpers (`env`, `read`, `write`, `log`, `phase`), sent as
/// source so gateway kernels offer exactly what local kernels do.
const HELPERS: &str = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/runner/cellbox_kernel/helpers.py"));

/// The runner's host-bridge modules (the cell-side API, its schema check and
/// the Bridge it calls through), in import order, sent as source like
/// [`HELPERS`]; `bridge_stdin` carries the calls over the Jupyter stdin
/// channel (see [`super::bridge_stdin`]).
const BRIDGE_MODULES: &[(&str, &str)] = &[
    ("schema_check", include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/runner/cellbox_kernel/schema_check.py"))),
    ("bridge", include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/runner/cellbox_kernel/bridge.py"))),
    ("bridge_stdin", include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/runner/cellbox_kernel/bridge_stdin.py"))),
    ("bridge_api", include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/runner/cellbox_kernel/bridge_api.py"))),
];

/// The code that gives an IPython kernel cellbox's helpers (`env`, `read`,
/// `write`, `log`, `phase`, `emit_status`, `display`) and the bridge calls
/// (`completion`, `agent`, `parallel`, `pipeline`, `tool`, …).
pub fn prelude_code() -> String {
    // A JSON string is a valid Python string literal, and a JSON array of
    // pairs a valid list literal.
    let source = serde_json::to_string(HELPERS).expect("a string serializes");
    let modules = serde_json::to_string(BRIDGE_MODULES).expect("strings serialize");
    format!("_cellbox_helpers_source = {source}\n_cellbox_bridge_sources = {modules}\n{PRELUDE}")
}

/// Variables that describe the machine cellbox runs on, not the one a remote
/// kernel runs on: never sent to an external gateway's kernels.
const MACHINE_VARS: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "PWD",
    "OLDPWD",
    "TMPDIR",
    "VIRTUAL_ENV",
    "CONDA_PREFIX",
    "CONDA_DEFAULT_ENV",
    "PYTHONHOME",
    "PYTHONPATH",
    "PYTHONEXECUTABLE",
    "LD_LIBRARY_PATH",
    "DYLD_LIBRARY_PATH",
];

/// The part of a kernel environment to send to a gateway's kernel: all of it
/// when the gateway runs here, else only what is not about this machine.
pub fn env_for_kernel(env: &BTreeMap<String, String>, local: bool) -> BTreeMap<String, String> {
    env.iter()
        .filter(|(key, _)| local || !(MACHINE_VARS.contains(&key.as_str()) || key.starts_with("XDG_")))
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect()
}

/// Whether Enterprise Gateway would accept `value` in a kernel's start request.
pub fn acceptable_for_gateway(value: &str) -> bool {
    value.len() <= 4096 && !value.contains(['$', '`', '\n', '\r'])
}

/// The environment for `POST /api/kernels`: `KERNEL_*` variables (which
/// every gateway passes on) with acceptable values, and `KERNEL_USERNAME`.
pub fn start_env(env: &BTreeMap<String, String>, username: &str) -> BTreeMap<String, String> {
    let mut start: BTreeMap<String, String> = env
        .iter()
        .filter(|(key, value)| key.starts_with("KERNEL_") && acceptable_for_gateway(value))
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect();
    start.entry("KERNEL_USERNAME".into()).or_insert_with(|| username.to_string());
    start
}

/// The user name to send: `CELLBOX_GATEWAY_USERNAME`, else the local user,
/// but never `root` (Enterprise Gateway refuses to start kernels as root).
pub fn username() -> String {
    let name = crate::settings::GATEWAY_USERNAME
        .get()
        .or_else(|| std::env::var("USER").ok())
        .or_else(|| std::env::var("LOGNAME").ok())
        .filter(|name| !name.trim().is_empty() && acceptable_for_gateway(name));
    match name {
        Some(name) if name != "root" => name,
        _ => "cellbox".to_string(),
    }
}

/// A Python string literal holding `text` (a JSON string is one).
fn py_str(text: &str) -> String {
    serde_json::to_string(text).expect("strings serialize")
}

/// The setup code: change to `cwd` (required when the gateway is local,
/// else only where it exists on the kernel's machine), put `env` into
/// `os.environ`, and `cwd` first on `sys.path`.
pub fn setup_code(cwd: &Path, env: &BTreeMap<String, String>, require_cwd: bool) -> String {
    let cwd = py_str(&cwd.display().to_string());
    let env = py_str(&serde_json::to_string(env).expect("maps serialize"));
    let change = if require_cwd {
        format!("_cellbox_os.chdir({cwd})\n")
    } else {
        format!("if _cellbox_os.path.isdir({cwd}):\n    _cellbox_os.chdir({cwd})\n")
    };
    format!(
        "import os as _cellbox_os, sys as _cellbox_sys, json as _cellbox_json\n\
         {change}\
         _cellbox_os.environ.update(_cellbox_json.loads({env}))\n\
         if _cellbox_os.getcwd() not in _cellbox_sys.path:\n    _cellbox_sys.path.insert(0, _cellbox_os.getcwd())\n\
         del _cellbox_os, _cellbox_sys, _cellbox_json\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remote_kernels_do_not_get_this_machines_paths() {
        let env: BTreeMap<String, String> =
            [("PATH", "/x"), ("XDG_CACHE_HOME", "/c"), ("MY_SETTING", "1")].map(|(k, v)| (k.into(), v.into())).into();
        assert_eq!(env_for_kernel(&env, true).len(), 3);
        assert_eq!(env_for_kernel(&env, false).keys().collect::<Vec<_>>(), ["MY_SETTING"]);
    }

    #[test]
    fn start_env_keeps_only_acceptable_kernel_variables() {
        let env: BTreeMap<String, String> =
            [("KERNEL_A", "ok"), ("KERNEL_B", "$(rm)"), ("OTHER", "x")].map(|(k, v)| (k.into(), v.into())).into();
        let start = start_env(&env, "alice");
        assert_eq!(start.keys().collect::<Vec<_>>(), ["KERNEL_A", "KERNEL_USERNAME"]);
        assert_eq!(start["KERNEL_USERNAME"], "alice");
    }

    #[test]
    fn setup_code_quotes_paths_and_values() {
        let env: BTreeMap<String, String> = [("K".to_string(), "a\"b'\n".to_string())].into();
        let code = setup_code(Path::new("/tmp/it's"), &env, true);
        assert!(code.contains(r#"chdir("/tmp/it's")"#), "{code}");
    }
}
