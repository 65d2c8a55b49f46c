//! [`GatewayKernel`]: one kernel on a Jupyter gateway, driven over its
//! `/api/kernels/{id}/channels` websocket (Jupyter's message format, in the
//! framing of [`super::wire`]).
//!
//! Every message is routed by `parent_header.msg_id` to the request that
//! caused it, and mapped onto the [`ExecEvent`]s a process kernel yields:
//! `stream` → `Stdout`/`Stderr`, `display_data`/`update_display_data` →
//! `Display`, `execute_result` → `Result`, `error` → `Error`, and `Done`
//! once both the `execute_reply` and the `idle` status arrived (they come
//! in either order). A kernel that crashes never replies: the gateway's
//! `restarting`/`dead` status ends every pending request with
//! [`KernelError::Died`]; a websocket that drops is reconnected (with the
//! same `session_id`), and only a kernel the gateway no longer has, or a gateway out
//! of reach, ends them so. An `input_request` gets an empty reply and fails
//! the cell with the stdin error of local kernels, unless it carries
//! host-bridge calls (see [`super::bridge`]).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::{Map, Value, json};
use tokio::sync::{Notify, mpsc};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;

use super::bridge::{CallRequest, GatewayBridge};
use super::client::{Endpoint, GatewayClient, GatewayError};
use super::wire::{self, Framing};
use super::{GatewaySetting, init, local, net::QuickAckStream};
use crate::backend::Backend;
use crate::kernel::{
    CellDone, CellError, Completeness, ExecEvent, ExecuteOptions, Execution, KernelError, KernelOptions, StartObserver,
    StartStage, handle,
};
use crate::protocol::DoneStatus;

/// Events buffered per request before the websocket reader waits for the consumer.
const EXECUTION_BUFFER: usize = 32;
/// How often an interrupt is repeated until the cell ends (one sent before
/// the kernel took the cell is lost).
const INTERRUPT_REPEAT: Duration = Duration::from_secs(1);
/// How many times a kernel deletion is tried (300 ms apart).
const DELETE_ATTEMPTS: usize = 15;
/// The name `input()` raises under, as in cellbox's own kernels.
const STDIN_ERROR_NAME: &str = "StdinNotSupportedError";
const STDIN_ERROR_TEXT: &str = "input() is not supported: cellbox cells have no interactive stdin. Pass the data in \
                                the code instead (a variable, a file, or an argument).";
/// The text a Jupyter server sends in place of output it dropped.
const RATE_LIMIT_TEXT: &str = "data rate exceeded";

type EventSender = mpsc::Sender<Result<ExecEvent, KernelError>>;

/// One request in flight.
struct Pending {
    sender: EventSender,
    started: bool,
    idle: bool,
    reply: Option<CellDone>,
    stdin_requested: bool,
    rate_noted: bool,
}

#[derive(Default)]
struct Routes {
    pending: HashMap<String, Pending>,
    /// Set once the kernel can no longer run cells: the error new requests get.
    dead: Option<KernelError>,
}

struct Shared {
    routes: Mutex<Routes>,
    /// The cells' host-bridge calls.
    bridge: Arc<GatewayBridge>,
    /// Tells the connection to drop its socket (see [`GatewayKernel::drop_connection_for_test`]).
    drop_for_test: Notify,
}

/// A kernel on a Jupyter gateway. Dropping it deletes the kernel (best effort).
pub struct GatewayKernel {
    client: GatewayClient,
    kernel_id: String,
    session_id: String,
    outgoing: mpsc::UnboundedSender<Message>,
    shared: Arc<Shared>,
    cwd: PathBuf,
    next_id: AtomicU64,
    deleted: AtomicBool,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl std::fmt::Debug for GatewayKernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GatewayKernel")
            .field("gateway", &self.client.endpoint().url)
            .field("kernel_id", &self.kernel_id)
            .field("alive", &self.is_alive())
            .finish()
    }
}

fn startup_error(error: impl std::fmt::Display) -> KernelError {
    KernelError::StartupFailed { backend: Backend::Python, reason: error.to_string(), stderr_tail: String::new() }
}

/// A random-enough id for the websocket session and message ids.
fn new_session_id() -> String {
    use sha2::Digest;
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos();
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let seed = format!("{}-{nanos}-{}", std::process::id(), COUNTER.fetch_add(1, Ordering::Relaxed));
    let digest = sha2::Sha256::digest(seed.as_bytes());
    digest.iter().take(16).map(|b| format!("{b:02x}")).collect()
}

/// The kernelspec to start (`CELLBOX_GATEWAY_KERNEL`, default `python3`).
fn kernel_name() -> String {
    std::env::var(super::KERNEL_NAME_VAR).ok().filter(|n| !n.trim().is_empty()).unwrap_or_else(|| "python3".into())
}

/// Why one attempt at starting a kernel failed.
enum StartFailure {
    /// The shared local gateway ran out of file descriptors (EMFILE): it
    /// cannot recover by itself, so it is replaced by a fresh one, once.
    GatewayOutOfFiles,
    Failed(KernelError),
}

impl From<KernelError> for StartFailure {
    fn from(error: KernelError) -> Self {
        StartFailure::Failed(error)
    }
}

/// How often the shared gateway's log is read for EMFILE while a kernel starts.
const OUT_OF_FILES_POLL: Duration = Duration::from_millis(200);

impl GatewayKernel {
    /// Find or start the gateway, create a kernel on it, connect its
    /// channels, and run the setup code and the prelude.
    /// `observer` hears each stage as the start enters it.
    pub async fn start(
        options: KernelOptions,
        setting: &GatewaySetting,
        observer: StartObserver<'_>,
    ) -> Result<GatewayKernel, KernelError> {
        crate::kernel::validate_cwd(&options.cwd)?;
        match Self::start_once(&options, setting, observer).await {
            Ok(kernel) => Ok(kernel),
            Err(StartFailure::Failed(error)) => Err(error),
            Err(StartFailure::GatewayOutOfFiles) => {
                tracing::warn!(target: "cellbox::gateway", "the shared gateway hit EMFILE; restarting it");
                local::restart(&options.program, &options.env).await.map_err(startup_error)?;
                match Self::start_once(&options, setting, observer).await {
                    Ok(kernel) => Ok(kernel),
                    Err(StartFailure::Failed(error)) => Err(error),
                    Err(StartFailure::GatewayOutOfFiles) => Err(startup_error(
                        "the shared Jupyter gateway ran out of file descriptors (EMFILE) again right after a \
                         restart; raise the open-file limit (ulimit -n) of the cellbox process",
                    )),
                }
            }
        }
    }

    /// One attempt; on the shared local gateway it gives up early once the
    /// gateway's log shows EMFILE (a gateway out of descriptors may not even
    /// accept the connection, so the start would only time out).
    async fn start_once(
        options: &KernelOptions,
        setting: &GatewaySetting,
        observer: StartObserver<'_>,
    ) -> Result<GatewayKernel, StartFailure> {
        let limit = super::startup_timeout(options.startup_timeout).map_err(startup_error)?;
        let endpoint = match setting {
            GatewaySetting::External { url, token } => Endpoint::new(url.clone(), token.clone()),
            GatewaySetting::SharedLocal => {
                observer(StartStage::Gateway);
                local::acquire(&options.program, &options.env).await.map_err(startup_error)?
            }
        };
        let client = GatewayClient::new(endpoint).map_err(startup_error)?;
        let local = setting.is_local();
        let attempt = Self::create_and_connect(options, client, local, limit, observer);
        if !local {
            return attempt.await;
        }
        let mark = local::log_mark();
        let watch = async {
            loop {
                tokio::time::sleep(OUT_OF_FILES_POLL).await;
                if local::out_of_files_since(mark) {
                    return;
                }
            }
        };
        tokio::select! {
            started = attempt => started,
            // The attempt is dropped; the kernel it may have made goes with the old gateway.
            _ = watch => Err(StartFailure::GatewayOutOfFiles),
        }
    }

    async fn create_and_connect(
        options: &KernelOptions,
        client: GatewayClient,
        local: bool,
        limit: Duration,
        observer: StartObserver<'_>,
    ) -> Result<GatewayKernel, StartFailure> {
        let env = init::env_for_kernel(&options.env, local);
        let start_env = init::start_env(&env, &init::username());
        observer(StartStage::Kernel);
        let kernel_id = match client.create_kernel(&kernel_name(), &start_env, limit).await {
            Err(GatewayError::TooManyOpenFiles { .. }) if local => return Err(StartFailure::GatewayOutOfFiles),
            Err(error @ GatewayError::Timeout { .. }) => {
                return Err(startup_error(format!(
                    "{error}; if the gateway needs longer to start a kernel, set {} to more seconds",
                    super::STARTUP_TIMEOUT_VAR
                ))
                .into());
            }
            other => other.map_err(startup_error)?,
        };
        let started = tokio::time::timeout(limit, async {
            observer(StartStage::Connect);
            let kernel = GatewayKernel::connect(client.clone(), kernel_id.clone(), options.cwd.clone()).await?;
            observer(StartStage::Setup);
            kernel.run_internal(&init::setup_code(&options.cwd, &env, local)).await?;
            kernel.run_internal(&init::prelude_code()).await?;
            Ok::<_, KernelError>(kernel)
        })
        .await;
        match started {
            Ok(Ok(kernel)) => Ok(kernel),
            failed => {
                let _ = client.delete_kernel(&kernel_id).await;
                match failed {
                    Ok(Err(error)) => Err(error.into()),
                    _ => Err(startup_error(format!(
                        "the kernel on the gateway did not become ready within {}s; if it needs longer (a remote \
                         kernel can take minutes), set {} to more seconds",
                        limit.as_secs(),
                        super::STARTUP_TIMEOUT_VAR
                    ))
                    .into()),
                }
            }
        }
    }

    async fn connect(client: GatewayClient, kernel_id: String, cwd: PathBuf) -> Result<GatewayKernel, KernelError> {
        let session_id = new_session_id();
        let socket = open_channels(client.endpoint(), &kernel_id, &session_id).await?;
        let (outgoing, queue) = mpsc::unbounded_channel::<Message>();
        // The outgoing queue outlives reconnections: the bridge's replies go through it too.
        let shared = Arc::new_cyclic(|me: &std::sync::Weak<Shared>| {
            let me = me.clone();
            let cell_events = Box::new(move |cell: &str| {
                let shared = me.upgrade()?;
                let routes = shared.routes.lock().unwrap();
                routes.pending.get(cell).map(|pending| pending.sender.clone())
            });
            let bridge = GatewayBridge::new(outgoing.clone(), session_id.clone(), cell_events);
            Shared { routes: Mutex::new(Routes::default()), bridge: Arc::new(bridge), drop_for_test: Notify::new() }
        });
        let link = Link {
            shared: shared.clone(),
            client: client.clone(),
            kernel_id: kernel_id.clone(),
            session_id: session_id.clone(),
            outgoing: outgoing.clone(),
        };
        let task = tokio::spawn(link.run(socket, queue));
        Ok(GatewayKernel {
            client,
            kernel_id,
            session_id,
            outgoing,
            shared,
            cwd,
            next_id: AtomicU64::new(1),
            deleted: AtomicBool::new(false),
            tasks: vec![task],
        })
    }

    /// Close the client's end of the channels websocket at once, as a
    /// network failure would (tests of the reconnection use it).
    #[doc(hidden)]
    pub fn drop_connection_for_test(&self) {
        self.shared.drop_for_test.notify_one();
    }

    /// Run host-internal code; an error fails startup.
    async fn run_internal(&self, code: &str) -> Result<(), KernelError> {
        let options = ExecuteOptions { silent: true, internal: true, ..Default::default() };
        let output = self.execute_with(code, options).await?.collect().await?;
        match output.errors().first() {
            None => Ok(()),
            Some(error) => Err(startup_error(format!("{}: {}", error.ename, error.evalue))),
        }
    }

    fn message(&self, msg_type: &str, channel: &str, content: Value) -> (String, Message) {
        let msg_id = format!("{}_{}", self.session_id, self.next_id.fetch_add(1, Ordering::Relaxed));
        let message = json!({
            "header": {
                "msg_id": msg_id, "msg_type": msg_type, "session": self.session_id,
                "username": "cellbox", "version": "5.3",
            },
            "parent_header": {}, "metadata": {}, "content": content, "channel": channel, "buffers": [],
        });
        (msg_id, Message::text(message.to_string()))
    }

    fn send(&self, msg_id: String, message: Message) -> Result<Execution, KernelError> {
        let (sender, events) = mpsc::channel(EXECUTION_BUFFER);
        {
            let mut routes = self.shared.routes.lock().unwrap();
            if let Some(error) = &routes.dead {
                return Err(error.clone());
            }
            routes.pending.insert(
                msg_id.clone(),
                Pending { sender, started: false, idle: false, reply: None, stdin_requested: false, rate_noted: false },
            );
        }
        if self.outgoing.send(message).is_err() {
            self.shared.routes.lock().unwrap().pending.remove(&msg_id);
            return Err(self.dead_error());
        }
        Ok(handle::execution_from(msg_id, events))
    }

    fn dead_error(&self) -> KernelError {
        self.shared.routes.lock().unwrap().dead.clone().unwrap_or(KernelError::Closed)
    }

    /// Send an `execute_request`; its events arrive on the returned [`Execution`].
    pub async fn execute_with(&self, code: &str, options: ExecuteOptions) -> Result<Execution, KernelError> {
        let content = json!({
            "code": code, "silent": options.silent, "store_history": !options.internal,
            "user_expressions": {}, "allow_stdin": true, "stop_on_error": true,
        });
        let (msg_id, message) = self.message("execute_request", "shell", content);
        self.send(msg_id, message)
    }

    /// Ask the kernel whether `code` is a whole cell yet (`is_complete_request`).
    pub async fn check_complete(&self, code: &str) -> Result<Completeness, KernelError> {
        let (msg_id, message) = self.message("is_complete_request", "shell", json!({ "code": code }));
        let mut execution = self.send(msg_id, message)?;
        while let Some(item) = execution.next().await {
            if let ExecEvent::Completeness(answer) = item? {
                return Ok(answer);
            }
        }
        Err(KernelError::Closed)
    }

    /// Interrupt the running cell: once the kernel has taken it (an earlier
    /// interrupt is lost), `POST …/interrupt`, repeated every second until it ends.
    pub fn interrupt(&self) -> Result<(), KernelError> {
        if !self.is_alive() {
            return Err(KernelError::Closed);
        }
        let Some(target) = self.shared.routes.lock().unwrap().pending.keys().next().cloned() else {
            return Ok(());
        };
        // Host work done for the cell stops with it; its waiting callers get an answer.
        self.shared.bridge.cancel_all("the cell was interrupted");
        let (shared, client, kernel_id) = (self.shared.clone(), self.client.clone(), self.kernel_id.clone());
        tokio::spawn(async move {
            let state = |shared: &Shared| {
                let routes = shared.routes.lock().unwrap();
                if routes.dead.is_some() {
                    return None;
                }
                routes.pending.get(&target).map(|pending| pending.started)
            };
            loop {
                match state(&shared) {
                    None => return,
                    Some(true) => break,
                    Some(false) => tokio::time::sleep(Duration::from_millis(10)).await,
                }
            }
            loop {
                let _ = client.interrupt(&kernel_id).await;
                let deadline = tokio::time::Instant::now() + INTERRUPT_REPEAT;
                while tokio::time::Instant::now() < deadline {
                    if state(&shared).is_none() {
                        return;
                    }
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            }
        });
        Ok(())
    }

    /// Whether the kernel can still run cells.
    pub fn is_alive(&self) -> bool {
        self.shared.routes.lock().unwrap().dead.is_none()
    }

    /// Who answers the cells' bridge calls from now on.
    pub fn set_bridge(&self, hook: crate::kernel::bridge::BridgeHook) {
        self.shared.bridge.set_hook(hook);
    }

    /// Why the kernel stopped, once it has.
    pub fn death_reason(&self) -> Option<String> {
        match self.shared.routes.lock().unwrap().dead.as_ref()? {
            KernelError::Died { exit, .. } => Some(exit.clone()),
            other => Some(other.to_string()),
        }
    }

    /// Delete the kernel on the gateway and close the websocket. Idempotent.
    pub async fn shutdown(&self) {
        let pending = {
            let mut routes = self.shared.routes.lock().unwrap();
            routes.dead.get_or_insert(KernelError::Closed);
            std::mem::take(&mut routes.pending)
        };
        for (_, request) in pending {
            let _ = request.sender.try_send(Err(KernelError::Closed));
        }
        self.shared.bridge.cancel_all("the kernel was shut down");
        if !self.deleted.swap(true, Ordering::SeqCst) {
            let _ = self.outgoing.send(Message::Close(None));
            // A kernel the gateway is restarting (after a crash) cannot be
            // deleted until the restart is over: try again for a few seconds.
            for attempt in 1..=DELETE_ATTEMPTS {
                match self.client.delete_kernel(&self.kernel_id).await {
                    Ok(()) | Err(GatewayError::Status { status: 404, .. }) => break,
                    Err(error @ (GatewayError::Unreachable { .. } | GatewayError::Unauthorized { .. })) => {
                        tracing::warn!(target: "cellbox::gateway", "kernel {} was not deleted: {error}", self.kernel_id);
                        break;
                    }
                    Err(error) if attempt == DELETE_ATTEMPTS => {
                        tracing::warn!(target: "cellbox::gateway", "kernel {} was not deleted: {error}", self.kernel_id);
                    }
                    Err(_) => tokio::time::sleep(Duration::from_millis(300)).await,
                }
            }
        }
        for task in &self.tasks {
            task.abort();
        }
    }

    /// The kernel's id on the gateway.
    pub fn kernel_id(&self) -> &str {
        &self.kernel_id
    }

    /// The gateway this kernel runs on.
    pub fn endpoint(&self) -> &Endpoint {
        self.client.endpoint()
    }

    /// The working directory the kernel was set up in.
    pub fn cwd(&self) -> &Path {
        &self.cwd
    }
}

impl Drop for GatewayKernel {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
        self.shared.bridge.cancel_all("the kernel was shut down");
        if !self.deleted.swap(true, Ordering::SeqCst)
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            let (client, kernel_id) = (self.client.clone(), self.kernel_id.clone());
            runtime.spawn(async move {
                let _ = client.delete_kernel(&kernel_id).await;
            });
        }
    }
}

/// A kernel's channels websocket.
type Channels = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<QuickAckStream>>;

/// Open `/api/kernels/{id}/channels` for `session_id` (the token in a
/// header), in the binary v1 framing where the server speaks it.
async fn open_channels(
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
        super::client::install_crypto();
        use rustls_platform_verifier::ConfigVerifierExt;
        let config = rustls::ClientConfig::with_platform_verifier()
            .map_err(|e| Error::Url(tokio_tungstenite::tungstenite::error::UrlError::UnableToConnect(e.to_string())))?;
        Some(tokio_tungstenite::Connector::Rustls(Arc::new(config)))
    } else {
        None
    };
    let config = WebSocketConfig::default().max_message_size(Some(512 << 20)).max_frame_size(Some(512 << 20));
    let (socket, _) = tokio_tungstenite::client_async_tls_with_config(request, stream, Some(config), connector).await?;
    Ok(socket)
}

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
struct Link {
    shared: Arc<Shared>,
    client: GatewayClient,
    kernel_id: String,
    session_id: String,
    outgoing: mpsc::UnboundedSender<Message>,
}

impl Link {
    async fn run(self, mut socket: (Channels, Framing), mut queue: mpsc::UnboundedReceiver<Message>) {
        // A message whose send failed goes out first on the next socket.
        let mut unsent: Option<Message> = None;
        loop {
            let framing = socket.1;
            let (mut sink, mut stream) = socket.0.split();
            let frame = |message: Message| match (framing, message) {
                (Framing::V1, Message::Text(text)) => match serde_json::from_str::<Value>(text.as_str()) {
                    Ok(value) => Message::binary(wire::encode_v1(&value)),
                    Err(_) => Message::Text(text),
                },
                (_, message) => message,
            };
            let writer = async {
                if let Some(message) = unsent.take()
                    && let Err(error) = sink.send(frame(message.clone())).await
                {
                    return (Ending::Broken(format!("the connection to the gateway failed: {error}")), Some(message));
                }
                while let Some(message) = queue.recv().await {
                    let closing = matches!(message, Message::Close(_));
                    if let Err(error) = sink.send(frame(message.clone())).await {
                        let retry = (!closing).then_some(message);
                        return (Ending::Broken(format!("the connection to the gateway failed: {error}")), retry);
                    }
                    if closing {
                        return (Ending::Closed, None);
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
                    fail_pending(&self.shared, "the kernel was shut down".into()).await;
                    return;
                }
                Ending::KernelLost(reason) => {
                    fail_pending(&self.shared, reason).await;
                    return;
                }
                Ending::Broken(reason) => reason,
            };
            drop((sink, stream));
            match self.reconnect(&reason).await {
                Ok(again) => socket = again,
                Err(reason) => {
                    fail_pending(&self.shared, reason).await;
                    return;
                }
            }
        }
    }

    /// A new websocket for the same `session_id`, or why there is none.
    async fn reconnect(&self, why: &str) -> Result<(Channels, Framing), String> {
        tracing::warn!(target: "cellbox::gateway", "kernel {}: {why}; reconnecting", self.kernel_id);
        let mut last = why.to_string();
        for delay in RECONNECT_DELAYS_MS {
            tokio::time::sleep(Duration::from_millis(delay)).await;
            if self.shared.routes.lock().unwrap().dead.is_some() {
                return Err(last);
            }
            match self.client.kernel_exists(&self.kernel_id).await {
                Ok(true) => {}
                Ok(false) => return Err("the gateway no longer has the kernel".into()),
                Err(error @ GatewayError::Unauthorized { .. }) => return Err(error.to_string()),
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
        Err(format!("the connection to the gateway was lost and could not be restored: {last}"))
    }
}

/// Read the websocket until it stops serving, routing each message.
async fn read_loop<S>(
    shared: &Shared,
    stream: &mut S,
    framing: Framing,
    outgoing: &mpsc::UnboundedSender<Message>,
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
        for (sender, event) in route(shared, &message, outgoing, session) {
            // A consumer that stopped listening just loses the rest.
            let _ = sender.send(event).await;
        }
    }
    Ending::Broken(reason)
}

/// The kernel cannot run cells any more: every pending request ends with `reason`.
async fn fail_pending(shared: &Shared, reason: String) {
    let error = KernelError::Died { backend: Backend::Python, exit: reason, stderr_tail: String::new() };
    shared.bridge.cancel_all("the kernel's connection ended");
    let pending = {
        let mut routes = shared.routes.lock().unwrap();
        let error = routes.dead.get_or_insert(error).clone();
        std::mem::take(&mut routes.pending).into_values().map(move |p| (p.sender, error.clone())).collect::<Vec<_>>()
    };
    for (sender, error) in pending {
        let _ = sender.send(Err(error)).await;
    }
}

/// `restarting` or `dead`: the kernel's state is gone (a crash the gateway saw).
fn kernel_lost(message: &Value) -> Option<&str> {
    if message.pointer("/header/msg_type").and_then(Value::as_str) != Some("status") {
        return None;
    }
    match message.pointer("/content/execution_state").and_then(Value::as_str)? {
        state @ ("restarting" | "dead" | "autorestarting") => Some(state),
        _ => None,
    }
}

type Delivery = (EventSender, Result<ExecEvent, KernelError>);

/// What `message` means for the request it answers.
fn route(shared: &Shared, message: &Value, outgoing: &mpsc::UnboundedSender<Message>, session: &str) -> Vec<Delivery> {
    let msg_type = message.pointer("/header/msg_type").and_then(Value::as_str).unwrap_or_default();
    let Some(parent) = message.pointer("/parent_header/msg_id").and_then(Value::as_str) else { return Vec::new() };
    let content = message.get("content").cloned().unwrap_or(Value::Null);
    if msg_type == "input_request"
        && let Some(request) = CallRequest::from_content(&content)
    {
        let running = shared.routes.lock().unwrap().pending.contains_key(parent);
        let header = message.get("header").cloned().unwrap_or(Value::Null);
        shared.bridge.on_request(header, running.then(|| parent.to_string()), request);
        return Vec::new();
    }
    let mut routes = shared.routes.lock().unwrap();
    let Some(pending) = routes.pending.get_mut(parent) else { return Vec::new() };
    let mut events = Vec::new();
    if !pending.started && msg_type != "is_complete_reply" {
        pending.started = true;
        events.push(ExecEvent::Started);
    }
    let text = |key: &str| content.get(key).and_then(Value::as_str).unwrap_or_default().to_string();
    let data = |key: &str| content.get(key).and_then(Value::as_object).cloned().unwrap_or_default();
    let mut finished = None;
    match msg_type {
        "status" if content.get("execution_state").and_then(Value::as_str) == Some("idle") => pending.idle = true,
        "stream" => {
            let chunk = text("text");
            let rate_limited = chunk.contains(RATE_LIMIT_TEXT);
            events.push(if text("name") == "stderr" { ExecEvent::Stderr(chunk) } else { ExecEvent::Stdout(chunk) });
            if rate_limited && !pending.rate_noted {
                pending.rate_noted = true;
                events.push(ExecEvent::Stderr(
                    "[cellbox: the gateway dropped part of this cell's output (IOPub rate limit). Run the gateway \
                     with --ZMQChannelsWebsocketConnection.iopub_data_rate_limit=0 to keep it all, or print less.]\n"
                        .into(),
                ));
            }
        }
        "display_data" | "update_display_data" => {
            events.push(ExecEvent::Display { bundle: data("data"), metadata: data("metadata") })
        }
        "execute_result" => events.push(ExecEvent::Result { bundle: data("data"), metadata: data("metadata") }),
        "error" => events.push(ExecEvent::Error(CellError {
            ename: text("ename"),
            evalue: text("evalue"),
            traceback: content
                .get("traceback")
                .and_then(Value::as_array)
                .map(|lines| lines.iter().filter_map(Value::as_str).map(traceback_line).collect())
                .unwrap_or_default(),
        })),
        "execute_reply" => {
            let status = text("status");
            pending.reply = Some(CellDone {
                status: if status == "ok" { DoneStatus::Ok } else { DoneStatus::Error },
                execution_count: content.get("execution_count").and_then(Value::as_u64).unwrap_or(0),
                cancelled: text("ename") == "KeyboardInterrupt",
            });
        }
        "is_complete_reply" => {
            finished = Some(ExecEvent::Completeness(Completeness { status: text("status"), indent: text("indent") }));
        }
        "input_request" => {
            pending.stdin_requested = true;
            let reply = json!({
                "header": {
                    "msg_id": format!("{session}_input_{parent}"), "msg_type": "input_reply",
                    "session": session, "username": "cellbox", "version": "5.3",
                },
                "parent_header": message.get("header").cloned().unwrap_or(Value::Null),
                "metadata": {}, "content": { "value": "" }, "channel": "stdin", "buffers": [],
            });
            let _ = outgoing.send(Message::text(reply.to_string()));
        }
        _ => {}
    }
    if finished.is_none()
        && pending.idle
        && let Some(mut done) = pending.reply
    {
        if pending.stdin_requested {
            events.push(ExecEvent::Error(CellError {
                ename: STDIN_ERROR_NAME.into(),
                evalue: STDIN_ERROR_TEXT.into(),
                traceback: vec![format!("{STDIN_ERROR_NAME}: {STDIN_ERROR_TEXT}")],
            }));
            done.status = DoneStatus::Error;
        }
        finished = Some(ExecEvent::Done(done));
    }
    let sender = pending.sender.clone();
    if let Some(last) = finished {
        events.push(last);
        routes.pending.remove(parent);
        shared.bridge.cell_ended(parent);
    }
    events.into_iter().map(|event| (sender.clone(), Ok(event))).collect()
}

/// A traceback entry as cellbox's own tracebacks have them: no colour
/// codes, ending with a newline (Jupyter's entries are joined by front ends).
fn traceback_line(entry: &str) -> String {
    let mut line = strip_ansi(entry);
    if !line.ends_with('\n') {
        line.push('\n');
    }
    line
}

/// A traceback line without its terminal colour codes.
fn strip_ansi(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' && chars.peek() == Some(&'[') {
            chars.next();
            for code in chars.by_ref() {
                if ('@'..='~').contains(&code) {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// The bundle type a display carries, for tests that build messages by hand.
pub type Bundle = Map<String, Value>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_colour_codes() {
        assert_eq!(strip_ansi("\u{1b}[0;31mZeroDivisionError\u{1b}[0m: x"), "ZeroDivisionError: x");
    }

    #[test]
    fn restarting_and_dead_mean_the_kernel_is_lost() {
        let status = |state: &str| json!({"header": {"msg_type": "status"}, "content": {"execution_state": state}});
        assert_eq!(kernel_lost(&status("restarting")), Some("restarting"));
        assert_eq!(kernel_lost(&status("dead")), Some("dead"));
        assert_eq!(kernel_lost(&status("busy")), None);
    }
}
