//! The web view's API: sign-in, the sessions a principal may see, a session's
//! cells, a call's full output. The shapes are `cellbox_protocol::ui`'s.
//!
//! Every answer is about the signed-in principal's own engine (an admin's may
//! name another live principal's), so a session it may not see is "not found"
//! like one that never existed.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use cellbox_protocol::ui::{
    ArtifactQuery, ArtifactText, CellCode, KernelState, Login, Me, RunningCall, SessionList, SessionQuery,
    SessionSummary, SessionView, SignedIn, SignedOut,
};
use serde_json::json;

use super::super::json_error;
use super::{Account, SIGN_IN_LIFETIME, Ui, cookie_name, cookie_of};
use crate::tool::EvalEngine;

/// The most of an artifact one `GET artifact` gives (the rest stays on the server).
pub(super) const MAX_ARTIFACT_TEXT: usize = 8 << 20;

/// Full outputs read at once by one server's page (more wait their turn): each
/// holds up to [`MAX_ARTIFACT_TEXT`] and a disk read off the async workers.
pub(super) const ARTIFACT_READS: usize = 2;

/// Trade a token for a sign-in cookie.
pub(super) async fn login(State(ui): State<Arc<Ui>>, headers: HeaderMap, body: Json<Login>) -> Response {
    if let Some(open) = ui.host.open_account() {
        return Json(SignedIn { principal: open.name }).into_response();
    }
    let account = or_refuse!(ui.host.sign_in(body.token.trim(), &headers).await);
    let principal = account.name.clone();
    let id = match ui.sign_ins.add(account, body.token.trim()) {
        Ok(id) => id,
        Err(message) => return json_error(StatusCode::SERVICE_UNAVAILABLE, &message),
    };
    tracing::info!(principal = %principal, "web view: signed in");
    // `Secure` where the browser speaks HTTPS: the server's own TLS, or a proxy in front that
    // ends it (the page's origin, which the browser sends with the sign-in, says so).
    let https_page = headers.get(header::ORIGIN).is_some_and(|origin| origin.as_bytes().starts_with(b"https://"));
    let secure = if ui.https || https_page { "; Secure" } else { "" };
    let name = cookie_name(&headers);
    let cookie =
        format!("{name}={id}; Path=/ui; HttpOnly; SameSite=Strict; Max-Age={}{secure}", SIGN_IN_LIFETIME.as_secs());
    let mut response = Json(SignedIn { principal }).into_response();
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
    let mut response = Json(SignedOut { signed_out: true }).into_response();
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
        Some(account) => Json(Me {
            principal: account.name,
            auth: ui.host.open_account().is_none() && !one_time,
            one_time,
            admin: account.admin,
        })
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

fn not_signed_in() -> Response {
    json_error(StatusCode::UNAUTHORIZED, "not signed in: sign in with a token of this server")
}

/// The engine a request means, and who asks.
pub(super) struct Target {
    pub(super) account: Account,
    /// The principal whose engine it is.
    pub(super) principal: String,
    pub(super) engine: Arc<EvalEngine>,
}

/// The signed-in principal's engine, or (for an admin naming `principal`)
/// another live principal's; else the answer that refuses the request
/// (another principal's engine is "not found" to anyone but an admin).
#[allow(clippy::result_large_err)]
pub(super) async fn target(ui: &Ui, headers: &HeaderMap, principal: Option<&str>) -> Result<Target, Response> {
    let account = ui.account(headers).await.ok_or_else(not_signed_in)?;
    match principal.filter(|name| *name != account.name) {
        None => {
            let engine = account.engine()?;
            Ok(Target { principal: account.name.clone(), account, engine })
        }
        Some(other) if account.admin => {
            let engine = ui.host.others().into_iter().find(|(name, _)| name == other).map(|(_, engine)| engine);
            let engine = engine.ok_or_else(|| no_principal(other))?;
            Ok(Target { principal: other.to_string(), account, engine })
        }
        Some(other) => Err(no_principal(other)),
    }
}

/// [`target`], and `session` is one of its engine's.
#[allow(clippy::result_large_err)]
pub(super) async fn session_target(
    ui: &Ui,
    headers: &HeaderMap,
    principal: Option<&str>,
    session: &str,
) -> Result<Target, Response> {
    let target = target(ui, headers, principal).await?;
    if known(&target.engine, session) { Ok(target) } else { Err(not_found(session)) }
}

/// The sessions the signed-in principal may see: its own, and an admin's every live principal's.
pub(super) async fn sessions(State(ui): State<Arc<Ui>>, headers: HeaderMap) -> Response {
    let own = or_refuse!(target(&ui, &headers, None).await);
    let mut listed = summaries(&own.principal, &own.engine);
    if own.account.admin {
        for (principal, engine) in ui.host.others() {
            if principal != own.principal {
                listed.extend(summaries(&principal, &engine));
            }
        }
    }
    no_store(Json(SessionList { sessions: listed }).into_response())
}

fn summaries(principal: &str, engine: &EvalEngine) -> Vec<SessionSummary> {
    let mut listed = Vec::new();
    for name in engine.session_names() {
        let kernels = engine.session_kernels(&name);
        let activity = engine.live().activity(&name).unwrap_or_default();
        let run = engine.current_run(&name);
        let live: Vec<String> = kernels.iter().filter(|k| k.pid.is_some()).map(|k| k.runtime.clone()).collect();
        listed.push(SessionSummary {
            busy: activity.running > 0 || run.is_some(),
            run,
            kernel: if live.is_empty() { KernelState::Stopped } else { KernelState::Live },
            languages: live,
            resident_bytes: kernels.iter().filter_map(|k| k.resident_bytes).sum::<u64>(),
            cells: engine.history_len(&name),
            checkpoints: engine.checkpoint_count(&name),
            last_active_ms: (activity.last_ms > 0).then_some(activity.last_ms),
            principal: principal.to_string(),
            name,
        });
    }
    listed
}

/// A session as the page shows it: its calls running now (read first), then
/// its notebook with each cell's call and full output.
pub(super) async fn session(
    State(ui): State<Arc<Ui>>,
    headers: HeaderMap,
    Query(query): Query<SessionQuery>,
) -> Response {
    let target = or_refuse!(session_target(&ui, &headers, query.principal.as_deref(), &query.session).await);
    let running = target.engine.live().in_flight(&query.session).into_iter().map(|call| RunningCall {
        call: call.call,
        started_ms: call.started_ms,
        cells: call.cells.into_iter().map(|(code, language)| CellCode { code, language }).collect(),
    });
    let running = running.collect();
    let (notebook, cells) = match target.engine.notebook_with_marks(&query.session) {
        Some((notebook, marks)) => (serde_json::to_value(&notebook).unwrap_or_default(), marks),
        None => (empty_notebook(), Vec::new()),
    };
    no_store(Json(SessionView { notebook, cells, running }).into_response())
}

fn empty_notebook() -> serde_json::Value {
    json!({ "cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5 })
}

/// A session's cells as an nbformat notebook (`download=1`: as a file).
pub(super) async fn notebook(
    State(ui): State<Arc<Ui>>,
    headers: HeaderMap,
    Query(query): Query<SessionQuery>,
) -> Response {
    let target = or_refuse!(session_target(&ui, &headers, query.principal.as_deref(), &query.session).await);
    let mut response = match target.engine.export_notebook(&query.session) {
        Ok(notebook) => no_store(Json(&notebook).into_response()),
        Err(_) => no_store(Json(empty_notebook()).into_response()),
    };
    if query.download.is_some() {
        let disposition = format!("attachment; filename=\"{}.ipynb\"", file_name(&query.session));
        if let Ok(value) = HeaderValue::from_str(&disposition) {
            response.headers_mut().insert(header::CONTENT_DISPOSITION, value);
        }
    }
    response
}

/// A call's full output (an `artifact://` its engine wrote), as text, up to [`MAX_ARTIFACT_TEXT`].
pub(super) async fn artifact(
    State(ui): State<Arc<Ui>>,
    headers: HeaderMap,
    Query(query): Query<ArtifactQuery>,
) -> Response {
    let target = or_refuse!(target(&ui, &headers, query.principal.as_deref()).await);
    let shown: String = query.uri.chars().take(100).collect();
    // The turn goes with the read: a client that leaves does not free it before the read ends.
    let Ok(turn) = ui.artifact_reads.clone().acquire_owned().await else {
        return json_error(StatusCode::SERVICE_UNAVAILABLE, "the server is stopping");
    };
    let (engine, uri) = (target.engine.clone(), query.uri.clone());
    let read = tokio::task::spawn_blocking(move || {
        let _turn = turn;
        engine.read_artifact(&uri, 0, MAX_ARTIFACT_TEXT)
    })
    .await;
    let Ok(read) = read else {
        return json_error(StatusCode::INTERNAL_SERVER_ERROR, &format!("artifact {shown:?} could not be read"));
    };
    match read {
        Ok((text, total_bytes)) => {
            let truncated = total_bytes > MAX_ARTIFACT_TEXT as u64;
            tracing::info!(principal = %target.principal, by = %target.account.name, artifact = %shown, "web view: artifact read");
            no_store(Json(ArtifactText { uri: query.uri, text, total_bytes, truncated }).into_response())
        }
        // Not where it is kept on the server: only that it is not this principal's.
        Err(crate::output::artifacts::ArtifactError::InvalidId(_)) => {
            json_error(StatusCode::BAD_REQUEST, &format!("{shown:?} is not an artifact URI (artifact://…)"))
        }
        Err(crate::output::artifacts::ArtifactError::NotFound(..)) => {
            json_error(StatusCode::NOT_FOUND, &format!("no artifact {shown:?} (it may have been pruned)"))
        }
        Err(error) => {
            tracing::warn!("web view: artifact {shown:?}: {error}");
            json_error(StatusCode::INTERNAL_SERVER_ERROR, &format!("artifact {shown:?} could not be read"))
        }
    }
}

/// Any other path under `/ui/api/`: not a route of the API.
pub(super) async fn no_route() -> Response {
    json_error(StatusCode::NOT_FOUND, "no such route of the web view's API")
}

/// A file name made of `session`'s letters, digits, `-` and `_` (others become `_`).
fn file_name(session: &str) -> String {
    let name: String =
        session.chars().take(80).map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' }).collect();
    if name.is_empty() { "session".into() } else { name }
}

pub(super) fn known(engine: &EvalEngine, session: &str) -> bool {
    engine.session_names().iter().any(|name| name == session)
}

pub(super) fn not_found(session: &str) -> Response {
    let shown: String = session.chars().take(100).collect();
    json_error(StatusCode::NOT_FOUND, &format!("no session named {shown:?}"))
}

fn no_principal(principal: &str) -> Response {
    let shown: String = principal.chars().take(100).collect();
    json_error(StatusCode::NOT_FOUND, &format!("no principal named {shown:?} has sessions here"))
}

pub(super) fn no_store(mut response: Response) -> Response {
    response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
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
