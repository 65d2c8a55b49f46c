//! `cellbox serve`: the eval tool for many clients over HTTP.
//!
//! Routes:
//! - `/mcp`: the MCP server on the streamable HTTP transport (rmcp's own),
//!   behind bearer-token auth; each principal reaches its own engine
//!   ([`principals`]), so sessions, runs and artifacts never cross principals.
//! - `/ui`: the web view of the principal's sessions ([`crate::web::ui`], [`web_view`]).
//! - `/healthz` (the process answers) and `/readyz` (it takes new work; 503
//!   while shutting down), without auth, for load balancers and supervisors.
//!
//! Safe by default: it listens on loopback, refuses a non-loopback address
//! without tokens, checks `Host` (DNS rebinding) and rejects browser `Origin`s
//! not explicitly allowed. On SIGINT/SIGTERM it stops accepting, lets calls in
//! progress finish for a grace period, then cancels them and stops every kernel.

mod e2b;
pub mod jwt;
pub mod listen;
pub mod metrics;
pub mod principals;
mod sdk;
pub mod tls;
pub mod tokens;
mod web_view;

use std::io::Write as _;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get};
use rmcp::transport::streamable_http_server::StreamableHttpServerConfig;
use tokio_util::sync::CancellationToken;

use crate::tool::EngineConfig;
use metrics::{Metrics, Ticket, Work};
use principals::Principals;
use tokens::{Identity, TokenStore};

/// The principal of every request when auth is off (loopback only).
pub const LOCAL_PRINCIPAL: &str = "local";

/// How requests prove who they are.
pub enum Auth {
    /// `Authorization: Bearer <token>`: a token of the store, or with `jwt`
    /// an access token of that external authorization server.
    Bearer { tokens: TokenStore, jwt: Option<Box<jwt::JwtVerifier>> },
    /// No check: every request is [`LOCAL_PRINCIPAL`]. Only on a loopback address.
    Off,
}

impl Auth {
    /// Whether more than one principal can sign in (now or once the tokens file grows).
    pub fn several_principals(&self) -> bool {
        match self {
            Auth::Off => false,
            Auth::Bearer { tokens, jwt } => jwt.is_some() || tokens.count() > 1,
        }
    }
}

/// Why the server would not start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error(
        "refusing to listen on {0} without auth: anyone who can reach it could run code as you. Make a token \
         with `cellbox serve token add NAME`, or listen on 127.0.0.1"
    )]
    OpenWithoutAuth(SocketAddr),
    #[error(
        "no tokens are configured, so no client could sign in. Make one with `cellbox serve token add NAME` (or \
         set CELLBOX_SERVE_TOKEN), or pass --no-auth to serve this machine's loopback without auth"
    )]
    NoTokens,
    #[error("cannot listen on {address}: {message}")]
    Listen { address: SocketAddr, message: String },
    #[error(transparent)]
    Tls(#[from] tls::TlsError),
    #[error("{0}")]
    Keys(String),
    #[error(
        "refusing to serve several principals without a sandbox: {0}. Their kernels would read and write each \
         other's folders. Run one server per principal, fix what is missing (`cellbox doctor` says), or pass \
         --sandbox off to accept that principals are not kept apart"
    )]
    Unsandboxed(crate::sandbox::Unenforceable),
    #[error("the server failed: {0}")]
    Io(#[from] std::io::Error),
}

/// Everything `serve` needs.
pub struct ServeConfig {
    pub listen: SocketAddr,
    pub auth: Auth,
    /// Every principal's engine configuration before its own folders are set.
    pub engine: EngineConfig,
    /// Principals' working folders are `<root>/<name>`.
    pub root: PathBuf,
    /// `Host` values accepted besides loopback names (needed for a public address).
    pub allowed_hosts: Vec<String>,
    /// Browser origins accepted (`https://app.example.com:443`); none by default.
    pub allowed_origins: Vec<String>,
    /// Largest request body, in bytes.
    pub max_body_bytes: usize,
    /// How long calls in progress may go on after a stop signal.
    pub shutdown_grace: Duration,
    /// MCP requests in progress at most (over all principals); more get 429.
    pub max_calls: usize,
    /// Open SDK connections (remote sandboxes) at most; more get 429.
    pub max_sandboxes: usize,
    /// What one principal may hold unless its token says otherwise.
    pub shares: principals::Shares,
    /// HTTPS with this PEM certificate chain and private key, instead of plain HTTP.
    pub tls: Option<(PathBuf, PathBuf)>,
    /// How many connections may be open, and how long a client may stall.
    pub connections: listen::ConnectionLimits,
    /// Print the variables that point E2B's SDKs here once listening.
    pub print_e2b: bool,
}

impl ServeConfig {
    /// Refuse what would expose the machine: a reachable address without auth,
    /// or auth with nobody able to sign in.
    pub fn check(&self) -> Result<(), ServeError> {
        match &self.auth {
            Auth::Off if !self.listen.ip().is_loopback() => return Err(ServeError::OpenWithoutAuth(self.listen)),
            Auth::Bearer { tokens, jwt: None } if tokens.count() == 0 => return Err(ServeError::NoTokens),
            _ => {}
        }
        match crate::sandbox::filesystem_unenforceable(&self.engine.sandbox) {
            Some(reason) if self.auth.several_principals() => Err(ServeError::Unsandboxed(reason)),
            _ => Ok(()),
        }
    }

    /// The `Host` values a request may carry: loopback names, the listen address, and `--allowed-host`s.
    fn hosts(&self) -> Vec<String> {
        let mut hosts = vec!["localhost".to_string(), "127.0.0.1".to_string(), "::1".to_string()];
        if !self.listen.ip().is_unspecified() {
            hosts.push(self.listen.ip().to_string());
        }
        hosts.extend(self.allowed_hosts.iter().cloned());
        hosts
    }

    fn http_config(&self, cancel: CancellationToken) -> StreamableHttpServerConfig {
        StreamableHttpServerConfig::default()
            .with_allowed_hosts(self.hosts())
            .with_allowed_origins(self.allowed_origins.clone())
            // No allowed origin given: every request that carries an Origin (a browser's) is refused.
            .enforce_origin_validation()
            .with_max_request_body_bytes(self.max_body_bytes)
            .with_cancellation_token(cancel)
    }
}

pub(crate) struct ServerState {
    pub(crate) auth: Auth,
    pub(crate) principals: Principals,
    pub(crate) stopping: AtomicBool,
    /// Cancelled with `stopping`: what only watches (the web view's event streams) ends at once.
    pub(crate) stop_signal: CancellationToken,
    pub(crate) metrics: Arc<Metrics>,
    pub(crate) max_calls: usize,
    pub(crate) max_sandboxes: usize,
    /// Whether the server speaks HTTPS (for the URLs it gives out).
    pub(crate) https: bool,
    /// Cancelled when the grace period after a stop signal is over: what outlives a
    /// request (an upgraded `/sdk` connection) ends then.
    pub(crate) hard_stop: CancellationToken,
    /// The sandboxes made through E2B's API.
    pub(crate) e2b: Arc<e2b::Sandboxes>,
}

impl ServerState {
    /// The principal of a request, or why it is refused (counted).
    pub(crate) async fn principal_of(&self, headers: &HeaderMap) -> Result<Identity, Refusal> {
        let token = bearer_token(headers);
        authenticate(&self.auth, token).await.map_err(|message| self.unauthorized(headers, message))
    }

    /// The principal of an E2B control-plane request: its token is in `X-API-Key`
    /// (or, as elsewhere, `Authorization: Bearer`).
    pub(crate) async fn principal_of_api_key(&self, headers: &HeaderMap) -> Result<Identity, Refusal> {
        let token = headers.get("x-api-key").and_then(|value| value.to_str().ok()).map(str::trim);
        let token = token.filter(|token| !token.is_empty()).or_else(|| bearer_token(headers));
        authenticate(&self.auth, token).await.map_err(|message| self.unauthorized(headers, message))
    }

    /// A refusal for bad credentials, counted.
    fn unauthorized(&self, headers: &HeaderMap, message: &'static str) -> Refusal {
        self.metrics.refused_auth.fetch_add(1, Ordering::Relaxed);
        let metadata = match &self.auth {
            Auth::Bearer { jwt: Some(_), .. } => Some(self.url_of(headers, METADATA_PATH)),
            _ => None,
        };
        Refusal::Unauthorized { message, metadata }
    }

    /// This server's URL for `path`, as the request's `Host` names the server.
    fn url_of(&self, headers: &HeaderMap, path: &str) -> String {
        let host = headers.get(header::HOST).and_then(|v| v.to_str().ok()).unwrap_or("localhost");
        format!("{}://{host}{path}", if self.https { "https" } else { "http" })
    }

    /// A place for `work`, or the refusal that says the server is full.
    pub(crate) fn admit(&self, work: Work) -> Result<Ticket, Refusal> {
        let (limit, what) = match work {
            Work::Call => (self.max_calls, "MCP requests in progress"),
            Work::Sandbox => (self.max_sandboxes, "open SDK sandboxes"),
        };
        self.metrics
            .admit(work, limit)
            .ok_or_else(|| Refusal::Busy(format!("the server is at its limit of {limit} {what}; retry in a moment")))
    }
}

/// Where the OAuth 2.0 Protected Resource Metadata of `/mcp` is (RFC 9728's path insertion).
const METADATA_PATH: &str = "/.well-known/oauth-protected-resource/mcp";

/// Why a request is not served.
pub(crate) enum Refusal {
    /// 401, with the challenge RFC 6750 asks for (and RFC 9728's metadata URL when there is one).
    Unauthorized { message: &'static str, metadata: Option<String> },
    /// 429, to retry after a second.
    Busy(String),
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        match self {
            Refusal::Unauthorized { message, metadata } => {
                let mut response = json_error(StatusCode::UNAUTHORIZED, message);
                let challenge = match metadata {
                    Some(url) => format!("Bearer realm=\"cellbox\", resource_metadata=\"{url}\""),
                    None => "Bearer realm=\"cellbox\"".to_string(),
                };
                if let Ok(value) = HeaderValue::from_str(&challenge) {
                    response.headers_mut().insert(header::WWW_AUTHENTICATE, value);
                }
                response
            }
            Refusal::Busy(message) => {
                let mut response = json_error(StatusCode::TOO_MANY_REQUESTS, &message);
                response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
                response
            }
        }
    }
}

/// Serve until SIGINT/SIGTERM or `stop` is cancelled. Prints the address it
/// listens on (the port chosen, for `:0`) on stderr once it accepts.
pub async fn serve(config: ServeConfig, stop: CancellationToken) -> Result<(), ServeError> {
    config.check()?;
    if let Auth::Bearer { jwt: Some(jwt), .. } = &config.auth {
        jwt.check_keys().await.map_err(ServeError::Keys)?;
    }
    let acceptor = config.tls.as_ref().map(|(cert, key)| tls::acceptor(cert, key)).transpose()?;
    // Listened for before the address is printed: a supervisor may stop the server as soon as it
    // reads it, and a SIGTERM before the handler is in place would kill it without a word.
    let stop_signals = crate::stop_signals::StopSignals::listen().ok();
    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .map_err(|e| ServeError::Listen { address: config.listen, message: e.to_string() })?;
    let address = listener.local_addr()?;
    let sessions_cancel = CancellationToken::new();
    let http = config.http_config(sessions_cancel.clone());
    let grace = config.shutdown_grace;
    let allowed_hosts = Arc::new(crate::web::hosts::AllowedHosts::new(&config.hosts()));
    let connections = config.connections;
    let state = Arc::new(ServerState {
        principals: Principals::new(config.engine, config.root, http, config.shares),
        auth: config.auth,
        stopping: AtomicBool::new(false),
        stop_signal: CancellationToken::new(),
        metrics: Arc::default(),
        max_calls: config.max_calls.max(1),
        max_sandboxes: config.max_sandboxes.max(1),
        https: config.tls.is_some(),
        hard_stop: CancellationToken::new(),
        e2b: Arc::default(),
    });
    let app = Router::new()
        .route("/mcp", any(mcp))
        .route("/sdk", get(sdk::connect))
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(ready))
        .route("/metrics", get(metrics))
        .merge(e2b::routes())
        .route(METADATA_PATH, get(resource_metadata))
        .route("/.well-known/oauth-protected-resource", get(resource_metadata))
        .with_state(state.clone())
        .merge(crate::web::ui::routes(crate::web::ui::Ui::new(
            Box::new(web_view::ServeHost(Arc::downgrade(&state))),
            state.https,
            state.stop_signal.clone(),
        )))
        .layer(axum::middleware::from_fn_with_state(allowed_hosts, crate::web::hosts::check))
        .layer(axum::middleware::from_fn(log_request));
    let auth_note = match &state.auth {
        Auth::Bearer { tokens, jwt: None } => format!("bearer tokens ({} principal(s))", tokens.count()),
        Auth::Bearer { tokens, jwt: Some(jwt) } => {
            format!("bearer tokens ({} principal(s)) and JWTs of {}", tokens.count(), jwt.issuer)
        }
        Auth::Off => "no auth (loopback only)".to_string(),
    };
    let scheme = if state.https { "https" } else { "http" };
    // Said with writeln!, here and below: eprintln! panics once stderr is a pipe nobody reads.
    let _ = writeln!(std::io::stderr(), "cellbox serve: MCP on {scheme}://{address}/mcp, {auth_note}");
    let _ = writeln!(std::io::stderr(), "cellbox serve: the web view is on {scheme}://{address}/ui");
    if config.print_e2b {
        let key = match &state.auth {
            Auth::Off => format!("{}{}  # auth is off: any key works", tokens::E2B_TOKEN_PREFIX, "0".repeat(40)),
            Auth::Bearer { .. } => "...  # a token of `cellbox serve token add NAME --e2b`".to_string(),
        };
        let _ = writeln!(
            std::io::stderr(),
            "cellbox serve: E2B's SDKs reach this server with\n  export E2B_API_URL={scheme}://{address}\n  export \
             E2B_SANDBOX_URL={scheme}://{address}\n  export E2B_API_KEY={key}"
        );
    }
    let result = match acceptor {
        Some(acceptor) => {
            let listener = tls::TlsListener::new(listener, acceptor)?;
            run(listener, app, &state, (stop, stop_signals), sessions_cancel, grace, connections).await
        }
        None => {
            // Answers are small writes (an event stream's priming event, then the
            // message): without no-delay, Nagle's algorithm holds the second until
            // the client's delayed ACK, 40 ms on Linux.
            let listener = axum::serve::ListenerExt::tap_io(listener, |stream: &mut tokio::net::TcpStream| {
                let _ = stream.set_nodelay(true);
            });
            run(listener, app, &state, (stop, stop_signals), sessions_cancel, grace, connections).await
        }
    };
    state.e2b.kill_all().await;
    for engine in state.principals.engines() {
        // With a state folder, the sessions are found again at the next start.
        if engine.keeps_sessions() {
            let count = engine.hibernate_all("the server stopped").await;
            tracing::info!("hibernated {count} session kernel(s) for the next start");
        }
        engine.dispose_all().await;
    }
    result
}

/// Accept on `listener` until a stop signal, then give calls `grace` to finish;
/// after it, cancel the MCP sessions (the calls still running with them), end
/// the SDK connections and close every connection still open.
async fn run<L>(
    listener: L,
    app: Router,
    state: &Arc<ServerState>,
    (stop, stop_signals): (CancellationToken, Option<crate::stop_signals::StopSignals>),
    sessions_cancel: CancellationToken,
    grace: Duration,
    connections: listen::ConnectionLimits,
) -> Result<(), ServeError>
where
    L: axum::serve::Listener<Addr = SocketAddr>,
{
    let accepting = CancellationToken::new();
    let signals = tokio::spawn({
        let (stop, accepting, state) = (stop.clone(), accepting.clone(), state.clone());
        async move {
            match stop_signals {
                Some(mut signals) => tokio::select! { _ = signals.next() => {}, _ = stop.cancelled() => {} },
                None => stop.cancelled().await,
            }
            state.stopping.store(true, Ordering::SeqCst);
            state.stop_signal.cancel();
            // A panic here would end this task, and the server would never stop.
            let _ = writeln!(
                std::io::stderr(),
                "cellbox serve: stopping; calls in progress have {} s to finish",
                grace.as_secs()
            );
            accepting.cancel();
        }
    });
    let hard_stop = state.hard_stop.clone();
    let cancel_sessions = tokio::spawn({
        let (hard_stop, sessions_cancel) = (hard_stop.clone(), sessions_cancel.clone());
        async move {
            hard_stop.cancelled().await;
            sessions_cancel.cancel();
        }
    });
    listen::serve(listener, app, connections, state.metrics.clone(), accepting, grace, hard_stop.clone()).await;
    hard_stop.cancel();
    sessions_cancel.cancel();
    let _ = cancel_sessions.await;
    signals.abort();
    Ok(())
}

async fn ready(State(state): State<Arc<ServerState>>) -> Response {
    if state.stopping.load(Ordering::SeqCst) {
        (StatusCode::SERVICE_UNAVAILABLE, "stopping\n").into_response()
    } else {
        "ready\n".into_response()
    }
}

/// The Prometheus text format of [`Metrics`], with the engines' load summed.
async fn metrics(State(state): State<Arc<ServerState>>) -> Response {
    let mut load = crate::tool::EngineLoad::default();
    for engine in state.principals.engines() {
        load.add(&engine.load());
    }
    let text = state.metrics.render(state.principals.count(), &load, &state.principals.network_counts());
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], text).into_response()
}

/// Each request in a span with its own id and its MCP session, so the logs of
/// one call can be told from another's.
async fn log_request(request: Request, next: axum::middleware::Next) -> Response {
    static NEXT_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    let session = request.headers().get("mcp-session-id").and_then(|v| v.to_str().ok()).unwrap_or("-").to_string();
    let span = tracing::info_span!("request", id, method = %request.method(), path = %request.uri().path(), session);
    let response = tracing::Instrument::instrument(next.run(request), span.clone()).await;
    span.in_scope(|| tracing::info!(status = response.status().as_u16(), "answered"));
    response
}

/// RFC 9728's metadata, when an external authorization server is configured.
async fn resource_metadata(State(state): State<Arc<ServerState>>, headers: HeaderMap) -> Response {
    match &state.auth {
        Auth::Bearer { jwt: Some(jwt), .. } => {
            axum::Json(jwt.metadata(&state.url_of(&headers, "/mcp"))).into_response()
        }
        _ => json_error(StatusCode::NOT_FOUND, "this server takes cellbox tokens only: no authorization server"),
    }
}

async fn mcp(State(state): State<Arc<ServerState>>, request: Request) -> Response {
    let identity = match state.principal_of(request.headers()).await {
        Ok(identity) => identity,
        Err(refusal) => return refusal.into_response(),
    };
    let name = identity.name.clone();
    let principal = match state.principals.get(&identity) {
        Ok(principal) => principal,
        Err(error) => return principal_refusal(&name, error),
    };
    // Each POST is a message; its answer (a tool call's stream) holds its places (the
    // principal's own, then the server's) until it ends.
    let (own_place, ticket) = if request.method() == axum::http::Method::POST {
        let own = match principal.admit_call() {
            Ok(place) => place,
            Err(limit) => {
                state.metrics.refused_busy.fetch_add(1, Ordering::Relaxed);
                return Refusal::Busy(format!(
                    "you are at your limit of {limit} MCP requests in progress; retry in a moment"
                ))
                .into_response();
            }
        };
        match state.admit(Work::Call) {
            Ok(ticket) => (Some(own), Some(ticket)),
            Err(refusal) => return refusal.into_response(),
        }
    } else {
        (None, None)
    };
    tracing::debug!(principal = principal.name, method = %request.method(), "mcp request");
    let ends_session = request.method() == axum::http::Method::DELETE;
    let mut response = principal.mcp.handle(request).await.map(Body::new);
    // A session ended is "204 No Content": clients that expect 200/204 for a
    // DELETE (the Python SDK) would otherwise log a failure for a success.
    if ends_session && response.status() == StatusCode::ACCEPTED {
        *response.status_mut() = StatusCode::NO_CONTENT;
    }
    // The body counts what it sends, and holds the ticket (if any) until it ends.
    let metrics = state.metrics.clone();
    response.map(|body| {
        Body::new(http_body_util::BodyExt::map_frame(body, move |frame| {
            let _held = (&ticket, &own_place);
            if let Some(data) = frame.data_ref() {
                metrics.bytes_out.fetch_add(data.len() as u64, Ordering::Relaxed);
            }
            frame
        }))
    })
}

/// The answer to a request of a principal the server cannot serve now.
pub(crate) fn principal_refusal(name: &str, error: principals::PrincipalError) -> Response {
    use principals::PrincipalError;
    match &error {
        PrincipalError::Workspace(io) => {
            tracing::error!(principal = name, "cannot make the principal's folder: {io}");
            json_error(StatusCode::INTERNAL_SERVER_ERROR, &error.to_string())
        }
        PrincipalError::OnlyOne { .. } => json_error(StatusCode::FORBIDDEN, &error.to_string()),
        PrincipalError::Full => Refusal::Busy(error.to_string()).into_response(),
    }
}

/// The token of `Authorization: Bearer <token>`, if the request has one.
fn bearer_token(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer ").or_else(|| value.strip_prefix("bearer ")))
        .map(str::trim)
}

/// The principal a request's token names, or why it names none.
async fn authenticate(auth: &Auth, token: Option<&str>) -> Result<Identity, &'static str> {
    let (tokens, jwt) = match auth {
        Auth::Off => return Ok(Identity::named(LOCAL_PRINCIPAL)),
        Auth::Bearer { tokens, jwt } => (tokens, jwt),
    };
    let token = token.ok_or(
        "this server needs a token: send `Authorization: Bearer <token>` (tokens are made with \
             `cellbox serve token add NAME` on the server)",
    )?;
    if let Some(name) = tokens.principal(token) {
        return Ok(name);
    }
    match jwt {
        Some(jwt) if !tokens::is_own_token(token) => jwt.principal(token).await.map(Identity::named),
        _ => Err("the token is not valid here (unknown or revoked)"),
    }
}

pub(crate) use crate::web::json_error;
