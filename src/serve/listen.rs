//! The server's connections: accepted up to a cap, each served by hyper
//! with a deadline for every request's headers (which is also how long a
//! kept-alive connection may sit idle) and for each piece of a request's
//! body, and stopped in two steps: gracefully when accepting ends, then for
//! good once the grace period is over, whatever a client is still doing.
//!
//! `axum::serve` offers none of these: a client that sends half a request
//! line and waits kept its connection (and the server's shutdown) forever.

use std::collections::HashMap;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::Request;
use hyper::body::{Frame, SizeHint};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio_util::sync::CancellationToken;

use super::metrics::Metrics;

/// The deadlines and caps of the server's connections.
#[derive(Debug, Clone, Copy)]
pub struct ConnectionLimits {
    /// Open connections at most; one more is closed at once (counted in `/metrics`).
    pub max_connections: usize,
    /// Open connections from one IP address at most, so that one client cannot hold every place.
    pub max_connections_per_ip: usize,
    /// How long a client may stall: a request's headers must arrive within
    /// it, counted from when the connection waits for them (so a half-sent
    /// request and an idle kept-alive connection are both closed after it),
    /// and a request's body may not go quiet for longer.
    pub client_timeout: Duration,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        ConnectionLimits { max_connections: 512, max_connections_per_ip: 64, client_timeout: Duration::from_secs(15) }
    }
}

/// Serve `app` on `listener` until `accepting` is cancelled; then let the
/// requests in progress finish for `grace`, and after it cancel `hard_stop`
/// (which ends what outlives a request: upgraded `/sdk` connections) and
/// drop every connection still open.
pub async fn serve<L>(
    mut listener: L,
    app: Router,
    limits: ConnectionLimits,
    metrics: Arc<Metrics>,
    accepting: CancellationToken,
    grace: Duration,
    hard_stop: CancellationToken,
) where
    L: axum::serve::Listener<Addr = std::net::SocketAddr>,
{
    let app = app.layer(axum::middleware::map_request(move |request: Request| async move {
        request.map(|body| Body::new(IdleBody::new(body, limits.client_timeout)))
    }));
    let places = Arc::new(tokio::sync::Semaphore::new(limits.max_connections.max(1)));
    let per_ip = Arc::new(PerIp { open: Mutex::default(), limit: limits.max_connections_per_ip.max(1) });
    // Cancelled when accepting ends: each connection finishes the request it serves, then closes.
    let closing = CancellationToken::new();
    let mut connections = tokio::task::JoinSet::new();
    loop {
        let (io, peer) = tokio::select! {
            () = accepting.cancelled() => break,
            accepted = listener.accept() => accepted,
            Some(_) = connections.join_next(), if !connections.is_empty() => continue,
        };
        let (Some(ip_place), Ok(place)) = (per_ip.take(peer.ip()), places.clone().try_acquire_owned()) else {
            // Full (or this address holds its share): this one is closed without an answer, and
            // the others are unaffected.
            metrics.refused_connections.fetch_add(1, Ordering::Relaxed);
            drop(io);
            continue;
        };
        let mut builder = hyper::server::conn::http1::Builder::new();
        builder.timer(TokioTimer::new()).header_read_timeout(limits.client_timeout);
        let connection =
            builder.serve_connection(TokioIo::new(io), TowerToHyperService::new(app.clone())).with_upgrades();
        let closing = closing.clone();
        connections.spawn(async move {
            let mut connection = std::pin::pin!(connection);
            let ended = tokio::select! {
                ended = connection.as_mut() => ended,
                () = closing.cancelled() => {
                    connection.as_mut().graceful_shutdown();
                    connection.await
                }
            };
            if let Err(error) = ended {
                tracing::debug!("connection ended: {error}");
            }
            drop((place, ip_place));
        });
    }
    drop(listener);
    closing.cancel();
    let drained = async { while connections.join_next().await.is_some() {} };
    tokio::select! {
        () = drained => {}
        () = tokio::time::sleep(grace) => {
            tracing::info!("the grace period is over: closing the connections still open");
        }
    }
    hard_stop.cancel();
    connections.shutdown().await;
}

/// Open connections by client address.
struct PerIp {
    open: Mutex<HashMap<IpAddr, usize>>,
    limit: usize,
}

/// One connection's place among its address's, given back when dropped.
struct IpPlace(Arc<PerIp>, IpAddr);

impl PerIp {
    fn take(self: &Arc<Self>, ip: IpAddr) -> Option<IpPlace> {
        let mut open = self.open.lock().unwrap();
        let count = open.entry(ip).or_default();
        if *count >= self.limit {
            return None;
        }
        *count += 1;
        Some(IpPlace(self.clone(), ip))
    }
}

impl Drop for IpPlace {
    fn drop(&mut self) {
        let mut open = self.0.open.lock().unwrap();
        if let Some(count) = open.get_mut(&self.1) {
            *count -= 1;
            if *count == 0 {
                open.remove(&self.1);
            }
        }
    }
}

/// A request body that fails when its client sends nothing for a while,
/// instead of holding its connection (and a call's place) forever.
struct IdleBody {
    inner: Body,
    limit: Duration,
    /// Set at the first read: the time a handler spends before reading is not the client's.
    deadline: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl IdleBody {
    fn new(inner: Body, limit: Duration) -> IdleBody {
        IdleBody { inner, limit, deadline: None }
    }
}

impl hyper::body::Body for IdleBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        match Pin::new(&mut self.inner).poll_frame(cx) {
            Poll::Ready(frame) => {
                self.deadline = None;
                Poll::Ready(frame)
            }
            Poll::Pending => {
                let limit = self.limit;
                let deadline = self.deadline.get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
                match deadline.as_mut().poll(cx) {
                    Poll::Ready(()) => Poll::Ready(Some(Err(axum::Error::new(format!(
                        "the client sent nothing of its request's body for {} s",
                        limit.as_secs()
                    ))))),
                    Poll::Pending => Poll::Pending,
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
