//! `/sdk`: the Python SDK's remote API, `Sandbox(api_url=..., api_key=...)`.
//!
//! The SDK sends `GET /sdk` with `Upgrade: cellbox-sdk` and its bearer token;
//! after `101 Switching Protocols` the connection carries the same JSON-RPC
//! lines as the local `cellbox sdk-server`'s stdin and stdout (see
//! [`crate::sdk`]), so streaming callbacks, cancellation and every method
//! behave as they do locally. Each connection is one sandbox, with an engine
//! of its own in its principal's folders; closing the connection stops it.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Query, Request, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use hyper_util::rt::TokioIo;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::metrics::{Metrics, Work};
use super::{ServerState, json_error};

/// What `Upgrade` names: the SDK's line protocol.
pub const PROTOCOL: &str = "cellbox-sdk";

#[derive(Debug, serde::Deserialize)]
pub struct ConnectQuery {
    /// The sandbox's idle lifetime in seconds (the SDK's `timeout=`); none or 0: no limit.
    timeout: Option<f64>,
}

pub async fn connect(
    State(state): State<Arc<ServerState>>,
    Query(query): Query<ConnectQuery>,
    mut request: Request,
) -> Response {
    let identity = match state.principal_of(request.headers()).await {
        Ok(identity) => identity,
        Err(refusal) => return refusal.into_response(),
    };
    let name = identity.name.clone();
    // Browsers cannot send this upgrade; a request carrying an Origin is not the SDK.
    if request.headers().contains_key(header::ORIGIN) {
        return json_error(StatusCode::FORBIDDEN, "the SDK endpoint does not serve browsers");
    }
    let upgrade = request.headers().get(header::UPGRADE).and_then(|value| value.to_str().ok());
    if !upgrade.is_some_and(|value| value.eq_ignore_ascii_case(PROTOCOL)) {
        return json_error(
            StatusCode::UPGRADE_REQUIRED,
            "this is the Python SDK's endpoint: connect with `Sandbox(api_url=..., api_key=...)` from the \
             cellbox package",
        );
    }
    let idle = match query.timeout {
        None => None,
        Some(seconds) if seconds.is_finite() && seconds >= 0.0 => {
            // A timeout too long to count is no limit at all.
            (seconds > 0.0).then(|| Duration::try_from_secs_f64(seconds).ok()).flatten()
        }
        Some(seconds) => {
            return json_error(StatusCode::BAD_REQUEST, &format!("timeout must be 0 or more seconds, not {seconds}"));
        }
    };
    let principal = match state.principals.get(&identity) {
        Ok(principal) => principal,
        Err(error) => return super::principal_refusal(&name, error),
    };
    // The places (the principal's own, then the server's) are held for as long as the sandbox's connection is open.
    let own_place = match principal.admit_sandbox() {
        Ok(place) => place,
        Err(limit) => {
            state.metrics.refused_busy.fetch_add(1, Ordering::Relaxed);
            let whole = state.max_sandboxes;
            let share = if limit >= whole {
                "the server's whole limit".to_string()
            } else {
                format!("your share of the server's {whole}")
            };
            return super::Refusal::Busy(format!(
                "you have {limit} sandboxes open, your limit of {limit} open SDK sandboxes ({share}); close one \
                 (kill()) or retry in a moment"
            ))
            .into_response();
        }
    };
    let ticket = match state.admit(Work::Sandbox) {
        Ok(ticket) => (ticket, own_place),
        Err(refusal) => return refusal.into_response(),
    };
    let engine = match state.principals.sandbox_engine(&principal, &identity) {
        Ok(engine) => engine,
        Err(error) => {
            return json_error(StatusCode::INTERNAL_SERVER_ERROR, &format!("cannot prepare your workspace: {error}"));
        }
    };
    let root = engine.config().default_cwd.clone();
    let on_upgrade = hyper::upgrade::on(&mut request);
    let hard_stop = state.hard_stop.clone();
    tokio::spawn(async move {
        match on_upgrade.await {
            Ok(upgraded) => {
                tracing::info!(principal = name, "sdk connection opened");
                // The place is freed before the connection closes: a client that saw it close may open another.
                let stream = Counted { inner: TokioIo::new(upgraded), metrics: state.metrics.clone() };
                let limits = crate::sdk::StreamLimits::REMOTE;
                tokio::select! {
                    served = crate::sdk::serve_stream(engine.clone(), root, idle, stream, ticket, limits) => {
                        if let Err(error) = served {
                            tracing::warn!(principal = name, "sdk connection failed: {error}");
                        }
                    }
                    // The server's grace period is over: the sandbox ends with it.
                    () = hard_stop.cancelled() => engine.dispose_all().await,
                }
            }
            Err(error) => tracing::warn!(principal = name, "sdk upgrade failed: {error}"),
        }
    });
    Response::builder()
        .status(StatusCode::SWITCHING_PROTOCOLS)
        .header(header::CONNECTION, "upgrade")
        .header(header::UPGRADE, PROTOCOL)
        .body(Body::empty())
        .expect("a valid response")
}

/// An SDK connection's stream, counting the bytes written to the client.
struct Counted<S> {
    inner: S,
    metrics: Arc<Metrics>,
}

impl<S: AsyncRead + Unpin> AsyncRead for Counted<S> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Counted<S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        let written = Pin::new(&mut self.inner).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = &written {
            self.metrics.bytes_out.fetch_add(*n as u64, Ordering::Relaxed);
        }
        written
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
