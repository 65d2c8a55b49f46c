//! The event stream: every event of one engine's sessions from now on, as
//! server-sent events (`cellbox_protocol::ui::LiveMessage` as JSON).

use std::convert::Infallible;
use std::sync::Arc;

use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use cellbox_protocol::ui::{self as wire, CellCode, LiveMessage, SessionQuery};
use tokio::sync::broadcast::error::RecvError;

use super::super::json_error;
use super::api::{no_store, target};
use super::{Ui, cookie_of};
use crate::tool::EvalEvent;
use crate::tool::live::{LiveEvent, LiveKind};

/// Event streams one sign-in may hold open at once (tabs of the page).
pub(super) const MAX_STREAMS_EACH: usize = 8;

/// How often an event stream asks whether its sign-in still holds.
const RECHECK: std::time::Duration = std::time::Duration::from_secs(10);

/// Every event of the principal's sessions (an admin's: of `principal`'s) from now on.
pub(super) async fn events(
    State(ui): State<Arc<Ui>>,
    headers: HeaderMap,
    Query(query): Query<SessionQuery>,
) -> Response {
    let target = match target(&ui, &headers, query.principal.as_deref()).await {
        Ok(target) => target,
        Err(refusal) => return refusal,
    };
    let id = cookie_of(&headers).map(str::to_string);
    let Some(slot) = StreamSlot::take(&ui, id.clone().unwrap_or_default()) else {
        return json_error(
            StatusCode::TOO_MANY_REQUESTS,
            &format!("this sign-in has {MAX_STREAMS_EACH} event streams open already: close a tab of the page"),
        );
    };
    let engine = target.engine;
    let receiver = engine.live().subscribe();
    let ends = Ends { stop: ui.stop.clone(), engine_gone: engine.live().closed(), ui: ui.clone(), id, _slot: slot };
    // One clock for the stream's life (a new one per event would never ring while events flow).
    let mut recheck = tokio::time::interval_at(tokio::time::Instant::now() + RECHECK, RECHECK);
    recheck.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let state = (receiver, ends, recheck);
    let stream = futures_util::stream::unfold(state, |(mut receiver, ends, mut recheck)| async move {
        let next = loop {
            tokio::select! {
                biased;
                _ = ends.stop.cancelled() => return None,
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
            Ok(event) => message(&event),
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
    _slot: StreamSlot,
}

/// One of a sign-in's [`MAX_STREAMS_EACH`] streams, given back when the stream ends.
struct StreamSlot {
    ui: Arc<Ui>,
    key: String,
}

impl StreamSlot {
    fn take(ui: &Arc<Ui>, key: String) -> Option<StreamSlot> {
        let mut open = ui.streams.lock().unwrap();
        let count = open.entry(key.clone()).or_default();
        if *count >= MAX_STREAMS_EACH {
            return None;
        }
        *count += 1;
        Some(StreamSlot { ui: ui.clone(), key })
    }
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        let mut open = self.ui.streams.lock().unwrap();
        if let Some(count) = open.get_mut(&self.key) {
            *count -= 1;
            if *count == 0 {
                open.remove(&self.key);
            }
        }
    }
}

/// The wire's form of an engine's event.
fn message(event: &LiveEvent) -> LiveMessage {
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
        LiveKind::Event { call, event } => (Some(*call), eval_event(event)),
    };
    LiveMessage { seq: Some(event.seq), session: Some(event.session.clone()), at_ms: Some(event.at_ms), call, kind }
}

fn eval_event(event: &EvalEvent) -> wire::LiveKind {
    match event {
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
        // Never published (the feed drops them); a note if one ever is.
        EvalEvent::Status { .. } => wire::LiveKind::Note { text: String::new() },
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
    }
}
