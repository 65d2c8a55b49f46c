//! The REST side of a Jupyter gateway: create, interrupt and delete kernels,
//! and the health check (`GET /api/kernelspecs`).
//!
//! The token always travels in the `Authorization: token …` header: a token
//! in the query string ends up in the gateway's access log.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{Value, json};

/// How long connecting to a gateway may take before it counts as unreachable.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Bound on the small REST calls (interrupt, delete, health).
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// Where a gateway answers, and the token it wants.
#[derive(Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// Base URL without a trailing slash (`http://127.0.0.1:8888`).
    pub url: String,
    pub token: Option<String>,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the token.
        f.debug_struct("Endpoint").field("url", &self.url).field("token", &self.token.as_ref().map(|_| "…")).finish()
    }
}

impl Endpoint {
    /// An endpoint; a trailing `/` of `url` is dropped.
    pub fn new(url: impl Into<String>, token: Option<String>) -> Self {
        let url = url.into().trim().trim_end_matches('/').to_string();
        Endpoint { url, token }
    }

    /// The websocket URL of a kernel's channels (`ws://` for `http://`, `wss://` for `https://`).
    pub fn channels_url(&self, kernel_id: &str, session_id: &str) -> String {
        let ws = if let Some(rest) = self.url.strip_prefix("https://") {
            format!("wss://{rest}")
        } else if let Some(rest) = self.url.strip_prefix("http://") {
            format!("ws://{rest}")
        } else {
            self.url.clone()
        };
        format!("{ws}/api/kernels/{kernel_id}/channels?session_id={session_id}")
    }
}

/// What went wrong talking to a gateway; each message says what to do.
#[derive(Debug, Clone, thiserror::Error)]
pub enum GatewayError {
    #[error(
        "could not reach the Jupyter gateway at {url} ({message}). Check the URL (CELLBOX_GATEWAY_URL) and that the \
         gateway is running and reachable from here"
    )]
    Unreachable { url: String, message: String },
    #[error(
        "the Jupyter gateway at {url} refused the request ({status}): set CELLBOX_GATEWAY_TOKEN to the gateway's \
         token (it is sent as an `Authorization: token …` header)"
    )]
    Unauthorized { url: String, status: u16 },
    #[error("the Jupyter gateway at {url} answered {what} with {status}: {body}")]
    Status { url: String, what: String, status: u16, body: String },
    #[error(
        "the Jupyter gateway at {url} ran out of file descriptors answering {what} (EMFILE, \"Too many open files\"): \
         raise its open-file limit (ulimit -n) or run fewer kernels on it"
    )]
    TooManyOpenFiles { url: String, what: String },
    #[error("the Jupyter gateway at {url} did not answer {what} within {seconds}s; check its health and its logs")]
    Timeout { url: String, what: String, seconds: u64 },
    #[error("the Jupyter gateway at {url} sent an answer to {what} cellbox cannot read: {message}")]
    BadAnswer { url: String, what: String, message: String },
    #[error("the Jupyter gateway URL {url:?} is not usable: {message}. Use http://host:port or https://host/path")]
    BadUrl { url: String, message: String },
}

/// A REST client for one gateway.
#[derive(Debug, Clone)]
pub struct GatewayClient {
    endpoint: Endpoint,
    http: reqwest::Client,
}

impl GatewayClient {
    /// A client for `endpoint`.
    pub fn new(endpoint: Endpoint) -> Result<GatewayClient, GatewayError> {
        if !(endpoint.url.starts_with("http://") || endpoint.url.starts_with("https://")) {
            return Err(GatewayError::BadUrl {
                url: endpoint.url.clone(),
                message: "it must start with http:// or https://".into(),
            });
        }
        crate::tls::install_crypto();
        let http = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .tcp_nodelay(true)
            .no_proxy()
            .build()
            .map_err(|e| GatewayError::BadUrl { url: endpoint.url.clone(), message: e.to_string() })?;
        Ok(GatewayClient { endpoint, http })
    }

    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        let builder = self.http.request(method, format!("{}{path}", self.endpoint.url));
        match &self.endpoint.token {
            Some(token) => builder.header("Authorization", format!("token {token}")),
            None => builder,
        }
    }

    async fn send(&self, what: &str, request: reqwest::RequestBuilder, limit: Duration) -> Result<Value, GatewayError> {
        let url = self.endpoint.url.clone();
        let response = match tokio::time::timeout(limit, request.send()).await {
            Err(_) => return Err(GatewayError::Timeout { url, what: what.into(), seconds: limit.as_secs() }),
            Ok(Err(error)) if error.is_timeout() => {
                return Err(GatewayError::Timeout { url, what: what.into(), seconds: CONNECT_TIMEOUT.as_secs() });
            }
            Ok(Err(error)) => return Err(GatewayError::Unreachable { url, message: error_chain(&error) }),
            Ok(Ok(response)) => response,
        };
        let status = response.status().as_u16();
        if status == 401 || status == 403 {
            return Err(GatewayError::Unauthorized { url, status });
        }
        let body = tokio::time::timeout(limit, response.text())
            .await
            .map_err(|_| GatewayError::Timeout { url: url.clone(), what: what.into(), seconds: limit.as_secs() })?
            .map_err(|e| GatewayError::Unreachable { url: url.clone(), message: error_chain(&e) })?;
        if !(200..300).contains(&status) {
            // The error is at the end of the traceback a Jupyter server sends,
            // past what is kept of the body below.
            if status >= 500 && mentions_emfile(&body) {
                return Err(GatewayError::TooManyOpenFiles { url, what: what.into() });
            }
            let body: String = body.chars().take(500).collect();
            return Err(GatewayError::Status { url, what: what.into(), status, body });
        }
        if body.trim().is_empty() {
            return Ok(Value::Null);
        }
        serde_json::from_str(&body).map_err(|e| GatewayError::BadAnswer {
            url,
            what: what.into(),
            message: e.to_string(),
        })
    }

    /// `GET /api/kernelspecs`: the gateway is up and accepts our token.
    pub async fn health(&self) -> Result<Value, GatewayError> {
        self.send("GET /api/kernelspecs", self.request(reqwest::Method::GET, "/api/kernelspecs"), REQUEST_TIMEOUT).await
    }

    /// `POST /api/kernels`: start a kernel of `name` with `env` (which the
    /// gateway filters by its whitelist), within `limit`; returns its id.
    pub async fn create_kernel(
        &self,
        name: &str,
        env: &BTreeMap<String, String>,
        limit: Duration,
    ) -> Result<String, GatewayError> {
        let what = "POST /api/kernels";
        let body = json!({ "name": name, "env": env });
        let answer = self.send(what, self.request(reqwest::Method::POST, "/api/kernels").json(&body), limit).await?;
        answer.get("id").and_then(Value::as_str).map(String::from).ok_or_else(|| GatewayError::BadAnswer {
            url: self.endpoint.url.clone(),
            what: what.into(),
            message: format!("no kernel id in {answer}"),
        })
    }

    /// `POST /api/kernels/{id}/interrupt`.
    pub async fn interrupt(&self, kernel_id: &str) -> Result<(), GatewayError> {
        let path = format!("/api/kernels/{kernel_id}/interrupt");
        self.send("an interrupt", self.request(reqwest::Method::POST, &path), REQUEST_TIMEOUT).await.map(|_| ())
    }

    /// `DELETE /api/kernels/{id}` (the gateway stops the kernel).
    pub async fn delete_kernel(&self, kernel_id: &str) -> Result<(), GatewayError> {
        let path = format!("/api/kernels/{kernel_id}");
        self.send("a kernel deletion", self.request(reqwest::Method::DELETE, &path), REQUEST_TIMEOUT).await.map(|_| ())
    }

    /// `GET /api/kernels/{id}`: whether the gateway still has the kernel
    /// (`false` on 404: it was deleted, culled, or the gateway restarted).
    pub async fn kernel_exists(&self, kernel_id: &str) -> Result<bool, GatewayError> {
        let path = format!("/api/kernels/{kernel_id}");
        match self.send("GET /api/kernels/{id}", self.request(reqwest::Method::GET, &path), REQUEST_TIMEOUT).await {
            Ok(_) => Ok(true),
            Err(GatewayError::Status { status: 404, .. }) => Ok(false),
            Err(error) => Err(error),
        }
    }

    /// `GET /api/kernels`: the ids of the kernels the gateway runs.
    pub async fn list_kernels(&self) -> Result<Vec<String>, GatewayError> {
        let answer =
            self.send("GET /api/kernels", self.request(reqwest::Method::GET, "/api/kernels"), REQUEST_TIMEOUT).await?;
        Ok(answer
            .as_array()
            .map(|kernels| {
                kernels.iter().filter_map(|k| k.get("id").and_then(Value::as_str).map(String::from)).collect()
            })
            .unwrap_or_default())
    }
}

/// Whether a gateway's error answer says it ran out of file descriptors
/// (as an `OSError`/`ZMQError` in the traceback of a 500).
fn mentions_emfile(body: &str) -> bool {
    body.contains("Too many open files") || body.contains("[Errno 24]")
}

/// An error and its causes on one line (reqwest's own message is terse).
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut message = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !message.contains(&text) {
            message.push_str(": ");
            message.push_str(&text);
        }
        source = cause.source();
    }
    message
}
