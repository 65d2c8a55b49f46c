//! Stopping kernels the pool no longer keeps live: unused past the idle
//! timeout, the least recently used one over the live-kernel limit or a
//! shared budget, one grown past the memory limit, and every one at a
//! server's stop. A Python kernel is hibernated first where the pool can
//! ([`super::hibernate`]); any other is stopped and its next call told why
//! its state is gone.

use std::sync::{Arc, Weak};
use std::time::Duration;

use tokio::time::Instant;

use super::hibernate::{Hibernation, SNAPSHOT_TIMEOUT};
use super::{KernelKey, KernelPool, Sleeping, Slot, SlotGuard};
use crate::runtime::Runtime;

impl KernelPool {
    /// Stop `slot`'s kernel unless a call is using it, hibernating it first
    /// when it is a Python kernel and the pool hibernates (`why` says why, in
    /// the wake note); otherwise `lost` tells the next call its state is gone.
    /// With [`PutAway::OnlyHibernated`] a kernel that cannot be hibernated is
    /// left running. `Some(true)` if it was hibernated, `Some(false)` if it
    /// was stopped without, `None` if it runs on.
    ///
    /// The work runs on a task of its own, so a caller that goes away midway
    /// (a cancelled call making room) never leaves it half done.
    async fn put_away(&self, slot: &Arc<Slot>, why: String, lost: String, how: PutAway) -> Option<bool> {
        let hibernation = self.hibernation.clone().filter(|_| slot.key.runtime == Runtime::Python);
        let task = tokio::spawn(put_away(slot.clone(), hibernation, why, lost, how));
        match task.await {
            Ok(Stopped::Hibernated(kernel)) => {
                // Saved: its process may end in the background (dispose_all still waits for it).
                self.retire(kernel);
                self.evictions.lock().unwrap().hibernated += 1;
                Some(true)
            }
            Ok(Stopped::Lost) => Some(false),
            Ok(Stopped::No) | Err(_) => None,
        }
    }

    /// Hibernate every idle live Python kernel now (a server's stop: with a
    /// state folder, the next start finds them), waiting up to `wait` for
    /// running calls to end. A Python kernel that cannot be saved (still busy,
    /// or its snapshot failed) leaves a record that its next call reports;
    /// other kernels are left to [`KernelPool::dispose_all`]. Returns how many
    /// were hibernated.
    pub async fn hibernate_all(&self, why: &str, wait: Duration) -> usize {
        let Some(hibernation) = self.hibernation.clone() else { return 0 };
        let deadline = Instant::now() + wait;
        let slots: Vec<Arc<Slot>> = self.slots.lock().unwrap().values().cloned().collect();
        let mut count = 0;
        for slot in slots.iter().filter(|slot| slot.key.runtime == Runtime::Python && slot.has_kernel()) {
            // A call still running gets until the deadline to end.
            let unsaved = match tokio::time::timeout_at(deadline, slot.lock()).await {
                Ok(Ok(guard)) => {
                    let empty = guard.kernel().is_none();
                    drop(guard);
                    if empty {
                        continue; // put away meanwhile (to make room, idle): its record stands
                    }
                    let lost = format!("The previous kernel was stopped ({why}); its state was lost.");
                    match self.put_away(slot, why.to_string(), lost, PutAway::OrStop).await {
                        Some(true) => {
                            count += 1;
                            continue;
                        }
                        None if !slot.has_kernel() => continue,
                        _ => "its snapshot failed",
                    }
                }
                _ => "while a call was still running in it",
            };
            if hibernation.keeps() {
                let owners: Vec<String> = slot.owners.lock().unwrap().iter().cloned().collect();
                let key = &slot.key;
                hibernation.record_lost(&key.session, &key.cwd, &key.interpreter, owners, format!("{why}, {unsaved}"));
            }
        }
        count
    }

    /// The hibernated record of `session`'s Python kernel in `cwd`, taken to wake it.
    pub fn take_sleeping(&self, session: &str, cwd: &std::path::Path) -> Option<Sleeping> {
        self.hibernation.as_ref()?.take(session, cwd)
    }

    /// Whether `session` has a hibernated kernel.
    pub fn is_sleeping(&self, session: &str) -> bool {
        self.hibernation.as_ref().is_some_and(|hibernation| hibernation.is_sleeping(session))
    }

    /// How long the least recently used idle Python kernel this pool could
    /// hibernate has been unused (for a shared budget to pick the oldest).
    pub fn oldest_hibernatable(&self) -> Option<Duration> {
        self.hibernation.as_ref()?;
        let slots: Vec<Arc<Slot>> = self.slots.lock().unwrap().values().cloned().collect();
        let idle = slots.iter().filter(|slot| hibernatable(slot));
        idle.filter(|slot| slot.try_lock().is_some()).map(|slot| slot.idle_for()).max()
    }

    /// Hibernate the least recently used idle Python kernel, to make room in
    /// a shared budget of `limit` kernels. True if one was stopped.
    pub async fn hibernate_oldest(&self, limit: usize) -> bool {
        // Another engine's start waits for this: a kernel that cannot be saved soon is left running.
        let why = format!("to stay within a budget of {limit} live kernels");
        let hibernated = self.hibernate_least_recent(&why, BUDGET_SNAPSHOT_TIMEOUT).await;
        if hibernated {
            self.took_a_turn();
        }
        hibernated
    }

    /// Hibernate the least recently used idle Python kernel that can be saved
    /// within `timeout` (`why` goes into its wake note). True if one was.
    async fn hibernate_least_recent(&self, why: &str, timeout: Duration) -> bool {
        if self.hibernation.is_none() {
            return false;
        }
        let mut slots: Vec<Arc<Slot>> = self.slots.lock().unwrap().values().cloned().collect();
        slots.retain(|slot| hibernatable(slot));
        slots.sort_by_key(|slot| std::cmp::Reverse(slot.idle_for()));
        for slot in slots {
            if self.put_away(&slot, why.to_string(), String::new(), PutAway::OnlyHibernated(timeout)).await.is_some() {
                self.evictions.lock().unwrap().limit += 1;
                return true;
            }
        }
        false
    }

    /// Whether this pool hibernates and put a kernel away in the last
    /// [`TURNS_WINDOW`] to make room for another's start: its sessions take
    /// turns, and a wake or a new session is near.
    pub fn cycles(&self) -> bool {
        self.hibernation.is_some() && self.last_turn.lock().unwrap().is_some_and(|at| at.elapsed() < TURNS_WINDOW)
    }

    fn took_a_turn(&self) {
        *self.last_turn.lock().unwrap() = Some(Instant::now());
    }

    /// Hibernate the least recently used idle Python kernel of a pool whose
    /// sessions take turns ([`KernelPool::cycles`]), to make room for a warm
    /// spare: the next wake or new session would most likely put it away
    /// anyway, and this way that start waits neither for it nor for a
    /// kernel's start. True if one was.
    pub async fn hibernate_for_spare(&self) -> bool {
        if !self.cycles() {
            return false;
        }
        let why = format!("to stay within {} live kernels, a warm one kept ready", self.limits.max_kernels);
        self.hibernate_least_recent(&why, SNAPSHOT_TIMEOUT).await
    }

    /// Before starting a kernel in `starting`: stop least recently used idle
    /// kernels until there is room for one more.
    pub async fn make_room(&self, starting: &KernelKey) {
        let mut slots: Vec<Arc<Slot>> =
            self.slots.lock().unwrap().values().filter(|s| &s.key != starting).cloned().collect();
        slots.sort_by_key(|slot| std::cmp::Reverse(slot.idle_for()));
        let mut live = 0;
        let mut idle = Vec::new();
        for slot in slots {
            // One being put away (for a spare, idle) is on its way out.
            if slot.has_kernel() && !slot.leaving.load(std::sync::atomic::Ordering::SeqCst) {
                live += 1;
                idle.push(slot);
            }
        }
        for slot in idle {
            if live < self.limits.max_kernels {
                break;
            }
            let limit = self.limits.max_kernels;
            let why = format!("to stay within {limit} live kernels");
            let note =
                format!("The previous kernel was stopped to stay within {limit} live kernels; its state was lost.");
            if self.put_away(&slot, why, note, PutAway::OrStop).await.is_some() {
                live -= 1;
                self.evictions.lock().unwrap().limit += 1;
                self.took_a_turn();
            }
        }
    }

    /// After a call: restart the kernel if it grew past the memory limit.
    pub async fn recycle_if_bloated(&self, guard: &mut SlotGuard<'_>) {
        let (Some(limit), Some(kernel)) = (self.limits.rss_limit_bytes, guard.kernel()) else { return };
        let Some(rss) = kernel.pid().and_then(|pid| guard.resident_bytes(pid)) else { return };
        if rss <= limit {
            return;
        }
        guard.replace_kernel(None);
        kernel.shutdown().await;
        self.evictions.lock().unwrap().memory += 1;
        guard.add_note(format!(
            "The previous kernel used {} of memory (limit {}) and was restarted; its state was lost.",
            crate::output::limiter::human_bytes(rss),
            crate::output::limiter::human_bytes(limit)
        ));
    }

    async fn reap_idle_once(&self) {
        let slots: Vec<Arc<Slot>> = self.slots.lock().unwrap().values().cloned().collect();
        let hibernate_after = self.limits.hibernate_after.filter(|_| self.hibernation.is_some());
        for slot in slots {
            let idle = slot.idle_for();
            let python = slot.key.runtime == Runtime::Python;
            let due = |limit: Option<Duration>| limit.is_some_and(|limit| idle >= limit);
            if !(due(self.limits.idle_timeout) || (python && due(hibernate_after))) {
                continue;
            }
            let why = format!("unused for {}", human_duration(idle));
            let note =
                format!("The previous kernel was stopped after {} unused; its state was lost.", human_duration(idle));
            // Before the idle timeout, a kernel that cannot be hibernated is left running.
            let how =
                if due(self.limits.idle_timeout) { PutAway::OrStop } else { PutAway::OnlyHibernated(SNAPSHOT_TIMEOUT) };
            if self.put_away(&slot, why, note, how).await.is_some() {
                self.evictions.lock().unwrap().idle += 1;
            }
        }
    }
}

/// How a kernel is put away.
#[derive(Debug, Clone, Copy)]
enum PutAway {
    /// Hibernated where it can be, else stopped (its state lost, and the next call told).
    OrStop,
    /// Hibernated within this time, else left running.
    OnlyHibernated(Duration),
}

enum Stopped {
    /// Saved and out of its slot; the kernel is still to be shut down.
    Hibernated(Arc<super::KernelHandle>),
    Lost,
    No,
}

/// How long a kernel hibernated to make room for another engine's start may take.
const BUDGET_SNAPSHOT_TIMEOUT: Duration = Duration::from_secs(10);

/// How recently a pool must have put a kernel away for another's start to
/// count as one whose sessions take turns ([`KernelPool::cycles`]).
const TURNS_WINDOW: Duration = Duration::from_secs(600);

/// Marks a slot whose kernel is being put away, until dropped.
struct Leaving<'a>(&'a Slot);

impl Drop for Leaving<'_> {
    fn drop(&mut self) {
        self.0.leaving.store(false, std::sync::atomic::Ordering::SeqCst);
    }
}

/// A Python kernel this pool runs itself (a gateway's is not its to save).
fn hibernatable(slot: &Slot) -> bool {
    slot.key.runtime == Runtime::Python
        && slot.current.lock().unwrap().as_ref().is_some_and(|k| k.as_process().is_some())
}

async fn put_away(
    slot: Arc<Slot>,
    hibernation: Option<Arc<Hibernation>>,
    why: String,
    lost: String,
    how: PutAway,
) -> Stopped {
    let Some(mut guard) = slot.try_lock() else { return Stopped::No };
    let Some(kernel) = guard.kernel() else { return Stopped::No };
    slot.leaving.store(true, std::sync::atomic::Ordering::SeqCst);
    let _leaving = Leaving(&slot);
    let mut lost = lost;
    if let Some(hibernation) = hibernation {
        let owners: Vec<String> = slot.owners.lock().unwrap().iter().cloned().collect();
        let key = &slot.key;
        let resets = slot.resets.load(std::sync::atomic::Ordering::SeqCst);
        let timeout = match how {
            PutAway::OrStop => SNAPSHOT_TIMEOUT,
            PutAway::OnlyHibernated(timeout) => timeout,
        };
        match hibernation.hibernate(&kernel, &key.session, &key.cwd, &key.interpreter, owners, why, timeout).await {
            Ok(record) => {
                guard.replace_kernel(None);
                // A reset of the session while it was being saved wins.
                if slot.resets.load(std::sync::atomic::Ordering::SeqCst) != resets {
                    hibernation.withdraw(&record);
                }
                return Stopped::Hibernated(kernel);
            }
            Err(error) => {
                tracing::warn!(session = key.session, "hibernation failed: {error}");
                if matches!(how, PutAway::OnlyHibernated(_)) {
                    // Still whole: a timed-out snapshot request leaves the kernel busy, which the next call waits out.
                    return Stopped::No;
                }
                lost = format!("{lost} (Hibernating it failed: {error}.)");
            }
        }
    } else if matches!(how, PutAway::OnlyHibernated(_)) {
        return Stopped::No;
    }
    guard.replace_kernel(None);
    kernel.shutdown().await;
    guard.add_note(lost);
    Stopped::Lost
}

pub(super) async fn reap_idle(pool: Weak<KernelPool>, idle: Duration) {
    let period = (idle / 4).clamp(Duration::from_millis(50), Duration::from_secs(60));
    loop {
        tokio::time::sleep(period).await;
        let Some(pool) = pool.upgrade() else { return };
        pool.reap_idle_once().await;
    }
}

/// "90 s", "10 min", "2 h" (whole units, as a note reads them).
pub fn human_duration(duration: Duration) -> String {
    let seconds = duration.as_secs();
    if seconds < 120 {
        format!("{seconds} s")
    } else if seconds < 2 * 3600 {
        format!("{} min", seconds / 60)
    } else {
        format!("{} h", seconds / 3600)
    }
}
