//! Warm spares: kept within the live-kernel limit, made room for in a pool
//! whose sessions take turns, and given way to under a shared budget.

use super::EvalEngine;
use crate::kernel::{KernelError, KernelOptions};
use crate::runtime::Runtime;

impl EvalEngine {
    /// Pids of the warm spares that are ready (not yet handed out).
    pub fn spare_pids(&self) -> Vec<u32> {
        self.spares.pids()
    }

    /// Start a warm spare for the default cwd and language now, in the
    /// background, so the first call does not wait for an interpreter start
    /// (`cellbox mcp` does this when it starts). Does nothing when spares are
    /// off or no interpreter is found (the first call then reports why).
    pub async fn prewarm(&self) {
        if !self.spares.enabled() {
            return;
        }
        let Ok(cwd) = self.resolve_cwd(None) else { return };
        let interpreter = match self.default_language().runtime() {
            Runtime::Python => self.resolve_python(&cwd).await.ok(),
            Runtime::Node => self.resolve_node(&cwd).await.ok(),
            Runtime::Bash => self.resolve_bash(&cwd).await.ok(),
            Runtime::Jupyter => None,
        };
        if let Some(interpreter) = interpreter {
            self.fill_spare(&self.kernel_options(&interpreter, &cwd));
        }
    }

    /// Keep a spare for `options` within the live-kernel limit. Called after
    /// a wake has loaded its variables, which a spare's start (and putting a
    /// kernel away to make room for it) would slow.
    pub(super) fn fill_spare(&self, options: &KernelOptions) {
        if !self.spares.enabled() {
            return;
        }
        let used = self.pool.live_count(None) + self.spares.len();
        let mut room = self.pool.limits().max_kernels.saturating_sub(used);
        if let Some(budget) = &self.config.kernel_budget {
            room = room.min(budget.room());
        }
        if room == 0 && self.spares.is_empty() && options.runtime == Runtime::Python && self.pool.cycles() {
            self.make_room_for_a_spare(options);
            return;
        }
        self.spares.fill(options, room);
    }

    /// In a pool whose sessions take turns, the least recently used idle one
    /// is hibernated in the background to keep a spare: a wake then only
    /// loads its variables. Without a shared budget the spare starts at
    /// once, one over the limit while that kernel is saved (a call right
    /// after this one waits for the spare rather than starting a kernel of
    /// its own), and is stopped again if none could be; under a budget,
    /// which other engines draw on too, it starts once there is room. One
    /// at a time; [`EvalEngine::dispose_all`] stops it.
    fn make_room_for_a_spare(&self, options: &KernelOptions) {
        let Ok(handle) = tokio::runtime::Handle::try_current() else { return };
        let mut making_room = self.spare_task.lock().unwrap();
        if making_room.as_ref().is_some_and(|task| !task.is_finished()) || self.pool.oldest_hibernatable().is_none() {
            return;
        }
        let budget = self.config.kernel_budget.clone();
        if budget.is_none() {
            self.spares.fill(options, 1);
        }
        let (pool, spares, options) = (self.pool.clone(), self.spares.clone(), options.clone());
        let task = handle.spawn(async move {
            let hibernated = pool.hibernate_for_spare().await;
            let live = pool.live_count(None);
            match &budget {
                None if !hibernated => {
                    spares.shed(pool.limits().max_kernels.saturating_sub(live), None).await;
                }
                None => {}
                Some(budget) => {
                    let room = pool.limits().max_kernels.saturating_sub(live + spares.len()).min(budget.room());
                    spares.fill(&options, room);
                }
            }
        });
        *making_room = Some(task);
    }

    /// Room for one more kernel in the shared budget, if there is one: warm
    /// spares give way first; then the start is refused (retryably).
    pub(super) async fn reserve_kernel(&self) -> Result<Option<crate::session::budget::Reservation>, KernelError> {
        let Some(budget) = &self.config.kernel_budget else { return Ok(None) };
        if let Some(reservation) = budget.reserve() {
            return Ok(Some(reservation));
        }
        if budget.shed_spares().await
            && let Some(reservation) = budget.reserve()
        {
            return Ok(Some(reservation));
        }
        if budget.hibernate_oldest().await
            && let Some(reservation) = budget.reserve()
        {
            return Ok(Some(reservation));
        }
        let (limit, here) = budget.full().unwrap_or((budget.limit(), true));
        Err(KernelError::AtCapacity { limit, yours: here && budget.is_inner() })
    }
}
