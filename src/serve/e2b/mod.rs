//! E2B's API on `cellbox serve`, for E2B's own SDKs (Python `e2b` and
//! `e2b_code_interpreter`, JS `e2b` and `@e2b/code-interpreter`) given only
//! `E2B_API_URL`, `E2B_SANDBOX_URL` (both this server) and `E2B_API_KEY` (a
//! cellbox token).
//!
//! Three planes share the server's address, told apart by their paths:
//! - the control plane ([`control`]): `/sandboxes`, `/v2/sandboxes`, with the
//!   token in `X-API-Key`;
//! - envd, a sandbox's agent: the Connect services `filesystem.Filesystem`
//!   ([`filesystem`]) and `process.Process` ([`process`]), `/files` and `/health`;
//! - the code interpreter ([`interpreter`]): `/execute` and `/contexts`.
//!
//! A sandbox-plane request names its sandbox in `E2b-Sandbox-Id` and carries
//! the sandbox's access token (`X-Access-Token`, or the traffic token on the
//! interpreter's port): a request without the right token finds no sandbox,
//! so another principal's sandbox is "not found", never shown.
//!
//! Each E2B sandbox is one SDK connection of its principal ([`cellbox_sdk::Link`])
//! on an engine of its own in a folder of its own: every file, command and cell
//! goes through the code (and the sandbox boundary) `from cellbox import Sandbox`
//! uses, with the kernel's rights and never the server's.

mod connect;
mod control;
mod files;
mod filesystem;
mod home;
mod interpreter;
#[cfg(unix)]
mod process;
#[cfg(not(unix))]
#[path = "process_elsewhere.rs"]
mod process;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use axum::Router;
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use tokio_util::sync::CancellationToken;

use super::ServerState;
use super::metrics::Ticket;
use super::principals::Place;
use crate::tool::EvalEngine;
pub(crate) use home::Home;

/// The envd version reported to the SDKs: the newest whose features cellbox serves.
pub const ENVD_VERSION: &str = "0.6.4";
/// The templates a sandbox may be created from; there is one kind of sandbox.
pub const TEMPLATES: &[&str] = &["base", "code-interpreter-v1", "code-interpreter", "cellbox"];
/// A sandbox's lifetime when the create request names none (E2B's default).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);
/// The longest lifetime one request may give (E2B's Pro limit, 24 hours).
pub const MAX_TIMEOUT: Duration = Duration::from_secs(24 * 3600);

/// Every E2B route; sandbox-plane routes find their sandbox with [`Routed`].
pub(crate) fn routes() -> Router<Arc<ServerState>> {
    Router::new()
        .route("/sandboxes", post(control::create).get(control::list_v1))
        .route("/v2/sandboxes", post(control::create).get(control::list))
        .route("/sandboxes/{id}", get(control::info).delete(control::kill))
        .route("/sandboxes/{id}/connect", post(control::connect))
        .route("/v2/sandboxes/{id}/connect", post(control::connect))
        .route("/sandboxes/{id}/resume", post(control::connect))
        .route("/sandboxes/{id}/timeout", post(control::set_timeout))
        .route("/sandboxes/{id}/refreshes", post(control::refresh))
        .route("/sandboxes/{id}/pause", post(control::pause))
        .route("/sandboxes/{id}/metrics", get(control::metrics))
        .route("/sandboxes/{id}/fork", post(control::not_here))
        .route("/sandboxes/{id}/snapshots", post(control::not_here))
        .route("/sandboxes/{id}/network", axum::routing::put(control::not_here))
        .route("/templates", get(control::templates).post(control::not_here))
        .route("/v3/templates", post(control::not_here))
        .route("/volumes", get(control::not_here).post(control::not_here))
        .route("/health", get(envd_health))
        // Uploads are written a chunk at a time, never held whole: no body limit.
        .route("/files", get(files::download).post(files::upload).layer(axum::extract::DefaultBodyLimit::disable()))
        .route("/filesystem.Filesystem/{method}", post(filesystem::rpc))
        .route("/process.Process/{method}", post(process::rpc))
        .route("/execute", post(interpreter::execute))
        .route("/contexts", post(interpreter::create_context).get(interpreter::list_contexts))
        .route("/contexts/{id}", axum::routing::delete(interpreter::remove_context))
        .route("/contexts/{id}/restart", post(interpreter::restart_context))
}

/// A refused request, answered with E2B's error body `{code, message}`, which both SDKs parse.
#[derive(Debug)]
pub(crate) struct ApiError {
    status: StatusCode,
    message: String,
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = serde_json::json!({ "code": self.status.as_u16(), "message": self.message });
        (self.status, axum::Json(body)).into_response()
    }
}

pub(crate) fn error(status: StatusCode, message: impl Into<String>) -> ApiError {
    ApiError { status, message: message.into() }
}

pub(crate) fn not_found(id: &str) -> ApiError {
    error(StatusCode::NOT_FOUND, format!("sandbox {id:?} not found"))
}

/// A sandbox-plane request for no live sandbox: 502 and "was not found", as
/// E2B's edge answers, which the SDKs read as "the sandbox is not running".
pub(crate) fn not_running(id: &str) -> ApiError {
    error(StatusCode::BAD_GATEWAY, format!("The sandbox {id} was not found"))
}

/// A JSON request body as `T` (an empty body is `{}`), or a 400 saying what is wrong with it.
pub(crate) fn parse_body<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    let body: &[u8] = if body.iter().all(u8::is_ascii_whitespace) { b"{}" } else { body };
    serde_json::from_slice(body)
        .map_err(|e| error(StatusCode::BAD_REQUEST, format!("the request body is not valid: {e}")))
}

/// envd's health check: the sandbox answers.
async fn envd_health(_sandbox: Routed) -> StatusCode {
    StatusCode::NO_CONTENT
}

/// What a sandbox was created with.
pub(crate) struct Created {
    pub template: String,
    pub metadata: BTreeMap<String, String>,
    #[cfg_attr(not(unix), allow(dead_code))] // used by the processes, which need Unix
    pub envs: BTreeMap<String, String>,
    pub internet: bool,
}

/// One E2B sandbox.
pub(crate) struct Sandbox {
    pub id: String,
    /// The principal that made it: only its requests find it on the control plane.
    pub principal: String,
    pub created: Created,
    pub started: SystemTime,
    pub access_token: String,
    pub traffic_token: String,
    pub engine: Arc<EvalEngine>,
    pub link: cellbox_sdk::Link,
    pub home: Home,
    pub processes: process::Processes,
    state: Mutex<Lifetime>,
    /// Told when the lifetime changes, so its timer looks again.
    changed: tokio::sync::Notify,
    /// Cancelled when the sandbox ends: its streams and processes stop.
    pub ended: CancellationToken,
    /// The server's and the principal's places, held while it lives.
    _places: (Ticket, Place),
}

struct Lifetime {
    end: SystemTime,
    paused: bool,
}

impl Sandbox {
    pub fn end(&self) -> SystemTime {
        self.state.lock().unwrap().end
    }

    pub fn paused(&self) -> bool {
        self.state.lock().unwrap().paused
    }

    /// The sandbox now ends `timeout` from now.
    pub fn set_timeout(&self, timeout: Duration) {
        self.state.lock().unwrap().end = SystemTime::now() + timeout;
        self.changed.notify_one();
    }

    /// Paused: it does not time out (its kernels keep their state) until connected again.
    pub fn set_paused(&self, paused: bool) {
        self.state.lock().unwrap().paused = paused;
        self.changed.notify_one();
    }

    /// Whether a sandbox-plane request carries one of its tokens.
    fn admits(&self, headers: &HeaderMap) -> bool {
        let given = |name: &str| headers.get(name).and_then(|value| value.to_str().ok());
        [given("x-access-token"), given("e2b-traffic-access-token")].into_iter().flatten().any(|token| {
            constant_time_eq(token.as_bytes(), self.access_token.as_bytes())
                || constant_time_eq(token.as_bytes(), self.traffic_token.as_bytes())
        })
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The live E2B sandboxes of every principal.
#[derive(Default)]
pub(crate) struct Sandboxes {
    live: Mutex<HashMap<String, Arc<Sandbox>>>,
}

impl Sandboxes {
    pub fn get(&self, id: &str) -> Option<Arc<Sandbox>> {
        self.live.lock().unwrap().get(id).cloned()
    }

    /// `principal`'s sandbox `id`; another principal's is not found.
    pub fn of(&self, principal: &str, id: &str) -> Option<Arc<Sandbox>> {
        self.get(id).filter(|sandbox| sandbox.principal == principal)
    }

    /// The first sandbox `test` accepts.
    pub fn find(&self, test: impl Fn(&Sandbox) -> bool) -> Option<Arc<Sandbox>> {
        self.live.lock().unwrap().values().find(|sandbox| test(sandbox)).cloned()
    }

    pub fn all_of(&self, principal: &str) -> Vec<Arc<Sandbox>> {
        let mut all: Vec<_> =
            self.live.lock().unwrap().values().filter(|sandbox| sandbox.principal == principal).cloned().collect();
        all.sort_by(|a, b| a.started.cmp(&b.started).then_with(|| a.id.cmp(&b.id)));
        all
    }

    fn insert(self: &Arc<Self>, sandbox: Arc<Sandbox>) {
        self.live.lock().unwrap().insert(sandbox.id.clone(), sandbox.clone());
        // Its timer ends it when its time runs out.
        let sandboxes = self.clone();
        tokio::spawn(async move {
            loop {
                let wait = {
                    let state = sandbox.state.lock().unwrap();
                    if state.paused {
                        None
                    } else {
                        Some(state.end.duration_since(SystemTime::now()).unwrap_or_default())
                    }
                };
                let expired = async {
                    match wait {
                        Some(wait) => tokio::time::sleep(wait).await,
                        None => std::future::pending().await,
                    }
                };
                tokio::select! {
                    () = sandbox.ended.cancelled() => return,
                    () = sandbox.changed.notified() => continue,
                    () = expired => {
                        let state = sandbox.state.lock().unwrap();
                        if state.paused || state.end > SystemTime::now() {
                            continue;
                        }
                    }
                }
                tracing::info!(sandbox = sandbox.id, principal = sandbox.principal, "e2b sandbox timed out");
                sandboxes.kill(&sandbox.id).await;
                return;
            }
        });
    }

    /// End sandbox `id`: its streams and processes stop, then its kernels. False when there was none.
    pub async fn kill(&self, id: &str) -> bool {
        let Some(sandbox) = self.live.lock().unwrap().remove(id) else { return false };
        sandbox.ended.cancel();
        sandbox.processes.kill_all();
        sandbox.link.close().await;
        sandbox.engine.dispose_all().await;
        true
    }

    /// End every sandbox (the server stops).
    pub async fn kill_all(&self) {
        let ids: Vec<String> = self.live.lock().unwrap().keys().cloned().collect();
        for id in ids {
            self.kill(&id).await;
        }
    }
}

/// A sandbox-plane request's sandbox: named by `E2b-Sandbox-Id` and proven by its token.
pub(crate) struct Routed(pub Arc<Sandbox>);

impl FromRequestParts<Arc<ServerState>> for Routed {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &Arc<ServerState>) -> Result<Self, Self::Rejection> {
        let Some(id) = parts.headers.get("e2b-sandbox-id").and_then(|value| value.to_str().ok()) else {
            return Err(error(
                StatusCode::BAD_REQUEST,
                "this is a sandbox's route: name the sandbox in the E2b-Sandbox-Id header (E2B's SDKs do when \
                 E2B_SANDBOX_URL points here)",
            )
            .into_response());
        };
        match state.e2b.get(id) {
            Some(sandbox) if sandbox.admits(&parts.headers) && !sandbox.ended.is_cancelled() => Ok(Routed(sandbox)),
            // A wrong token and an unknown id look the same: nothing tells a guess it was close.
            _ => Err(not_running(id).into_response()),
        }
    }
}

/// A fresh random id or token: `bytes` random bytes in hex.
pub(crate) fn random_hex(bytes: usize) -> Result<String, String> {
    let mut buffer = vec![0u8; bytes];
    getrandom::fill(&mut buffer).map_err(|e| format!("no random numbers from the OS: {e}"))?;
    Ok(buffer.iter().map(|b| format!("{b:02x}")).collect())
}

/// `time` as RFC 3339 with milliseconds, UTC (what E2B's API and envd send).
pub(crate) fn rfc3339(time: SystemTime) -> String {
    chrono::DateTime::<chrono::Utc>::from(time).to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_rfc3339_in_utc() {
        assert_eq!(rfc3339(SystemTime::UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        let leap = SystemTime::UNIX_EPOCH + Duration::from_millis(951_825_600_250);
        assert_eq!(rfc3339(leap), "2000-02-29T12:00:00.250Z");
    }

    #[test]
    fn tokens_compare_whole() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"abcd"));
    }
}
