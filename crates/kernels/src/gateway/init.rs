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

use crate::runtime::runner_files::RUNNER_FILES;

/// The glue that installs cellbox's helpers in an IPython kernel.
const PRELUDE: &str = include_str!("prelude.py");

/// The modules of the runner package a gateway kernel runs, each after the modules it imports:
/// the helpers (`env`, `read`, `write`, `log`, `phase`), the host-bridge modules (the cell-side
/// API, its schema check and the Bridge it calls through) and `bridge_stdin`, which carries the
/// calls over the Jupyter stdin channel (see [`super::bridge_stdin`]). Their sources come from
/// the embedded runner ([`RUNNER_FILES`]), so gateway kernels offer exactly what local kernels do;
/// a test checks that every module of the runner package they import is among them, and earlier.
const GATEWAY_MODULES: &[&str] = &["wire", "helpers", "schema_check", "bridge", "bridge_stdin", "bridge_api"];

/// The runner package's folder among [`RUNNER_FILES`].
const RUNNER_PACKAGE: &str = "cellbox_kernel/";

/// The source of the runner package's module `name` (`bridge`: `cellbox_kernel/bridge.py`).
fn runner_module(name: &str) -> Option<&'static str> {
    RUNNER_FILES
        .iter()
        .find(|(path, _)| path.strip_prefix(RUNNER_PACKAGE).and_then(|file| file.strip_suffix(".py")) == Some(name))
        .map(|(_, source)| *source)
}

/// The code that gives an IPython kernel cellbox's helpers (`env`, `read`,
/// `write`, `log`, `phase`, `emit_status`, `display`) and the bridge calls
/// (`completion`, `agent`, `parallel`, `pipeline`, `tool`, …).
pub fn prelude_code() -> String {
    let modules: Vec<(&str, &str)> = GATEWAY_MODULES
        .iter()
        .map(|name| (*name, runner_module(name).expect("every module the gateway ships is in the runner package")))
        .collect();
    // A JSON array of pairs of strings is a valid Python list literal.
    let modules = serde_json::to_string(&modules).expect("strings serialize");
    format!("_cellbox_runner_sources = {modules}\n{PRELUDE}")
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

    /// The modules of the runner package that `source` imports, each with whether the import is
    /// at the top level (run when the module loads) or indented (run later, or conditionally):
    /// `from . import a, b`, `from .a import …`, `import cellbox_kernel.a`, `from cellbox_kernel
    /// import a`, `from cellbox_kernel.a import …` (`cellbox_kernel` itself for
    /// `import cellbox_kernel`). Parenthesized and backslash-continued imports count whole.
    fn package_imports(source: &str) -> Vec<(String, bool)> {
        let mut found = Vec::new();
        let mut lines = source.lines();
        while let Some(line) = lines.next() {
            let statement = line.trim_start();
            let top_level = statement.len() == line.len();
            let (from, names) = if let Some(rest) = statement.strip_prefix("from ") {
                let Some((from, names)) = rest.split_once(" import ") else { continue };
                (Some(from.trim()), names)
            } else if let Some(names) = statement.strip_prefix("import ") {
                (None, names)
            } else {
                continue;
            };
            let mut names = names.split('#').next().unwrap_or_default().to_string();
            let open = |names: &str| (names.contains('(') && !names.contains(')')) || names.trim_end().ends_with('\\');
            while open(&names) {
                let Some(next) = lines.next() else { break };
                names = names.trim_end().trim_end_matches('\\').to_string();
                names.push(' ');
                names.push_str(next.split('#').next().unwrap_or_default());
            }
            let names = names.replace(['(', ')'], " ");
            let names = names.split(',').filter_map(|name| name.split_whitespace().next());
            let module_of = |dotted: &str| dotted.split('.').next().unwrap_or_default().to_string();
            let modules: Vec<String> = match from {
                // `from . import a` and `from cellbox_kernel import a`: each name is a module.
                Some(".") | Some("cellbox_kernel") => names.map(String::from).collect(),
                Some(from) if from.starts_with("..") => Vec::new(),
                Some(from) => match from.strip_prefix('.').or_else(|| from.strip_prefix("cellbox_kernel.")) {
                    Some(module) => vec![module_of(module)],
                    None => Vec::new(),
                },
                None => names
                    .filter_map(|name| match name {
                        "cellbox_kernel" => Some("cellbox_kernel".to_string()),
                        name => name.strip_prefix("cellbox_kernel.").map(module_of),
                    })
                    .collect(),
            };
            found.extend(modules.into_iter().map(|module| (module, top_level)));
        }
        found
    }

    #[test]
    fn reads_every_form_of_import_from_the_runner_package() {
        let source = "import os, json\nfrom . import a, b as c\nfrom .d import x\nfrom .e.f import y\n\
                      import cellbox_kernel.g as g\nfrom cellbox_kernel import h\nfrom cellbox_kernel.i import z\n\
                      from .. import outside\nfrom os.path import join\n\
                      def f():\n    from . import (\n        j,  # why\n        k,\n    )\n    import cellbox_kernel\n\
                      from .l import \\\n    m\n";
        let found = package_imports(source);
        let top: Vec<&str> = found.iter().filter(|(_, top)| *top).map(|(module, _)| module.as_str()).collect();
        let inner: Vec<&str> = found.iter().filter(|(_, top)| !*top).map(|(module, _)| module.as_str()).collect();
        assert_eq!(top, ["a", "b", "d", "e", "g", "h", "i", "l"]);
        assert_eq!(inner, ["j", "k", "cellbox_kernel"]);
    }

    /// A module the gateway ships that imports one it does not ship works in local kernels and
    /// fails in every gateway kernel.
    #[test]
    fn the_gateway_ships_every_runner_module_its_modules_import() {
        let mut problems = Vec::new();
        for (position, name) in GATEWAY_MODULES.iter().enumerate() {
            let Some(source) = runner_module(name) else {
                problems.push(format!("{name} is not a module of the runner package"));
                continue;
            };
            for (imported, top_level) in package_imports(source) {
                match GATEWAY_MODULES.iter().position(|shipped| *shipped == imported) {
                    None => problems.push(format!(
                        "{name} imports {imported}, which gateway kernels do not get: add it to GATEWAY_MODULES"
                    )),
                    Some(at) if top_level && at >= position => problems.push(format!(
                        "{name} imports {imported} when it loads: put {imported} before it in GATEWAY_MODULES"
                    )),
                    Some(_) => {}
                }
            }
        }
        assert!(problems.is_empty(), "{}", problems.join("\n"));
    }

    #[test]
    fn the_prelude_carries_each_shipped_module_once() {
        let code = prelude_code();
        for name in GATEWAY_MODULES {
            let source = serde_json::to_string(runner_module(name).unwrap()).unwrap();
            assert_eq!(code.matches(&source).count(), 1, "{name}");
        }
    }

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
