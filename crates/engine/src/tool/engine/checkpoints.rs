//! Checkpoints and undo. With checkpoints on (the engine's
//! [`CheckpointLimits`], or `checkpoint: true` on a call), the session's
//! Python kernel is forked right before each call; the copy waits, idle, as
//! the state before that call. [`EvalEngine::undo`] puts one back in the
//! session in milliseconds, whatever the calls after it did: changed data,
//! crashed the kernel, timed out.
//!
//! A checkpoint is a process whose memory is shared copy-on-write with the
//! live kernel: it costs what the live kernel has changed since. Each
//! session keeps at most `count` of them and `memory_bytes` of their private
//! memory; the oldest go first. They stay in the live kernel's cgroups (its
//! memory limit counts the pages they keep) and are the first victims under
//! memory pressure (their OOM score is raised to the maximum), so memory
//! pressure, the limit's or the machine's, takes them before the live kernel.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::EvalEngine;
use super::branch::BranchError;
use crate::kernel::fork::FORK_ANSWER_TIMEOUT;
use crate::runtime::Runtime;
use crate::session::{KernelKey, SharedKernel, SlotGuard};
use crate::tool::call::CallContext;
use crate::tool::config::CheckpointLimits;

/// One saved state: a forked kernel and the history length it matches.
struct Checkpoint {
    kernel: SharedKernel,
    history_len: usize,
}

/// Every session's checkpoints, oldest first, by kernel slot.
#[derive(Default)]
pub(super) struct CheckpointStore(Mutex<HashMap<KernelKey, VecDeque<Checkpoint>>>);

impl CheckpointStore {
    fn take_all(&self, keep: impl Fn(&KernelKey) -> bool) -> Vec<SharedKernel> {
        let mut all = self.0.lock().unwrap();
        let keys: Vec<KernelKey> = all.keys().filter(|key| !keep(key)).cloned().collect();
        keys.iter().filter_map(|key| all.remove(key)).flatten().map(|checkpoint| checkpoint.kernel).collect()
    }
}

/// What an undo did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UndoReport {
    /// Calls undone.
    pub steps: usize,
    /// Checkpoints still kept after it (further undos possible).
    pub left: usize,
    pub elapsed: Duration,
}

impl EvalEngine {
    /// Before a call: fork each of its Python kernels that is alive into a
    /// checkpoint, when checkpoints are on or the call asks (`requested`).
    /// A checkpoint that cannot be taken is a note, never a failed call.
    pub(super) async fn checkpoint_before(&self, guards: &mut [SlotGuard<'_>], requested: Option<bool>) -> Vec<String> {
        let limits = self.config.checkpoints;
        let keep = match requested {
            Some(false) => return Vec::new(),
            Some(true) => limits.count.max(CheckpointLimits::ON_REQUEST),
            None if limits.count == 0 => return Vec::new(),
            None => limits.count,
        };
        let mut notes = Vec::new();
        for guard in guards.iter_mut().filter(|guard| guard.key().runtime == Runtime::Python) {
            let Some(kernel) = guard.kernel().filter(|kernel| kernel.is_alive()) else { continue };
            if kernel.as_process().is_none() {
                // A gateway kernel runs elsewhere: nothing to copy here. Said
                // when the call asked; a server-wide setting would say it every call.
                if requested == Some(true) {
                    notes.push("No checkpoint was taken before this call: kernels on a Jupyter gateway cannot be checkpointed.".into());
                }
                continue;
            }
            let copy = match kernel.checkpoint(FORK_ANSWER_TIMEOUT).await {
                Ok(copy) => copy,
                Err(error) => {
                    notes.push(format!("No checkpoint was taken before this call: {error}."));
                    continue;
                }
            };
            if let Some(pid) = copy.pid() {
                park(pid);
            }
            let history_len = self.history_len(&guard.key().session);
            let evicted = {
                let mut all = self.checkpoints.0.lock().unwrap();
                let kept = all.entry(guard.key().clone()).or_default();
                kept.push_back(Checkpoint { kernel: Arc::new(copy), history_len });
                evict(kept, keep, limits.memory_bytes)
            };
            for old in evicted {
                self.retire_checkpoint(old);
            }
        }
        notes
    }

    /// Put `session`'s Python kernel back to its state before its last
    /// `steps` calls (checkpoints taken, see [`CheckpointLimits`]). The
    /// current kernel and the newer checkpoints are stopped; the notebook
    /// history is cut back to match.
    pub async fn undo(&self, context: &CallContext, steps: usize) -> Result<UndoReport, BranchError> {
        let started = Instant::now();
        let steps = steps.max(1);
        let key = {
            let all = self.checkpoints.0.lock().unwrap();
            all.iter()
                .filter(|(key, kept)| key.session == context.session && !kept.is_empty())
                .map(|(key, _)| key.clone())
                .next()
        };
        let Some(key) = key else {
            return Err(BranchError::NoCheckpoint {
                session: context.session.clone(),
                enabled: self.config.checkpoints.count > 0,
            });
        };
        let slot = self.pool().slot(key.clone(), &context.owner);
        let mut guard = slot.lock().await.map_err(|_| BranchError::Closed(context.session.clone()))?;
        let (restored, newer, left) = {
            let mut all = self.checkpoints.0.lock().unwrap();
            let kept = all.entry(key.clone()).or_default();
            if kept.len() < steps {
                return Err(BranchError::NotEnoughCheckpoints { steps, kept: kept.len() });
            }
            let newer: Vec<Checkpoint> = kept.drain(kept.len() - steps + 1..).collect();
            let restored = kept.pop_back().expect("at least one checkpoint is kept");
            (restored, newer, kept.len())
        };
        for checkpoint in newer {
            self.retire_checkpoint(checkpoint.kernel);
        }
        if let Some(pid) = restored.kernel.pid() {
            wake(pid);
        }
        restored.kernel.set_bridge(self.bridge_hook(&context.session));
        if let Some(current) = guard.replace_kernel(Some(restored.kernel)) {
            self.pool().retire(current);
        }
        // A session hibernated since: the checkpoint replaces what was saved.
        if let Some(hibernation) = self.pool().hibernation() {
            hibernation.forget_in(&key.session, &key.cwd);
        }
        if let Some(history) = self.histories.lock().unwrap().get_mut(&context.session) {
            history.truncate(restored.history_len);
        }
        drop(guard);
        Ok(UndoReport { steps, left, elapsed: started.elapsed() })
    }

    /// How many checkpoints `session` keeps now (all its kernels).
    pub fn checkpoint_count(&self, session: &str) -> usize {
        self.checkpoint_pids(session).len()
    }

    /// The pids of `session`'s checkpoints, oldest first (for diagnostics and tests).
    pub fn checkpoint_pids(&self, session: &str) -> Vec<u32> {
        let all = self.checkpoints.0.lock().unwrap();
        let kept = all.iter().filter(|(key, _)| key.session == session).flat_map(|(_, kept)| kept.iter());
        kept.filter_map(|checkpoint| checkpoint.kernel.pid()).collect()
    }

    /// Stop the checkpoints of kernel slots that are gone (their owner left).
    pub(super) fn drop_orphaned_checkpoints(&self) {
        for kernel in self.checkpoints.take_all(|key| self.pool().has_slot(key)) {
            self.retire_checkpoint(kernel);
        }
    }

    /// Stop the checkpoints of `session` (it was reset), or of every session when `None`.
    pub(super) fn drop_checkpoints(&self, session: Option<&str>) {
        let dropped = self.checkpoints.take_all(|key| session.is_some_and(|session| key.session != session));
        for kernel in dropped {
            self.retire_checkpoint(kernel);
        }
    }

    /// Stop a checkpoint in the background (woken first: a stopped process
    /// cannot read the `exit` request, and would wait out the grace periods).
    fn retire_checkpoint(&self, kernel: SharedKernel) {
        if let Some(pid) = kernel.pid() {
            wake(pid);
        }
        self.pool().retire(kernel);
    }
}

/// A new checkpoint waits stopped (SIGSTOP: no thread of it wakes while it
/// waits), and is the OOM killer's first choice under memory pressure.
fn park(pid: u32) {
    let _ = std::fs::write(format!("/proc/{pid}/oom_score_adj"), "1000");
    #[cfg(unix)]
    let _ = crate::kernel::process::signal_group(pid, crate::kernel::process::Signal::SIGSTOP);
}

/// A checkpoint becomes a live kernel (or is about to be stopped): running
/// again, no longer the first to go under memory pressure.
fn wake(pid: u32) {
    #[cfg(unix)]
    let _ = crate::kernel::process::signal_group(pid, crate::kernel::process::Signal::SIGCONT);
    let _ = std::fs::write(format!("/proc/{pid}/oom_score_adj"), "0");
}

/// Drop the oldest checkpoints beyond `count`, then while their private
/// memory together exceeds `budget` (the newest one always stays).
fn evict(kept: &mut VecDeque<Checkpoint>, count: usize, budget: u64) -> Vec<SharedKernel> {
    let mut evicted = Vec::new();
    while kept.len() > count.max(1) {
        evicted.extend(kept.pop_front().map(|checkpoint| checkpoint.kernel));
    }
    let private =
        |checkpoint: &Checkpoint| checkpoint.kernel.pid().and_then(crate::session::private_bytes).unwrap_or(0);
    let mut total: u64 = kept.iter().map(private).sum();
    while kept.len() > 1 && total > budget {
        if let Some(oldest) = kept.pop_front() {
            total = total.saturating_sub(private(&oldest));
            evicted.push(oldest.kernel);
        }
    }
    evicted
}
