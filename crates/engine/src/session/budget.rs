//! A cap on live kernels shared by several engines: a server's principals
//! each have an engine of their own (with `max_kernels` each), and the
//! machine has one memory. Every engine given the same [`KernelBudget`]
//! counts against it; a start beyond it first makes warm spares give way,
//! then fails with a retryable error instead of starting (or waiting).
//!
//! Budgets nest: a principal's budget (its MCP engine and every SDK sandbox
//! it opens) lies within the server's, so no principal can take every kernel.

use std::sync::{Arc, Mutex, Weak};

use super::{KernelPool, SparePool};

/// The cap, and the engines' pools it counts.
#[derive(Debug)]
pub struct KernelBudget {
    limit: usize,
    counted: Mutex<Counted>,
    /// The budget this one lies within: its kernels count there too.
    within: Option<Arc<KernelBudget>>,
}

#[derive(Debug, Default)]
struct Counted {
    pools: Vec<Weak<KernelPool>>,
    spares: Vec<Weak<SparePool>>,
    /// Starts reserved and not yet in a pool.
    starting: usize,
}

/// A start allowed by the budget (and the ones it lies within); it counts
/// until dropped (by then the kernel is in its pool).
#[derive(Debug)]
pub struct Reservation {
    budget: Arc<KernelBudget>,
    /// The outer budget's reservation, given back with this one.
    _outer: Option<Box<Reservation>>,
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.budget.counted.lock().unwrap().starting -= 1;
    }
}

impl KernelBudget {
    /// At most `limit` live kernels (at least 1) over every engine registered.
    pub fn new(limit: usize) -> Arc<KernelBudget> {
        Arc::new(KernelBudget { limit: limit.max(1), counted: Mutex::default(), within: None })
    }

    /// At most `limit` live kernels here, each also counted in `outer`.
    pub fn within(limit: usize, outer: &Arc<KernelBudget>) -> Arc<KernelBudget> {
        Arc::new(KernelBudget { limit: limit.max(1), counted: Mutex::default(), within: Some(outer.clone()) })
    }

    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Count an engine's kernels and spares from now on (in the outer budgets too).
    pub fn register(&self, pool: &Arc<KernelPool>, spares: &Arc<SparePool>) {
        let mut counted = self.counted.lock().unwrap();
        counted.pools.retain(|pool| pool.strong_count() > 0);
        counted.spares.retain(|spares| spares.strong_count() > 0);
        counted.pools.push(Arc::downgrade(pool));
        counted.spares.push(Arc::downgrade(spares));
        drop(counted);
        if let Some(outer) = &self.within {
            outer.register(pool, spares);
        }
    }

    /// Live kernels and ready spares of every registered engine, and starts under way.
    pub fn used(&self) -> usize {
        used(&self.counted.lock().unwrap())
    }

    /// Room for one more kernel (here and in the outer budgets), or `None`
    /// when one of them is spent; [`KernelBudget::full`] says which.
    pub fn reserve(self: &Arc<Self>) -> Option<Reservation> {
        let outer = match &self.within {
            Some(outer) => Some(Box::new(outer.reserve()?)),
            None => None,
        };
        let mut counted = self.counted.lock().unwrap();
        if used(&counted) >= self.limit {
            return None;
        }
        counted.starting += 1;
        Some(Reservation { budget: self.clone(), _outer: outer })
    }

    /// The limit of the innermost budget that is spent, if one is, and
    /// whether it is this one (not an outer one).
    pub fn full(&self) -> Option<(usize, bool)> {
        if self.used() >= self.limit {
            return Some((self.limit, true));
        }
        self.within.as_ref().and_then(|outer| outer.full()).map(|(limit, _)| (limit, false))
    }

    /// How many more kernels fit, here and in the outer budgets.
    pub fn room(&self) -> usize {
        let here = self.limit.saturating_sub(self.used());
        self.within.as_ref().map_or(here, |outer| here.min(outer.room()))
    }

    /// Whether this budget lies within another (it is one principal's, not the server's).
    pub fn is_inner(&self) -> bool {
        self.within.is_some()
    }

    /// Make room by stopping warm spares (they hold no state), as many as needed
    /// for one more kernel, here and in the outer budgets; true when there is room now.
    pub async fn shed_spares(&self) -> bool {
        if let Some(outer) = &self.within
            && !Box::pin(outer.shed_spares()).await
        {
            return false;
        }
        let spares: Vec<Arc<SparePool>> =
            self.counted.lock().unwrap().spares.iter().filter_map(Weak::upgrade).collect();
        for pool in spares {
            if self.used() < self.limit {
                break;
            }
            let over = (self.used() + 1).saturating_sub(self.limit);
            pool.shed(pool.len().saturating_sub(over), None).await;
        }
        self.used() < self.limit
    }
}

impl KernelBudget {
    /// Make room by hibernating the least recently used idle Python kernel
    /// among the engines counted in the spent budget (its state is kept and
    /// comes back at its session's next call); true when there is room now.
    /// At most one kernel per budget is stopped for one start, and a kernel
    /// that cannot be hibernated is left running.
    pub async fn hibernate_oldest(&self) -> bool {
        if let Some(outer) = &self.within
            && outer.used() >= outer.limit
            && !Box::pin(outer.hibernate_oldest()).await
        {
            return false;
        }
        if self.used() >= self.limit {
            let pools: Vec<Arc<KernelPool>> =
                self.counted.lock().unwrap().pools.iter().filter_map(Weak::upgrade).collect();
            let oldest =
                pools.iter().filter_map(|pool| Some((pool.oldest_hibernatable()?, pool))).max_by_key(|(idle, _)| *idle);
            let Some((_, pool)) = oldest else { return false };
            if !pool.hibernate_oldest(self.limit).await {
                return false;
            }
        }
        self.used() < self.limit
    }
}

fn used(counted: &Counted) -> usize {
    let kernels: usize = counted.pools.iter().filter_map(Weak::upgrade).map(|pool| pool.live_count(None)).sum();
    let spares: usize = counted.spares.iter().filter_map(Weak::upgrade).map(|pool| pool.len()).sum();
    kernels + spares + counted.starting
}
