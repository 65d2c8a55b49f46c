//! A gateway kernel's channels websocket: opening it (in the binary v1
//! framing where the server speaks it), carrying the outgoing queue to it,
//! reading what comes back into [`super::route`], and reconnecting it when
//! it drops.

use std::sync::Arc;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;

use super::client::{Endpoint, GatewayClient, GatewayError};
use super::net::QuickAckStream;
use super::startup_error;
use super::wire::{self, Framing};
use crate::jupyter::Outgoing;
use crate::jupyter::requests::fail_pending;
use crate::jupyter::route::{Shared, kernel_lost, route};
use crate::kernel::KernelError;
use crate::runtime::Runtime;

/// Why a dropped websocket was not restored, by cause; its text is the reason the
/// pending requests fail with.
#[derive(Debug, thiserror::Error)]
enum ReconnectError {
    /// The kernel ended meanwhile: the last problem seen is the reason.
    #[error("{last}")]
    KernelEnded { last: String },
    #[error("the gateway no longer has the kernel")]
    KernelGone,
    #[error(transparent)]
    Unauthorized(GatewayError),
    #[error("the connection to the gateway was lost and could not be restored: {last}")]
    GaveUp { last: String },
}

/// A kernel's channels websocket.
pub(super) type Channels = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<QuickAckStream>>;

/// Open `/api/kernels/{id}/channels` for `session_id` (the token in a
/// header), in the binary v1 framing where the server speaks it.
pub(super) async fn open_channels(
    endpoint: &Endpoint,
    kernel_id: &str,
    session_id: &str,
) -> Result<(Channels, Framing), KernelError> {
    use tokio_tungstenite::tungstenite::error::{Error, ProtocolError, SubProtocolError};
    let url = endpoint.channels_url(kernel_id, session_id);
    match handshake(endpoint, &url, Framing::V1).await {
        Ok(socket) => Ok((socket, Framing::V1)),
        // A server without it (jupyter_server 1) answers without a subprotocol.
        Err(Error::Protocol(ProtocolError::SecWebSocketSubProtocolError(SubProtocolError::NoSubProtocol))) => {
            let socket =
                handshake(endpoint, &url, Framing::Json).await.map_err(|error| handshake_error(endpoint, error))?;
            Ok((socket, Framing::Json))
        }
        Err(error) => Err(handshake_error(endpoint, error)),
    }
}

/// A failed websocket handshake in words: a refused token says which setting to fix.
fn handshake_error(endpoint: &Endpoint, error: tokio_tungstenite::tungstenite::Error) -> KernelError {
    match &error {
        tokio_tungstenite::tungstenite::Error::Http(response) if matches!(response.status().as_u16(), 401 | 403) => {
            startup_error(GatewayError::Unauthorized { url: endpoint.url.clone(), status: response.status().as_u16() })
        }
        _ => startup_error(GatewayError::Unreachable {
            url: endpoint.url.clone(),
            message: format!("the kernel's websocket: {error}"),
        }),
    }
}

/// Connect and upgrade to a websocket, asking for `framing`'s subprotocol.
async fn handshake(
    endpoint: &Endpoint,
    url: &str,
    framing: Framing,
) -> Result<Channels, tokio_tungstenite::tungstenite::Error> {
    use tokio_tungstenite::tungstenite::Error;
    let mut request = url.into_client_request()?;
    if let Some(token) = &endpoint.token {
        let value = format!("token {token}").parse().map_err(|_| {
            Error::Url(tokio_tungstenite::tungstenite::error::UrlError::UnableToConnect(
                "the gateway token contains characters a header cannot carry".into(),
            ))
        })?;
        request.headers_mut().insert("Authorization", value);
    }
    if framing == Framing::V1 {
        request.headers_mut().insert("Sec-WebSocket-Protocol", wire::V1_PROTOCOL.parse().expect("a valid header"));
    }
    let parsed = reqwest::Url::parse(url)
        .map_err(|e| Error::Url(tokio_tungstenite::tungstenite::error::UrlError::UnableToConnect(e.to_string())))?;
    let host = parsed.host_str().unwrap_or("127.0.0.1").to_string();
    let port = parsed.port_or_known_default().unwrap_or(80);
    let stream = QuickAckStream::connect(&host, port).await?;
    let connector = if parsed.scheme() == "wss" {
        crate::tls::install_crypto();
        use rustls_platform_verifier::ConfigVerifierExt;
        let config = rustls::ClientConfig::with_platform_verifier()
            .map_err(|e| Error::Url(tokio_tungstenite::tungstenite::error::UrlError::UnableToConnect(e.to_string())))?;
        Some(tokio_tungstenite::Connector::Rustls(Arc::new(config)))
    } else {
        None
    };
    let config = WebSocketConfig::default()
        .read_buffer_size(READ_CHUNK)
        .max_message_size(Some(512 << 20))
        .max_frame_size(Some(512 << 20));
    let (socket, _) = tokio_tungstenite::client_async_tls_with_config(request, stream, Some(config), connector).await?;
    Ok(socket)
}

/// The most one read from the socket takes. tungstenite zeroes this much of
/// its buffer before every read, even one that finds nothing: its default
/// (128 KiB) made that memset the largest single cost of a round trip's few
/// small messages; large output arrives this much at a time.
const READ_CHUNK: usize = 16 << 10;

/// Bound on one reconnection's handshake: a server waits for a kernel that is
/// going away (being deleted, say) far longer before it answers.
const RECONNECT_HANDSHAKE: Duration = Duration::from_secs(5);
/// Waits before each attempt to reconnect a dropped websocket (about 16 s in all).
const RECONNECT_DELAYS_MS: [u64; 7] = [100, 250, 500, 1000, 2000, 4000, 8000];

/// How a connection's socket stopped serving.
enum Ending {
    /// The socket failed or closed while the kernel may live: reconnect.
    Broken(String),
    /// The gateway reported the kernel lost (`restarting`/`dead`).
    KernelLost(String),
    /// The kernel was shut down on purpose.
    Closed,
}

/// The kernel's connection: carries the outgoing queue to the websocket and
/// routes what comes back, across reconnections.
///
/// A websocket can drop while the kernel lives (a network blip, a proxy
/// restart). A Jupyter server then buffers the kernel's messages for the
/// websocket's `session_id` (when it was the kernel's last connection) and
/// replays them to a new websocket with the same `session_id`, so the
/// running cell's remaining output and its `execute_reply` still arrive:
/// the connection reconnects, a few times with backoff, unless the gateway
/// says the kernel is gone (404), which fails every pending request as
/// "kernel died".
pub(super) struct Link {
    pub shared: Arc<Shared>,
    pub client: GatewayClient,
    pub kernel_id: String,
    pub session_id: String,
    pub outgoing: mpsc::UnboundedSender<Outgoing>,
}

impl Link {
    pub async fn run(self, mut socket: (Channels, Framing), mut queue: mpsc::UnboundedReceiver<Outgoing>) {
        fn failed(error: tokio_tungstenite::tungstenite::Error) -> Ending {
            Ending::Broken(format!("the connection to the gateway failed: {error}"))
        }
        // A message whose send failed goes out first on the next socket.
        let mut unsent: Option<Value> = None;
        loop {
            let framing = socket.1;
            let (mut sink, mut stream) = socket.0.split();
            let writer = async {
                if let Some(message) = unsent.take()
                    && let Err(error) = sink.send(wire::frame(framing, &message)).await
                {
                    return (failed(error), Some(message));
                }
                while let Some(item) = queue.recv().await {
                    match item {
                        Outgoing::Message(message) => {
                            if let Err(error) = sink.send(wire::frame(framing, &message)).await {
                                return (failed(error), Some(message));
                            }
                        }
                        Outgoing::Close => {
                            return match sink.send(Message::Close(None)).await {
                                Ok(()) => (Ending::Closed, None),
                                Err(error) => (failed(error), None),
                            };
                        }
                    }
                }
                (Ending::Closed, None)
            };
            let (ending, retry) = tokio::select! {
                ending = read_loop(&self.shared, &mut stream, framing, &self.outgoing, &self.session_id) => (ending, None),
                written = writer => written,
                _ = self.shared.drop_for_test.notified() => (Ending::Broken("the connection was dropped".into()), None),
            };
            unsent = retry.or(unsent);
            let reason = match ending {
                Ending::Closed => {
                    let _ = sink.close().await;
                    fail_pending_with(&self.shared, "the kernel was shut down".into()).await;
                    return;
                }
                Ending::KernelLost(reason) => {
                    fail_pending_with(&self.shared, reason).await;
                    return;
                }
                Ending::Broken(reason) => reason,
            };
            drop((sink, stream));
            match self.reconnect(&reason).await {
                Ok(again) => socket = again,
                Err(error) => {
                    fail_pending_with(&self.shared, error.to_string()).await;
                    return;
                }
            }
        }
    }

    /// A new websocket for the same `session_id`, or why there is none.
    async fn reconnect(&self, why: &str) -> Result<(Channels, Framing), ReconnectError> {
        tracing::warn!(target: "cellbox::gateway", "kernel {}: {why}; reconnecting", self.kernel_id);
        let mut last = why.to_string();
        for delay in RECONNECT_DELAYS_MS {
            tokio::time::sleep(Duration::from_millis(delay)).await;
            if self.shared.routes.lock().unwrap().dead.is_some() {
                return Err(ReconnectError::KernelEnded { last });
            }
            match self.client.kernel_exists(&self.kernel_id).await {
                Ok(true) => {}
                Ok(false) => return Err(ReconnectError::KernelGone),
                Err(error @ GatewayError::Unauthorized { .. }) => return Err(ReconnectError::Unauthorized(error)),
                Err(error) => {
                    last = error.to_string();
                    continue;
                }
            }
            let opened = open_channels(self.client.endpoint(), &self.kernel_id, &self.session_id);
            match tokio::time::timeout(RECONNECT_HANDSHAKE, opened).await {
                Ok(Ok(socket)) => {
                    tracing::info!(target: "cellbox::gateway", "kernel {}: reconnected", self.kernel_id);
                    return Ok(socket);
                }
                Ok(Err(error)) => last = error.to_string(),
                Err(_) => last = format!("no websocket within {}s", RECONNECT_HANDSHAKE.as_secs()),
            }
        }
        Err(ReconnectError::GaveUp { last })
    }
}

/// Read the websocket until it stops serving, routing each message.
async fn read_loop<S>(
    shared: &Shared,
    stream: &mut S,
    framing: Framing,
    outgoing: &mpsc::UnboundedSender<Outgoing>,
    session: &str,
) -> Ending
where
    S: futures_util::Stream<Item = Result<Message, tokio_tungstenite::tungstenite::Error>> + Unpin,
{
    let mut reason = "the gateway closed the kernel's connection".to_string();
    while let Some(item) = stream.next().await {
        let message = match item {
            Ok(Message::Text(text)) => serde_json::from_str::<Value>(text.as_str()).ok(),
            Ok(Message::Binary(frame)) if framing == Framing::V1 => wire::decode_v1(&frame),
            Ok(Message::Close(_)) => break,
            Ok(_) => continue,
            Err(error) => {
                reason = format!("the connection to the gateway failed: {error}");
                break;
            }
        };
        let Some(message) = message else {
            tracing::warn!(target: "cellbox::ipc", "skipping a gateway message cellbox cannot read");
            continue;
        };
        if let Some(state) = kernel_lost(&message) {
            return Ending::KernelLost(format!("the gateway reports the kernel {state}"));
        }
        for (sender, event) in route(shared, message, outgoing, session) {
            // A consumer that stopped listening just loses the rest.
            let _ = sender.send(event).await;
        }
    }
    Ending::Broken(reason)
}

/// The kernel cannot run cells any more: every pending request ends with `reason`.
async fn fail_pending_with(shared: &Shared, reason: String) {
    fail_pending(shared, KernelError::Died { runtime: Runtime::Python, exit: reason, stderr_tail: String::new() })
        .await;
}
