//! The per-cell wall-clock budget.
//!
//! The budget can be paused (reference-counted) while the host itself does
//! work on the cell's behalf, such as a host-bridge call; each resume starts
//! a fresh window. Nothing else pauses it.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

#[derive(Debug)]
pub struct Watchdog {
    budget: Duration,
    state: Mutex<State>,
    changed: Notify,
}

#[derive(Debug)]
struct State {
    paused: u32,
    deadline: Instant,
}

impl Watchdog {
    /// Start a budget of `budget` from now.
    pub fn new(budget: Duration) -> Arc<Self> {
        Arc::new(Watchdog {
            budget,
            state: Mutex::new(State { paused: 0, deadline: Instant::now() + budget }),
            changed: Notify::new(),
        })
    }

    pub fn budget(&self) -> Duration {
        self.budget
    }

    /// Suspend the budget until the guard is dropped.
    pub fn pause(self: &Arc<Self>) -> PauseGuard {
        self.state.lock().unwrap().paused += 1;
        self.changed.notify_waiters();
        PauseGuard(self.clone())
    }

    fn resume(&self) {
        let mut state = self.state.lock().unwrap();
        state.paused -= 1;
        if state.paused == 0 {
            state.deadline = Instant::now() + self.budget;
        }
        drop(state);
        self.changed.notify_waiters();
    }

    /// Completes once the budget is spent while not paused.
    pub async fn expired(&self) {
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let (paused, deadline) = {
                let state = self.state.lock().unwrap();
                (state.paused > 0, state.deadline)
            };
            if paused {
                notified.await;
                continue;
            }
            tokio::select! {
                _ = tokio::time::sleep_until(deadline) => {
                    let state = self.state.lock().unwrap();
                    if state.paused == 0 && Instant::now() >= state.deadline {
                        return;
                    }
                }
                _ = notified => {}
            }
        }
    }
}

/// Resumes the watchdog when dropped.
#[derive(Debug)]
pub struct PauseGuard(Arc<Watchdog>);

impl Drop for PauseGuard {
    fn drop(&mut self) {
        self.0.resume();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn expires_after_the_budget() {
        let dog = Watchdog::new(Duration::from_secs(10));
        let start = Instant::now();
        dog.expired().await;
        assert_eq!(start.elapsed().as_secs(), 10);
    }

    #[tokio::test(start_paused = true)]
    async fn pauses_nest_and_resume_starts_a_fresh_window() {
        let dog = Watchdog::new(Duration::from_secs(10));
        let start = Instant::now();
        tokio::time::sleep(Duration::from_secs(8)).await;
        let outer = dog.pause();
        let inner = dog.pause();
        let waiter = {
            let dog = dog.clone();
            tokio::spawn(async move { dog.expired().await })
        };
        tokio::time::sleep(Duration::from_secs(100)).await;
        drop(outer);
        tokio::time::sleep(Duration::from_secs(100)).await;
        assert!(!waiter.is_finished(), "still paused by the inner guard");
        drop(inner);
        waiter.await.unwrap();
        assert_eq!(start.elapsed().as_secs(), 8 + 200 + 10);
    }
}
