//! Branching a session: [`EvalEngine::fork_session`] copies a session's
//! Python kernel, with all its state, into a new session, in milliseconds
//! (the kernel layer's copy-on-write fork, [`crate::kernel::Kernel::fork`]).
//! Both sessions then live on independently; the copy inherits the cell
//! history too, so its notebook export starts where the source's was.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::EvalEngine;
use crate::kernel::KernelError;
use crate::runtime::Runtime;
use crate::session::hibernate::{report_reasons, report_strings};
use crate::tool::call::{CallContext, is_session_name};

/// How a fork waits for the source session.
#[derive(Debug, Clone, Copy)]
pub struct ForkOptions {
    /// Wait for a call running in the source session to end (up to
    /// `timeout`); `false` refuses at once while one runs.
    pub wait: bool,
    /// Bound on the wait and the fork together.
    pub timeout: Duration,
}

impl Default for ForkOptions {
    fn default() -> Self {
        ForkOptions { wait: true, timeout: Duration::from_secs(60) }
    }
}

/// What a fork made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForkReport {
    /// The new session's name, as the caller gave it.
    pub session: String,
    /// The copy's pid and the source kernel's.
    pub pid: Option<u32>,
    pub source_pid: Option<u32>,
    /// Threads the source's cells had started, which the copy does not have.
    pub lost_threads: Vec<String>,
    /// From the request to the copy's `ready`.
    pub elapsed: Duration,
}

/// Why a session could not be forked. Every message says what to do instead.
#[derive(Debug, Clone, thiserror::Error)]
pub enum BranchError {
    #[error("{0:?} is not a session name: use 1 to 64 letters, digits, '-', '_' or '.'")]
    BadName(String),
    #[error("session {0:?} has no running Python kernel; run a Python cell in it first")]
    NoKernel(String),
    #[error("session {0:?} already exists; choose another name, or eval_reset it first")]
    TargetExists(String),
    #[error("session {0:?} is running a cell; fork it again when the cell ends, or ask to wait")]
    Busy(String),
    #[error("session {session:?} is still running a cell after {seconds}s; try again when it ends")]
    Timeout { session: String, seconds: u64 },
    #[error("session {0:?} was closed while the fork waited for it")]
    Closed(String),
    #[error("{}", no_checkpoint(.session, *.enabled))]
    NoCheckpoint { session: String, enabled: bool },
    #[error("only {kept} checkpoint(s) are kept, so {steps} call(s) cannot be undone; undo at most {kept}")]
    NotEnoughCheckpoints { steps: usize, kept: usize },
    #[error("{0}")]
    Unsupported(String),
    #[error("{0}")]
    Kernel(#[from] KernelError),
}

fn no_checkpoint(session: &str, enabled: bool) -> String {
    if enabled {
        format!("session {session:?} has no checkpoint to go back to: none was taken since it started or was reset")
    } else {
        format!(
            "session {session:?} has no checkpoint: checkpoints are off. Pass \"checkpoint\": true on the calls to \
             undo, or start the server with --checkpoints N (CELLBOX_CHECKPOINTS)"
        )
    }
}

impl EvalEngine {
    /// Fork `source`'s Python kernel into the new session `target` (named
    /// `target_name` for messages). The copy keeps the source's working
    /// folder and interpreter, and the target is owned by `target.owner`.
    pub async fn fork_session(
        &self,
        source: &CallContext,
        target: &CallContext,
        target_name: &str,
        options: ForkOptions,
    ) -> Result<ForkReport, BranchError> {
        if !is_session_name(target_name) {
            return Err(BranchError::BadName(target_name.to_string()));
        }
        if !self.pool().live_slots_of(&target.session).is_empty()
            || self.history_len(&target.session) > 0
            || self.is_hibernated(&target.session)
        {
            return Err(BranchError::TargetExists(target_name.to_string()));
        }
        let slot = match self.python_slot(&source.session) {
            Ok(slot) => slot,
            Err(Some(runtime)) => {
                let why = crate::kernel::fork::unsupported(runtime).unwrap_or_default();
                return Err(KernelError::ForkUnsupported(why).into());
            }
            Err(None) => return Err(BranchError::NoKernel(source.session.clone())),
        };
        let started = Instant::now();
        let guard = if options.wait {
            match tokio::time::timeout(options.timeout, slot.lock()).await {
                Ok(Ok(guard)) => guard,
                Ok(Err(_)) => return Err(BranchError::Closed(source.session.clone())),
                Err(_) => {
                    return Err(BranchError::Timeout {
                        session: source.session.clone(),
                        seconds: options.timeout.as_secs(),
                    });
                }
            }
        } else {
            slot.try_lock().ok_or_else(|| BranchError::Busy(source.session.clone()))?
        };
        let Some(kernel) = guard.kernel().filter(|kernel| kernel.is_alive()) else {
            return Err(BranchError::NoKernel(source.session.clone()));
        };
        let left = options.timeout.saturating_sub(started.elapsed());
        let _room = self.reserve_kernel().await?;
        let copy = kernel.fork(left).await?;
        drop(guard);
        let lost_threads = copy.as_process().map(|k| k.ready_info().lost_threads.clone()).unwrap_or_default();
        copy.set_bridge(self.bridge_hook(&target.session));
        let key = crate::session::KernelKey { session: target.session.clone(), ..slot.key.clone() };
        self.pool().make_room(&key).await;
        let target_slot = self.pool().slot(key, &target.owner);
        let mut target_guard = target_slot.lock().await.map_err(|_| BranchError::Closed(target.session.clone()))?;
        let pid = copy.pid();
        if let Some(old) = target_guard.replace_kernel(Some(Arc::new(copy))) {
            // Another call started the target meanwhile: the fork wins, as asked.
            old.shutdown().await;
        }
        let history = self.histories.lock().unwrap().get(&source.session).cloned();
        if let Some(history) = history {
            self.histories.lock().unwrap().insert(&target.session, history, &self.config.history);
        }
        Ok(ForkReport {
            session: target_name.to_string(),
            pid,
            source_pid: kernel.pid(),
            lost_threads,
            elapsed: started.elapsed(),
        })
    }
}

/// What [`EvalEngine::snapshot_session`] saved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotReport {
    pub path: PathBuf,
    /// Names saved, in the order they are restored.
    pub saved: Vec<String>,
    /// Names that could not be saved, each with the reason.
    pub skipped: Vec<(String, String)>,
    /// The file's size.
    pub bytes: u64,
}

/// What [`EvalEngine::restore_session`] restored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RestoreReport {
    pub path: PathBuf,
    pub restored: Vec<String>,
    /// Names that could not be restored (a module no longer installed…), each with the reason;
    /// also the settings' magic lines that failed.
    pub failed: Vec<(String, String)>,
    /// The settings magics had made, replayed as these magic lines (`%precision 3`, …).
    pub settings: Vec<String>,
    /// The Python and cellbox versions that wrote the file, and when.
    pub python: String,
    pub cellbox: String,
    pub created: String,
}

impl EvalEngine {
    /// A snapshot file a tool call names, inside the workspace (see [`EvalEngine::tool_path`]).
    fn snapshot_path(&self, path: &Path) -> Result<PathBuf, BranchError> {
        self.tool_path("path", &path.to_string_lossy()).map_err(|error| BranchError::Unsupported(error.to_string()))
    }

    /// Save `session`'s Python namespace to `path` (relative to the default
    /// cwd), after the calls already running in it.
    pub async fn snapshot_session(&self, context: &CallContext, path: &Path) -> Result<SnapshotReport, BranchError> {
        let path = self.snapshot_path(path)?;
        let slot = match self.python_slot(&context.session) {
            Ok(slot) => slot,
            Err(Some(runtime)) => {
                return Err(BranchError::Unsupported(format!(
                    "session {:?} runs {runtime} only: snapshots are of Python kernels",
                    context.session
                )));
            }
            Err(None) => return Err(BranchError::NoKernel(context.session.clone())),
        };
        let guard = slot.lock().await.map_err(|_| BranchError::Closed(context.session.clone()))?;
        let kernel = guard.kernel().filter(|kernel| kernel.is_alive());
        let kernel = kernel.ok_or_else(|| BranchError::NoKernel(context.session.clone()))?;
        let process = kernel.as_process().ok_or_else(gateway_unsupported)?;
        let report = process.snapshot(&path).await?;
        Ok(SnapshotReport {
            path,
            saved: report_strings(&report["saved"]),
            skipped: report_reasons(&report["skipped"]),
            bytes: report["bytes"].as_u64().unwrap_or(0),
        })
    }

    /// Restore the snapshot at `path` (relative to the default cwd) into
    /// `session`'s Python kernel, started if it has none. Names already there
    /// are replaced by the saved ones; others are kept.
    pub async fn restore_session(&self, context: &CallContext, path: &Path) -> Result<RestoreReport, BranchError> {
        let path = self.snapshot_path(path)?;
        let cwd = self.resolve_cwd(None).map_err(|error| BranchError::Unsupported(error.to_string()))?;
        let interpreter =
            self.resolve_python(&cwd).await.map_err(|error| BranchError::Unsupported(error.to_string()))?;
        let slot = self.pool().slot(self.key(&context.session, &cwd, &interpreter), &context.owner);
        let mut guard = slot.lock().await.map_err(|_| BranchError::Closed(context.session.clone()))?;
        let kernel = self.kernel_for(&interpreter, &cwd, &mut guard, 0, &crate::tool::ignore_events).await?;
        let process = kernel.as_process().ok_or_else(gateway_unsupported)?;
        let report = process.restore(&path).await?;
        let header = &report["header"];
        let text = |key: &str| header[key].as_str().unwrap_or("?").to_string();
        Ok(RestoreReport {
            path,
            restored: report_strings(&report["restored"]),
            failed: report_reasons(&report["failed"]),
            settings: report_strings(&report["settings"]),
            python: text("python"),
            cellbox: text("cellbox"),
            created: text("created"),
        })
    }
}

impl EvalEngine {
    /// `session`'s slot with a live Python kernel; else the runtime it runs
    /// instead (`Err(Some)`), or `Err(None)` when it runs nothing.
    fn python_slot(&self, session: &str) -> Result<Arc<crate::session::Slot>, Option<Runtime>> {
        let slots = self.pool().live_slots_of(session);
        match slots.iter().find(|slot| slot.key.runtime == Runtime::Python) {
            Some(slot) => Ok(slot.clone()),
            None => Err(slots.first().map(|slot| slot.key.runtime)),
        }
    }
}

fn gateway_unsupported() -> BranchError {
    BranchError::Unsupported(
        "snapshots of kernels on a Jupyter gateway are not supported: they run on the gateway's machine".into(),
    )
}
