//! What an engine's sessions do, as it happens, for whoever watches (the web
//! view of `cellbox serve`).
//!
//! Every call publishes its start (the cells' code), each event it streams and
//! its end to a broadcast channel. Nothing is cloned or sent while no one
//! watches: a call asks [`LiveFeed::watched`] once. A watcher that falls
//! behind loses the oldest events (it is told how many) instead of slowing the
//! calls down: the channel holds [`BACKLOG`] events.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use tokio::sync::broadcast;

use super::result::{CellStatus, EvalEvent};

/// Events a watcher may be behind before it loses the oldest.
pub const BACKLOG: usize = 4096;

/// One thing a session did.
#[derive(Debug, Clone)]
pub struct LiveEvent {
    /// Increasing over the engine's life.
    pub seq: u64,
    /// The engine's session key.
    pub session: String,
    /// Milliseconds since the Unix epoch.
    pub at_ms: u64,
    pub kind: LiveKind,
}

#[derive(Debug, Clone)]
pub enum LiveKind {
    /// A call began: its cells, in order (code and language).
    CallStarted { call: u64, cells: Vec<(String, String)> },
    /// Something the call streamed.
    Event { call: u64, event: EvalEvent },
    /// The call ended; `status` is its last cell's.
    CallFinished { call: u64, status: Option<CellStatus>, duration_ms: u64 },
    /// The session's kernels were restarted (its variables are gone).
    Reset,
}

/// The feed of one engine.
#[derive(Debug)]
pub struct LiveFeed {
    sender: broadcast::Sender<LiveEvent>,
    seq: AtomicU64,
    calls: AtomicU64,
    /// Each session's last start or end of a call, and its calls running.
    activity: Mutex<HashMap<String, Activity>>,
}

/// A session's activity.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Activity {
    /// When it last started or ended a call (ms since the epoch).
    pub last_ms: u64,
    /// Its calls running now.
    pub running: usize,
}

impl Default for LiveFeed {
    fn default() -> Self {
        LiveFeed {
            sender: broadcast::channel(BACKLOG).0,
            seq: AtomicU64::new(0),
            calls: AtomicU64::new(0),
            activity: Mutex::default(),
        }
    }
}

/// A call running; dropped when it ends, however it ends.
#[derive(Debug)]
pub struct CallInFlight<'a> {
    feed: &'a LiveFeed,
    session: &'a str,
    pub call: u64,
    started: std::time::Instant,
    /// Its last cell's status, once known.
    pub status: Option<CellStatus>,
}

impl Drop for CallInFlight<'_> {
    fn drop(&mut self) {
        self.feed.finished(self.session);
        let duration_ms = self.started.elapsed().as_millis() as u64;
        let (call, status) = (self.call, self.status);
        self.feed.publish(self.session, LiveKind::CallFinished { call, status, duration_ms });
    }
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

impl LiveFeed {
    /// Follow every session's events from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<LiveEvent> {
        self.sender.subscribe()
    }

    /// Whether anyone watches (events are built only then).
    pub fn watched(&self) -> bool {
        self.sender.receiver_count() > 0
    }

    /// A call of `session` begins: its number, and a guard that says it
    /// ended (with the status set on it, or none if the call was dropped).
    pub fn begin<'a>(&'a self, session: &'a str) -> CallInFlight<'a> {
        self.update(session, |activity| activity.running += 1);
        let call = self.calls.fetch_add(1, Ordering::Relaxed) + 1;
        CallInFlight { feed: self, session, call, started: std::time::Instant::now(), status: None }
    }

    /// A call of `session` ended.
    fn finished(&self, session: &str) {
        self.update(session, |activity| activity.running = activity.running.saturating_sub(1));
    }

    fn update(&self, session: &str, change: impl FnOnce(&mut Activity)) {
        let now = now_ms();
        let mut activity = self.activity.lock().unwrap();
        let entry = match activity.get_mut(session) {
            Some(entry) => entry,
            None => activity.entry(session.to_string()).or_default(),
        };
        entry.last_ms = now;
        change(entry);
    }

    /// What `session` last did, if this feed saw it.
    pub fn activity(&self, session: &str) -> Option<Activity> {
        self.activity.lock().unwrap().get(session).copied()
    }

    /// Every session this feed has seen.
    pub fn sessions(&self) -> Vec<String> {
        self.activity.lock().unwrap().keys().cloned().collect()
    }

    /// Send `kind` to the watchers, if any.
    pub fn publish(&self, session: &str, kind: LiveKind) {
        if !self.watched() {
            return;
        }
        let seq = self.seq.fetch_add(1, Ordering::Relaxed) + 1;
        let _ = self.sender.send(LiveEvent { seq, session: session.to_string(), at_ms: now_ms(), kind });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_is_sent_without_a_watcher_and_a_watcher_sees_events_in_order() {
        let feed = LiveFeed::default();
        feed.publish("a", LiveKind::Reset);
        let mut watcher = feed.subscribe();
        let call = feed.begin("a");
        feed.publish("a", LiveKind::CallStarted { call: call.call, cells: vec![("1+1".into(), "py".into())] });
        assert_eq!(feed.activity("a").unwrap().running, 1);
        drop(call);
        assert_eq!(feed.activity("a").unwrap().running, 0);
        let first = watcher.try_recv().unwrap();
        let second = watcher.try_recv().unwrap();
        assert!(matches!(first.kind, LiveKind::CallStarted { .. }), "{first:?}");
        assert!(matches!(second.kind, LiveKind::CallFinished { status: None, .. }), "{second:?}");
        assert!(second.seq > first.seq);
        assert!(watcher.try_recv().is_err(), "the event sent before anyone watched is not queued");
        feed.finished("a");
        assert_eq!(feed.activity("a").unwrap().running, 0, "never below zero");
        assert_eq!(feed.sessions(), vec!["a".to_string()]);
    }

    #[test]
    fn a_watcher_that_falls_behind_loses_the_oldest_and_is_told() {
        let feed = LiveFeed::default();
        let mut watcher = feed.subscribe();
        for _ in 0..BACKLOG + 10 {
            feed.publish("a", LiveKind::Reset);
        }
        match watcher.try_recv() {
            Err(broadcast::error::TryRecvError::Lagged(lost)) => assert_eq!(lost, 10),
            other => panic!("expected a lag report, got {other:?}"),
        }
        assert_eq!(watcher.try_recv().unwrap().seq, 11);
    }
}
