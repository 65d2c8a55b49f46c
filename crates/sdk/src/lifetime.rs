//! The sandbox's idle lifetime: E2B's `timeout=` and `set_timeout()`.
//!
//! A cloud sandbox is billed while it exists, so E2B ends it once its
//! timeout passes. Here the SDK's process owns the engine anyway, so a
//! sandbox without a timeout lives until the SDK stops it; one with a
//! timeout ends once that long has passed with nothing to do: no call in
//! progress and no command running. A cell that runs for an hour is work,
//! not idleness, and ending it halfway would lose what it computes.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

/// The idle limit and what keeps the sandbox busy.
pub struct Lifetime {
    state: Mutex<State>,
    /// Woken on every change of `state`.
    changed: Notify,
}

struct State {
    /// `None`: no limit.
    limit: Option<Duration>,
    /// Calls in progress and commands running.
    busy: usize,
    /// When `busy` last fell to 0, or the limit was last set.
    idle_since: Instant,
}

/// Held while a call is in progress or a command runs.
pub struct Busy(Arc<Lifetime>);

impl Drop for Busy {
    fn drop(&mut self) {
        let mut state = self.0.state.lock().unwrap();
        state.busy -= 1;
        if state.busy == 0 {
            state.idle_since = Instant::now();
        }
        let watched = state.limit.is_some();
        drop(state);
        // Without a limit nothing waits on the count: no wake-up per call.
        if watched {
            self.0.changed.notify_waiters();
        }
    }
}

impl Lifetime {
    /// No limit until [`Lifetime::set`] gives one.
    pub fn new() -> Arc<Lifetime> {
        Arc::new(Lifetime {
            state: Mutex::new(State { limit: None, busy: 0, idle_since: Instant::now() }),
            changed: Notify::new(),
        })
    }

    /// A new limit (`None`: none), counted from now, as E2B's `set_timeout` counts.
    pub fn set(&self, limit: Option<Duration>) {
        let mut state = self.state.lock().unwrap();
        state.limit = limit;
        state.idle_since = Instant::now();
        drop(state);
        self.changed.notify_waiters();
    }

    /// The sandbox is busy until the guard is dropped.
    pub fn busy(self: &Arc<Self>) -> Busy {
        let mut state = self.state.lock().unwrap();
        state.busy += 1;
        let watched = state.limit.is_some();
        drop(state);
        if watched {
            self.changed.notify_waiters();
        }
        Busy(self.clone())
    }

    /// Returns the limit once the sandbox has been idle that long.
    pub async fn expired(&self) -> Duration {
        loop {
            // Made before the state is read, so no change in between is missed.
            let changed = self.changed.notified();
            let deadline = {
                let state = self.state.lock().unwrap();
                match state.limit {
                    Some(limit) if state.busy == 0 => Some((state.idle_since + limit, limit)),
                    _ => None,
                }
            };
            match deadline {
                Some((at, limit)) if at <= Instant::now() => return limit,
                Some((at, _)) => {
                    tokio::select! {
                        _ = tokio::time::sleep_until(at) => {}
                        _ = changed => {}
                    }
                }
                None => changed.await,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn idle_time_counts_only_without_work() {
        let lifetime = Lifetime::new();
        lifetime.set(Some(Duration::from_secs(10)));
        let busy = lifetime.busy();
        // Busy for an hour: nothing expires.
        tokio::select! {
            _ = lifetime.expired() => panic!("expired while busy"),
            _ = tokio::time::sleep(Duration::from_secs(3600)) => {}
        }
        drop(busy);
        let start = Instant::now();
        assert_eq!(lifetime.expired().await, Duration::from_secs(10));
        assert_eq!(start.elapsed(), Duration::from_secs(10), "counted from the end of the work");
    }

    #[tokio::test(start_paused = true)]
    async fn set_counts_from_now_and_none_means_no_limit() {
        let lifetime = Lifetime::new();
        lifetime.set(Some(Duration::from_secs(10)));
        tokio::time::sleep(Duration::from_secs(8)).await;
        lifetime.set(Some(Duration::from_secs(5)));
        let start = Instant::now();
        assert_eq!(lifetime.expired().await, Duration::from_secs(5));
        assert_eq!(start.elapsed(), Duration::from_secs(5));
        lifetime.set(None);
        tokio::select! {
            _ = lifetime.expired() => panic!("expired without a limit"),
            _ = tokio::time::sleep(Duration::from_secs(86_400)) => {}
        }
    }
}
