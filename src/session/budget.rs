//! A cap on live kernels shared by several engines: a server's principals
//! each have an engine of their own (with `max_kernels` each), and the
//! machine has one memory. Every engine given the same [`KernelBudget`]
//! counts against it; a start beyond it first makes warm spares give way,
//! then fails with a retryable error instead of starting (or waiting).

use std::sync::{Arc, Mutex, Weak};

use super::{KernelPool, SparePool};

/// The cap, and the engines' pools it counts.
#[derive(Debug)]
pub struct KernelBudget {
    limit: usize,
    counted: Mutex<Counted>,
}

#[derive(Debug, Default)]
struct Counted {
    pools: Vec<Weak<KernelPool>>,
    spares: Vec<Weak<SparePool>>,
    /// Starts reserved and not yet in a pool.
    starting: usize,
}

/// A start allowed by the budget; it counts until dropped (by then the kernel is in its pool).
#[derive(Debug)]
pub struct Reservation(Arc<KernelBudget>);

impl Drop for Reservation {
    fn drop(&mut self) {
        self.0.counted.lock().unwrap().starting -= 1;
    }
}

impl KernelBudget {
    /// At most `limit` live kernels (at least 1) over every engine registered.
    pub fn new(limit: usize) -> Arc<KernelBudget> {
        Arc::new(KernelBudget { limit: limit.max(1), counted: Mutex::default() })
    }

    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Count an engine's kernels and spares from now on.
    pub fn register(&self, pool: &Arc<KernelPool>, spares: &Arc<SparePool>) {
        let mut counted = self.counted.lock().unwrap();
        counted.pools.retain(|pool| pool.strong_count() > 0);
        counted.spares.retain(|spares| spares.strong_count() > 0);
        counted.pools.push(Arc::downgrade(pool));
        counted.spares.push(Arc::downgrade(spares));
    }

    /// Live kernels and ready spares of every registered engine, and starts under way.
    pub fn used(&self) -> usize {
        used(&self.counted.lock().unwrap())
    }

    /// Room for one more kernel, or `None` when the budget is spent.
    pub fn reserve(self: &Arc<Self>) -> Option<Reservation> {
        let mut counted = self.counted.lock().unwrap();
        if used(&counted) >= self.limit {
            return None;
        }
        counted.starting += 1;
        Some(Reservation(self.clone()))
    }

    /// Make room by stopping warm spares (they hold no state), as many as needed
    /// for one more kernel; true when there is room now.
    pub async fn shed_spares(&self) -> bool {
        let spares: Vec<Arc<SparePool>> =
            self.counted.lock().unwrap().spares.iter().filter_map(Weak::upgrade).collect();
        for pool in spares {
            if self.used() < self.limit {
                break;
            }
            let over = self.used() + 1 - self.limit;
            pool.shed(pool.len().saturating_sub(over), None).await;
        }
        self.used() < self.limit
    }
}

fn used(counted: &Counted) -> usize {
    let kernels: usize = counted.pools.iter().filter_map(Weak::upgrade).map(|pool| pool.live_count(None)).sum();
    let spares: usize = counted.spares.iter().filter_map(Weak::upgrade).map(|pool| pool.len()).sum();
    kernels + spares + counted.starting
}
