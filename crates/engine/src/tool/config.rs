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
use crate::settings::{self, Environment};

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
    /// The languages `CELLBOX_PY` and `CELLBOX_JS` offer (each `on`, `off` or `only`; both on
    /// when unset). Two settings that contradict each other (`only` for both, or `only` for one
    /// and `on` for the other) are an error naming them.
    pub fn from_environment(env: &Environment) -> Result<Exposure, String> {
        use settings::Offer::{Off, On, Only};
        let (py, js) = (env.languages(&settings::PY), env.languages(&settings::JS));
        let (py, js) = (py.map_err(|e| e.to_string())?, js.map_err(|e| e.to_string())?);
        match (py, js) {
            (Some(Only), Some(Only | On)) | (Some(On), Some(Only)) => Err(format!(
                "{}={} and {}={} contradict each other: say `only` for one language and leave the other unset",
                settings::PY.name,
                env.get(&settings::PY).unwrap_or_default(),
                settings::JS.name,
                env.get(&settings::JS).unwrap_or_default()
            )),
            (Some(Only), _) => Ok(Exposure { py: true, js: false }),
            (_, Some(Only)) => Ok(Exposure { py: false, js: true }),
            (py, js) => Ok(Exposure { py: py != Some(Off), js: js != Some(Off) }),
        }
    }

    /// Whether cells of `language` may run.
    pub fn allows(self, language: Language) -> bool {
        match language.runtime() {
            Runtime::Python => self.py,
            Runtime::Node => self.js,
            // Bash cells run wherever cells run (they have what `!cmd` in Python has).
            Runtime::Bash => self.py || self.js,
            // So do Jupyter kernels: what they can reach is what their sandbox allows.
            Runtime::Jupyter => self.py || self.js,
        }
    }

    /// The language of cells that name none: Python, unless only JavaScript is on.
    pub fn default_language(self) -> Language {
        if !self.py && self.js { Language::Js } else { Language::Py }
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
    /// (`--backend`, `CELLBOX_GATEWAY_URL`: see [`crate::kernel_args::KernelArgs::backend`]).
    pub backend: Backend,
    /// Modules Python kernels start with already imported: they are imported
    /// once in a fork server and each kernel is forked from it (empty: off;
    /// `--preload` / `CELLBOX_PRELOAD`). Process backend only.
    pub preload: Vec<String>,
    /// Checks run before each call's cells unless the call says otherwise
    /// (default off; [`EngineConfig::from_environment`] reads `CELLBOX_CHECK`).
    pub check: CheckMode,
    /// Checkpoints kept per session for undo (default off; see [`CheckpointLimits::from_environment`]).
    pub checkpoints: CheckpointLimits,
    /// A cap on live kernels shared with other engines (a server's principals), on
    /// top of `pool.max_kernels` (default: none).
    pub kernel_budget: Option<std::sync::Arc<crate::session::KernelBudget>>,
    /// Refuse a call's `cwd` outside `default_cwd` (a shared server, where
    /// each principal's workspace is its `default_cwd`); default off.
    pub cwd_inside_default: bool,
    /// Where the connections its kernels' network proxies allowed and refused
    /// are counted, shared with other engines (a server principal's); default: its own.
    pub network_counts: Option<std::sync::Arc<NetworkCounts>>,
    /// Hibernate Python kernels instead of losing their state when the pool
    /// stops them (idle, over the live-kernel limit or a shared budget, a
    /// server's stop); see [`crate::session::hibernate`]. Default on.
    pub hibernate: bool,
    /// Keep hibernated sessions in this folder, where the next engine on it
    /// finds them (`--state-dir`); default: a private folder removed with the engine.
    pub state_dir: Option<PathBuf>,
}

/// Connections kernels' network proxies allowed and refused, counted at the end of each call.
#[derive(Debug, Default)]
pub struct NetworkCounts {
    allowed: std::sync::atomic::AtomicU64,
    refused: std::sync::atomic::AtomicU64,
}

impl NetworkCounts {
    pub fn add(&self, allowed: u64, refused: u64) {
        use std::sync::atomic::Ordering;
        self.allowed.fetch_add(allowed, Ordering::Relaxed);
        self.refused.fetch_add(refused, Ordering::Relaxed);
    }

    /// Allowed and refused so far.
    pub fn get(&self) -> (u64, u64) {
        use std::sync::atomic::Ordering;
        (self.allowed.load(Ordering::Relaxed), self.refused.load(Ordering::Relaxed))
    }
}

impl EngineConfig {
    /// Defaults: session mode, 50 KiB / 3000-line text, artifacts in the cache folder, both
    /// languages, process kernels, no checks, checkpoints or preload. No variable is read: a
    /// front end starts from [`EngineConfig::from_environment`], or sets what it wants.
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
            exposure: Exposure::default(),
            startup_timeout: crate::kernel::DEFAULT_STARTUP_TIMEOUT,
            history: HistoryLimits::default(),
            runner_cache_dir: None,
            bridge: crate::bridge::BridgeConfig::default(),
            sandbox: crate::sandbox::SandboxPolicy::default(),
            backend: Backend::Process,
            preload: Vec::new(),
            check: CheckMode::Off,
            checkpoints: CheckpointLimits::default(),
            kernel_budget: None,
            network_counts: None,
            cwd_inside_default: false,
            hibernate: true,
            state_dir: None,
        }
    }

    /// [`EngineConfig::new`] with what the variables without a flag of [`KernelArgs`] set: the
    /// languages (`CELLBOX_PY`, `CELLBOX_JS`), `CELLBOX_CHECK`, the checkpoints
    /// (`CELLBOX_CHECKPOINTS`, `CELLBOX_CHECKPOINT_MEMORY`) and the bridge's limits
    /// (`CELLBOX_BRIDGE_*`). A front end's own flags for these (`--check`, `--checkpoints`, …) are
    /// bound to the same variables and applied after.
    ///
    /// [`KernelArgs`]: crate::kernel_args::KernelArgs
    pub fn from_environment(default_cwd: impl Into<PathBuf>, env: &Environment) -> Result<EngineConfig, String> {
        let mut config = EngineConfig::new(default_cwd);
        config.exposure = Exposure::from_environment(env)?;
        config.check = env.parse(&settings::CHECK).map_err(|e| e.to_string())?.unwrap_or_default();
        config.checkpoints = CheckpointLimits::from_environment(env)?;
        config.bridge.limits = crate::bridge::BridgeLimits::from_environment(env).map_err(|e| e.to_string())?;
        config.hibernate = env.bool(&settings::HIBERNATE).map_err(|e| e.to_string())?.unwrap_or(config.hibernate);
        let after: Option<f64> = env.parse(&settings::HIBERNATE_AFTER).map_err(|e| e.to_string())?;
        config.pool.hibernate_after = after.map(Duration::from_secs_f64);
        Ok(config)
    }
}

impl EngineConfig {
    /// Refuse a state folder kernels work in (the workspace, an `allow_write`
    /// folder, or one holding them): kernels are denied it.
    pub fn check_state_dir(&self) -> Result<(), String> {
        let Some(dir) = &self.state_dir else { return Ok(()) };
        let overlaps = |other: &std::path::Path| dir.starts_with(other) || other.starts_with(dir);
        if overlaps(&self.default_cwd) || self.sandbox.allow_write.iter().any(|path| overlaps(path)) {
            return Err(format!(
                "the state folder {} overlaps the workspace {} or an --allow-write folder, which kernels use; give a \
                 folder outside them",
                dir.display(),
                self.default_cwd.display()
            ));
        }
        Ok(())
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

    /// `CELLBOX_CHECKPOINTS` and `CELLBOX_CHECKPOINT_MEMORY` (unset: off, 1 GiB); a bad value
    /// is an error naming the variable.
    pub fn from_environment(env: &Environment) -> Result<CheckpointLimits, String> {
        let count = env.parse(&settings::CHECKPOINTS).map_err(|e| e.to_string())?.unwrap_or(0);
        let memory_bytes = match env.get(&settings::CHECKPOINT_MEMORY) {
            Some(value) => crate::sandbox::parse_size(value)
                .map_err(|e| e.in_variable(&settings::CHECKPOINT_MEMORY).to_string())?,
            None => Self::DEFAULT_MEMORY,
        };
        Ok(CheckpointLimits { count, memory_bytes })
    }
}

impl Default for CheckpointLimits {
    fn default() -> Self {
        CheckpointLimits { count: 0, memory_bytes: Self::DEFAULT_MEMORY }
    }
}
