//! What a person may do to a session from the page: interrupt its cell,
//! reset it, fork it, undo its last call. Each is a call into the session's
//! engine, logged with who did it, and told to everyone watching the session
//! (an `action` event), as an agent's calls are.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use cellbox_protocol::ui::{Forked, Interrupted, ResetDone, SessionAction, Undone};

use super::super::json_error;
use super::Ui;
use super::api::{Target, not_found, session_target, target};
use crate::tool::live::LiveKind;
use crate::tool::{CallContext, ForkOptions};

/// Log and publish that `target.account` did `action` to `session`.
fn record(target: &Target, session: &str, action: &'static str, detail: Option<String>) {
    let by = target.account.name.clone();
    tracing::info!(principal = %target.principal, by = %by, session, detail = detail.as_deref().unwrap_or(""), "web view: {action}");
    target.engine.live().publish(session, LiveKind::Action { action, by, detail });
}

/// Interrupt the cell a session runs (its variables stay).
pub(super) async fn interrupt(State(ui): State<Arc<Ui>>, headers: HeaderMap, body: Json<SessionAction>) -> Response {
    let target = or_refuse!(session_target(&ui, &headers, body.principal.as_deref(), &body.session).await);
    let told = target.engine.interrupt_session(&body.session);
    record(&target, &body.session, "interrupt", Some(format!("{told} kernel(s)")));
    Json(Interrupted { interrupted: told }).into_response()
}

/// Restart a session's kernels: its variables are gone, its cells stay listed.
pub(super) async fn reset(State(ui): State<Arc<Ui>>, headers: HeaderMap, body: Json<SessionAction>) -> Response {
    let target = or_refuse!(session_target(&ui, &headers, body.principal.as_deref(), &body.session).await);
    let stopped = target.engine.reset_session(&body.session).await;
    record(&target, &body.session, "reset", Some(format!("{stopped} kernel(s)")));
    Json(ResetDone { stopped }).into_response()
}

/// Fork a session's Python kernel into a new session beside it
/// (`NAME-fork-N`), which an agent then reaches by that name.
pub(super) async fn fork(State(ui): State<Arc<Ui>>, headers: HeaderMap, body: Json<SessionAction>) -> Response {
    let target = or_refuse!(target(&ui, &headers, body.principal.as_deref()).await);
    let names = target.engine.session_names();
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
    let into = CallContext::new(format!("{prefix}{target_name}"));
    let source = CallContext::new(body.session.clone());
    let options = ForkOptions { wait: false, ..Default::default() };
    match target.engine.fork_session(&source, &into, &target_name, options).await {
        Ok(report) => {
            record(&target, &body.session, "fork", Some(format!("into {}", into.session)));
            let ms = report.elapsed.as_secs_f64() * 1000.0;
            Json(Forked { session: into.session, name: target_name, ms }).into_response()
        }
        Err(error) => json_error(StatusCode::CONFLICT, &error.to_string()),
    }
}

/// Put a session's Python kernel back to its state before its last call
/// (where checkpoints are on: `--checkpoints`, or a call that asked).
pub(super) async fn undo(State(ui): State<Arc<Ui>>, headers: HeaderMap, body: Json<SessionAction>) -> Response {
    let target = or_refuse!(session_target(&ui, &headers, body.principal.as_deref(), &body.session).await);
    match target.engine.undo(&CallContext::new(body.session.clone()), 1).await {
        Ok(report) => {
            record(&target, &body.session, "undo", Some(format!("{} checkpoint(s) left", report.left)));
            let ms = report.elapsed.as_secs_f64() * 1000.0;
            Json(Undone { steps: report.steps, left: report.left, ms }).into_response()
        }
        Err(error) => json_error(StatusCode::CONFLICT, &error.to_string()),
    }
}
