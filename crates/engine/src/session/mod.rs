//! Retained kernels: one slot per (session id, cwd, runtime, interpreter),
//! shared by its owners, used by one call at a time.
//!
//! A slot's kernel sits behind a fair async mutex: calls on the same kernel
//! run in arrival order, calls on different kernels run in parallel, and the
//! first caller starts the kernel while the others queue behind it (so
//! concurrent first calls share one startup). The pool also stops idle
//! kernels, keeps the number of live kernels bounded, and recycles kernels
//! that grew past a memory limit.

pub mod budget;
mod eviction;
pub mod handle;
pub mod hibernate;
pub mod spare;

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

pub use budget::KernelBudget;
pub use eviction::human_duration;
use handle::KernelHandle as Kernel;
pub use handle::{Backend, KernelHandle, SharedKernel};
pub use hibernate::{Hibernation, Sleeping};
pub use spare::{SpareLimits, SparePool};

/// Limits of the pool. Every limit can be turned off with `None`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolLimits {
    /// Live kernels at most; the least recently used idle one is stopped first. Default 8.
    pub max_kernels: usize,
    /// Stop a kernel unused this long. Default 30 minutes.
    pub idle_timeout: Option<Duration>,
    /// Restart a kernel whose resident memory passed this, once its call is over. Default 4 GiB.
    pub rss_limit_bytes: Option<u64>,
    /// Hibernate a Python kernel unused this long, when the pool hibernates
    /// ([`KernelPool::new`]); the idle timeout hibernates too. Default off.
    pub hibernate_after: Option<Duration>,
}

impl Default for PoolLimits {
    fn default() -> Self {
        PoolLimits {
            max_kernels: 8,
            idle_timeout: Some(Duration::from_secs(30 * 60)),
            rss_limit_bytes: Some(4 * 1024 * 1024 * 1024),
            hibernate_after: None,
        }
    }
}

/// Kernels the pool stopped on its own, by reason, since it was made (for metrics).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Evictions {
    /// Stopped to stay within [`PoolLimits::max_kernels`].
    pub limit: u64,
    /// Stopped after [`PoolLimits::idle_timeout`] unused.
    pub idle: u64,
    /// Restarted past [`PoolLimits::rss_limit_bytes`].
    pub memory: u64,
    /// Of those stopped, the ones hibernated (their state kept) rather than lost.
    pub hibernated: u64,
}

/// How many retained kernels a call holds now, how many wait unused, and
/// how many calls wait for a kernel another call of their session holds.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct KernelStates {
    pub busy: usize,
    pub idle: usize,
    pub queued_calls: usize,
}

/// What identifies a retained kernel.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct KernelKey {
    pub session: String,
    /// Canonical working directory.
    pub cwd: PathBuf,
    /// Which runtime (a session has one kernel per language).
    pub runtime: crate::runtime::Runtime,
    /// The interpreter discovery resolved.
    pub interpreter: PathBuf,
}

/// One retained kernel and the state around it.
#[derive(Debug)]
pub struct Slot {
    pub key: KernelKey,
    state: tokio::sync::Mutex<SlotState>,
    /// The kernel, also reachable while a call holds the slot, so disposal
    /// can stop a busy kernel.
    current: Mutex<Option<Arc<Kernel>>>,
    owners: Mutex<HashSet<String>>,
    last_used: Mutex<Instant>,
    disposed: std::sync::atomic::AtomicBool,
    /// Calls waiting in [`Slot::lock`].
    waiting: std::sync::atomic::AtomicUsize,
    /// Resets of its session so far: a hibernation that a reset overtook is withdrawn.
    resets: std::sync::atomic::AtomicU64,
    /// Its kernel is being put away: not counted among the live ones that make room.
    leaving: std::sync::atomic::AtomicBool,
    /// A call runs cells in it (not a fork, a checkpoint or a hibernation, which lock it too).
    calling: std::sync::atomic::AtomicBool,
}

/// A call runs cells in a slot while this lives ([`Slot::calling`]).
pub struct Calling<'a>(&'a Slot);

impl Drop for Calling<'_> {
    fn drop(&mut self) {
        self.0.calling.store(false, std::sync::atomic::Ordering::SeqCst);
    }
}

#[derive(Debug, Default)]
struct SlotState {
    /// Told to the next call: why its kernel is new (evicted, recycled, died).
    notes: Vec<String>,
    /// A kernel was put in at least once: what a session's first call is told once is not repeated.
    had_kernel: bool,
    /// The current kernel's `/proc/PID/statm`, kept open between calls
    /// ([`SlotGuard::resident_bytes`]); `None` beside the pid once it could not be read.
    statm: Option<(u32, Option<std::fs::File>)>,
}

/// A slot held by one call: the only way to change its kernel.
pub struct SlotGuard<'a> {
    slot: &'a Slot,
    state: tokio::sync::MutexGuard<'a, SlotState>,
}

impl SlotGuard<'_> {
    /// The current kernel, if one was started and not stopped.
    pub fn kernel(&self) -> Option<Arc<Kernel>> {
        self.slot.current.lock().unwrap().clone()
    }

    /// Put in a new kernel (or none); returns the old one, still running.
    pub fn replace_kernel(&mut self, kernel: Option<Arc<Kernel>>) -> Option<Arc<Kernel>> {
        self.state.had_kernel |= kernel.is_some();
        self.state.statm = None;
        std::mem::replace(&mut *self.slot.current.lock().unwrap(), kernel)
    }

    /// [`resident_bytes`] of the process `pid` (the slot's kernel), read after
    /// every call: its `statm` stays open, so each read is one `pread`. An
    /// open file names the process it was opened for, never a later one with
    /// its pid: once a read of it fails, that process is gone, and its pid is
    /// not looked up again.
    pub fn resident_bytes(&mut self, pid: u32) -> Option<u64> {
        if let Some((opened, file)) = &mut self.state.statm
            && *opened == pid
        {
            let bytes = file.as_ref().and_then(statm_resident);
            if bytes.is_none() {
                *file = None;
            }
            return bytes;
        }
        let file = std::fs::File::open(format!("/proc/{pid}/statm")).ok();
        let bytes = file.as_ref().and_then(statm_resident);
        self.state.statm = Some((pid, file.filter(|_| bytes.is_some())));
        bytes
    }

    /// True once this slot has had a kernel (a reset or a crash does not make it new again).
    pub fn had_kernel(&self) -> bool {
        self.state.had_kernel
    }

    /// Notes for the caller about what happened to the kernel since the last call.
    pub fn take_notes(&mut self) -> Vec<String> {
        std::mem::take(&mut self.state.notes)
    }

    pub fn add_note(&mut self, note: String) {
        self.state.notes.push(note);
    }

    pub fn key(&self) -> &KernelKey {
        &self.slot.key
    }
}

/// The session was disposed while the call waited for it.
#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error("this session was closed while the call waited for its kernel")]
pub struct SlotDisposed;

impl Slot {
    fn new(key: KernelKey) -> Self {
        Slot {
            key,
            state: tokio::sync::Mutex::new(SlotState::default()),
            current: Mutex::new(None),
            owners: Mutex::new(HashSet::new()),
            last_used: Mutex::new(Instant::now()),
            disposed: std::sync::atomic::AtomicBool::new(false),
            waiting: std::sync::atomic::AtomicUsize::new(0),
            resets: std::sync::atomic::AtomicU64::new(0),
            leaving: std::sync::atomic::AtomicBool::new(false),
            calling: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Mark this slot as running a call's cells until the mark is dropped
    /// (only what a call runs is ever interrupted from outside it).
    pub fn calling(&self) -> Calling<'_> {
        self.calling.store(true, std::sync::atomic::Ordering::SeqCst);
        Calling(self)
    }

    /// Wait for this slot (FIFO). Hold the guard for the whole call.
    pub async fn lock(&self) -> Result<SlotGuard<'_>, SlotDisposed> {
        let state = match self.state.try_lock() {
            Ok(state) => state,
            Err(_) => {
                // Counted while waiting, and uncounted however the wait ends (a cancelled call too).
                struct Waiting<'a>(&'a std::sync::atomic::AtomicUsize);
                impl Drop for Waiting<'_> {
                    fn drop(&mut self) {
                        self.0.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
                    }
                }
                self.waiting.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let _waiting = Waiting(&self.waiting);
                self.state.lock().await
            }
        };
        if self.disposed.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(SlotDisposed);
        }
        self.touch();
        Ok(SlotGuard { slot: self, state })
    }

    /// The slot now if no call holds it, else `None`.
    pub fn try_lock(&self) -> Option<SlotGuard<'_>> {
        let state = self.state.try_lock().ok()?;
        Some(SlotGuard { slot: self, state })
    }

    fn has_kernel(&self) -> bool {
        self.current.lock().unwrap().is_some()
    }

    /// Stop the kernel now, whether or not a call is using it.
    async fn dispose(&self) {
        self.disposed.store(true, std::sync::atomic::Ordering::SeqCst);
        let kernel = self.current.lock().unwrap().take();
        if let Some(kernel) = kernel {
            kernel.shutdown().await;
        }
    }

    pub fn touch(&self) {
        *self.last_used.lock().unwrap() = Instant::now();
    }

    fn idle_for(&self) -> Duration {
        self.last_used.lock().unwrap().elapsed()
    }
}

/// All retained kernels of one engine.
#[derive(Debug, Default)]
pub struct KernelPool {
    limits: PoolLimits,
    /// Where idle Python kernels go instead of being lost, when the engine hibernates.
    hibernation: Option<Arc<Hibernation>>,
    slots: Mutex<HashMap<KernelKey, Arc<Slot>>>,
    /// Kernels being shut down in the background ([`KernelPool::retire`]).
    retiring: Mutex<Vec<tokio::task::JoinHandle<()>>>,
    evictions: Mutex<Evictions>,
    /// When a kernel was last put away to make room for another's start ([`KernelPool::cycles`]).
    last_turn: Mutex<Option<Instant>>,
}

impl KernelPool {
    /// A pool; when a tokio runtime is running, a reaper stops (or, with
    /// `hibernation`, hibernates) idle kernels.
    pub fn new(limits: PoolLimits, hibernation: Option<Arc<Hibernation>>) -> Arc<Self> {
        let pool = Arc::new(KernelPool {
            limits,
            hibernation,
            slots: Mutex::new(HashMap::new()),
            retiring: Mutex::new(Vec::new()),
            evictions: Mutex::default(),
            last_turn: Mutex::default(),
        });
        let hibernate_after = limits.hibernate_after.filter(|_| pool.hibernation.is_some());
        let first = [limits.idle_timeout, hibernate_after].into_iter().flatten().min();
        if let (Some(idle), Ok(handle)) = (first, tokio::runtime::Handle::try_current()) {
            handle.spawn(eviction::reap_idle(Arc::downgrade(&pool), idle));
        }
        pool
    }

    /// Where this pool hibernates kernels, if it does.
    pub fn hibernation(&self) -> Option<&Arc<Hibernation>> {
        self.hibernation.as_ref()
    }

    pub fn limits(&self) -> PoolLimits {
        self.limits
    }

    /// The slot for `key`, created if needed, with `owner` added to its owners.
    pub fn slot(&self, key: KernelKey, owner: &str) -> Arc<Slot> {
        let slot = self.slots.lock().unwrap().entry(key.clone()).or_insert_with(|| Arc::new(Slot::new(key))).clone();
        slot.owners.lock().unwrap().insert(owner.to_string());
        slot
    }

    /// The sessions that have a slot (a kernel, live, hibernated or stopped),
    /// a per-call call's own key counted as its session's.
    pub fn sessions(&self) -> Vec<String> {
        let slots = self.slots.lock().unwrap();
        let mut names: Vec<String> = slots.values().map(|slot| base_session(&slot.key.session).to_string()).collect();
        names.sort();
        names.dedup();
        names
    }

    /// The slots of `session`, its per-call calls' included.
    fn slots_of(&self, session: &str) -> Vec<Arc<Slot>> {
        let slots = self.slots.lock().unwrap();
        slots.values().filter(|slot| base_session(&slot.key.session) == session).cloned().collect()
    }

    /// Interrupt the cells `session` runs now (its per-call calls' kernels
    /// included); how many kernels were told. A kernel no call is running cells
    /// in is left alone (idle, or being forked, saved or put away): SIGINT goes
    /// to its whole process group, whose background children it would end.
    pub fn interrupt_session(&self, session: &str) -> usize {
        let slots = self.slots_of(session);
        let busy = slots.iter().filter(|slot| slot.calling.load(std::sync::atomic::Ordering::SeqCst));
        let kernels = busy.filter_map(|slot| slot.current.lock().unwrap().clone());
        kernels.filter(|kernel| kernel.interrupt().is_ok()).count()
    }

    /// Stop every kernel of `session` (all cwds and languages); the next call starts fresh.
    /// Returns how many kernels were stopped, hibernated ones (whose saved variables are dropped) included.
    pub async fn reset_session(&self, session: &str) -> usize {
        let slots: Vec<Arc<Slot>> =
            self.slots.lock().unwrap().values().filter(|slot| slot.key.session == session).cloned().collect();
        for slot in &slots {
            slot.resets.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
        // A hibernated kernel's saved variables are dropped: that session is reset too.
        let mut stopped = self.hibernation.as_ref().map_or(0, |hibernation| hibernation.forget(session));
        for slot in slots {
            let kernel = slot.current.lock().unwrap().take();
            if let Some(kernel) = kernel {
                kernel.shutdown().await;
                stopped += 1;
            }
        }
        stopped
    }

    /// Forget a slot and stop its kernel in the background (the end of a
    /// per-call call: its result need not wait for the interpreter's exit).
    pub async fn release(&self, key: &KernelKey) {
        let slot = self.slots.lock().unwrap().remove(key);
        if let Some(slot) = slot {
            slot.disposed.store(true, std::sync::atomic::Ordering::SeqCst);
            let kernel = slot.current.lock().unwrap().take();
            if let Some(kernel) = kernel {
                self.retire(kernel);
            }
        }
    }

    /// Whether a slot for `key` exists (it may hold no kernel).
    pub fn has_slot(&self, key: &KernelKey) -> bool {
        self.slots.lock().unwrap().contains_key(key)
    }

    /// Number of slots (with or without a live kernel).
    pub fn slot_count(&self) -> usize {
        self.slots.lock().unwrap().len()
    }

    /// Pids of the live kernels (for diagnostics and tests).
    pub fn kernel_pids(&self) -> Vec<u32> {
        let slots: Vec<Arc<Slot>> = self.slots.lock().unwrap().values().cloned().collect();
        slots.iter().filter_map(|slot| slot.current.lock().unwrap().as_ref().and_then(|k| k.pid())).collect()
    }

    /// The live kernels, busy (a call holds the slot) or idle, and the calls waiting for one.
    pub fn kernel_states(&self) -> KernelStates {
        let slots: Vec<Arc<Slot>> = self.slots.lock().unwrap().values().cloned().collect();
        let queued_calls = slots.iter().map(|slot| slot.waiting.load(std::sync::atomic::Ordering::Relaxed)).sum();
        let mut states = KernelStates { queued_calls, ..KernelStates::default() };
        for slot in slots.iter().filter(|slot| slot.has_kernel()) {
            match slot.state.try_lock() {
                Ok(_) => states.idle += 1,
                Err(_) => states.busy += 1,
            }
        }
        states
    }

    /// Kernels stopped by the pool itself since it was made.
    pub fn evictions(&self) -> Evictions {
        *self.evictions.lock().unwrap()
    }

    /// Live kernels in slots other than `except` (spares are counted by their own pool).
    pub fn live_count(&self, except: Option<&KernelKey>) -> usize {
        let slots: Vec<Arc<Slot>> = self.slots.lock().unwrap().values().cloned().collect();
        slots.iter().filter(|slot| Some(&slot.key) != except && slot.has_kernel()).count()
    }

    /// Remove `owner` from every slot; slots left without owners are shut
    /// down and forgotten. Idempotent.
    pub async fn dispose_owner(&self, owner: &str) {
        if let Some(hibernation) = &self.hibernation {
            hibernation.drop_owner(owner);
        }
        let orphaned: Vec<Arc<Slot>> = {
            let mut slots = self.slots.lock().unwrap();
            let keys: Vec<KernelKey> = slots
                .values()
                .filter(|slot| {
                    let mut owners = slot.owners.lock().unwrap();
                    owners.remove(owner) && owners.is_empty()
                })
                .map(|slot| slot.key.clone())
                .collect();
            keys.iter().filter_map(|key| slots.remove(key)).collect()
        };
        shutdown_slots(orphaned).await;
    }

    /// The slots of `session` (every cwd and language) that hold a kernel now.
    pub fn live_slots_of(&self, session: &str) -> Vec<Arc<Slot>> {
        let slots = self.slots.lock().unwrap();
        slots.values().filter(|slot| slot.key.session == session && slot.has_kernel()).cloned().collect()
    }

    /// The slots of `session` (every cwd and language) with the pid of
    /// each live kernel, for listing what a session holds.
    pub fn kernels_of(&self, session: &str) -> Vec<(KernelKey, Option<u32>)> {
        let slots = self.slots_of(session);
        slots
            .iter()
            .map(|slot| (slot.key.clone(), slot.current.lock().unwrap().as_ref().and_then(|k| k.pid())))
            .collect()
    }

    /// Shut every kernel down (host exit). Waits for running calls' kernels
    /// only as long as the shutdown ladder takes.
    pub async fn dispose_all(&self) {
        let all: Vec<Arc<Slot>> = self.slots.lock().unwrap().drain().map(|(_, slot)| slot).collect();
        shutdown_slots(all).await;
        let retiring: Vec<_> = self.retiring.lock().unwrap().drain(..).collect();
        for task in retiring {
            let _ = task.await;
        }
    }

    /// Shut a kernel that was taken out of its slot down in the background
    /// (a `reset`: the call goes on at once with the next kernel, often a
    /// warm spare). [`KernelPool::dispose_all`] waits for these.
    pub fn retire(&self, kernel: Arc<Kernel>) {
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            drop(kernel); // dropping the last handle kills the group
            return;
        };
        let task = handle.spawn(async move {
            kernel.shutdown().await;
        });
        let mut retiring = self.retiring.lock().unwrap();
        retiring.retain(|task| !task.is_finished());
        retiring.push(task);
    }
}

async fn shutdown_slots(slots: Vec<Arc<Slot>>) {
    let handles: Vec<_> = slots.into_iter().map(|slot| tokio::spawn(async move { slot.dispose().await })).collect();
    for handle in handles {
        let _ = handle.await;
    }
}

/// Memory only process `pid` holds: its private pages (copy-on-write pages
/// it shares with a fork are not counted until one side writes them), from
/// smaps_rollup (Linux); None elsewhere.
pub fn private_bytes(pid: u32) -> Option<u64> {
    let rollup = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).ok()?;
    let kib: u64 = rollup
        .lines()
        .filter(|line| line.starts_with("Private_Clean:") || line.starts_with("Private_Dirty:"))
        .filter_map(|line| line.split_whitespace().nth(1)?.parse::<u64>().ok())
        .sum();
    Some(kib * 1024)
}

/// What a per-call call's own kernel key puts between its session and its number (`SESSION#call-N`).
pub const PER_CALL_MARK: &str = "#call-";

/// The session a slot's key belongs to (`SESSION#call-N` is SESSION's; session names have no `#`).
fn base_session(key: &str) -> &str {
    key.rsplit_once(PER_CALL_MARK)
        .filter(|(_, number)| !number.is_empty() && number.bytes().all(|b| b.is_ascii_digit()))
        .map_or(key, |(session, _)| session)
}

/// Resident memory of a process, from /proc (Linux); None elsewhere.
///
/// Read after every call (the memory limit's check), so from `statm`: one
/// short line the kernel makes cheaply, where `status` formats fifty fields.
pub fn resident_bytes(pid: u32) -> Option<u64> {
    statm_resident(&std::fs::File::open(format!("/proc/{pid}/statm")).ok()?)
}

/// The resident bytes an open `statm` says now (read from its start, whatever was read before).
fn statm_resident(file: &std::fs::File) -> Option<u64> {
    #[cfg(unix)]
    let (page, line, read) = {
        use std::os::unix::fs::FileExt;
        let page = nix::unistd::sysconf(nix::unistd::SysconfVar::PAGE_SIZE).ok()?? as u64;
        let mut line = [0u8; 256];
        let read = file.read_at(&mut line, 0).ok()?;
        (page, line, read)
    };
    #[cfg(not(unix))]
    let (page, line, read) = {
        use std::io::Read;
        let mut line = [0u8; 256];
        let read = (&*file).read(&mut line).ok()?;
        (4096u64, line, read)
    };
    // size resident shared text lib data dt, in pages
    let pages: u64 = std::str::from_utf8(&line[..read]).ok()?.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * page)
}
