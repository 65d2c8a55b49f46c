//! The web view's API: sign-in, the principal's sessions, a session's
//! notebook, the live events (server-sent events) and the actions.
//!
//! Every answer is about the signed-in principal's own engine, so another
//! principal's session is "not found" like one that never existed.

use std::convert::Infallible;
use std::sync::Arc;

use axum::Json;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::broadcast::error::RecvError;

use super::super::json_error;
use super::{SIGN_IN_LIFETIME, Ui, cookie_name, cookie_of};
use crate::tool::EvalEngine;
use crate::tool::EvalEvent;
use crate::tool::live::{LiveEvent, LiveKind};

#[derive(Deserialize)]
pub(super) struct Login {
    token: String,
}

/// Trade a token for a sign-in cookie.
pub(super) async fn login(State(ui): State<Arc<Ui>>, headers: HeaderMap, body: Json<Login>) -> Response {
    if let Some(open) = ui.host.open_account() {
        return Json(json!({ "principal": open.name })).into_response();
    }
    let account = match ui.host.sign_in(body.token.trim(), &headers).await {
        Ok(account) => account,
        Err(refusal) => return refusal,
    };
    let name = account.name.clone();
    let id = match ui.sign_ins.add(account, body.token.trim()) {
        Ok(id) => id,
        Err(message) => return json_error(StatusCode::SERVICE_UNAVAILABLE, &message),
    };
    tracing::info!(principal = %name, "web view: signed in");
    let secure = if ui.https { "; Secure" } else { "" };
    let name = cookie_name(&headers);
    let cookie =
        format!("{name}={id}; Path=/ui; HttpOnly; SameSite=Strict; Max-Age={}{secure}", SIGN_IN_LIFETIME.as_secs());
    let mut response = Json(json!({ "principal": name })).into_response();
    if let Ok(value) = HeaderValue::from_str(&cookie) {
        response.headers_mut().insert(header::SET_COOKIE, value);
    }
    response
}

/// End the sign-in the cookie names.
pub(super) async fn logout(State(ui): State<Arc<Ui>>, headers: HeaderMap) -> Response {
    if let Some(id) = cookie_of(&headers) {
        ui.sign_ins.remove(id);
    }
    let mut response = Json(json!({ "signed_out": true })).into_response();
    let expired = format!("{}=; Path=/ui; HttpOnly; SameSite=Strict; Max-Age=0", cookie_name(&headers));
    if let Ok(value) = HeaderValue::from_str(&expired) {
        response.headers_mut().insert(header::SET_COOKIE, value);
    }
    response
}

/// Who is signed in, and whether signing in is needed at all.
pub(super) async fn me(State(ui): State<Arc<Ui>>, headers: HeaderMap) -> Response {
    let one_time = ui.host.one_time_link();
    match ui.account(&headers).await {
        Some(account) => Json(json!({
            "principal": account.name,
            "auth": ui.host.open_account().is_none() && !one_time,
            "one_time": one_time,
        }))
        .into_response(),
        None if one_time => (
            StatusCode::UNAUTHORIZED,
            Json(json!({
                "error": "not signed in: open the one-time link `cellbox mcp --ui` printed (a used one needs a new \
                          cellbox mcp)",
                "one_time": true,
            })),
        )
            .into_response(),
        None => not_signed_in(),
    }
}

/// The engine that holds `session`, or the answer that refuses the request ("not found" for
/// a session it does not hold: another principal's sessions are in another engine).
async fn session_engine(ui: &Ui, headers: &HeaderMap, session: &str) -> Result<Arc<EvalEngine>, Response> {
    let engine = engine_of(ui, headers).await?;
    if known(&engine, session) { Ok(engine) } else { Err(not_found(session)) }
}

fn not_signed_in() -> Response {
    json_error(StatusCode::UNAUTHORIZED, "not signed in: sign in with a token of this server")
}

/// The signed-in principal's engine, or the answer that refuses the request.
#[allow(clippy::result_large_err)]
async fn engine_of(ui: &Ui, headers: &HeaderMap) -> Result<Arc<EvalEngine>, Response> {
    let account = ui.account(headers).await.ok_or_else(not_signed_in)?;
    account.engine().map_err(|message| json_error(StatusCode::SERVICE_UNAVAILABLE, &message))
}

/// The principal's sessions: language, state, memory, cells, last activity.
pub(super) async fn sessions(State(ui): State<Arc<Ui>>, headers: HeaderMap) -> Response {
    let engine = match engine_of(&ui, &headers).await {
        Ok(engine) => engine,
        Err(refusal) => return refusal,
    };
    let mut listed = Vec::new();
    for name in engine.session_names() {
        let kernels = engine.session_kernels(&name);
        let activity = engine.live().activity(&name).unwrap_or_default();
        let run = engine.current_run(&name);
        let live: Vec<&str> = kernels.iter().filter(|k| k.pid.is_some()).map(|k| k.runtime.as_str()).collect();
        listed.push(json!({
            "name": name,
            "busy": activity.running > 0 || run.is_some(),
            "run": run,
            "languages": live,
            "kernel": if live.is_empty() { "stopped" } else { "live" },
            "resident_bytes": kernels.iter().filter_map(|k| k.resident_bytes).sum::<u64>(),
            "cells": engine.history_len(&name),
            "last_active_ms": (activity.last_ms > 0).then_some(activity.last_ms),
        }));
    }
    no_store(Json(json!({ "sessions": listed })).into_response())
}

#[derive(Deserialize)]
pub(super) struct SessionQuery {
    session: String,
    #[serde(default)]
    download: Option<String>,
}

/// A session's cells as an nbformat notebook (`download=1`: as a file).
pub(super) async fn notebook(
    State(ui): State<Arc<Ui>>,
    headers: HeaderMap,
    Query(query): Query<SessionQuery>,
) -> Response {
    let engine = match engine_of(&ui, &headers).await {
        Ok(engine) => engine,
        Err(refusal) => return refusal,
    };
    let notebook = match engine.export_notebook(&query.session) {
        Ok(notebook) => notebook,
        Err(_) if known(&engine, &query.session) => {
            return no_store(
                Json(json!({ "cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5 })).into_response(),
            );
        }
        Err(_) => return not_found(&query.session),
    };
    let mut response = no_store(Json(&notebook).into_response());
    if query.download.is_some() {
        let disposition = format!("attachment; filename=\"{}.ipynb\"", file_name(&query.session));
        if let Ok(value) = HeaderValue::from_str(&disposition) {
            response.headers_mut().insert(header::CONTENT_DISPOSITION, value);
        }
    }
    response
}

/// A file name made of `session`'s letters, digits, `-` and `_` (others become `_`).
fn file_name(session: &str) -> String {
    let name: String =
        session.chars().take(80).map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' }).collect();
    if name.is_empty() { "session".into() } else { name }
}

fn known(engine: &EvalEngine, session: &str) -> bool {
    engine.session_names().iter().any(|name| name == session)
}

fn not_found(session: &str) -> Response {
    let shown: String = session.chars().take(100).collect();
    json_error(StatusCode::NOT_FOUND, &format!("no session named {shown:?}"))
}

fn no_store(mut response: Response) -> Response {
    response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

#[derive(Deserialize)]
pub(super) struct Action {
    session: String,
}

/// Interrupt the cell a session runs (its variables stay).
pub(super) async fn interrupt(State(ui): State<Arc<Ui>>, headers: HeaderMap, body: Json<Action>) -> Response {
    let engine = match session_engine(&ui, &headers, &body.session).await {
        Ok(engine) => engine,
        Err(refusal) => return refusal,
    };
    let told = engine.interrupt_session(&body.session);
    tracing::info!(session = %body.session, kernels = told, "web view: interrupt");
    Json(json!({ "interrupted": told })).into_response()
}

/// Restart a session's kernels: its variables are gone, its cells stay listed.
pub(super) async fn reset(State(ui): State<Arc<Ui>>, headers: HeaderMap, body: Json<Action>) -> Response {
    let engine = match session_engine(&ui, &headers, &body.session).await {
        Ok(engine) => engine,
        Err(refusal) => return refusal,
    };
    let stopped = engine.reset_session(&body.session).await;
    tracing::info!(session = %body.session, kernels = stopped, "web view: reset");
    Json(json!({ "stopped": stopped })).into_response()
}

/// Fork a session's Python kernel into a new session beside it
/// (`NAME-fork-N`), which an agent then reaches by that name.
pub(super) async fn fork(State(ui): State<Arc<Ui>>, headers: HeaderMap, body: Json<Action>) -> Response {
    let engine = match engine_of(&ui, &headers).await {
        Ok(engine) => engine,
        Err(refusal) => return refusal,
    };
    let names = engine.session_names();
    if !names.iter().any(|name| *name == body.session) {
        return not_found(&body.session);
    }
    // A named session's key is `ROOT/NAME`; the default session's is `ROOT` alone. The fork is
    // `ROOT/NAME-fork-N` either way, so an agent reaches it as the session `NAME-fork-N`.
    let (prefix, last) = match body.session.rsplit_once('/') {
        Some((root, last)) => (format!("{root}/"), last),
        None => (format!("{}/", body.session), "default"),
    };
    let stem: String = last.chars().take(48).collect();
    let Some(target_name) = (1..1000)
        .map(|n| format!("{stem}-fork-{n}"))
        .find(|name| !names.iter().any(|known| *known == format!("{prefix}{name}")))
    else {
        return json_error(StatusCode::CONFLICT, "too many forks of this session");
    };
    let target = crate::tool::CallContext::new(format!("{prefix}{target_name}"));
    let source = crate::tool::CallContext::new(body.session.clone());
    let options = crate::tool::ForkOptions { wait: false, ..Default::default() };
    match engine.fork_session(&source, &target, &target_name, options).await {
        Ok(report) => {
            tracing::info!(session = %body.session, fork = %target.session, "web view: fork");
            Json(json!({ "session": target.session, "name": target_name, "ms": report.elapsed.as_secs_f64() * 1000.0 }))
                .into_response()
        }
        Err(error) => json_error(StatusCode::CONFLICT, &error.to_string()),
    }
}

/// Every event of the principal's sessions from now on, as server-sent events.
pub(super) async fn events(State(ui): State<Arc<Ui>>, headers: HeaderMap) -> Response {
    let engine = match engine_of(&ui, &headers).await {
        Ok(engine) => engine,
        Err(refusal) => return refusal,
    };
    let receiver = engine.live().subscribe();
    let ends = Ends {
        stop: ui.stop.clone(),
        engine_gone: engine.live().closed(),
        ui: ui.clone(),
        id: cookie_of(&headers).map(str::to_string),
    };
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
        let event = match next {
            Ok(event) => Event::default().id(event.seq.to_string()).data(event_json(&event).to_string()),
            Err(RecvError::Lagged(lost)) => {
                Event::default().data(json!({ "type": "lagged", "lost": lost }).to_string())
            }
            Err(RecvError::Closed) => return None,
        };
        Some((Ok::<_, Infallible>(event), (receiver, ends, recheck)))
    });
    no_store(Sse::new(stream).keep_alive(KeepAlive::default()).into_response())
}

/// How often an event stream asks whether its sign-in still holds.
const RECHECK: std::time::Duration = std::time::Duration::from_secs(10);

/// What ends an event stream: the server stops, the engine is disposed (a
/// principal idle long enough is made again: the page reconnects to the new
/// one), or the sign-in ends (signed out, its token revoked or expired).
struct Ends {
    stop: tokio_util::sync::CancellationToken,
    engine_gone: tokio_util::sync::CancellationToken,
    ui: Arc<Ui>,
    id: Option<String>,
}

/// The page's form of an event.
fn event_json(event: &LiveEvent) -> Value {
    let mut value = match &event.kind {
        LiveKind::CallStarted { call, cells } => json!({
            "type": "call_started",
            "call": call,
            "cells": cells.iter().map(|(code, language)| json!({ "code": code, "language": language })).collect::<Vec<_>>(),
        }),
        LiveKind::CallFinished { call, status, duration_ms } => json!({
            "type": "call_finished", "call": call, "status": status.map(|s| s.as_str()), "duration_ms": duration_ms,
        }),
        LiveKind::Reset => json!({ "type": "reset" }),
        LiveKind::Event { call, event } => {
            let mut value = eval_event_json(event);
            value["call"] = json!(call);
            value
        }
    };
    value["seq"] = json!(event.seq);
    value["session"] = json!(event.session);
    value["at_ms"] = json!(event.at_ms);
    value
}

fn eval_event_json(event: &EvalEvent) -> Value {
    match event {
        EvalEvent::CellStarted { index, title } => json!({ "type": "cell_started", "cell": index, "title": title }),
        EvalEvent::Stdout { cell, text } => json!({ "type": "stream", "cell": cell, "name": "stdout", "text": text }),
        EvalEvent::Stderr { cell, text } => json!({ "type": "stream", "cell": cell, "name": "stderr", "text": text }),
        EvalEvent::Display { cell, is_result, bundle, .. } => {
            json!({ "type": "display", "cell": cell, "is_result": is_result, "bundle": **bundle })
        }
        EvalEvent::Status { cell, event } => json!({ "type": "status", "cell": cell, "event": event }),
        EvalEvent::Error { cell, error } => json!({
            "type": "error", "cell": cell, "ename": error.ename, "evalue": error.evalue, "traceback": error.traceback,
        }),
        EvalEvent::CellFinished { index, status, duration_ms } => {
            json!({ "type": "cell_finished", "cell": index, "status": status.as_str(), "duration_ms": duration_ms })
        }
        EvalEvent::Note { text } => json!({ "type": "note", "text": text }),
        EvalEvent::KernelStarting { cell, waiting, elapsed_ms } => {
            json!({ "type": "waiting", "cell": cell, "text": waiting, "elapsed_ms": elapsed_ms })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn download_names_keep_only_plain_characters() {
        assert_eq!(file_name("../../etc/passwd"), "______etc_passwd");
        assert_eq!(file_name("a\"b\r\nc"), "a_b__c");
        assert_eq!(file_name(""), "session");
        assert_eq!(file_name(&"x".repeat(500)).len(), 80);
    }
}
