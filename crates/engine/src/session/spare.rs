//! Warm spares: kernels started ahead of need, so a `reset`, a per-call call,
//! a new session or the replacement of a dead kernel gets a ready kernel
//! instead of paying a full interpreter start.
//!
//! A spare is keyed by the complete [`KernelOptions`] it was started with
//! (runtime, interpreter, cwd, environment, and whatever else the spawn path
//! uses), so a kernel is only ever handed to a caller that would have started
//! exactly the same one. A spare never runs user code before it is handed
//! out: it has only done the kernel's own start (handshake, init, prelude).
//! Each spare is handed out at most once (it is removed from the pool under a
//! lock before anyone waits on it), and a spare nobody asked for within the
//! idle limit is shut down.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::handle::{Backend, KernelHandle as Kernel};
use crate::kernel::{KernelError, KernelOptions};

/// How many spares to keep, and for how long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpareLimits {
    /// Spares kept ready per kernel configuration in use; `0` turns spares off. Default 1.
    pub count: usize,
    /// A configuration whose spare was not asked for this long loses it
    /// (`None`: spares never expire). Default 10 minutes.
    pub idle: Option<Duration>,
}

impl Default for SpareLimits {
    fn default() -> Self {
        SpareLimits { count: 1, idle: Some(Duration::from_secs(10 * 60)) }
    }
}

impl SpareLimits {
    /// No spares at all (one-shot commands, where a spare would only cost CPU).
    pub const OFF: SpareLimits = SpareLimits { count: 0, idle: None };
}

/// A kernel being started, or started, in the background.
struct Spare {
    task: JoinHandle<Result<Kernel, KernelError>>,
    /// Set once the kernel is ready.
    pid: Arc<OnceLock<u32>>,
}

impl Spare {
    fn start(handle: &tokio::runtime::Handle, options: KernelOptions, backend: Backend) -> Spare {
        let pid = Arc::new(OnceLock::new());
        let ready = pid.clone();
        let task = handle.spawn(async move {
            let kernel = Kernel::start(options, &backend).await?;
            if let Some(pid) = kernel.pid() {
                let _ = ready.set(pid);
            }
            Ok(kernel)
        });
        Spare { task, pid }
    }
}

/// The spares of one kernel configuration.
struct Entry {
    options: KernelOptions,
    spares: VecDeque<Spare>,
    /// When a caller last asked for this configuration (taken or filled).
    last_wanted: Instant,
}

/// Every spare of one engine.
pub struct SparePool {
    limits: SpareLimits,
    /// How the spares are reached (the engine's one backend).
    backend: Backend,
    entries: Mutex<Vec<Entry>>,
    closed: AtomicBool,
}

impl std::fmt::Debug for SparePool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SparePool").field("limits", &self.limits).field("spares", &self.len()).finish()
    }
}

impl SparePool {
    /// A pool; when a tokio runtime is running and spares expire, a reaper
    /// shuts down the spares of configurations nobody asked for lately.
    pub fn new(limits: SpareLimits, backend: Backend) -> Arc<Self> {
        let pool =
            Arc::new(SparePool { limits, backend, entries: Mutex::new(Vec::new()), closed: AtomicBool::new(false) });
        if let (Some(idle), Ok(handle), true) = (limits.idle, tokio::runtime::Handle::try_current(), limits.count > 0) {
            handle.spawn(reap_idle(Arc::downgrade(&pool), idle));
        }
        pool
    }

    pub fn limits(&self) -> SpareLimits {
        self.limits
    }

    /// Whether spares are on.
    pub fn enabled(&self) -> bool {
        self.limits.count > 0
    }

    /// Number of spares, started or starting.
    pub fn len(&self) -> usize {
        self.entries.lock().unwrap().iter().map(|entry| entry.spares.len()).sum()
    }

    /// True when no spare is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Pids of the spares that finished starting (for diagnostics and tests).
    pub fn pids(&self) -> Vec<u32> {
        let entries = self.entries.lock().unwrap();
        entries.iter().flat_map(|entry| entry.spares.iter()).filter_map(|spare| spare.pid.get().copied()).collect()
    }

    /// The spare for exactly `options`, if one is kept: a ready kernel, or one
    /// still starting (waited for: it is ahead of a fresh start). `None` when
    /// there is none or it failed to start; the caller then starts its own,
    /// which reports any real error.
    pub async fn take(&self, options: &KernelOptions) -> Option<Kernel> {
        let spare = {
            let mut entries = self.entries.lock().unwrap();
            let entry = entries.iter_mut().find(|entry| &entry.options == options)?;
            entry.last_wanted = Instant::now();
            entry.spares.pop_front()?
        };
        match spare.task.await {
            Ok(Ok(kernel)) if kernel.is_alive() => Some(kernel),
            Ok(Ok(kernel)) => {
                kernel.shutdown().await;
                None
            }
            Ok(Err(error)) => {
                tracing::debug!("a spare kernel failed to start: {error}");
                None
            }
            Err(_) => None,
        }
    }

    /// Keep `count` spares for `options`, starting at most `room` new ones in
    /// the background (the caller's share of the live-kernel limit).
    pub fn fill(&self, options: &KernelOptions, room: usize) {
        if !self.enabled() || self.closed.load(Ordering::SeqCst) {
            return;
        }
        let Ok(handle) = tokio::runtime::Handle::try_current() else { return };
        let mut entries = self.entries.lock().unwrap();
        let position = match entries.iter().position(|entry| &entry.options == options) {
            Some(position) => position,
            None => {
                entries.push(Entry { options: options.clone(), spares: VecDeque::new(), last_wanted: Instant::now() });
                entries.len() - 1
            }
        };
        let entry = &mut entries[position];
        entry.last_wanted = Instant::now();
        let missing = self.limits.count.saturating_sub(entry.spares.len()).min(room);
        for _ in 0..missing {
            entry.spares.push_back(Spare::start(&handle, options.clone(), self.backend.clone()));
        }
    }

    /// Shut down spares (those of other configurations than `keep` first)
    /// until at most `allowed` are left: a spare holds no state, so it gives
    /// way before any kernel in use. Returns how many were shut down.
    pub async fn shed(&self, allowed: usize, keep: Option<&KernelOptions>) -> usize {
        let victims: Vec<Spare> = {
            let mut entries = self.entries.lock().unwrap();
            let mut total: usize = entries.iter().map(|entry| entry.spares.len()).sum();
            let mut victims = Vec::new();
            // Other configurations first, then the kept one.
            let mut order: Vec<usize> = (0..entries.len()).collect();
            order.sort_by_key(|&i| keep.is_some_and(|keep| &entries[i].options == keep));
            for i in order {
                while total > allowed {
                    let Some(spare) = entries[i].spares.pop_back() else { break };
                    victims.push(spare);
                    total -= 1;
                }
            }
            entries.retain(|entry| !entry.spares.is_empty() || keep.is_some_and(|keep| &entry.options == keep));
            victims
        };
        let count = victims.len();
        stop_all(victims).await;
        count
    }

    /// Shut every spare down and start no more (host exit).
    pub async fn dispose_all(&self) {
        self.closed.store(true, Ordering::SeqCst);
        let victims: Vec<Spare> =
            self.entries.lock().unwrap().drain(..).flat_map(|entry| entry.spares.into_iter()).collect();
        stop_all(victims).await;
    }

    async fn reap_idle_once(&self, idle: Duration) {
        let victims: Vec<Spare> = {
            let mut entries = self.entries.lock().unwrap();
            let mut victims = Vec::new();
            entries.retain_mut(|entry| {
                if entry.last_wanted.elapsed() < idle {
                    return true;
                }
                victims.extend(entry.spares.drain(..));
                false
            });
            victims
        };
        stop_all(victims).await;
    }
}

impl Drop for SparePool {
    /// A pool dropped without [`SparePool::dispose_all`] still leaves nothing
    /// running: starts are abandoned (killing their groups) and ready kernels
    /// are dropped with their join handles (which kills their groups).
    fn drop(&mut self) {
        for entry in self.entries.get_mut().unwrap().drain(..) {
            for spare in entry.spares {
                spare.task.abort();
            }
        }
    }
}

/// Stop spares, each with the normal shutdown. One still starting is let
/// finish first: abandoning a start would leave a gateway kernel behind
/// (only a process kernel's group dies with its dropped start).
async fn stop_all(spares: Vec<Spare>) {
    let stops = spares.into_iter().map(|spare| async move {
        if let Ok(Ok(kernel)) = spare.task.await {
            kernel.shutdown().await;
        }
    });
    futures_util::future::join_all(stops).await;
}

async fn reap_idle(pool: Weak<SparePool>, idle: Duration) {
    let period = (idle / 4).clamp(Duration::from_millis(50), Duration::from_secs(60));
    loop {
        tokio::time::sleep(period).await;
        let Some(pool) = pool.upgrade() else { return };
        pool.reap_idle_once(idle).await;
    }
}
