//! How an [`EvalEngine`](super::EvalEngine) is configured: its [`EngineConfig`], the languages it
//! exposes, whether kernels outlive a call, and the modules a fork server preloads.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use super::params::{CheckMode, Language};
use crate::notebook::HistoryLimits;
use crate::output::artifacts::{ArtifactStore, DEFAULT_MAX_ARTIFACT_BYTES, DEFAULT_RETENTION};
use crate::output::limiter::TextLimits;
use crate::runtime::Runtime;
use crate::session::{Backend, PoolLimits, SpareLimits};
use crate::settings::{self, EnvVar};

/// Whether kernels outlive a call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum KernelMode {
    /// Keep kernels per (session, cwd, runtime, interpreter) across calls.
    #[default]
    Session,
    /// A fresh kernel for each call, shut down after it.
    PerCall,
}

/// Which languages the tool accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exposure {
    pub py: bool,
    pub js: bool,
}

impl Default for Exposure {
    fn default() -> Self {
        Exposure { py: true, js: true }
    }
}

impl Exposure {
    /// Apply `CELLBOX_PY`, then `CELLBOX_JS`; an unset or unreadable value keeps the setting.
    ///
    /// `CELLBOX_PY` takes a mode: `0`/`bash` → JavaScript only, `1`/`py` →
    /// Python only, `mix`/`both` → both; `true`/`yes`/`on` and
    /// `false`/`no`/`off` turn Python alone on or off. `CELLBOX_JS` is a
    /// boolean (`1`/`true`/`yes`/`on`, `0`/`false`/`no`/`off`) applied last.
    pub fn with_env_overrides(self) -> Self {
        let mut exposure = self;
        if let Some(value) = settings::PY.get() {
            exposure = exposure.with_py_mode(&value);
        }
        Exposure { js: flag(settings::JS).unwrap_or(exposure.js), ..exposure }
    }

    /// Apply one `CELLBOX_PY` value (see [`Exposure::with_env_overrides`]).
    pub fn with_py_mode(self, value: &str) -> Self {
        match value.trim().to_ascii_lowercase().as_str() {
            "0" | "bash" => Exposure { py: false, js: true },
            "1" | "py" | "python" => Exposure { py: true, js: false },
            "mix" | "both" => Exposure { py: true, js: true },
            "true" | "yes" | "on" => Exposure { py: true, ..self },
            "false" | "no" | "off" => Exposure { py: false, ..self },
            _ => self,
        }
    }

    /// Whether cells of `language` may run.
    pub fn allows(self, language: Language) -> bool {
        match language.runtime() {
            Runtime::Python => self.py,
            Runtime::Node => self.js,
        }
    }

    /// The language of cells that name none: Python, unless only JavaScript is on.
    pub fn default_language(self) -> Language {
        if !self.py && self.js { Language::Js } else { Language::Py }
    }
}

fn flag(var: EnvVar) -> Option<bool> {
    match var.get()?.to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Some(true),
        "0" | "false" | "no" | "off" => Some(false),
        _ => None,
    }
}

/// How the engine runs calls.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    pub mode: KernelMode,
    /// The cwd of calls that give none; relative `cwd` parameters are taken from here.
    pub default_cwd: PathBuf,
    /// An explicit interpreter (skips discovery).
    pub python: Option<String>,
    /// An explicit node for JavaScript cells (else `CELLBOX_NODE`, then `PATH`).
    pub node: Option<String>,
    /// Variables added to every kernel's environment on purpose.
    pub extra_env: BTreeMap<String, String>,
    pub text_limits: TextLimits,
    pub pool: PoolLimits,
    /// Warm spares: kernels started ahead of need for the configurations in
    /// use (counted in `pool.max_kernels`; `count: 0` turns them off).
    pub spare: SpareLimits,
    pub artifacts_dir: PathBuf,
    pub max_artifact_bytes: u64,
    /// Artifacts older than this are deleted when the engine starts (`None`: kept).
    pub artifact_retention: Option<Duration>,
    pub exposure: Exposure,
    pub startup_timeout: Duration,
    /// How much output each session's notebook history keeps
    /// ([`EvalEngine::export_notebook`](super::EvalEngine::export_notebook)).
    pub history: HistoryLimits,
    /// Where kernels' runner files are written (`None`: the cache folder,
    /// see [`crate::paths::cache_root`]). Lets a host or a test
    /// keep its own copy.
    pub runner_cache_dir: Option<PathBuf>,
    /// Who answers the cells' `completion()`/`agent()`/`tool()` calls, and their limits.
    pub bridge: crate::bridge::BridgeConfig,
    /// What the OS enforces around every kernel (default: nothing). In
    /// `workspace-write` mode the workspace is `default_cwd`'s tree.
    pub sandbox: crate::sandbox::SandboxPolicy,
    /// How Python kernels are reached: runner processes, or a Jupyter gateway
    /// (`CELLBOX_GATEWAY_URL` / `CELLBOX_BACKEND=gateway`; an unreadable value keeps processes).
    pub backend: Backend,
    /// Modules Python kernels start with already imported: they are imported
    /// once in a fork server and each kernel is forked from it (empty: off;
    /// default from `CELLBOX_PRELOAD`). Process backend only.
    pub preload: Vec<String>,
    /// Checks run before each call's cells unless the call says otherwise
    /// (default from `CELLBOX_CHECK`: off).
    pub check: CheckMode,
    /// Checkpoints kept per session for undo (default from `CELLBOX_CHECKPOINTS`: off).
    pub checkpoints: CheckpointLimits,
    /// A cap on live kernels shared with other engines (a server's principals), on
    /// top of `pool.max_kernels` (default: none).
    pub kernel_budget: Option<std::sync::Arc<crate::session::KernelBudget>>,
    /// Refuse a call's `cwd` outside `default_cwd` (a shared server, where
    /// each principal's workspace is its `default_cwd`); default off.
    pub cwd_inside_default: bool,
}

impl EngineConfig {
    /// Defaults: session mode, 50 KiB / 3000-line text, artifacts in the cache
    /// folder, languages as `CELLBOX_PY` / `CELLBOX_JS` say (both on by default).
    pub fn new(default_cwd: impl Into<PathBuf>) -> Self {
        EngineConfig {
            mode: KernelMode::Session,
            default_cwd: default_cwd.into(),
            python: None,
            node: None,
            extra_env: BTreeMap::new(),
            text_limits: TextLimits::default(),
            pool: PoolLimits::default(),
            spare: SpareLimits::default(),
            artifacts_dir: ArtifactStore::default_root(),
            max_artifact_bytes: DEFAULT_MAX_ARTIFACT_BYTES,
            artifact_retention: Some(DEFAULT_RETENTION),
            exposure: Exposure::default().with_env_overrides(),
            startup_timeout: crate::kernel::DEFAULT_STARTUP_TIMEOUT,
            history: HistoryLimits::default(),
            runner_cache_dir: None,
            bridge: crate::bridge::BridgeConfig { bridge: None, limits: crate::bridge::BridgeLimits::from_env() },
            sandbox: crate::sandbox::SandboxPolicy::default(),
            backend: Backend::from_env().unwrap_or_default(),
            preload: preload_from_env(),
            check: CheckMode::from_env(),
            checkpoints: CheckpointLimits::from_env(),
            kernel_budget: None,
            cwd_inside_default: false,
        }
    }
}

/// Split a preload list (`numpy, pandas,matplotlib.pyplot`): trimmed, empty
/// entries dropped, duplicates dropped (the first stays).
pub fn parse_preload(list: &str) -> Vec<String> {
    let mut modules: Vec<String> = Vec::new();
    for name in list.split(',').map(str::trim).filter(|name| !name.is_empty()) {
        if !modules.iter().any(|known| known == name) {
            modules.push(name.to_string());
        }
    }
    modules
}

/// `CELLBOX_PRELOAD`, parsed (unset: nothing).
pub fn preload_from_env() -> Vec<String> {
    settings::PRELOAD.get().map(|list| parse_preload(&list)).unwrap_or_default()
}

/// How many checkpoints a session keeps, and how much memory they may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CheckpointLimits {
    /// Checkpoints kept per session; 0 turns them off (the default) unless a
    /// call asks for one, which then keeps [`CheckpointLimits::ON_REQUEST`].
    pub count: usize,
    /// The private memory of a session's checkpoints together, at most.
    pub memory_bytes: u64,
}

impl CheckpointLimits {
    /// Kept when checkpoints are off but calls ask for them.
    pub const ON_REQUEST: usize = 5;
    /// Default memory budget per session.
    pub const DEFAULT_MEMORY: u64 = 1 << 30;

    /// `CELLBOX_CHECKPOINTS` and `CELLBOX_CHECKPOINT_MEMORY` (unset or
    /// unreadable: off, 1 GiB).
    pub fn from_env() -> CheckpointLimits {
        let count = settings::CHECKPOINTS.get().and_then(|value| value.trim().parse().ok()).unwrap_or(0);
        let memory_bytes = settings::CHECKPOINT_MEMORY
            .get()
            .and_then(|value| crate::sandbox::parse_size(&value).ok())
            .unwrap_or(Self::DEFAULT_MEMORY);
        CheckpointLimits { count, memory_bytes }
    }
}

impl Default for CheckpointLimits {
    fn default() -> Self {
        CheckpointLimits { count: 0, memory_bytes: Self::DEFAULT_MEMORY }
    }
}
