//! The engine's calls that may outlive their wait: [`EvalEngine::call`], runs started in the
//! background and what is asked of them (wait, output, cancel), and the kernels a session holds.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::EvalEngine;
use crate::session::{Evictions, KernelStates};
use crate::tool::call::{CallContext, EvalError, EventSink};
use crate::tool::params::EvalParams;
use crate::tool::result::EvalEvent;
use crate::tool::run::{CallOutcome, RunError, RunReport, RunShared, RunSummary, SessionKernel, WaitFor};

/// An engine's kernels, runs and evictions at one moment ([`EvalEngine::load`]).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct EngineLoad {
    pub kernels: KernelStates,
    /// Warm spares ready.
    pub spares: usize,
    /// Runs not finished (calls with a `wait`, which may outlive it).
    pub runs: usize,
    pub evictions: Evictions,
}

impl EngineLoad {
    /// Add `other`'s figures to these (a server sums its engines').
    pub fn add(&mut self, other: &EngineLoad) {
        self.kernels.busy += other.kernels.busy;
        self.kernels.idle += other.kernels.idle;
        self.kernels.queued_calls += other.kernels.queued_calls;
        self.spares += other.spares;
        self.runs += other.runs;
        self.evictions.limit += other.evictions.limit;
        self.evictions.idle += other.evictions.idle;
        self.evictions.memory += other.evictions.memory;
    }
}

impl EvalEngine {
    /// Run one call as its `wait` says: without one, exactly
    /// [`EvalEngine::eval`]; with one, [`EvalEngine::start`] and then wait up
    /// to that long, returning the result or, when cells still run, a report
    /// with the run's handle. A cancelled `cancel` ends the wait only.
    pub async fn call(
        self: &Arc<Self>,
        params: &EvalParams,
        context: &CallContext,
        cancel: &CancellationToken,
        on_event: EventSink<'_>,
    ) -> Result<CallOutcome, EvalError> {
        let Some(wait) = params.wait_duration()? else {
            return self.eval(params, context, cancel, on_event).await.map(CallOutcome::Finished);
        };
        let id = self.start(params, context)?;
        let run = self.runs.get(&id).map_err(|e| EvalError::Kernel(e.to_string()))?;
        let mut events = run.subscribe();
        let forward = async {
            while events.changed().await.is_ok() {
                let event = events.borrow_and_update().clone();
                if let Some(event) = event {
                    on_event(event);
                }
            }
        };
        tokio::select! {
            _ = run.wait(wait, WaitFor::Run) => {}
            _ = forward => {}
            _ = cancel.cancelled() => {}
        }
        match self.read_run(&id) {
            Ok(report) => Ok(match report.result {
                Some(result) => CallOutcome::Finished(result),
                None => CallOutcome::Running(report),
            }),
            Err(RunError::Eval(error)) => Err(error),
            Err(other) => Err(EvalError::Kernel(other.to_string())),
        }
    }

    /// Start a call in the background and return its id (`run://<id>` names
    /// it too). Parameters and the cwd are checked first; anything that goes
    /// wrong later is reported by [`EvalEngine::wait`]. A session busy with
    /// another call queues this one behind it, as [`EvalEngine::eval`] does.
    pub fn start(self: &Arc<Self>, params: &EvalParams, context: &CallContext) -> Result<String, EvalError> {
        let plan = params.plan()?;
        self.resolve_cwd(params.cwd.as_deref())?;
        let run = Arc::new(RunShared::new(
            self.runs.next_id(),
            context.session.clone(),
            context.owner.clone(),
            &plan,
            self.config().text_limits,
        ));
        // Known at once, so even the first read of a run still starting says it waits.
        run.set_queued(self.runs.active_in(&context.session, None));
        self.runs.insert(run.clone());
        let id = run.id.clone();
        let engine = self.clone();
        let params = params.clone();
        let context = context.clone();
        tokio::spawn(async move {
            let observer = run.clone();
            let on_event = move |event: EvalEvent| observer.event(event);
            let cancel = run.cancel.clone();
            let outcome = engine.eval_observed(&params, &context, &cancel, &on_event, Some(&run)).await;
            run.finish(outcome);
        });
        Ok(id)
    }

    /// Wait (on the server, never polling) until the run ends, or with
    /// [`WaitFor::AnyCell`] until one of its cells ends, or `timeout` passes;
    /// then read it as [`EvalEngine::output_since`] does.
    pub async fn wait(&self, run: &str, timeout: Duration, until: WaitFor) -> Result<RunReport, RunError> {
        let shared = self.runs.get(run)?;
        shared.wait(timeout, until).await;
        self.read_run(run)
    }

    /// The output written since the previous read and the run's state, at
    /// once. The read that returns the final result also forgets the run.
    pub fn output_since(&self, run: &str) -> Result<RunReport, RunError> {
        self.read_run(run)
    }

    fn read_run(&self, run: &str) -> Result<RunReport, RunError> {
        let shared = self.runs.get(run)?;
        let read = shared.read();
        if !matches!(read, Ok((_, false))) {
            self.runs.remove(&shared.id);
        }
        read.map(|(report, _)| report)
    }

    /// Interrupt the run's running cell (the interrupt → kill ladder applies)
    /// and skip the rest; the kernel keeps its state. Returns at once: wait
    /// for the run to read how it ended.
    pub fn cancel(&self, run: &str) -> Result<(), RunError> {
        self.runs.get(run)?.cancel.cancel();
        Ok(())
    }

    /// What the engine holds and does now, for a server's metrics.
    pub fn load(&self) -> EngineLoad {
        EngineLoad {
            kernels: self.pool.kernel_states(),
            spares: self.spares.pids().len(),
            runs: self.runs.unfinished(),
            evictions: self.pool.evictions(),
        }
    }

    /// The `run://` handle of `session`'s oldest unfinished run.
    pub fn current_run(&self, session: &str) -> Option<String> {
        self.runs.active_in(session, None)
    }

    /// `session`'s runs not yet read to the end (running or finished), oldest first.
    pub fn runs_of(&self, session: &str) -> Vec<RunSummary> {
        self.runs
            .of_session(session)
            .into_iter()
            .map(|run| RunSummary { run: run.uri(), running: !run.is_finished(), started_at: run.started_at })
            .collect()
    }

    /// Follow a run's newest event (for progress reports); `None` once it is forgotten.
    pub fn watch_run(&self, run: &str) -> Option<watch::Receiver<Option<EvalEvent>>> {
        self.runs.get(run).ok().map(|run| run.subscribe())
    }
}

impl EvalEngine {
    /// Every session this engine knows: with a kernel (live or put away), a
    /// history of cells, or a call running; sorted.
    pub fn session_names(&self) -> Vec<String> {
        let mut names = self.pool().sessions();
        names.extend(self.histories.lock().unwrap().names().cloned());
        names.extend(self.live.running());
        names.sort();
        names.dedup();
        names
    }

    /// Interrupt the cell `session` runs, as Ctrl-C would: the cell ends
    /// (its call says it was interrupted) and the kernel keeps its variables.
    /// How many kernels were told; 0 when no call of the session holds one.
    pub fn interrupt_session(&self, session: &str) -> usize {
        self.pool().interrupt_session(session)
    }

    /// Resident memory of every live kernel of this engine, in bytes (Linux; 0 elsewhere).
    pub fn memory_used(&self) -> u64 {
        self.pool().kernel_pids().into_iter().filter_map(crate::session::resident_bytes).sum()
    }

    /// The kernels `session` holds, live or stopped, for listing sessions.
    pub fn session_kernels(&self, session: &str) -> Vec<SessionKernel> {
        let mut kernels: Vec<SessionKernel> = self
            .pool()
            .kernels_of(session)
            .into_iter()
            .map(|(key, pid)| SessionKernel {
                runtime: match key.runtime {
                    crate::runtime::Runtime::Python => "python".into(),
                    crate::runtime::Runtime::Node => "node".into(),
                    crate::runtime::Runtime::Bash => "bash".into(),
                    crate::runtime::Runtime::Jupyter => format!(
                        "jupyter:{}",
                        key.interpreter.file_name().map(|name| name.to_string_lossy()).unwrap_or_default()
                    ),
                },
                cwd: key.cwd,
                interpreter: key.interpreter,
                resident_bytes: pid.and_then(crate::session::resident_bytes),
                pid,
            })
            .collect();
        kernels.sort_by(|a, b| (&a.runtime, &a.cwd).cmp(&(&b.runtime, &b.cwd)));
        kernels
    }
}
