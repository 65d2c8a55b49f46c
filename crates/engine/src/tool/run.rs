//! Runs: eval calls that outlive the call that started them.
//!
//! An agent's client gives up on a tool call after its own timeout, and an
//! agent blocked on a long cell can do nothing else. A run is one eval call
//! executing in the background under a `run://<id>` handle: the caller waits
//! for it as long as it likes (the wait blocks on the server, never in a
//! polling loop), reads the output written since its last read, and can
//! cancel it. The cells keep their own timeouts and the interrupt → kill
//! ladder; a run only changes who waits for them.
//!
//! Runs are kept, bounded, until their final result has been read or their
//! owner goes away. Each read's text obeys the output limits; the call's
//! artifact holds everything.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use serde::Serialize;
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::call::EvalError;
use super::params::PlannedCell;
use super::result::{CellStatus, EvalEvent, EvalResult};
use crate::output::limiter::{TextLimiter, TextLimits};

/// How run handles are written.
pub const RUN_SCHEME: &str = "run://";
/// Runs kept at most per engine; the oldest finished ones are forgotten first.
pub const MAX_RUNS: usize = 64;

/// Why a run cannot be read.
#[derive(Debug, Clone, thiserror::Error)]
pub enum RunError {
    #[error(
        "there is no run {0}: it finished and its result was already returned, or its session ended. \
         eval_sessions shows each session's current run"
    )]
    Unknown(String),
    /// The run ended without running (no interpreter, a bad cwd, ...).
    #[error(transparent)]
    Eval(#[from] EvalError),
}

/// What a wait waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitFor {
    /// The whole run.
    Run,
    /// The next cell to finish (or the run).
    AnyCell,
}

/// One cell's state, as a read reports it.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct RunCell {
    pub index: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// `pending`, `running`, or how it ended (`ok`, `error`, `timeout`, …).
    pub state: String,
    /// For a running cell, how long it has run; for a finished one, its duration.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub elapsed_ms: Option<u64>,
}

/// One read of a run: the output since the previous read and where the run stands.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunReport {
    /// `run://<id>`.
    pub run: String,
    pub session: String,
    /// True while cells still run (or wait to).
    pub running: bool,
    /// The output written since the previous read, bounded by the output limits
    /// (with the run's notes and final state when it is over).
    pub text: String,
    /// True when `text` leaves part of that output out (the artifact has it).
    pub truncated: bool,
    pub cells: Vec<RunCell>,
    /// The run this one waits behind, while the session is busy.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queued_behind: Option<String>,
    pub elapsed_ms: u64,
    /// `artifact://<id>` holding all the run's output, once there is any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub artifact: Option<String>,
    /// When the run is over: its whole result, with `text` as in this report.
    #[serde(skip)]
    pub result: Option<EvalResult>,
}

impl RunReport {
    /// A line for the model saying where a run stands and what to call next.
    pub fn status_line(&self) -> String {
        let seconds = self.elapsed_ms as f64 / 1000.0;
        let cells: Vec<String> = self
            .cells
            .iter()
            .map(|cell| {
                let name = match &cell.title {
                    Some(title) => format!("cell {} ({title})", cell.index + 1),
                    None => format!("cell {}", cell.index + 1),
                };
                match (cell.state.as_str(), cell.elapsed_ms) {
                    ("running", Some(ms)) => format!("{name} running for {:.1} s", ms as f64 / 1000.0),
                    (state, _) => format!("{name} {state}"),
                }
            })
            .collect();
        let queued = match &self.queued_behind {
            Some(other) => format!(" Queued behind {other} (the session is busy)."),
            None => String::new(),
        };
        format!(
            "[{} still running after {seconds:.1} s: {}.{queued} Call eval_wait with {{\"run\": \"{}\"}} for \
             more output, or eval_cancel to stop it.]\n",
            self.run,
            cells.join(", "),
            self.run
        )
    }
}

/// What one run's cell is doing.
#[derive(Debug, Clone)]
struct CellState {
    title: Option<String>,
    started: Option<Instant>,
    ended: Option<(CellStatus, u64)>,
}

#[derive(Debug)]
struct RunState {
    /// The output since the last read.
    unread: TextLimiter,
    artifact: Option<String>,
    wrote_artifact: bool,
    cells: Vec<CellState>,
    queued_behind: Option<String>,
    outcome: Option<Result<EvalResult, EvalError>>,
    reads: u32,
}

/// A run, shared by the task executing it and its readers.
pub(crate) struct RunShared {
    pub(crate) id: String,
    pub(crate) session: String,
    pub(crate) owner: String,
    pub(crate) started_at: SystemTime,
    started: Instant,
    pub(crate) cancel: CancellationToken,
    limits: TextLimits,
    state: Mutex<RunState>,
    /// Bumped whenever a cell or the run ends.
    milestones: watch::Sender<u64>,
    /// The newest event, for progress reports.
    latest: watch::Sender<Option<EvalEvent>>,
}

impl std::fmt::Debug for RunShared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunShared").field("id", &self.id).field("session", &self.session).finish()
    }
}

impl RunShared {
    pub(crate) fn new(id: String, session: String, owner: String, plan: &[PlannedCell], limits: TextLimits) -> Self {
        let cells =
            plan.iter().map(|cell| CellState { title: cell.title.clone(), started: None, ended: None }).collect();
        RunShared {
            id,
            session,
            owner,
            started_at: SystemTime::now(),
            started: Instant::now(),
            cancel: CancellationToken::new(),
            limits,
            state: Mutex::new(RunState {
                unread: TextLimiter::new(limits),
                artifact: None,
                wrote_artifact: false,
                cells,
                queued_behind: None,
                outcome: None,
                reads: 0,
            }),
            milestones: watch::channel(0).0,
            latest: watch::channel(None).0,
        }
    }

    pub(crate) fn uri(&self) -> String {
        format!("{RUN_SCHEME}{}", self.id)
    }

    pub(crate) fn is_finished(&self) -> bool {
        self.state.lock().unwrap().outcome.is_some()
    }

    /// The call's artifact, known once its collector exists.
    pub(crate) fn set_artifact(&self, uri: String) {
        self.state.lock().unwrap().artifact = Some(uri);
    }

    /// Text the call wrote for the model.
    pub(crate) fn text(&self, text: &str) {
        let mut state = self.state.lock().unwrap();
        state.unread.push(text);
        state.wrote_artifact = true;
    }

    pub(crate) fn set_queued(&self, behind: Option<String>) {
        self.state.lock().unwrap().queued_behind = behind;
    }

    /// An event of the call: cells starting and ending move the run's state.
    pub(crate) fn event(&self, event: EvalEvent) {
        match &event {
            EvalEvent::CellStarted { index, .. } => {
                let mut state = self.state.lock().unwrap();
                state.queued_behind = None;
                if let Some(cell) = state.cells.get_mut(*index) {
                    cell.started = Some(Instant::now());
                }
            }
            EvalEvent::CellFinished { index, status, duration_ms } => {
                if let Some(cell) = self.state.lock().unwrap().cells.get_mut(*index) {
                    cell.ended = Some((*status, *duration_ms));
                }
                self.milestones.send_modify(|count| *count += 1);
            }
            _ => {}
        }
        self.latest.send_replace(Some(event));
    }

    /// The call is over.
    pub(crate) fn finish(&self, outcome: Result<EvalResult, EvalError>) {
        let mut state = self.state.lock().unwrap();
        if let Ok(result) = &outcome {
            for report in &result.cells {
                if let Some(cell) = state.cells.get_mut(report.index) {
                    cell.ended = Some((report.status, report.duration_ms));
                }
            }
        }
        state.queued_behind = None;
        state.outcome = Some(outcome);
        drop(state);
        self.milestones.send_modify(|count| *count += 1);
    }

    /// Follow the run's newest event (for progress messages).
    pub(crate) fn subscribe(&self) -> watch::Receiver<Option<EvalEvent>> {
        self.latest.subscribe()
    }

    /// Block until the run ends (or, with [`WaitFor::AnyCell`], a cell
    /// ends), or `timeout` passes; never polls.
    pub(crate) async fn wait(&self, timeout: Duration, until: WaitFor) {
        let mut milestones = self.milestones.subscribe();
        milestones.borrow_and_update();
        let deadline = Instant::now() + timeout;
        while !self.is_finished() {
            match tokio::time::timeout_at(deadline, milestones.changed()).await {
                Ok(Ok(())) if until == WaitFor::AnyCell => return,
                Ok(Ok(())) => {}
                Ok(Err(_)) | Err(_) => return,
            }
        }
    }

    /// Take the output since the last read, with the run's state. The second
    /// value is true when this read returned the run's final result.
    pub(crate) fn read(&self) -> Result<(RunReport, bool), RunError> {
        let mut state = self.state.lock().unwrap();
        state.reads += 1;
        let first_read = state.reads == 1;
        let unread = std::mem::replace(&mut state.unread, TextLimiter::new(self.limits)).finish();
        let artifact = state.artifact.clone().filter(|_| state.wrote_artifact);
        let truncated = unread.is_truncated();
        let mut text = unread.render(artifact.as_deref());
        let now = Instant::now();
        let cells: Vec<RunCell> = state
            .cells
            .iter()
            .enumerate()
            .map(|(index, cell)| match (cell.ended, cell.started) {
                (Some((status, duration)), _) => RunCell {
                    index,
                    title: cell.title.clone(),
                    state: status.as_str().to_string(),
                    elapsed_ms: Some(duration),
                },
                (None, Some(started)) => RunCell {
                    index,
                    title: cell.title.clone(),
                    state: "running".into(),
                    elapsed_ms: Some(now.duration_since(started).as_millis() as u64),
                },
                (None, None) => RunCell { index, title: cell.title.clone(), state: "pending".into(), elapsed_ms: None },
            })
            .collect();
        let mut report = RunReport {
            run: self.uri(),
            session: self.session.clone(),
            running: state.outcome.is_none(),
            text: String::new(),
            truncated,
            cells,
            queued_behind: state.queued_behind.clone(),
            elapsed_ms: now.duration_since(self.started).as_millis() as u64,
            artifact: artifact.clone(),
            result: None,
        };
        match &state.outcome {
            None => {
                text.push_str(&report.status_line());
                report.text = text;
                Ok((report, false))
            }
            Some(Err(error)) => Err(RunError::Eval(error.clone())),
            Some(Ok(result)) => {
                let mut result = result.clone();
                for note in &result.notes {
                    if !text.is_empty() && !text.ends_with('\n') {
                        text.push('\n');
                    }
                    text.push_str(note);
                    text.push('\n');
                }
                if text.is_empty() {
                    text =
                        if first_read { result.text.clone() } else { "(no new output since the last read)\n".into() };
                }
                result.text = text.clone();
                result.truncated = truncated;
                report.text = text;
                report.result = Some(result);
                Ok((report, true))
            }
        }
    }
}

/// The runs of one engine.
#[derive(Debug, Default)]
pub(crate) struct RunRegistry {
    runs: Mutex<HashMap<String, Arc<RunShared>>>,
    next: AtomicU64,
}

impl RunRegistry {
    /// A fresh id: short, unique within this engine, and not reused.
    pub(crate) fn next_id(&self) -> String {
        let number = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        format!("r{number}-{:04x}", std::process::id() & 0xffff)
    }

    /// Keep `run`; when too many are kept, forget the oldest finished ones.
    pub(crate) fn insert(&self, run: Arc<RunShared>) {
        let mut runs = self.runs.lock().unwrap();
        runs.insert(run.id.clone(), run);
        if runs.len() > MAX_RUNS {
            let mut finished: Vec<(Instant, String)> =
                runs.values().filter(|run| run.is_finished()).map(|run| (run.started, run.id.clone())).collect();
            finished.sort();
            let excess = runs.len() - MAX_RUNS;
            for (_, id) in finished.into_iter().take(excess) {
                runs.remove(&id);
            }
        }
    }

    /// The run named by `id`, `run://id`.
    pub(crate) fn get(&self, id: &str) -> Result<Arc<RunShared>, RunError> {
        let bare = id.trim().strip_prefix(RUN_SCHEME).unwrap_or(id.trim());
        self.runs.lock().unwrap().get(bare).cloned().ok_or_else(|| RunError::Unknown(id.to_string()))
    }

    pub(crate) fn remove(&self, id: &str) {
        self.runs.lock().unwrap().remove(id);
    }

    /// The oldest unfinished run of `session` other than `except`, as `run://<id>`.
    pub(crate) fn active_in(&self, session: &str, except: Option<&str>) -> Option<String> {
        let runs = self.runs.lock().unwrap();
        runs.values()
            .filter(|run| run.session == session && Some(run.id.as_str()) != except && !run.is_finished())
            .min_by_key(|run| run.started)
            .map(|run| run.uri())
    }

    /// How many runs are unfinished.
    pub(crate) fn unfinished(&self) -> usize {
        self.runs.lock().unwrap().values().filter(|run| !run.is_finished()).count()
    }

    /// The unfinished runs of `session`, oldest first.
    pub(crate) fn of_session(&self, session: &str) -> Vec<Arc<RunShared>> {
        let runs = self.runs.lock().unwrap();
        let mut found: Vec<Arc<RunShared>> = runs.values().filter(|run| run.session == session).cloned().collect();
        found.sort_by_key(|run| run.started);
        found
    }

    /// `owner` is gone: cancel its runs and forget them.
    pub(crate) fn dispose_owner(&self, owner: &str) {
        let mut runs = self.runs.lock().unwrap();
        runs.retain(|_, run| {
            if run.owner == owner {
                run.cancel.cancel();
                false
            } else {
                true
            }
        });
    }
}

/// What a call with a `wait` gives back.
#[derive(Debug, Clone)]
pub enum CallOutcome {
    /// The call ended within its wait (or had none): its result, as [`EvalEngine::eval`] gives it.
    Finished(EvalResult),
    /// The wait elapsed with cells still running: the output so far and a handle.
    Running(RunReport),
}

/// A run as [`EvalEngine::runs_of`] lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunSummary {
    /// `run://<id>`.
    pub run: String,
    pub running: bool,
    pub started_at: SystemTime,
}

/// One kernel a session holds, as [`EvalEngine::session_kernels`] lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct SessionKernel {
    /// `python` or `node`.
    pub runtime: String,
    pub cwd: std::path::PathBuf,
    pub interpreter: std::path::PathBuf,
    /// The kernel's pid, while it runs (a stopped kernel restarts on the next call).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// Its resident memory in bytes, where the system tells.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resident_bytes: Option<u64>,
}
