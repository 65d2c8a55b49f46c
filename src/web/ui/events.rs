//! The event stream: every event of one engine's sessions from now on, as
//! server-sent events (`cellbox_protocol::ui::LiveMessage` as JSON).

use std::convert::Infallible;
use std::sync::Arc;

use axum::extract::{Query, State};
use axum::http::{HeaderMap, Method, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use cellbox_protocol::ui::{self as wire, CellCode, LiveMessage, SessionQuery};
use tokio::sync::broadcast::error::{RecvError, TryRecvError};

use super::api::{no_store, target};
use super::{Ui, cookie_of};
use crate::tool::EvalEvent;
use crate::tool::live::{BACKLOG, LiveEvent, LiveKind};

/// Event streams one sign-in may hold open at once (tabs of the page; with
/// auth off, all pages together): a new one past it ends the oldest, whose
/// page may be long gone (a closed stream is noticed only at its next write).
pub(super) const MAX_STREAMS_EACH: usize = 8;

/// How often an event stream asks whether its sign-in still holds.
const RECHECK: std::time::Duration = std::time::Duration::from_secs(10);

/// Every event of the principal's sessions (an admin's: of `principal`'s) from now on.
pub(super) async fn events(
    State(ui): State<Arc<Ui>>,
    method: Method,
    headers: HeaderMap,
    Query(query): Query<SessionQuery>,
) -> Response {
    let target = or_refuse!(target(&ui, &headers, query.principal.as_deref()).await);
    // A HEAD (a proxy's or a link checker's probe) gets the headers alone: it would
    // otherwise take a stream's place, and end the sign-in's oldest page at the limit.
    if method == Method::HEAD {
        return no_store(([(header::CONTENT_TYPE, "text/event-stream")], ()).into_response());
    }
    let id = cookie_of(&headers).map(str::to_string);
    // `target` found the sign-in the cookie names (with auth off, every page is the one account).
    let key = if ui.host.open_account().is_some() { String::new() } else { id.clone().unwrap_or_default() };
    let slot = StreamSlot::take(&ui, key);
    let engine = target.engine;
    let receiver = engine.live().subscribe();
    let engine_gone = engine.live().closed();
    let ends = Ends { stop: ui.stop.clone(), engine_gone, ui: ui.clone(), id, slot, told_to_end: false, drained: 0 };
    // One clock for the stream's life (a new one per event would never ring while events flow).
    let mut recheck = tokio::time::interval_at(tokio::time::Instant::now() + RECHECK, RECHECK);
    recheck.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let state = (receiver, ends, recheck);
    let stream = futures_util::stream::unfold(state, |(mut receiver, mut ends, mut recheck)| async move {
        if ends.told_to_end {
            return None;
        }
        let next = loop {
            tokio::select! {
                biased;
                _ = ends.stop.cancelled() => return None,
                // A newer stream of the sign-in took this one's place: the page is told not to
                // reconnect by itself (two tabs would end each other for ever).
                _ = ends.slot.ended.cancelled() => {
                    ends.told_to_end = true;
                    let reason = "a newer page of this sign-in is watching: this one is paused".to_string();
                    let message =
                        LiveMessage { seq: None, session: None, at_ms: None, call: None, kind: wire::LiveKind::Ended { reason } };
                    // A browser that does not know `ended` would reconnect: not before a day.
                    let event = Event::default()
                        .data(serde_json::to_string(&message).unwrap_or_default())
                        .retry(std::time::Duration::from_secs(24 * 3600));
                    return Some((Ok(event), (receiver, ends, recheck)));
                }
                // What the engine published before it was disposed is still sent (a backlog's worth
                // at most: a disposed engine that went on publishing would keep the stream open).
                _ = ends.engine_gone.cancelled(), if ends.drained < BACKLOG => match receiver.try_recv() {
                    Ok(event) => { ends.drained += 1; break Ok(event) }
                    Err(TryRecvError::Lagged(lost)) => { ends.drained += 1; break Err(RecvError::Lagged(lost)) }
                    Err(_) => return None,
                },
                _ = ends.engine_gone.cancelled() => return None,
                _ = recheck.tick() => {
                    if !ends.ui.still_signed_in(ends.id.as_deref()).await {
                        return None;
                    }
                }
                next = receiver.recv() => break next,
            }
        };
        let message = match next {
            Ok(event) => match message(&event) {
                Some(message) => message,
                // Nothing the page shows: a comment keeps the stream's rhythm.
                None => return Some((Ok(Event::default().comment("")), (receiver, ends, recheck))),
            },
            Err(RecvError::Lagged(lost)) => {
                LiveMessage { seq: None, session: None, at_ms: None, call: None, kind: wire::LiveKind::Lagged { lost } }
            }
            Err(RecvError::Closed) => return None,
        };
        let mut event = Event::default().data(serde_json::to_string(&message).unwrap_or_default());
        if let Some(seq) = message.seq {
            event = event.id(seq.to_string());
        }
        Some((Ok::<_, Infallible>(event), (receiver, ends, recheck)))
    });
    no_store(Sse::new(stream).keep_alive(KeepAlive::default()).into_response())
}

/// What ends an event stream: the server stops, the engine is disposed (a
/// principal idle long enough is made again: the page reconnects to the new
/// one), or the sign-in ends (signed out, its token revoked or expired).
struct Ends {
    stop: tokio_util::sync::CancellationToken,
    engine_gone: tokio_util::sync::CancellationToken,
    ui: Arc<Ui>,
    id: Option<String>,
    slot: StreamSlot,
    /// The `ended` message was sent: the stream ends next.
    told_to_end: bool,
    /// Events sent since the engine was disposed.
    drained: usize,
}

/// One of a sign-in's [`MAX_STREAMS_EACH`] streams, given back when the stream ends.
struct StreamSlot {
    ui: Arc<Ui>,
    key: String,
    number: u64,
    /// Cancelled when a newer stream of the sign-in takes its place.
    ended: tokio_util::sync::CancellationToken,
}

impl StreamSlot {
    /// A place for a new stream of `key`'s, ending its oldest past [`MAX_STREAMS_EACH`].
    fn take(ui: &Arc<Ui>, key: String) -> StreamSlot {
        let ended = tokio_util::sync::CancellationToken::new();
        let mut streams = ui.streams.lock().unwrap();
        streams.next += 1;
        let number = streams.next;
        let open = streams.open.entry(key.clone()).or_default();
        while open.len() >= MAX_STREAMS_EACH {
            let (_, oldest) = open.remove(0);
            oldest.cancel();
        }
        open.push((number, ended.clone()));
        StreamSlot { ui: ui.clone(), key, number, ended }
    }
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        let mut streams = self.ui.streams.lock().unwrap();
        if let Some(open) = streams.open.get_mut(&self.key) {
            open.retain(|(number, _)| *number != self.number);
            if open.is_empty() {
                streams.open.remove(&self.key);
            }
        }
    }
}

/// The event streams open, by sign-in.
#[derive(Default)]
pub(super) struct Streams {
    next: u64,
    open: std::collections::HashMap<String, Vec<(u64, tokio_util::sync::CancellationToken)>>,
}

/// The wire's form of an engine's event (none for what the page never shows).
fn message(event: &LiveEvent) -> Option<LiveMessage> {
    let (call, kind) = match &event.kind {
        LiveKind::CallStarted { call, cells } => {
            let cells =
                cells.iter().map(|(code, language)| CellCode { code: code.clone(), language: language.clone() });
            (Some(*call), wire::LiveKind::CallStarted { cells: cells.collect() })
        }
        LiveKind::CallFinished { call, status, duration_ms, artifact } => (
            Some(*call),
            wire::LiveKind::CallFinished {
                status: status.map(|status| status.as_str().to_string()),
                duration_ms: *duration_ms,
                artifact: artifact.clone(),
            },
        ),
        LiveKind::Reset => (None, wire::LiveKind::Reset),
        LiveKind::Action { action, by, detail } => {
            (None, wire::LiveKind::Action { action: action.to_string(), by: by.clone(), detail: detail.clone() })
        }
        LiveKind::Event { call, event } => (Some(*call), eval_event(event)?),
    };
    Some(LiveMessage {
        seq: Some(event.seq),
        session: Some(event.session.clone()),
        at_ms: Some(event.at_ms),
        call,
        kind,
    })
}

fn eval_event(event: &EvalEvent) -> Option<wire::LiveKind> {
    Some(match event {
        EvalEvent::CellStarted { index, title } => wire::LiveKind::CellStarted { cell: *index, title: title.clone() },
        EvalEvent::Stdout { cell, text } => {
            wire::LiveKind::Stream { cell: *cell, name: "stdout".into(), text: text.clone() }
        }
        EvalEvent::Stderr { cell, text } => {
            wire::LiveKind::Stream { cell: *cell, name: "stderr".into(), text: text.clone() }
        }
        EvalEvent::Display { cell, is_result, bundle, .. } => {
            wire::LiveKind::Display { cell: *cell, is_result: *is_result, bundle: (**bundle).clone() }
        }
        // Not published (the page shows none).
        EvalEvent::Status { .. } => return None,
        EvalEvent::Error { cell, error } => wire::LiveKind::Error {
            cell: *cell,
            ename: error.ename.clone(),
            evalue: error.evalue.clone(),
            traceback: error.traceback.clone(),
        },
        EvalEvent::CellFinished { index, status, duration_ms } => wire::LiveKind::CellFinished {
            cell: *index,
            status: status.as_str().to_string(),
            duration_ms: *duration_ms,
        },
        EvalEvent::Note { text } => wire::LiveKind::Note { text: text.clone() },
        EvalEvent::KernelStarting { cell, waiting, elapsed_ms } => {
            wire::LiveKind::Waiting { cell: *cell, text: waiting.clone(), elapsed_ms: *elapsed_ms }
        }
    })
}
