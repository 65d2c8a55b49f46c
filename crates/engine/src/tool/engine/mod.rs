//! [`EvalEngine`]: the eval tool for agent hosts. One call runs its cells in
//! order in a retained (or fresh) kernel, under per-cell timeouts and the
//! caller's cancellation, streaming events and returning an [`EvalResult`].

mod branch;
mod calls;
mod cells;
mod checkpoints;
mod hibernation;
mod history;
mod jupyter;
mod spares;
mod workspace;

pub use branch::{BranchError, ForkOptions, ForkReport, RestoreReport, SnapshotReport};
pub use calls::EngineLoad;
pub use checkpoints::UndoReport;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::call::{CallContext, EvalError, EventSink, ignore_events};
use super::config::{EngineConfig, KernelMode};
use super::live::{LiveFeed, LiveKind};
use super::params::{CheckMode, EvalParams, Language, PlannedCell};
use super::result::{CellStatus, Collector, EvalEvent, EvalResult};
use super::run::{RunRegistry, RunShared};
use super::watchdog::{PauseGuard, Watchdog};
use crate::discovery::{self, DiscoveryInput, env};
use crate::kernel::{Completeness, KernelOptions};
use crate::output::artifacts::{ArtifactError, ArtifactStore};
use crate::runtime::{self, Interpreter, Runtime};
use crate::sandbox::host_files::HostFiles;
use crate::session::{Backend, KernelKey, KernelPool, SlotGuard, SparePool};

pub use crate::kernel::lifecycle::INTERRUPT_ESCALATION;

/// The eval tool. Cheap to share behind an `Arc`; every method takes `&self`.
pub struct EvalEngine {
    config: EngineConfig,
    pool: Arc<KernelPool>,
    spares: Arc<SparePool>,
    /// The task hibernating a kernel to make room for a spare, while it runs ([`EvalEngine::fill_spare`]).
    spare_task: std::sync::Mutex<Option<tokio::task::JoinHandle<()>>>,
    artifacts: Arc<ArtifactStore>,
    calls: AtomicU64,
    /// The watchdog of the cell each session is running, for [`EvalEngine::pause_budget`].
    budgets: Arc<std::sync::Mutex<std::collections::HashMap<String, Arc<Watchdog>>>>,
    /// The engine-wide cap on bridge calls served at once.
    bridge_permits: Arc<tokio::sync::Semaphore>,
    /// Each session's executed cells, for [`EvalEngine::export_notebook`].
    histories: std::sync::Mutex<crate::notebook::Histories>,
    /// Set once the caller was told that cells without a language run as JavaScript.
    fallback_told: std::sync::atomic::AtomicBool,
    /// Calls running in the background under a `run://` handle.
    pub(super) runs: RunRegistry,
    /// Each session's checkpoints for undo.
    checkpoints: checkpoints::CheckpointStore,
    /// The engine's own work on its workspace's files, confined like its kernels ([`EvalEngine::host_files`]).
    host_files: std::sync::OnceLock<Result<Arc<HostFiles>, String>>,
    /// Connections its kernels' network proxies allowed and refused ([`EvalEngine::network_counts`]).
    network: Arc<crate::tool::config::NetworkCounts>,
    /// What its sessions do, for watchers ([`EvalEngine::live`]).
    live: LiveFeed,
    /// Interpreter discovery's input ([`EvalEngine::discovery_input`]).
    discovery: DiscoveryInputs,
}

/// Interpreter discovery's input, its variables read once: the one without a
/// working folder, and the last one made.
#[derive(Default)]
struct DiscoveryInputs {
    template: std::sync::OnceLock<DiscoveryInput>,
    last: std::sync::Mutex<Option<Arc<DiscoveryInput>>>,
}

impl EvalEngine {
    /// The engine, its hibernation made ([`EvalEngine::new`] and [`EvalEngine::try_new`] decide it).
    fn with_hibernation(config: EngineConfig, hibernation: Option<Arc<crate::session::Hibernation>>) -> Self {
        let artifacts = Arc::new(ArtifactStore::new(config.artifacts_dir.clone(), config.max_artifact_bytes));
        if let (Some(age), Ok(handle)) = (config.artifact_retention, tokio::runtime::Handle::try_current()) {
            let store = ArtifactStore::new(config.artifacts_dir.clone(), config.max_artifact_bytes);
            handle.spawn_blocking(move || store.prune(age));
        }
        let pool = KernelPool::new(config.pool, hibernation);
        let spares = SparePool::new(config.spare, config.backend.clone());
        if let Some(budget) = &config.kernel_budget {
            budget.register(&pool, &spares);
        }
        let network = config.network_counts.clone().unwrap_or_default();
        EvalEngine {
            pool,
            bridge_permits: crate::bridge::Dispatcher::permits_for(&config.bridge),
            spares,
            spare_task: Default::default(),
            artifacts,
            config,
            calls: AtomicU64::new(0),
            budgets: Default::default(),
            histories: Default::default(),
            fallback_told: Default::default(),
            runs: RunRegistry::default(),
            checkpoints: Default::default(),
            host_files: std::sync::OnceLock::new(),
            network,
            live: LiveFeed::default(),
            discovery: Default::default(),
        }
    }

    pub fn config(&self) -> &EngineConfig {
        &self.config
    }

    pub(super) fn pool(&self) -> &KernelPool {
        &self.pool
    }

    /// What this engine's sessions do, as it happens.
    pub fn live(&self) -> &LiveFeed {
        &self.live
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

    /// The options a kernel for `interpreter` in `cwd` starts with (also the key of its spares).
    fn kernel_options(&self, interpreter: &Interpreter, cwd: &Path) -> KernelOptions {
        let env = env::kernel_env(std::env::vars_os(), &interpreter.activation, &self.config.extra_env);
        let mut options = KernelOptions::for_interpreter(interpreter, cwd, env);
        options.startup_timeout = self.config.startup_timeout;
        options.cache_dir = self.config.runner_cache_dir.clone();
        options.sandbox = self.kernel_policy();
        if interpreter.runtime == Runtime::Python && self.config.backend == Backend::Process {
            options.preload = self.config.preload.clone();
        }
        options
    }

    /// `owner` is gone: kernels no other owner holds are shut down. Idempotent.
    pub async fn dispose_owner(&self, owner: &str) {
        self.runs.dispose_owner(owner);
        self.pool.dispose_owner(owner).await;
        self.drop_orphaned_checkpoints();
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
            kernel: None,
            timeout: Duration::from_secs(1),
            reset: false,
            env: None,
            json_results: false,
        };
        let interpreters = self.choose_interpreters(std::slice::from_mut(&mut cell), &cwd, &|_| {}).await?;
        let interpreter = interpreters.into_iter().next().expect("one cell needs one interpreter");
        let key = self.key(&context.session, &cwd, &interpreter);
        let slot = self.pool.slot(key, &context.owner);
        let mut guard = slot.lock().await.map_err(|e| EvalError::Kernel(e.to_string()))?;
        let kernel = self
            .kernel_for(&interpreter, &cwd, &mut guard, 0, &ignore_events)
            .await
            .map_err(|e| EvalError::Kernel(e.to_string()))?;
        kernel.check_complete(code).await.map_err(|e| EvalError::Kernel(e.to_string()))
    }

    /// The language cells without one get here (see [`Exposure::default_language`]);
    /// JavaScript too when Python was found unavailable and JavaScript is on.
    pub fn default_language(&self) -> Language {
        self.config.exposure.default_language()
    }

    /// Why Python cells cannot run in the default cwd, when they cannot: the
    /// discovery error, naming what was tried. None when an interpreter is found.
    pub async fn python_unavailable(&self) -> Option<String> {
        let cwd = match self.resolve_cwd(None) {
            Ok(cwd) => cwd,
            Err(error) => return Some(error.to_string()),
        };
        self.resolve_python(&cwd).await.err().map(|error| error.to_string())
    }

    /// The languages a call can use now: enabled, and with an interpreter found for
    /// the default cwd (blocking: runs the discovery probes, cached after the first).
    pub fn available_languages(&self) -> Vec<Language> {
        let exposure = self.config.exposure;
        let cwd = &self.config.default_cwd;
        let mut languages = Vec::new();
        if exposure.py && discovery::resolve(&self.discovery_input(cwd), discovery::skip_check_from_env()).is_ok() {
            languages.push(Language::Py);
        }
        let policy = self.kernel_policy();
        if exposure.js && runtime::node::resolve_from_env(self.config.node.as_deref(), cwd, &policy).is_ok() {
            languages.extend([Language::Js, Language::Ts]);
        }
        if exposure.allows(Language::Bash) && runtime::bash::resolve_from_env(cwd, &policy).is_ok() {
            languages.push(Language::Bash);
        }
        let search = crate::jupyter::SearchPath::from_env(None);
        for language in [Language::R, Language::Java] {
            let Some((wanted, preferred)) = language.kernelspec_language() else { continue };
            if exposure.allows(language) && search.for_language(wanted, preferred).is_ok() {
                languages.push(language);
            }
        }
        languages
    }

    fn key(&self, session: &str, cwd: &Path, interpreter: &Interpreter) -> KernelKey {
        KernelKey {
            session: session.to_string(),
            cwd: cwd.to_path_buf(),
            runtime: interpreter.runtime,
            interpreter: interpreter.executable.clone(),
        }
    }

    /// Settle each cell's language (defaults, exposure, the JavaScript
    /// fallback when Python is missing) and find an interpreter for each runtime
    /// used, in [`Runtime::ALL`] order.
    async fn choose_interpreters(
        &self,
        plan: &mut [PlannedCell],
        cwd: &Path,
        note: &(dyn Fn(String) + Send + Sync),
    ) -> Result<Vec<Interpreter>, EvalError> {
        let exposure = self.config.exposure;
        for cell in plan.iter_mut().filter(|cell| !cell.language_given) {
            cell.language = exposure.default_language();
        }
        self.check_exposure(plan)?;
        let mut interpreters = Vec::new();
        let mut python = None;
        if plan.iter().any(|cell| cell.language.runtime() == Runtime::Python) {
            match self.resolve_python(cwd).await {
                Ok(found) => python = Some(found),
                Err(error) => {
                    let explicit = plan.iter().any(|c| c.language_given && c.language.runtime() == Runtime::Python);
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
        for runtime in Runtime::ALL {
            if !plan.iter().any(|cell| cell.language.runtime() == runtime) {
                continue;
            }
            let interpreter = match runtime {
                Runtime::Python => python.clone().expect("resolved above"),
                Runtime::Node => self.resolve_node(cwd).await?,
                Runtime::Bash => self.resolve_bash(cwd).await?,
                Runtime::Jupyter => unreachable!("Runtime::ALL has runner runtimes only"),
            };
            interpreters.push(interpreter);
        }
        interpreters.extend(self.resolve_jupyter(plan, cwd).await?);
        Ok(interpreters)
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
    fn bridge_hook(&self, session: &str) -> crate::kernel::bridge_relay::BridgeHook {
        let dispatcher = crate::bridge::Dispatcher::new(self.config.bridge.clone(), self.bridge_permits.clone())
            .with_handles(self.artifacts.clone(), session)
            .for_session(session);
        crate::kernel::bridge_relay::BridgeHook(Arc::new(dispatcher))
    }

    /// Restart `session`'s kernels: all state is cleared, the next call starts
    /// a fresh kernel. Returns how many kernels were stopped.
    pub async fn reset_session(&self, session: &str) -> usize {
        self.drop_checkpoints(Some(session));
        let stopped = self.pool.reset_session(session).await;
        self.live.publish(session, LiveKind::Reset);
        stopped
    }

    /// Shut every kernel down (host exit, SIGINT/SIGTERM).
    pub async fn dispose_all(&self) {
        self.live.close();
        self.drop_checkpoints(None);
        let making_room = self.spare_task.lock().unwrap().take();
        if let Some(task) = making_room {
            let _ = task.await; // its kernel is saved (or left) before the pool stops them all
        }
        self.spares.dispose_all().await;
        self.pool.dispose_all().await;
        // Calls' small outputs are written after them: on disk before the host may exit,
        // and those of calls that end from now on are written by those calls.
        self.artifacts.stop_deferring();
        // Fork servers end once no kernel forked from them is left. They are the process's: an
        // engine that preloads nothing never made one, and leaves those of others alone.
        if !self.config.preload.is_empty() {
            crate::kernel::zygote::release_all();
        }
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
        // On the heap: a call's future is tens of KiB, and a caller's (a test's
        // whole body, a server's handler) would otherwise carry it on its stack.
        Box::pin(self.eval_observed(params, context, cancel, on_event, None)).await
    }

    /// [`EvalEngine::eval`], telling `run` (when the call is one) what it writes,
    /// and the session's watchers ([`EvalEngine::live`]) what it does.
    pub(super) async fn eval_observed(
        &self,
        params: &EvalParams,
        context: &CallContext,
        cancel: &CancellationToken,
        on_event: EventSink<'_>,
        run: Option<&Arc<RunShared>>,
    ) -> Result<EvalResult, EvalError> {
        let session = context.session.as_str();
        let mut in_flight = self.live.begin(session);
        let call = in_flight.call;
        let watched_sink = |event: EvalEvent| {
            self.live.publish_event(session, call, &event);
            on_event(event);
        };
        let result = self.eval_planned(params, context, cancel, &watched_sink, run, call).await;
        if let Ok(result) = &result {
            in_flight.status = result.cells.last().map(|cell| cell.status);
            in_flight.artifact = result.artifact.clone();
        }
        result
    }

    async fn eval_planned(
        &self,
        params: &EvalParams,
        context: &CallContext,
        cancel: &CancellationToken,
        on_event: EventSink<'_>,
        run: Option<&Arc<RunShared>>,
        call: u64,
    ) -> Result<EvalResult, EvalError> {
        let mut plan = params.plan()?;
        self.live.publish_call(&context.session, call, &plan);
        let cwd = self.resolve_cwd(params.cwd.as_deref())?;
        let notes = std::sync::Mutex::new(Vec::new());
        let interpreters = self.choose_interpreters(&mut plan, &cwd, &|note| notes.lock().unwrap().push(note)).await?;
        let mut collector =
            Collector::new(self.config.text_limits, self.artifacts.create(&context.session), plan.len() > 1);
        if let Some(run) = run {
            run.set_artifact(collector.artifact_uri());
            let run = run.clone();
            collector.mirror_text(Arc::new(move |text: &str| run.text(text)));
        }
        let recorded = plan.iter().map(|cell| {
            let language = (cell.language != Language::Py).then(|| crate::notebook::CellLanguage {
                language: cell.language.as_str().into(),
                ..Default::default()
            });
            (cell.code.clone(), language)
        });
        collector.record_cells(recorded.collect(), self.config.history);
        for note in notes.into_inner().unwrap() {
            on_event(EvalEvent::Note { text: note.clone() });
            collector.note(note);
        }

        // A key of its own in per-call mode, so the kernels are fresh yet still
        // in the pool, where dispose_all (host exit) finds them.
        let session = match self.config.mode {
            KernelMode::Session => context.session.clone(),
            KernelMode::PerCall => {
                let number = self.calls.fetch_add(1, Ordering::Relaxed);
                format!("{}{}{number}", context.session, crate::session::PER_CALL_MARK)
            }
        };
        let keys: Vec<KernelKey> =
            interpreters.iter().map(|interpreter| self.key(&session, &cwd, interpreter)).collect();
        let slots: Vec<_> = keys.iter().map(|key| self.pool.slot(key.clone(), &context.owner)).collect();
        let queue_budget = plan[0].timeout;
        let behind = self.runs.active_in(&context.session, run.map(|run| run.id.as_str()));
        if let (Some(run), Some(other)) = (run, &behind) {
            run.set_queued(Some(other.clone()));
        }
        let queued_at = Instant::now();
        // Slots are taken in runtime order, so calls never wait on each other in a cycle.
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
        let _calling: Vec<_> = slots.iter().map(|slot| slot.calling()).collect();
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
        for note in self.checkpoint_before(&mut guards, params.checkpoint).await {
            collector.note(note);
        }
        let mut kernels: Vec<(Interpreter, SlotGuard<'_>)> = interpreters.into_iter().zip(guards).collect();
        // Off (the default): no exchange with the kernel before the cells.
        let check = params.check.unwrap_or(self.config.check);
        if check == CheckMode::Off
            || Box::pin(self.precheck(&mut plan, &cwd, &mut kernels, check, &mut collector, on_event)).await
        {
            Box::pin(self.run_cells(&plan, &cwd, &mut kernels, &mut collector, cancel, on_event)).await;
        }
        self.explain_denials(&mut collector, &cwd);
        self.report_network(&kernels, &mut collector);
        // Kept before the session's slot is let go, so the next call's cells come after these,
        // and once its full output is handed to be saved, so the page that reads the history can
        // read that output too (a big one's writer is waited for here).
        let recorded = collector.take_recorded();
        let result = collector.finish();
        self.remember(&context.session, recorded, call, result.artifact.as_deref());
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
        Ok(result)
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
                ("Python cells are disabled here (CELLBOX_PY=off or the `py` setting). Set CELLBOX_PY=on for both \
                  languages, or CELLBOX_PY=only for Python only; or use a JavaScript cell (language \"js\").")
                    .into(),
            ));
        }
        if !exposure.js && plan.iter().any(|c| c.language.runtime() == Runtime::Node) {
            return Err(EvalError::LanguageDisabled(
                "JavaScript cells are disabled here (CELLBOX_JS=off or the `js` setting). Set CELLBOX_JS=on to enable \
                 them, or use a Python cell (language \"py\")."
                    .into(),
            ));
        }
        Ok(())
    }

    /// What discovery looks at for a kernel in `cwd`: its probes run under the kernels' sandbox.
    ///
    /// The variables are read from this process once, the first time the
    /// engine looks for Python (settings are resolved once; reading them and
    /// building the policy cost more than a warm call's whole exchange with
    /// its kernel, and a session's interpreter does not change under it when
    /// a program using the engine in-process changes its own environment);
    /// the files are looked at again by every call, so a `.venv` made since is used.
    fn discovery_input(&self, cwd: &Path) -> Arc<DiscoveryInput> {
        if let Some(input) = self.discovery.last.lock().unwrap().as_ref().filter(|input| input.cwd == cwd) {
            return input.clone();
        }
        let template = self.discovery.template.get_or_init(|| {
            let mut input = DiscoveryInput::from_env(PathBuf::new(), self.config.python.clone());
            input.sandbox = self.kernel_policy();
            // Version managers' files found from the working folder up are read with the kernels' rights.
            input.confinement = self.host_files().ok().map(|files| files.confinement().clone());
            input
        });
        let input = Arc::new(DiscoveryInput { cwd: cwd.to_path_buf(), ..template.clone() });
        *self.discovery.last.lock().unwrap() = Some(input.clone());
        input
    }

    /// Found again before every call (a `.venv` made since is used), on this
    /// thread while that is only reading what was probed before: a hop to the
    /// blocking pool and back cost more than the finding.
    async fn resolve_python(&self, cwd: &Path) -> Result<Interpreter, EvalError> {
        let input = self.discovery_input(cwd);
        let skip = discovery::skip_check_from_env();
        let found = match discovery::resolve_known(&input, skip) {
            Some(found) => found,
            None => tokio::task::spawn_blocking(move || discovery::resolve(&input, skip))
                .await
                .map_err(|e| EvalError::PythonUnavailable(e.to_string()))?,
        };
        found.map(Interpreter::from).map_err(|e| EvalError::PythonUnavailable(e.to_string()))
    }

    async fn resolve_node(&self, cwd: &Path) -> Result<Interpreter, EvalError> {
        let explicit = self.config.node.clone();
        let cwd = cwd.to_path_buf();
        let policy = self.kernel_policy();
        tokio::task::spawn_blocking(move || runtime::node::resolve_from_env(explicit.as_deref(), &cwd, &policy))
            .await
            .map_err(|e| EvalError::NodeUnavailable(e.to_string()))?
            .map_err(|e| EvalError::NodeUnavailable(e.to_string()))
    }

    async fn resolve_bash(&self, cwd: &Path) -> Result<Interpreter, EvalError> {
        let (cwd, policy) = (cwd.to_path_buf(), self.kernel_policy());
        let found = tokio::task::spawn_blocking(move || runtime::bash::resolve_from_env(&cwd, &policy)).await;
        found.map_err(|e| EvalError::Kernel(e.to_string()))?.map_err(|e| EvalError::Kernel(e.to_string()))
    }
}
