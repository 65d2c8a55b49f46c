//! [`EvalEngine`]: the eval tool for agent hosts. One call runs its cells in
//! order in a retained (or fresh) kernel, under per-cell timeouts and the
//! caller's cancellation, streaming events and returning an [`EvalResult`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::params::{CheckMode, EvalParams, Language, ParamsError, PlannedCell};
use super::result::{CellReport, CellStatus, Collector, ErrorSummary, EvalEvent, EvalResult};
use super::run::{RunRegistry, RunShared};
use super::watchdog::{PauseGuard, Watchdog};
use crate::backend::{self, Backend, Runtime};
use crate::kernel::bridge::BudgetControl;
use crate::kernel::{Completeness, ExecEvent, ExecuteOptions, KernelError, KernelOptions, StartStage};
use crate::notebook::{History, HistoryLimits, Notebook, RecordedCell};
use crate::output::artifacts::{ArtifactError, ArtifactStore, DEFAULT_MAX_ARTIFACT_BYTES, DEFAULT_RETENTION};
use crate::output::limiter::TextLimits;
use crate::protocol::DoneStatus;
use crate::runtime::{self, DiscoveryInput, env};
use crate::session::{KernelHandle, KernelKey, KernelPool, PoolLimits, SlotGuard, SpareLimits, SparePool, Transport};

/// Lint findings shown as notes per call; more are counted.
const MAX_LINT_NOTES: usize = 30;

/// After an interrupt, how long the kernel gets to finish the cell before it is killed.
pub const INTERRUPT_ESCALATION: Duration = Duration::from_secs(5);

/// Whether kernels outlive a call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum KernelMode {
    /// Keep kernels per (session, cwd, backend, interpreter) across calls.
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
        if let Ok(value) = std::env::var("CELLBOX_PY") {
            exposure = exposure.with_py_mode(&value);
        }
        Exposure { js: flag("CELLBOX_JS").unwrap_or(exposure.js), ..exposure }
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
        match language.backend() {
            Backend::Python => self.py,
            Backend::Node => self.js,
        }
    }

    /// The language of cells that name none: Python, unless only JavaScript is on.
    pub fn default_language(self) -> Language {
        if !self.py && self.js { Language::Js } else { Language::Py }
    }
}

fn flag(name: &str) -> Option<bool> {
    match std::env::var(name).ok()?.trim().to_ascii_lowercase().as_str() {
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
    /// How much output each session's notebook history keeps ([`EvalEngine::export_notebook`]).
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
    pub transport: Transport,
    /// Modules Python kernels start with already imported: they are imported
    /// once in a fork server and each kernel is forked from it (empty: off;
    /// default from `CELLBOX_PRELOAD`). Process transport only.
    pub preload: Vec<String>,
    /// Checks run before each call's cells unless the call says otherwise
    /// (default from `CELLBOX_CHECK`: off).
    pub check: CheckMode,
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
            transport: Transport::from_env().unwrap_or_default(),
            preload: preload_from_env(),
            check: CheckMode::from_env(),
        }
    }
}

/// The variable with the modules to preload, comma-separated.
pub const PRELOAD_VAR: &str = "CELLBOX_PRELOAD";

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
    std::env::var(PRELOAD_VAR).map(|list| parse_preload(&list)).unwrap_or_default()
}

/// Who is calling: the session whose kernels to use, and the owner that
/// keeps them alive (disposed with [`EvalEngine::dispose_owner`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallContext {
    pub session: String,
    pub owner: String,
}

impl CallContext {
    /// A session that is its own owner.
    pub fn new(session: impl Into<String>) -> Self {
        let session = session.into();
        CallContext { owner: session.clone(), session }
    }
}

/// A call that could not start. Everything else is reported in [`EvalResult`].
#[derive(Debug, Clone, thiserror::Error)]
pub enum EvalError {
    #[error(transparent)]
    Params(#[from] ParamsError),
    /// The cwd is missing or not a directory (the kernel layer's own error).
    #[error(transparent)]
    InvalidCwd(KernelError),
    #[error("{0}")]
    LanguageDisabled(String),
    #[error("the Python backend is not available: {0}")]
    PythonUnavailable(String),
    #[error("the JavaScript backend is not available: {0}")]
    NodeUnavailable(String),
    #[error("{0}")]
    Kernel(String),
}

/// Why a session cannot be exported as a notebook.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExportError {
    #[error("session {0:?} has not run any Python cell yet, so there is no notebook to save; run a cell first")]
    NoHistory(String),
}

/// The eval tool. Cheap to share behind an `Arc`; every method takes `&self`.
pub struct EvalEngine {
    config: EngineConfig,
    pool: Arc<KernelPool>,
    spares: Arc<SparePool>,
    artifacts: Arc<ArtifactStore>,
    calls: AtomicU64,
    /// The watchdog of the cell each session is running, for [`EvalEngine::pause_budget`].
    budgets: Arc<std::sync::Mutex<std::collections::HashMap<String, Arc<Watchdog>>>>,
    /// The engine-wide cap on bridge calls served at once.
    bridge_permits: Arc<tokio::sync::Semaphore>,
    /// Each session's executed cells, for [`EvalEngine::export_notebook`].
    histories: std::sync::Mutex<std::collections::HashMap<String, History>>,
    /// Set once the caller was told that cells without a language run as JavaScript.
    fallback_told: std::sync::atomic::AtomicBool,
    /// Calls running in the background under a `run://` handle.
    pub(super) runs: RunRegistry,
}

/// Events are streamed through this while a call runs.
pub type EventSink<'a> = &'a (dyn Fn(EvalEvent) + Send + Sync);

/// A sink that drops every event.
pub fn ignore_events(_: EvalEvent) {}

enum Fate {
    Alive,
    Killed,
    /// How it ended, and the last lines of the runner's own diagnostics.
    Died {
        exit: String,
        last_words: String,
    },
    /// The kernel died before the runner acknowledged the cell (its `started`
    /// frame): the cell never ran, so it is not to blame and may run elsewhere.
    DiedBeforeStart {
        exit: String,
    },
}

/// What faulthandler writes first when the runner crashes in C code.
const FAULTHANDLER_HEADLINE: &str = "Fatal Python error";
/// How many lines of a dead runner's diagnostics a result quotes.
const DIED_QUOTE_LINES: usize = 12;

/// The last `count` non-empty lines of `text`, trimmed.
fn last_lines(text: &str, count: usize) -> String {
    let lines: Vec<&str> = text.trim().lines().collect();
    lines[lines.len().saturating_sub(count)..].join("\n")
}

impl EvalEngine {
    /// Create an engine. Call from within a tokio runtime so idle kernels are
    /// reaped and old artifacts pruned in the background.
    pub fn new(config: EngineConfig) -> Self {
        let artifacts = Arc::new(ArtifactStore::new(config.artifacts_dir.clone(), config.max_artifact_bytes));
        if let (Some(age), Ok(handle)) = (config.artifact_retention, tokio::runtime::Handle::try_current()) {
            let store = ArtifactStore::new(config.artifacts_dir.clone(), config.max_artifact_bytes);
            handle.spawn_blocking(move || store.prune(age));
        }
        EvalEngine {
            pool: KernelPool::new(config.pool),
            bridge_permits: crate::bridge::Dispatcher::permits_for(&config.bridge),
            spares: SparePool::new(config.spare, config.transport.clone()),
            artifacts,
            config,
            calls: AtomicU64::new(0),
            budgets: Default::default(),
            histories: Default::default(),
            fallback_told: Default::default(),
            runs: RunRegistry::default(),
        }
    }

    pub fn config(&self) -> &EngineConfig {
        &self.config
    }

    pub(super) fn pool(&self) -> &KernelPool {
        &self.pool
    }

    pub fn artifacts(&self) -> &ArtifactStore {
        &self.artifacts
    }

    /// Read part of an artifact (`id` or `artifact://id`): text and total size.
    pub fn read_artifact(&self, id: &str, offset: u64, limit: usize) -> Result<(String, u64), ArtifactError> {
        self.artifacts.read(id, offset, limit)
    }

    /// Pids of the retained kernels.
    pub fn kernel_pids(&self) -> Vec<u32> {
        self.pool.kernel_pids()
    }

    /// Pids of the warm spares that are ready (not yet handed out).
    pub fn spare_pids(&self) -> Vec<u32> {
        self.spares.pids()
    }

    /// Start a warm spare for the default cwd and language now, in the
    /// background, so the first call does not wait for an interpreter start
    /// (`cellbox mcp` does this when it starts). Does nothing when spares are
    /// off or no runtime is found (the first call then reports why).
    pub async fn prewarm(&self) {
        if !self.spares.enabled() {
            return;
        }
        let Ok(cwd) = self.resolve_cwd(None) else { return };
        let runtime = match self.default_language().backend() {
            Backend::Python => self.resolve_python(&cwd).await.ok(),
            Backend::Node => self.resolve_node(&cwd).await.ok(),
        };
        if let Some(runtime) = runtime {
            self.fill_spare(&self.kernel_options(&runtime, &cwd));
        }
    }

    /// Keep a spare for `options` within the live-kernel limit.
    fn fill_spare(&self, options: &KernelOptions) {
        if !self.spares.enabled() {
            return;
        }
        let used = self.pool.live_count(None) + self.spares.len();
        self.spares.fill(options, self.pool.limits().max_kernels.saturating_sub(used));
    }

    /// The options a kernel for `runtime` in `cwd` starts with (also the key of its spares).
    fn kernel_options(&self, runtime: &Runtime, cwd: &Path) -> KernelOptions {
        let env = env::kernel_env(std::env::vars_os(), &runtime.activation, &self.config.extra_env);
        let mut options = KernelOptions::for_runtime(runtime, cwd, env);
        options.startup_timeout = self.config.startup_timeout;
        options.cache_dir = self.config.runner_cache_dir.clone();
        options.sandbox = self.config.sandbox.clone();
        if runtime.backend == Backend::Python && self.config.transport == Transport::Process {
            options.preload = self.config.preload.clone();
        }
        if options.sandbox.mode == crate::sandbox::SandboxMode::WorkspaceWrite {
            options.sandbox.allow_write.push(self.config.default_cwd.clone());
        }
        options
    }

    /// `owner` is gone: kernels no other owner holds are shut down. Idempotent.
    pub async fn dispose_owner(&self, owner: &str) {
        self.runs.dispose_owner(owner);
        self.pool.dispose_owner(owner).await;
    }

    /// Is `code` a whole cell yet? Asked of the session's kernel for the
    /// default language (started if needed), so magics and the language's own
    /// grammar decide.
    pub async fn check_complete(&self, context: &CallContext, code: &str) -> Result<Completeness, EvalError> {
        self.check_complete_in(context, None, code).await
    }

    /// [`EvalEngine::check_complete`] in the kernel of `language` (`None`: the default language).
    pub async fn check_complete_in(
        &self,
        context: &CallContext,
        language: Option<Language>,
        code: &str,
    ) -> Result<Completeness, EvalError> {
        let cwd = self.resolve_cwd(None)?;
        let mut cell = PlannedCell {
            index: 0,
            code: String::new(),
            title: None,
            language: language.unwrap_or_default(),
            language_given: language.is_some(),
            timeout: Duration::from_secs(1),
            reset: false,
        };
        let runtimes = self.choose_runtimes(std::slice::from_mut(&mut cell), &cwd, &|_| {}).await?;
        let runtime = runtimes.into_iter().next().expect("one cell needs one runtime");
        let key = self.key(&context.session, &cwd, &runtime);
        let slot = self.pool.slot(key, &context.owner);
        let mut guard = slot.lock().await.map_err(|e| EvalError::Kernel(e.to_string()))?;
        let kernel = self
            .kernel_for(&runtime, &cwd, &mut guard, 0, &ignore_events)
            .await
            .map_err(|e| EvalError::Kernel(e.to_string()))?;
        kernel.check_complete(code).await.map_err(|e| EvalError::Kernel(e.to_string()))
    }

    /// The language cells without one get here (see [`Exposure::default_language`]);
    /// JavaScript too when Python was found unavailable and JavaScript is on.
    pub fn default_language(&self) -> Language {
        self.config.exposure.default_language()
    }

    /// The languages a call can use now: enabled, and with a runtime found for
    /// the default cwd (blocking: runs the discovery probes, cached after the first).
    pub fn available_languages(&self) -> Vec<Language> {
        let exposure = self.config.exposure;
        let cwd = &self.config.default_cwd;
        let mut languages = Vec::new();
        if exposure.py {
            let input = DiscoveryInput::from_env(cwd, self.config.python.clone());
            if runtime::resolve(&input, runtime::skip_check_from_env()).is_ok() {
                languages.push(Language::Py);
            }
        }
        if exposure.js && backend::node::resolve_from_env(self.config.node.as_deref(), cwd).is_ok() {
            languages.extend([Language::Js, Language::Ts]);
        }
        languages
    }

    fn key(&self, session: &str, cwd: &Path, runtime: &Runtime) -> KernelKey {
        KernelKey {
            session: session.to_string(),
            cwd: cwd.to_path_buf(),
            backend: runtime.backend,
            interpreter: runtime.executable.clone(),
        }
    }

    /// Settle each cell's language (defaults, exposure, the JavaScript
    /// fallback when Python is missing) and find a runtime for each backend
    /// used, in [`Backend::ALL`] order.
    async fn choose_runtimes(
        &self,
        plan: &mut [PlannedCell],
        cwd: &Path,
        note: &(dyn Fn(String) + Send + Sync),
    ) -> Result<Vec<Runtime>, EvalError> {
        let exposure = self.config.exposure;
        for cell in plan.iter_mut().filter(|cell| !cell.language_given) {
            cell.language = exposure.default_language();
        }
        self.check_exposure(plan)?;
        let mut runtimes = Vec::new();
        let mut python = None;
        if plan.iter().any(|cell| cell.language.backend() == Backend::Python) {
            match self.resolve_python(cwd).await {
                Ok(found) => python = Some(found),
                Err(error) => {
                    let explicit = plan.iter().any(|c| c.language_given && c.language.backend() == Backend::Python);
                    if explicit || !exposure.js {
                        return Err(error);
                    }
                    for cell in plan.iter_mut().filter(|cell| !cell.language_given) {
                        cell.language = Language::Js;
                    }
                    if !self.fallback_told.swap(true, Ordering::Relaxed) {
                        note(format!(
                            "{error}. Cells without a language run as JavaScript; pass \"language\": \"js\" to say so."
                        ));
                    }
                }
            }
        }
        for backend in Backend::ALL {
            if !plan.iter().any(|cell| cell.language.backend() == backend) {
                continue;
            }
            let runtime = match backend {
                Backend::Python => python.clone().expect("resolved above"),
                Backend::Node => self.resolve_node(cwd).await?,
            };
            runtimes.push(runtime);
        }
        Ok(runtimes)
    }

    /// Suspend the time budget of the cell `session` is running, until the
    /// guard is dropped; each release starts a fresh window. For host work done
    /// on the cell's behalf (a bridge call); nothing else pauses the budget.
    /// Pauses nest. `None` when the session runs no cell.
    pub fn pause_budget(&self, session: &str) -> Option<PauseGuard> {
        self.budgets.lock().unwrap().get(session).map(|watchdog| watchdog.pause())
    }

    /// The bridge calls of `session`'s kernels, answered by the configured
    /// bridge (the cell's budget waits through the kernel's budget events).
    fn bridge_hook(&self, session: &str) -> crate::kernel::bridge::BridgeHook {
        let dispatcher = crate::bridge::Dispatcher::new(self.config.bridge.clone(), self.bridge_permits.clone())
            .with_handles(self.artifacts.clone(), session)
            .for_session(session);
        crate::kernel::bridge::BridgeHook(Arc::new(dispatcher))
    }

    /// Restart `session`'s kernels: all state is cleared, the next call starts
    /// a fresh kernel. Returns how many kernels were stopped.
    pub async fn reset_session(&self, session: &str) -> usize {
        self.pool.reset_session(session).await
    }

    /// The cells `session` has run, as an nbformat 4.5 notebook: one code cell
    /// per executed Python cell, in order, with its outputs and execution
    /// count. The history outlives [`EvalEngine::reset_session`] (as a Jupyter
    /// restart keeps the notebook; execution counts start again at 1).
    pub fn export_notebook(&self, session: &str) -> Result<Notebook, ExportError> {
        let histories = self.histories.lock().unwrap();
        match histories.get(session) {
            Some(history) if !history.is_empty() => Ok(history.to_notebook()),
            _ => Err(ExportError::NoHistory(session.to_string())),
        }
    }

    /// How many cells `session`'s history holds.
    pub fn history_len(&self, session: &str) -> usize {
        self.histories.lock().unwrap().get(session).map_or(0, History::len)
    }

    /// Forget `session`'s history (its kernels are untouched).
    pub fn forget_history(&self, session: &str) {
        self.histories.lock().unwrap().remove(session);
    }

    fn remember(&self, session: &str, cells: Vec<RecordedCell>) {
        if cells.is_empty() {
            return;
        }
        let mut histories = self.histories.lock().unwrap();
        let history = histories.entry(session.to_string()).or_default();
        for cell in cells {
            history.push(cell, &self.config.history);
        }
    }

    /// Shut every kernel down (host exit, SIGINT/SIGTERM).
    pub async fn dispose_all(&self) {
        self.spares.dispose_all().await;
        self.pool.dispose_all().await;
        // Fork servers end once no kernel forked from them is left.
        crate::kernel::zygote::release_all();
    }

    /// Run one call and return when it is over (`params.wait` is not
    /// looked at here: see [`EvalEngine::call`]).
    pub async fn eval(
        &self,
        params: &EvalParams,
        context: &CallContext,
        cancel: &CancellationToken,
        on_event: EventSink<'_>,
    ) -> Result<EvalResult, EvalError> {
        self.eval_observed(params, context, cancel, on_event, None).await
    }

    /// [`EvalEngine::eval`], telling `run` (when the call is one) what it writes.
    pub(super) async fn eval_observed(
        &self,
        params: &EvalParams,
        context: &CallContext,
        cancel: &CancellationToken,
        on_event: EventSink<'_>,
        run: Option<&Arc<RunShared>>,
    ) -> Result<EvalResult, EvalError> {
        let mut plan = params.plan()?;
        let cwd = self.resolve_cwd(params.cwd.as_deref())?;
        let notes = std::sync::Mutex::new(Vec::new());
        let runtimes = self.choose_runtimes(&mut plan, &cwd, &|note| notes.lock().unwrap().push(note)).await?;
        let mut collector =
            Collector::new(self.config.text_limits, self.artifacts.create(&context.session), plan.len() > 1);
        if let Some(run) = run {
            run.set_artifact(collector.artifact_uri());
            let run = run.clone();
            collector.mirror_text(Arc::new(move |text: &str| run.text(text)));
        }
        collector.record_cells(plan.iter().map(|cell| cell.code.clone()).collect(), self.config.history);
        for note in notes.into_inner().unwrap() {
            on_event(EvalEvent::Note { text: note.clone() });
            collector.note(note);
        }

        // A key of its own in per-call mode, so the kernels are fresh yet still
        // in the pool, where dispose_all (host exit) finds them.
        let session = match self.config.mode {
            KernelMode::Session => context.session.clone(),
            KernelMode::PerCall => format!("{}#call-{}", context.session, self.calls.fetch_add(1, Ordering::Relaxed)),
        };
        let keys: Vec<KernelKey> = runtimes.iter().map(|runtime| self.key(&session, &cwd, runtime)).collect();
        let slots: Vec<_> = keys.iter().map(|key| self.pool.slot(key.clone(), &context.owner)).collect();
        let queue_budget = plan[0].timeout;
        let behind = self.runs.active_in(&context.session, run.map(|run| run.id.as_str()));
        if let (Some(run), Some(other)) = (run, &behind) {
            run.set_queued(Some(other.clone()));
        }
        let queued_at = Instant::now();
        // Slots are taken in backend order, so calls never wait on each other in a cycle.
        let lock_all = async {
            let mut guards = Vec::new();
            for slot in &slots {
                guards.push(slot.lock().await?);
            }
            Ok::<_, crate::session::SlotDisposed>(guards)
        };
        let guards = tokio::select! {
            guards = lock_all => guards,
            _ = tokio::time::sleep(queue_budget) => {
                let busy_with = behind.clone().unwrap_or_else(|| "another call".to_string());
                return Ok(self.unstarted(&plan, collector, CellStatus::Timeout, format!(
                    "Command timed out after {} seconds while waiting for the kernel (busy with {busy_with}). \
                     Wait for that run with eval_wait, stop it with eval_cancel, or use another session.",
                    queue_budget.as_secs()
                ), on_event));
            }
            _ = cancel.cancelled() => {
                return Ok(self.unstarted(&plan, collector, CellStatus::Cancelled,
                    "Cancelled while waiting for the kernel (busy with another call).".to_string(), on_event));
            }
        };
        let mut guards = match guards {
            Ok(guards) => guards,
            Err(closed) => {
                return Ok(self.unstarted(&plan, collector, CellStatus::Cancelled, closed.to_string(), on_event));
            }
        };
        if let Some(other) = behind {
            collector.note(format!(
                "This call was queued behind {other} (the session was busy) and started after {:.1} s.",
                queued_at.elapsed().as_secs_f64()
            ));
        }
        for guard in &mut guards {
            for note in guard.take_notes() {
                collector.note(note);
            }
        }
        let mut kernels: Vec<(Runtime, SlotGuard<'_>)> = runtimes.into_iter().zip(guards).collect();
        // Off (the default): no exchange with the kernel before the cells.
        let check = params.check.unwrap_or(self.config.check);
        if check == CheckMode::Off
            || self.precheck(&mut plan, &cwd, &mut kernels, check, &mut collector, on_event).await
        {
            self.run_cells(&plan, &cwd, &mut kernels, &mut collector, cancel, on_event).await;
        }
        self.remember(&context.session, collector.take_recorded());
        match self.config.mode {
            KernelMode::Session => {
                for (_, guard) in &mut kernels {
                    self.pool.recycle_if_bloated(guard).await;
                }
                drop(kernels);
            }
            KernelMode::PerCall => {
                drop(kernels);
                for key in &keys {
                    self.pool.release(key).await;
                }
            }
        }
        Ok(collector.finish())
    }

    /// Check the call's cells before any runs (`check` is not off): one
    /// `check` request to each kernel the call uses, which parses every cell
    /// of its language without running it (Python: compiled after the magic
    /// transform; JavaScript/TypeScript: parsed as the Node runner would) and,
    /// for `lint`, runs `ruff check` on the Python cells. Returns whether the
    /// cells may run; when one does not parse, its error (with the caret) is
    /// the result, every other cell is skipped and nothing ran. Lint findings
    /// become notes. A check that cannot be made (a gateway kernel, a kernel
    /// that fails) says so in a note and lets the cells run.
    async fn precheck(
        &self,
        plan: &mut [PlannedCell],
        cwd: &Path,
        kernels: &mut [(Runtime, SlotGuard<'_>)],
        check: CheckMode,
        collector: &mut Collector,
        on_event: EventSink<'_>,
    ) -> bool {
        let lint = check == CheckMode::Lint;
        // (cell index, what the check found), in backend order.
        let mut found: Vec<(usize, crate::protocol::CheckedCell)> = Vec::new();
        // Cells whose `reset` the check's fresh kernel already satisfies.
        let mut fresh: Vec<usize> = Vec::new();
        for (runtime, guard) in kernels.iter_mut() {
            let cells: Vec<&PlannedCell> =
                plan.iter().filter(|cell| cell.language.backend() == runtime.backend).collect();
            let Some(first) = cells.first() else { continue };
            // The kernel the first such cell would use (started now if needed;
            // a start failure is left for that cell to report). A kernel the
            // first cell resets is asked as it is (the check reads no state
            // but the linter's names) and reset only if the cells run.
            let had_kernel = guard.kernel().is_some_and(|kernel| kernel.is_alive());
            let started = self.kernel_for(runtime, cwd, guard, first.index, on_event).await;
            if started.is_ok() && !had_kernel && first.reset {
                fresh.push(first.index);
            }
            for note in guard.take_notes() {
                collector.note(note);
            }
            let Ok(kernel) = started else { continue };
            let request = cells
                .iter()
                .map(|cell| crate::protocol::CheckCell {
                    number: cell.index + 1,
                    code: cell.code.clone(),
                    typescript: cell.language == Language::Ts,
                })
                .collect();
            match kernel.check(request, lint).await {
                Ok(Some(answer)) => {
                    for note in answer.notes {
                        collector.note(note);
                    }
                    found.extend(cells.iter().map(|cell| cell.index).zip(answer.cells));
                }
                Ok(None) => collector.note("Pre-run check: not on gateway kernels; these cells ran unchecked."),
                Err(error) => {
                    collector.note(format!("Pre-run check could not be made ({error}); the cells ran unchecked."))
                }
            }
        }
        for index in fresh {
            plan[index].reset = false;
        }
        let plan: &[PlannedCell] = plan;
        found.sort_by_key(|(index, _)| *index);
        let errors: Vec<(usize, &crate::protocol::SyntaxProblem)> =
            found.iter().filter_map(|(index, checked)| checked.error.as_ref().map(|error| (*index, error))).collect();
        if errors.is_empty() {
            let findings: Vec<_> = found
                .iter()
                .flat_map(|(index, checked)| checked.findings.iter().map(move |finding| (*index, finding)))
                .collect();
            for (index, finding) in findings.iter().take(MAX_LINT_NOTES) {
                let place = if plan.len() > 1 { format!("cell {}, ", index + 1) } else { String::new() };
                let rule = if finding.code.is_empty() { String::new() } else { format!("{} ", finding.code) };
                collector
                    .note(format!("Lint ({place}line {}:{}): {rule}{}", finding.line, finding.column, finding.message));
            }
            if findings.len() > MAX_LINT_NOTES {
                collector.note(format!("Lint: {} more finding(s) not shown.", findings.len() - MAX_LINT_NOTES));
            }
            return true;
        }
        for cell in plan {
            let Some((_, error)) = errors.iter().find(|(index, _)| *index == cell.index) else {
                collector.finish_cell(report(cell, CellStatus::Skipped, 0, None, None));
                continue;
            };
            on_event(EvalEvent::CellStarted { index: cell.index, title: cell.title.clone() });
            collector.begin_cell(cell.index, cell.title.as_deref());
            let shown = crate::kernel::CellError {
                ename: error.ename.clone(),
                evalue: error.evalue.clone(),
                traceback: error.traceback.clone(),
            };
            if let Some(streamed) = collector.event(cell.index, ExecEvent::Error(shown)) {
                on_event(streamed);
            }
            on_event(EvalEvent::CellFinished { index: cell.index, status: CellStatus::Error, duration_ms: 0 });
            let summary = ErrorSummary { ename: error.ename.clone(), evalue: error.evalue.clone() };
            collector.finish_cell(report(cell, CellStatus::Error, 0, None, Some(summary)));
        }
        let places: Vec<String> = errors
            .iter()
            .map(|(index, error)| match error.line {
                Some(line) => format!("cell {} (line {line})", index + 1),
                None => format!("cell {}", index + 1),
            })
            .collect();
        let what = if places.len() == 1 { "has a syntax error" } else { "have syntax errors" };
        let none = if plan.len() == 1 { "it was not run" } else { "no cell was run" };
        collector
            .note(format!("Syntax check: {} {what}; {none} and the kernel's state is unchanged.", places.join(", ")));
        false
    }

    /// A call that never reached its kernel: every cell gets `status`.
    fn unstarted(
        &self,
        plan: &[PlannedCell],
        mut collector: Collector,
        status: CellStatus,
        note: String,
        on_event: EventSink<'_>,
    ) -> EvalResult {
        for (position, cell) in plan.iter().enumerate() {
            let status = if position == 0 { status } else { CellStatus::Skipped };
            collector.finish_cell(report(cell, status, 0, None, None));
        }
        on_event(EvalEvent::Note { text: note.clone() });
        collector.note(note);
        collector.finish()
    }

    fn check_exposure(&self, plan: &[PlannedCell]) -> Result<(), EvalError> {
        let exposure = self.config.exposure;
        if !exposure.py && !exposure.js {
            return Err(EvalError::LanguageDisabled(
                "Both Python and JavaScript cells are disabled here (CELLBOX_PY / CELLBOX_JS). Enable one of them."
                    .into(),
            ));
        }
        if !exposure.py && plan.iter().any(|c| c.language == Language::Py) {
            return Err(EvalError::LanguageDisabled(
                ("Python cells are disabled here (CELLBOX_PY=0/bash or the `py` setting). Set CELLBOX_PY=mix for both \
                  languages, or CELLBOX_PY=1 for Python only; or use a JavaScript cell (language \"js\").")
                    .into(),
            ));
        }
        if !exposure.js && plan.iter().any(|c| c.language.backend() == Backend::Node) {
            return Err(EvalError::LanguageDisabled(
                "JavaScript cells are disabled here (CELLBOX_JS=0 or the `js` setting). Set CELLBOX_JS=1 to enable \
                 them, or use a Python cell (language \"py\")."
                    .into(),
            ));
        }
        Ok(())
    }

    pub(super) fn resolve_cwd(&self, requested: Option<&str>) -> Result<PathBuf, EvalError> {
        let cwd = match requested {
            Some(dir) if dir.starts_with("~/") => dirs::home_dir().unwrap_or_default().join(&dir[2..]),
            Some(dir) => self.config.default_cwd.join(dir),
            None => self.config.default_cwd.clone(),
        };
        crate::kernel::validate_cwd(&cwd).map_err(EvalError::InvalidCwd)?;
        Ok(std::fs::canonicalize(&cwd).unwrap_or(cwd))
    }

    async fn resolve_python(&self, cwd: &Path) -> Result<Runtime, EvalError> {
        let input = DiscoveryInput::from_env(cwd, self.config.python.clone());
        let skip = runtime::skip_check_from_env();
        tokio::task::spawn_blocking(move || runtime::resolve(&input, skip))
            .await
            .map_err(|e| EvalError::PythonUnavailable(e.to_string()))?
            .map(Runtime::from)
            .map_err(|e| EvalError::PythonUnavailable(e.to_string()))
    }

    async fn resolve_node(&self, cwd: &Path) -> Result<Runtime, EvalError> {
        let explicit = self.config.node.clone();
        let cwd = cwd.to_path_buf();
        tokio::task::spawn_blocking(move || backend::node::resolve_from_env(explicit.as_deref(), &cwd))
            .await
            .map_err(|e| EvalError::NodeUnavailable(e.to_string()))?
            .map_err(|e| EvalError::NodeUnavailable(e.to_string()))
    }

    #[allow(clippy::too_many_arguments)]
    async fn run_cells(
        &self,
        plan: &[PlannedCell],
        cwd: &Path,
        kernels: &mut [(Runtime, SlotGuard<'_>)],
        collector: &mut Collector,
        cancel: &CancellationToken,
        on_event: EventSink<'_>,
    ) {
        let mut failed: Option<usize> = None;
        for cell in plan {
            if failed.is_some() {
                collector.finish_cell(report(cell, CellStatus::Skipped, 0, None, None));
                continue;
            }
            on_event(EvalEvent::CellStarted { index: cell.index, title: cell.title.clone() });
            collector.begin_cell(cell.index, cell.title.as_deref());
            let started = Instant::now();
            let (runtime, guard) = kernels
                .iter_mut()
                .find(|(runtime, _)| runtime.backend == cell.language.backend())
                .expect("a runtime was chosen for every cell's backend");
            let (status, count, error) = self.run_cell(cell, runtime, cwd, guard, collector, cancel, on_event).await;
            let duration_ms = started.elapsed().as_millis() as u64;
            on_event(EvalEvent::CellFinished { index: cell.index, status, duration_ms });
            collector.finish_cell(report(cell, status, duration_ms, count, error));
            if status != CellStatus::Ok {
                failed = Some(cell.index);
            }
        }
        if let Some(index) = failed {
            let cell = &plan[index];
            let report = &collector.cells()[index];
            let what = match (report.status, &report.error) {
                (CellStatus::Timeout, _) => "timed out".to_string(),
                (CellStatus::Cancelled, _) => "was cancelled".to_string(),
                (CellStatus::Killed, _) => "was killed".to_string(),
                (_, Some(error)) if error.evalue.is_empty() => format!("failed: {}", error.ename),
                (_, Some(error)) => format!("failed: {}: {}", error.ename, error.evalue),
                (status, None) => format!("failed ({})", status.as_str()),
            };
            let name = match &cell.title {
                Some(title) => format!("Cell {} ({title})", index + 1),
                None => format!("Cell {}", index + 1),
            };
            let skipped = plan.len() - index - 1;
            // An error message that ends its own sentence gets no second full stop.
            let stop = if what.ends_with(['.', '!', '?']) { "" } else { "." };
            let mut note = format!("{name} {what}{stop}");
            if skipped == 1 {
                note.push_str(&format!(" Cell {} was not run.", index + 2));
            } else if skipped > 1 {
                note.push_str(&format!(" Cells {}–{} were not run.", index + 2, plan.len()));
            }
            if plan.len() > 1 {
                collector.note(note);
            }
        }
    }

    /// A live kernel for this cell: the slot's, or a new one (replacing a dead one).
    /// While a new kernel starts, `on_event` hears what cell `cell` waits for.
    async fn kernel_for(
        &self,
        runtime: &Runtime,
        cwd: &Path,
        guard: &mut SlotGuard<'_>,
        cell: usize,
        on_event: EventSink<'_>,
    ) -> Result<Arc<KernelHandle>, KernelError> {
        if let Some(kernel) = guard.kernel() {
            if kernel.is_alive() {
                return Ok(kernel);
            }
            guard.replace_kernel(None);
            // After the shutdown its exit status is known, not only that it ended.
            kernel.shutdown().await;
            let exit = kernel.exit_description().unwrap_or_else(|| "it stopped".into());
            guard.add_note(format!(
                "The previous kernel had died ({exit}); a new one was started and earlier state is lost."
            ));
        }
        let options = self.kernel_options(runtime, cwd);
        // A spare may still be starting: on a gateway that wait is a kernel start too.
        let on_gateway = matches!(self.config.transport, Transport::Gateway(_)) && runtime.backend == Backend::Python;
        let report = StartReport::new(cell, on_event, on_gateway.then_some(StartStage::Kernel));
        let spare = report.run(self.spares.take(&options)).await;
        if self.config.mode == KernelMode::Session {
            // Spares hold no state: they give way before any kernel in use.
            let live = self.pool.live_count(Some(guard.key()));
            let allowed = self.pool.limits().max_kernels.saturating_sub(live + 1);
            self.spares.shed(allowed, Some(&options)).await;
            self.pool.make_room(guard.key()).await;
        }
        let kernel = match spare {
            Some(kernel) => Arc::new(kernel),
            None => {
                let observer = |stage: StartStage| report.enter(stage);
                let started =
                    report.run(KernelHandle::start_observed(options.clone(), &self.config.transport, &observer)).await;
                report.finish();
                Arc::new(started?)
            }
        };
        report.finish();
        // Bound to the session when handed out: a spare serves whichever session takes it.
        kernel.set_bridge(self.bridge_hook(&guard.key().session));
        guard.replace_kernel(Some(kernel.clone()));
        self.fill_spare(&options);
        Ok(kernel)
    }

    #[allow(clippy::too_many_arguments)]
    async fn run_cell(
        &self,
        cell: &PlannedCell,
        runtime: &Runtime,
        cwd: &Path,
        guard: &mut SlotGuard<'_>,
        collector: &mut Collector,
        cancel: &CancellationToken,
        on_event: EventSink<'_>,
    ) -> (CellStatus, Option<u64>, Option<ErrorSummary>) {
        if cell.reset
            && let Some(old) = guard.replace_kernel(None)
        {
            self.pool.retire(old);
        }
        let failure = |collector: &mut Collector, error: KernelError| {
            let message = error.to_string();
            collector.note(message.clone());
            (CellStatus::Error, None, Some(ErrorSummary { ename: "KernelError".into(), evalue: message }))
        };
        // A kernel that died before the runner acknowledged the cell never ran
        // it: the cell runs on a fresh kernel, once.
        let mut fresh_start_left = true;
        loop {
            // A kernel that is dead before the cell starts is replaced, once.
            let mut attempt = 0;
            let (kernel, mut execution) = loop {
                let started = self.kernel_for(runtime, cwd, guard, cell.index, on_event).await;
                for note in guard.take_notes() {
                    collector.note(note);
                }
                let kernel = match started {
                    Ok(kernel) => kernel,
                    Err(error) => return failure(collector, error),
                };
                let options = ExecuteOptions { typescript: cell.language == Language::Ts, ..Default::default() };
                match kernel.execute_with(&cell.code, options).await {
                    Ok(execution) => break (kernel, execution),
                    Err(_) if attempt == 0 => attempt += 1,
                    Err(error) => return failure(collector, error),
                }
            };

            let watchdog = Watchdog::new(cell.timeout);
            let session = guard.key().session.clone();
            self.budgets.lock().unwrap().insert(session.clone(), watchdog.clone());
            let _budget = BudgetEntry { budgets: &self.budgets, session };
            // Bridge calls in flight: the budget waits until each has resumed.
            let mut paused_calls: std::collections::HashMap<String, PauseGuard> = std::collections::HashMap::new();
            let mut interrupted: Option<(CellStatus, Instant)> = None;
            let mut error_summary = None;
            let mut crash_reported = false;
            // Whether the runner has said it began this cell: only then can the
            // kernel's death be the cell's doing.
            let mut acknowledged = false;
            let (status, count, fate) = loop {
                let escalation = async {
                    match interrupted {
                        Some((_, at)) => tokio::time::sleep_until(at + INTERRUPT_ESCALATION).await,
                        None => std::future::pending().await,
                    }
                };
                tokio::select! {
                    biased;
                    item = execution.next() => match item {
                        Some(Ok(ExecEvent::Done(done))) => {
                            let status = match (done.status, done.cancelled, interrupted) {
                                (_, true, Some((reason, _))) => reason,
                                (_, true, None) => CellStatus::Cancelled,
                                (DoneStatus::Ok, _, _) => CellStatus::Ok,
                                (DoneStatus::Error, _, _) => CellStatus::Error,
                            };
                            break (status, Some(done.execution_count), Fate::Alive);
                        }
                        Some(Ok(event)) => {
                            acknowledged |= matches!(event, ExecEvent::Started);
                            if let ExecEvent::Budget(control) = &event {
                                match control {
                                    BudgetControl::Pause { call } => { paused_calls.insert(call.clone(), watchdog.pause()); }
                                    BudgetControl::Resume { call } => { paused_calls.remove(call); }
                                }
                            }
                            if let ExecEvent::Stderr(text) = &event {
                                crash_reported |= text.contains(FAULTHANDLER_HEADLINE);
                            }
                            if let ExecEvent::Error(error) = &event {
                                error_summary = Some(ErrorSummary { ename: error.ename.clone(), evalue: error.evalue.clone() });
                            }
                            if let Some(streamed) = collector.event(cell.index, event) {
                                on_event(streamed);
                            }
                        }
                        Some(Err(KernelError::Died { exit, .. })) if !acknowledged => {
                            break (CellStatus::Error, None, Fate::DiedBeforeStart { exit });
                        }
                        Some(Err(KernelError::Died { exit, stderr_tail, .. })) => {
                            // A crash the cell's own stderr already explains (faulthandler's
                            // stacks) is not quoted twice; the runner's own failures are.
                            let last_words = if crash_reported { String::new() } else { last_lines(&stderr_tail, DIED_QUOTE_LINES) };
                            break (CellStatus::Error, None, Fate::Died { exit, last_words });
                        }
                        Some(Err(_)) | None => break (interrupted.map_or(CellStatus::Error, |(r, _)| r), None, Fate::Died { exit: "it was shut down".into(), last_words: String::new() }),
                    },
                    _ = watchdog.expired(), if interrupted.is_none() => {
                        let _ = kernel.interrupt();
                        interrupted = Some((CellStatus::Timeout, Instant::now()));
                    }
                    _ = cancel.cancelled(), if interrupted.is_none() => {
                        let _ = kernel.interrupt();
                        interrupted = Some((CellStatus::Cancelled, Instant::now()));
                    }
                    _ = escalation => {
                        // It ignored the interrupt: it cannot read an `exit` frame either.
                        kernel.terminate_stuck().await;
                        break (CellStatus::Killed, None, Fate::Killed);
                    }
                }
            };
            let seconds = cell.timeout.as_secs();
            let reason = match interrupted.map(|(reason, _)| reason) {
                Some(CellStatus::Timeout) => format!("eval cell timed out after {seconds}s"),
                _ => "eval cell was cancelled".to_string(),
            };
            match fate {
            Fate::Alive if matches!(status, CellStatus::Timeout | CellStatus::Cancelled) => collector.note(format!(
                "{reason}; kernel interrupted but remains running. Reset the kernel via {{ reset: true }} if state \
                 appears corrupted."
            )),
            Fate::Alive => {}
            Fate::Killed => {
                guard.replace_kernel(None);
                collector.note(format!(
                    "{reason}; the kernel did not respond to the interrupt within {}s, so the kernel has been killed \
                     and will be recreated on the next call.",
                    INTERRUPT_ESCALATION.as_secs()
                ));
            }
            Fate::Died { exit, last_words } => {
                guard.replace_kernel(None);
                kernel.shutdown().await;
                let quoted = if last_words.is_empty() {
                    String::new()
                } else {
                    format!(" Its last diagnostics:\n{last_words}\n")
                };
                collector.note(format!(
                    "The {} kernel died during this cell ({exit}).{quoted} The cell was not retried: it may have \
                     partly run, so check for side effects. The next call starts a fresh kernel; earlier state is lost.",
                    runtime.backend
                ));
                error_summary.get_or_insert(ErrorSummary { ename: "KernelDied".into(), evalue: exit });
            }
            Fate::DiedBeforeStart { exit } => {
                guard.replace_kernel(None);
                kernel.shutdown().await;
                if std::mem::take(&mut fresh_start_left) {
                    guard.add_note(format!(
                        "The previous kernel had died ({exit}); a new one was started and earlier state is lost."
                    ));
                    continue;
                }
                collector.note(format!(
                    "The {} kernel died again before it could begin this cell ({exit}); the cell did not run. \
                     Earlier state is lost; check the kernel's environment with `cellbox doctor`.",
                    runtime.backend
                ));
                error_summary = Some(ErrorSummary { ename: "KernelDied".into(), evalue: exit });
            }
        }
            return (status, count, error_summary.filter(|_| status != CellStatus::Ok));
        }
    }
}

/// Tells a cell's caller what its kernel start waits for: each stage as it
/// begins, then every second with the time waited, and once when it is over.
struct StartReport<'a> {
    cell: usize,
    on_event: EventSink<'a>,
    began: Instant,
    stage: std::sync::Mutex<Option<StartStage>>,
    shown: std::sync::atomic::AtomicBool,
}

/// How often a waiting cell hears that its kernel is still starting.
const START_REPORT_INTERVAL: Duration = Duration::from_secs(1);

impl<'a> StartReport<'a> {
    /// `first`: the stage assumed until the start reports one (`None`: silent until then).
    fn new(cell: usize, on_event: EventSink<'a>, first: Option<StartStage>) -> Self {
        StartReport {
            cell,
            on_event,
            began: Instant::now(),
            stage: std::sync::Mutex::new(first),
            shown: std::sync::atomic::AtomicBool::new(false),
        }
    }

    fn enter(&self, stage: StartStage) {
        *self.stage.lock().unwrap() = Some(stage);
        self.show(stage);
    }

    fn show(&self, stage: StartStage) {
        self.shown.store(true, Ordering::SeqCst);
        (self.on_event)(EvalEvent::KernelStarting {
            cell: self.cell,
            waiting: Some(stage.describe().to_string()),
            elapsed_ms: self.began.elapsed().as_millis() as u64,
        });
    }

    /// Await `work`, repeating the current stage every second meanwhile.
    async fn run<T>(&self, work: impl std::future::Future<Output = T>) -> T {
        tokio::pin!(work);
        let mut ticks =
            tokio::time::interval_at(tokio::time::Instant::now() + START_REPORT_INTERVAL, START_REPORT_INTERVAL);
        loop {
            tokio::select! {
                output = &mut work => return output,
                _ = ticks.tick() => {
                    let stage = *self.stage.lock().unwrap();
                    if let Some(stage) = stage {
                        self.show(stage);
                    }
                }
            }
        }
    }

    /// The wait is over (told only if anything was shown, and only once).
    fn finish(&self) {
        if self.shown.swap(false, Ordering::SeqCst) {
            (self.on_event)(EvalEvent::KernelStarting {
                cell: self.cell,
                waiting: None,
                elapsed_ms: self.began.elapsed().as_millis() as u64,
            });
        }
    }
}

/// Forgets a running cell's watchdog when the cell ends, however it ends.
struct BudgetEntry<'a> {
    budgets: &'a std::sync::Mutex<std::collections::HashMap<String, Arc<Watchdog>>>,
    session: String,
}

impl Drop for BudgetEntry<'_> {
    fn drop(&mut self) {
        self.budgets.lock().unwrap().remove(&self.session);
    }
}

fn report(
    cell: &PlannedCell,
    status: CellStatus,
    duration_ms: u64,
    execution_count: Option<u64>,
    error: Option<ErrorSummary>,
) -> CellReport {
    CellReport {
        index: cell.index,
        title: cell.title.clone(),
        language: cell.language,
        status,
        duration_ms,
        execution_count,
        error,
    }
}
