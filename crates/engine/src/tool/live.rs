//! What an engine's sessions do, as it happens, for whoever watches (the web
//! view of `cellbox serve` and `cellbox mcp --ui`).
//!
//! Every call publishes its start (the cells' code), each event it streams and
//! its end to a broadcast channel. No event is copied or sent while no one
//! watches ([`LiveFeed::watched`] is asked before each event); only each
//! running call's cells are kept, for a watcher that arrives while it runs
//! ([`LiveFeed::in_flight`]). A watcher that
//! falls behind loses the oldest events (it is told how many) instead of
//! slowing the calls down. The memory a slow watcher can hold is bounded: the
//! channel keeps [`BACKLOG`] events, and an event over [`MAX_EVENT_BYTES`] is
//! sent cut short (a stream) or as a note that names its size (a display); the
//! whole output stays in the session's notebook.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use super::result::{CellStatus, EvalEvent};

/// Events a watcher may be behind before it loses the oldest.
pub const BACKLOG: usize = 256;

/// The most one event carries (stream text, or a display's formats together).
pub const MAX_EVENT_BYTES: usize = 256 << 10;

/// Sessions whose activity is kept at most; past it, idle ones are forgotten.
const MAX_SESSIONS: usize = 4096;

/// One thing a session did.
#[derive(Debug, Clone)]
pub struct LiveEvent {
    /// Numbered over the engine's life (two calls publishing at once may send theirs out of order).
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
    /// The call ended; `status` is its last cell's (none when the call failed
    /// before a cell ran, or was dropped); `artifact` holds its full output.
    CallFinished { call: u64, status: Option<CellStatus>, duration_ms: u64, artifact: Option<String> },
    /// The session's kernels were restarted (its variables are gone).
    Reset,
    /// A person acted on the session from outside a call (the web view's
    /// `interrupt`, `reset`, `fork`, `undo`), as `by`.
    Action { action: &'static str, by: String, detail: Option<String> },
}

/// A call in progress, for a watcher that arrives while it runs.
#[derive(Debug, Clone)]
pub struct InFlight {
    pub call: u64,
    pub session: String,
    pub started_ms: u64,
    /// Its cells' code (cut as in [`LiveKind::CallStarted`]) and language.
    pub cells: Vec<(String, String)>,
}

/// The feed of one engine.
#[derive(Debug)]
pub struct LiveFeed {
    sender: broadcast::Sender<LiveEvent>,
    seq: AtomicU64,
    calls: AtomicU64,
    /// Each session's last start or end of a call, and its calls running.
    activity: Mutex<HashMap<String, Activity>>,
    /// The calls running now, by number (their cells once planned).
    in_flight: Mutex<HashMap<u64, InFlight>>,
    /// Cancelled when the engine is disposed: its watchers stop following it.
    closed: CancellationToken,
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
            in_flight: Mutex::default(),
            closed: CancellationToken::new(),
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
    /// Its full output's `artifact://` URI, once known.
    pub artifact: Option<String>,
}

impl Drop for CallInFlight<'_> {
    fn drop(&mut self) {
        self.feed.finished(self.session);
        self.feed.in_flight.lock().unwrap().remove(&self.call);
        let duration_ms = self.started.elapsed().as_millis() as u64;
        let (call, status, artifact) = (self.call, self.status, self.artifact.take());
        self.feed.publish(self.session, LiveKind::CallFinished { call, status, duration_ms, artifact });
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
        CallInFlight { feed: self, session, call, started: std::time::Instant::now(), status: None, artifact: None }
    }

    /// A call of `session` ended.
    fn finished(&self, session: &str) {
        self.update(session, |activity| activity.running = activity.running.saturating_sub(1));
    }

    fn update(&self, session: &str, change: impl FnOnce(&mut Activity)) {
        let now = now_ms();
        let mut activity = self.activity.lock().unwrap();
        if activity.len() >= MAX_SESSIONS && !activity.contains_key(session) {
            activity.retain(|_, entry| entry.running > 0);
        }
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

    /// The sessions running a call now.
    pub fn running(&self) -> Vec<String> {
        let activity = self.activity.lock().unwrap();
        activity.iter().filter(|(_, entry)| entry.running > 0).map(|(name, _)| name.clone()).collect()
    }

    /// Cancelled once the engine is disposed (its watchers should follow its successor).
    pub fn closed(&self) -> CancellationToken {
        self.closed.clone()
    }

    /// The engine is disposed.
    pub fn close(&self) {
        self.closed.cancel();
    }

    /// Publish what a call streamed, made small enough to keep (see the module's
    /// doc). Status events are not sent: the page shows none.
    pub fn publish_event(&self, session: &str, call: u64, event: &EvalEvent) {
        if self.watched() && !matches!(event, EvalEvent::Status { .. }) {
            self.publish(session, LiveKind::Event { call, event: bounded(event) });
        }
    }

    /// A call's cells are planned: keep them while it runs (for
    /// [`LiveFeed::in_flight`]) and publish its start, the code cut so that
    /// all of it stays within [`MAX_EVENT_BYTES`].
    pub(crate) fn publish_call(&self, session: &str, call: u64, plan: &[super::params::PlannedCell]) {
        let each = MAX_EVENT_BYTES / plan.len().max(1);
        let cells: Vec<(String, String)> =
            plan.iter().map(|cell| (cut_at(&cell.code, each), cell.language.as_str().to_string())).collect();
        if self.watched() {
            self.publish(session, LiveKind::CallStarted { call, cells: cells.clone() });
        }
        let started_ms = now_ms();
        let entry = InFlight { call, session: session.to_string(), started_ms, cells };
        self.in_flight.lock().unwrap().insert(call, entry);
    }

    /// `session`'s calls running now, oldest first.
    pub fn in_flight(&self, session: &str) -> Vec<InFlight> {
        let mut calls: Vec<InFlight> =
            self.in_flight.lock().unwrap().values().filter(|call| call.session == session).cloned().collect();
        calls.sort_by_key(|call| call.call);
        calls
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

/// `event` as a watcher gets it, within [`MAX_EVENT_BYTES`]: a stream's text,
/// an error's message and traceback and a title cut; a display without its
/// prepared parts (the bundle has every format) and, past the bound, a note
/// instead of its formats.
fn bounded(event: &EvalEvent) -> EvalEvent {
    match event {
        EvalEvent::Stdout { cell, text } => EvalEvent::Stdout { cell: *cell, text: cut(text) },
        EvalEvent::Stderr { cell, text } => EvalEvent::Stderr { cell: *cell, text: cut(text) },
        EvalEvent::CellStarted { index, title } => {
            EvalEvent::CellStarted { index: *index, title: title.as_deref().map(|title| cut_at(title, 1024)) }
        }
        EvalEvent::Error { cell, error } => {
            let mut error = crate::kernel::CellError {
                ename: cut_at(&error.ename, 1024),
                evalue: cut_at(&error.evalue, MAX_EVENT_BYTES / 4),
                traceback: error.traceback.clone(),
            };
            // The end of a traceback says where it failed: its last lines are kept.
            let mut room = MAX_EVENT_BYTES / 2;
            let kept = error
                .traceback
                .iter()
                .rev()
                .take_while(|line| room.checked_sub(line.len()).map(|left| room = left).is_some())
                .count();
            let dropped = error.traceback.len() - kept;
            if dropped > 0 {
                error.traceback.drain(..dropped);
                error.traceback.insert(0, format!("[{dropped} traceback lines cut: see the session's notebook]"));
            }
            EvalEvent::Error { cell: *cell, error }
        }
        EvalEvent::Display { cell, is_result, bundle, .. } => {
            let size = bundle.values().map(value_bytes).sum::<usize>();
            let bundle = if size > MAX_EVENT_BYTES {
                let mut note = crate::protocol::MimeBundle::new();
                let text =
                    format!("[an output of {size} bytes, too big to show as it happens: see the session's notebook]");
                note.insert("text/plain".into(), text.into());
                std::sync::Arc::new(note)
            } else {
                bundle.clone()
            };
            EvalEvent::Display { cell: *cell, parts: Vec::new(), is_result: *is_result, bundle }
        }
        other => other.clone(),
    }
}

fn cut(text: &str) -> String {
    cut_at(text, MAX_EVENT_BYTES)
}

/// `text` up to `limit` bytes (at a character's end), with a note of what was left out.
fn cut_at(text: &str, limit: usize) -> String {
    if text.len() <= limit {
        return text.to_string();
    }
    let mut end = limit;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}\n[{} bytes more: see the session's notebook]\n", &text[..end], text.len() - end)
}

/// About how many bytes `value` holds in memory: its strings and keys, and
/// each node itself (a `Value` is 32 bytes, however empty).
fn value_bytes(value: &serde_json::Value) -> usize {
    let node = std::mem::size_of::<serde_json::Value>();
    node + match value {
        serde_json::Value::String(text) => text.len(),
        serde_json::Value::Array(items) => items.iter().map(value_bytes).sum::<usize>(),
        serde_json::Value::Object(map) => map.iter().map(|(key, value)| key.len() + value_bytes(value)).sum(),
        _ => 0,
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
        assert!(feed.running().is_empty());
    }

    #[test]
    fn big_events_are_sent_bounded_and_small_ones_whole() {
        let feed = LiveFeed::default();
        let mut watcher = feed.subscribe();
        let huge = "x".repeat(MAX_EVENT_BYTES * 3);
        feed.publish_event("a", 1, &EvalEvent::Stdout { cell: 0, text: huge.clone() });
        let mut bundle = crate::protocol::MimeBundle::new();
        bundle.insert("text/html".into(), huge.into());
        let display =
            EvalEvent::Display { cell: 0, parts: Vec::new(), is_result: false, bundle: std::sync::Arc::new(bundle) };
        feed.publish_event("a", 1, &display);
        feed.publish_event("a", 1, &EvalEvent::Stdout { cell: 0, text: "é\n".into() });
        let sizes: Vec<String> = (0..3)
            .map(|_| match watcher.try_recv().unwrap().kind {
                LiveKind::Event { event: EvalEvent::Stdout { text, .. }, .. } => text,
                LiveKind::Event { event: EvalEvent::Display { bundle, .. }, .. } => {
                    serde_json::to_string(&*bundle).unwrap()
                }
                other => panic!("{other:?}"),
            })
            .collect();
        assert!(
            sizes[0].len() < MAX_EVENT_BYTES + 100 && sizes[0].ends_with("bytes more: see the session's notebook]\n")
        );
        assert!(sizes[1].len() < 200 && sizes[1].contains("too big to show"), "{}", sizes[1]);
        assert_eq!(sizes[2], "é\n");
    }

    #[test]
    fn errors_titles_and_deep_bundles_are_bounded_too() {
        let feed = LiveFeed::default();
        let mut watcher = feed.subscribe();
        let error = crate::kernel::CellError {
            ename: "ValueError".into(),
            evalue: "x".repeat(MAX_EVENT_BYTES * 2),
            traceback: (0..100_000).map(|n| format!("  frame {n}")).collect(),
        };
        feed.publish_event("a", 1, &EvalEvent::Error { cell: 0, error });
        let mut deep = crate::protocol::MimeBundle::new();
        deep.insert("application/json".into(), serde_json::Value::Array(vec![serde_json::json!([]); 20_000]));
        let display =
            EvalEvent::Display { cell: 0, parts: Vec::new(), is_result: false, bundle: std::sync::Arc::new(deep) };
        feed.publish_event("a", 1, &display);
        feed.publish_event("a", 1, &EvalEvent::Status { cell: 0, event: serde_json::json!({"x": 1}) });
        match watcher.try_recv().unwrap().kind {
            LiveKind::Event { event: EvalEvent::Error { error, .. }, .. } => {
                let size = error.evalue.len() + error.traceback.iter().map(String::len).sum::<usize>();
                assert!(size <= MAX_EVENT_BYTES, "{size}");
                assert_eq!(error.traceback.last().unwrap(), "  frame 99999", "the end of the traceback is kept");
                assert!(error.traceback[0].contains("traceback lines cut"));
            }
            other => panic!("{other:?}"),
        }
        match watcher.try_recv().unwrap().kind {
            LiveKind::Event { event: EvalEvent::Display { bundle, .. }, .. } => {
                assert!(
                    bundle.contains_key("text/plain") && bundle.len() == 1,
                    "20 000 empty arrays are 640 KB in memory"
                );
            }
            other => panic!("{other:?}"),
        }
        assert!(watcher.try_recv().is_err(), "status events are not sent");
    }

    #[test]
    fn idle_sessions_are_forgotten_past_the_bound_and_running_ones_are_not() {
        let feed = LiveFeed::default();
        let running = feed.begin("busy");
        for n in 0..MAX_SESSIONS + 1 {
            drop(feed.begin(&format!("s{n}")));
        }
        assert!(feed.activity.lock().unwrap().len() <= MAX_SESSIONS);
        assert_eq!(feed.running(), vec!["busy".to_string()]);
        drop(running);
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
