//! `cellbox doctor`: everything cellbox will use on this machine, and what is
//! wrong with it, in one report a user can read and paste into a bug report.
//!
//! The report is plain data ([`Report`], serialisable for `--json`); the
//! command line renders it. Nothing here changes the machine: interpreters
//! are probed as discovery probes them, folders are only measured.

mod sandbox;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

use crate::discovery::{self, DiscoveryInput, probe, sources};
use crate::install::channel::{self, Installed};
use crate::output::artifacts::{ArtifactStore, DEFAULT_MAX_ARTIFACT_BYTES, DEFAULT_RETENTION};
use crate::output::limiter::TextLimits;
use crate::runtime;
use crate::session::PoolLimits;
use crate::settings;
use crate::tool::Exposure;
use crate::tool::params::{DEFAULT_TIMEOUT_SECS, TIMEOUT_RANGE};

pub use sandbox::{SandboxEntry, sandbox_entries};

/// How long a version question (`uv --version`, `python -m pip --version`) may take.
const TOOL_TIMEOUT: Duration = Duration::from_secs(15);
/// Folder sizes stop counting after this many entries, so a huge cache cannot stall the report.
const MAX_ENTRIES_COUNTED: usize = 200_000;

/// What `cellbox doctor` reports.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub version: String,
    /// The git revision the binary was built from (`unknown` outside a checkout).
    pub revision: String,
    pub os: String,
    /// How this binary was installed and how `cellbox install --client` registers it
    /// (absent when the binary cannot tell its own path).
    pub installed: Option<Installed>,
    pub cwd: PathBuf,
    pub python: PythonReport,
    pub node: ToolReport,
    pub uv: ToolReport,
    pub pip: ToolReport,
    pub languages: Languages,
    /// The installed Jupyter kernels cells can name (`"kernel": "<name>"`), found where Jupyter looks.
    pub jupyter_kernels: Vec<JupyterKernelEntry>,
    pub sandbox: Vec<SandboxEntry>,
    pub gateway: Gateway,
    /// The `CELLBOX_*` settings this process was started with, in the order
    /// [`settings::ENV_VARS`] declares them.
    pub settings: Vec<SettingInEffect>,
    pub folders: Vec<Folder>,
    pub limits: Limits,
    pub problems: Vec<Problem>,
}

/// Every interpreter candidate in discovery order, and the one chosen.
#[derive(Debug, Clone, Serialize)]
pub struct PythonReport {
    pub candidates: Vec<PythonCandidate>,
    /// The chosen interpreter's path, when one works.
    pub chosen: Option<PathBuf>,
    pub version: Option<String>,
    /// Why it was chosen, or why none was.
    pub why: String,
    /// How the chosen interpreter was found, in one line: its source, and a
    /// version manager's shim followed (or probed as it is, and why).
    pub found: Option<String>,
    /// The shim followed to the chosen interpreter, when it was one.
    pub shim: Option<discovery::Followed>,
}

/// One place discovery looks.
#[derive(Debug, Clone, Serialize)]
pub struct PythonCandidate {
    /// Where the candidate comes from (`VIRTUAL_ENV`, `PATH`, …).
    pub source: String,
    pub interpreter: PathBuf,
    /// `chosen`, `unusable`, `missing` or `not tried` (a working one came first).
    pub state: String,
    /// The version, or why it cannot be used.
    pub detail: String,
}

/// A program cellbox may run: whether it is there, where, which version.
#[derive(Debug, Clone, Serialize)]
pub struct ToolReport {
    pub found: bool,
    pub path: Option<PathBuf>,
    pub version: Option<String>,
    pub detail: String,
}

/// Which languages cells may use (`CELLBOX_PY`, `CELLBOX_JS`) and which can run.
#[derive(Debug, Clone, Serialize)]
pub struct Languages {
    pub python_enabled: bool,
    pub javascript_enabled: bool,
    pub python_available: bool,
    pub javascript_available: bool,
}

/// One installed Jupyter kernel.
#[derive(Debug, Clone, Serialize)]
pub struct JupyterKernelEntry {
    pub name: String,
    pub display_name: String,
    pub language: String,
    /// Its kernelspec's folder.
    pub path: PathBuf,
}

/// Remote kernels: whether they are configured. The token's value is never kept.
#[derive(Debug, Clone, Serialize)]
pub struct Gateway {
    /// The URL with any `user:password@` part removed.
    pub url: Option<String>,
    pub token_set: bool,
}

/// One user setting that is set. Secrets (tokens, keys) and the
/// `user:password@` part of URLs are never kept.
#[derive(Debug, Clone, Serialize)]
pub struct SettingInEffect {
    pub name: &'static str,
    /// The value; `None` for a secret.
    pub value: Option<String>,
}

/// Every user variable that is set, secrets without their values.
fn settings_in_effect() -> Vec<SettingInEffect> {
    settings::ENV_VARS
        .iter()
        .filter(|var| var.audience == settings::Audience::User)
        .filter_map(|var| {
            let value = var.get()?;
            let secret = ["TOKEN", "KEY"].iter().any(|word| var.name.contains(word));
            Some(SettingInEffect { name: var.name, value: (!secret).then(|| without_userinfo(&value)) })
        })
        .collect()
}

/// A folder cellbox writes to, and what it holds.
#[derive(Debug, Clone, Serialize)]
pub struct Folder {
    pub name: String,
    pub path: PathBuf,
    /// The variable that moves it, if any.
    pub setting: Option<String>,
    pub exists: bool,
    pub bytes: u64,
    pub files: u64,
}

/// The defaults in force (per-call settings and server flags can change them).
#[derive(Debug, Clone, Serialize)]
pub struct Limits {
    pub cell_timeout_secs: f64,
    pub max_cell_timeout_secs: f64,
    pub max_output_bytes: usize,
    pub max_output_lines: usize,
    pub max_kernels: usize,
    pub idle_minutes: Option<u64>,
    pub kernel_memory_bytes: Option<u64>,
    pub max_artifact_bytes: u64,
    pub artifact_retention_days: u64,
}

/// How bad a problem is: `error` means no cell can run; `warning` means something will not work.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
}

/// Something wrong, and what to do about it.
#[derive(Debug, Clone, Serialize)]
pub struct Problem {
    pub severity: Severity,
    pub what: String,
    pub fix: String,
}

/// What the report is about: the working directory and the explicit settings
/// (`--python`/`CELLBOX_PYTHON`, `--node`/`CELLBOX_NODE`).
#[derive(Debug, Clone)]
pub struct DoctorInput {
    pub cwd: PathBuf,
    pub python: Option<String>,
    pub node: Option<String>,
    /// The environment the command started with (read and checked once).
    pub env: cellbox_settings::Environment,
}

/// The binary's version.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The git revision baked in at build time (see build.rs).
pub fn revision() -> &'static str {
    env!("CELLBOX_GIT_REVISION")
}

/// Look at everything, probing interpreters and tools (this blocks: run it
/// off the async runtime).
pub fn examine(input: &DoctorInput) -> Report {
    let exposure = Exposure::from_environment(&input.env).unwrap_or_default();
    let python = examine_python(input);
    let node = examine_node(input);
    let chosen_python = python.chosen.clone();
    let uv = examine_uv(chosen_python.as_deref());
    let pip = examine_pip(chosen_python.as_deref(), &input.cwd);
    let languages = Languages {
        python_enabled: exposure.py,
        javascript_enabled: exposure.js,
        python_available: chosen_python.is_some(),
        javascript_available: node.found,
    };
    let gateway = Gateway {
        url: settings::GATEWAY_URL.get().map(|url| without_userinfo(&url)),
        token_set: settings::GATEWAY_TOKEN.is_present(),
    };
    let folders = folders();
    let mut report = Report {
        version: VERSION.to_string(),
        revision: revision().to_string(),
        os: format!("{} {}", std::env::consts::OS, std::env::consts::ARCH),
        installed: channel::current().ok(),
        cwd: input.cwd.clone(),
        python,
        node,
        uv,
        pip,
        languages,
        jupyter_kernels: crate::jupyter::SearchPath::from_env(None)
            .list()
            .into_iter()
            .map(|spec| JupyterKernelEntry {
                name: spec.name,
                display_name: spec.display_name,
                language: spec.language,
                path: spec.dir,
            })
            .collect(),
        sandbox: sandbox_entries(),
        gateway,
        settings: settings_in_effect(),
        folders,
        limits: limits(),
        problems: Vec::new(),
    };
    report.problems = problems(&report);
    report
}

fn examine_python(input: &DoctorInput) -> PythonReport {
    let mut discovery_input = DiscoveryInput::from_env(&input.cwd, input.python.clone());
    discovery_input.sandbox = crate::sandbox::SandboxPolicy::from_env().unwrap_or_default();
    let resolved = discovery::resolve(&discovery_input, discovery::skip_check_from_env());
    let attempts = match &resolved {
        Ok(_) => Vec::new(),
        Err(error) => error.attempts.clone(),
    };
    let mut chosen_seen = false;
    let mut candidates = Vec::new();
    for candidate in sources::candidates(&discovery_input) {
        let (state, detail) = match &resolved {
            Ok(python)
                if !chosen_seen && python.interpreter == candidate.interpreter && python.source == candidate.source =>
            {
                chosen_seen = true;
                ("chosen", python.version.clone().map(|v| format!("Python {v}")).unwrap_or_else(|| "not probed".into()))
            }
            Ok(_) if chosen_seen => {
                let present = discovery::is_executable(&candidate.interpreter);
                ("not tried", if present { "present; a candidate before it won".into() } else { "absent".into() })
            }
            _ => {
                let problem = attempts
                    .iter()
                    .find(|a| a.interpreter == candidate.interpreter && a.source == candidate.source)
                    .map(|a| a.problem.clone());
                // With a winner, candidates before it failed; their problem is
                // recomputed from the file since `resolve` only returns attempts on failure.
                let runs = discovery::is_executable(&candidate.interpreter);
                let problem = problem.unwrap_or_else(|| {
                    if runs {
                        "did not run as Python 3.8+".into()
                    } else {
                        discovery::missing_problem(&candidate.interpreter)
                    }
                });
                let state = if runs { "unusable" } else { "missing" };
                (state, problem)
            }
        };
        candidates.push(PythonCandidate {
            source: candidate.source.to_string(),
            interpreter: candidate.interpreter,
            state: state.to_string(),
            detail,
        });
    }
    match resolved {
        Ok(python) => PythonReport {
            why: if python.source == discovery::PythonSource::Explicit {
                "named explicitly (--python / CELLBOX_PYTHON): nothing else is tried".into()
            } else {
                format!("the first working candidate in discovery order ({})", python.source)
            },
            found: Some(python.how_found(discovery_input.home.as_deref())),
            chosen: Some(python.executable),
            version: python.version,
            shim: python.via,
            candidates,
        },
        Err(_) => PythonReport {
            candidates,
            chosen: None,
            version: None,
            found: None,
            shim: None,
            why: "no candidate exists and runs as Python 3.8 or newer".into(),
        },
    }
}

fn examine_node(input: &DoctorInput) -> ToolReport {
    match runtime::node::resolve_from_env(
        input.node.as_deref(),
        &input.cwd,
        &crate::sandbox::SandboxPolicy::from_env().unwrap_or_default(),
    ) {
        Ok(node) => ToolReport {
            found: true,
            version: node.version.clone(),
            detail: format!(
                "Node {} (JavaScript and TypeScript cells; {})",
                node.version.as_deref().unwrap_or("?"),
                runtime::node::typescript_stripper(node.version.as_deref().unwrap_or("")),
            ),
            path: Some(node.executable),
        },
        Err(error) => ToolReport { found: false, path: None, version: None, detail: error.tried },
    }
}

/// uv next to the interpreter (a venv made by uv), else on `PATH`: where `%pip` and `%uv` look.
fn examine_uv(python: Option<&Path>) -> ToolReport {
    let beside = python.and_then(Path::parent).map(|dir| dir.join("uv")).filter(|uv| discovery::is_executable(uv));
    let found = beside.or_else(|| sources::search_path(std::env::var_os("PATH").as_ref(), "uv"));
    let Some(uv) = found else {
        return ToolReport { found: false, path: None, version: None, detail: "`uv` is not on PATH".into() };
    };
    let mut command = std::process::Command::new(&uv);
    command.arg("--version");
    match probe::run_bounded(command, TOOL_TIMEOUT) {
        Ok(out) => {
            let version = out.split_whitespace().nth(1).map(str::to_string);
            ToolReport { found: true, path: Some(uv), version, detail: out.trim().to_string() }
        }
        Err(problem) => ToolReport { found: false, path: Some(uv), version: None, detail: problem.to_string() },
    }
}

/// pip inside the chosen interpreter: what `%pip` runs first.
fn examine_pip(python: Option<&Path>, cwd: &Path) -> ToolReport {
    let Some(python) = python else {
        return ToolReport { found: false, path: None, version: None, detail: "no Python interpreter".into() };
    };
    let mut command = std::process::Command::new(python);
    command.args(["-m", "pip", "--version"]).current_dir(cwd).env("PIP_DISABLE_PIP_VERSION_CHECK", "1");
    match probe::run_bounded(command, TOOL_TIMEOUT) {
        Ok(out) => ToolReport {
            found: true,
            path: Some(python.to_path_buf()),
            version: out.split_whitespace().nth(1).map(str::to_string),
            detail: out.trim().to_string(),
        },
        Err(problem) => ToolReport {
            found: false,
            path: Some(python.to_path_buf()),
            version: None,
            detail: format!("`{} -m pip` failed: {problem}", python.display()),
        },
    }
}

/// `https://user:secret@host/` → `https://host/`: a URL may carry credentials.
fn without_userinfo(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else { return url.to_string() };
    let authority_end = rest.find('/').unwrap_or(rest.len());
    match rest[..authority_end].rfind('@') {
        Some(at) => format!("{scheme}://{}", &rest[at + 1..]),
        None => url.to_string(),
    }
}

fn folders() -> Vec<Folder> {
    let cache = crate::paths::cache_root();
    let artifacts = ArtifactStore::default_root();
    let home = dirs::home_dir().unwrap_or_default();
    let store = dirs::data_dir().unwrap_or_else(|| home.join(".local/share")).join("cellbox").join("store");
    let managed = sources::managed_env_root(&home);
    [
        ("cache (runner files)", cache, Some(settings::CACHE_DIR.name)),
        ("artifacts", artifacts, Some(settings::ARTIFACTS_DIR.name)),
        ("%store variables", store, Some("XDG_DATA_HOME")),
        ("managed Python environment", managed, None),
    ]
    .into_iter()
    .map(|(name, path, setting)| {
        let (files, bytes) = measure(&path);
        Folder {
            name: name.to_string(),
            exists: path.is_dir(),
            path,
            setting: setting.map(str::to_string),
            bytes,
            files,
        }
    })
    .collect()
}

/// Files and bytes under `root`, without following symlinks.
fn measure(root: &Path) -> (u64, u64) {
    let (mut files, mut bytes, mut seen) = (0u64, 0u64, 0usize);
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.flatten() {
            seen += 1;
            if seen > MAX_ENTRIES_COUNTED {
                return (files, bytes);
            }
            let Ok(meta) = entry.path().symlink_metadata() else { continue };
            if meta.is_dir() {
                stack.push(entry.path());
            } else if meta.is_file() {
                files += 1;
                bytes += meta.len();
            }
        }
    }
    (files, bytes)
}

fn limits() -> Limits {
    let text = TextLimits::default();
    let pool = PoolLimits::default();
    Limits {
        cell_timeout_secs: DEFAULT_TIMEOUT_SECS,
        max_cell_timeout_secs: TIMEOUT_RANGE.1,
        max_output_bytes: text.max_bytes,
        max_output_lines: text.max_lines,
        max_kernels: pool.max_kernels,
        idle_minutes: pool.idle_timeout.map(|d| d.as_secs() / 60),
        kernel_memory_bytes: pool.rss_limit_bytes,
        max_artifact_bytes: DEFAULT_MAX_ARTIFACT_BYTES,
        artifact_retention_days: DEFAULT_RETENTION.as_secs() / 86_400,
    }
}

/// Each problem the report shows, with its fix.
fn problems(report: &Report) -> Vec<Problem> {
    let mut problems = Vec::new();
    let mut add = |severity, what: String, fix: &str| problems.push(Problem { severity, what, fix: fix.to_string() });
    let langs = &report.languages;
    let python_runs = langs.python_enabled && langs.python_available;
    let js_runs = langs.javascript_enabled && langs.javascript_available;
    if langs.python_enabled && !langs.python_available {
        add(
            if js_runs { Severity::Warning } else { Severity::Error },
            "no usable Python interpreter: Python cells cannot run".into(),
            "install Python 3.8 or newer on PATH, run `cellbox setup python` to create ~/.cellbox/python-env, or name \
             one with --python / CELLBOX_PYTHON",
        );
    }
    if langs.javascript_enabled && !langs.javascript_available {
        add(
            if python_runs { Severity::Warning } else { Severity::Error },
            format!("no usable Node.js: JavaScript cells cannot run ({})", report.node.detail),
            "install Node.js 18 or newer on PATH or name it with --node / CELLBOX_NODE; if you only need Python, set \
             CELLBOX_JS=0",
        );
    }
    if !langs.python_enabled && !langs.javascript_enabled {
        add(Severity::Error, "both languages are turned off".into(), "unset CELLBOX_PY and CELLBOX_JS");
    }
    if python_runs && !report.pip.found && !report.uv.found {
        add(
            Severity::Warning,
            "neither pip (in the chosen interpreter) nor uv is available: %pip cannot install packages".into(),
            "install uv (`pip install uv`, or your package manager), or add pip with `python -m ensurepip`",
        );
    }
    if report.gateway.url.is_some() && !report.gateway.token_set {
        add(
            Severity::Warning,
            format!("{} is set but {} is not", settings::GATEWAY_URL.name, settings::GATEWAY_TOKEN.name),
            "set CELLBOX_GATEWAY_TOKEN if the gateway asks for a token (most do)",
        );
    }
    for folder in &report.folders[..2] {
        if let Some(problem) = unwritable(&folder.path) {
            let setting = folder.setting.clone().unwrap_or_default();
            problems.push(Problem {
                severity: Severity::Error,
                what: format!("the {} folder {} is not writable: {problem}", folder.name, folder.path.display()),
                fix: format!("fix its permissions, or set {setting} to a writable folder"),
            });
        }
    }
    problems
}

/// Why cellbox could not create files in `dir` (or its first existing parent), if it could not.
fn unwritable(dir: &Path) -> Option<String> {
    let existing = dir.ancestors().find(|d| d.exists())?;
    if !existing.is_dir() {
        return Some(format!("{} is not a folder", existing.display()));
    }
    match tempfile::tempfile_in(existing) {
        Ok(_) => None,
        Err(error) => Some(error.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_in_the_gateway_url_are_dropped() {
        assert_eq!(without_userinfo("https://me:secret@gw.example:8888/api"), "https://gw.example:8888/api");
        assert_eq!(without_userinfo("http://localhost:8888"), "http://localhost:8888");
        assert_eq!(without_userinfo("http://host/a@b"), "http://host/a@b");
    }

    #[test]
    fn folders_are_measured_without_following_links() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("a"), b"12345").unwrap();
        std::fs::write(dir.path().join("sub/b"), b"123").unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink("/", dir.path().join("root")).unwrap();
        assert_eq!(measure(dir.path()), (2, 8));
        assert_eq!(measure(&dir.path().join("absent")), (0, 0));
    }
}
