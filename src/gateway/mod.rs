//! Python kernels on a Jupyter gateway (Kernel Gateway or Enterprise
//! Gateway) instead of a local runner process.
//!
//! - [`client`]: the REST side (`/api/kernels`, interrupt, delete, health),
//!   with the token in the `Authorization` header and errors that say what to fix;
//! - [`channels`]: [`GatewayKernel`], the websocket side, mapping Jupyter
//!   messages onto the same [`crate::kernel::ExecEvent`]s a process kernel yields;
//!   `route` holds the requests in flight and what each message means for
//!   them, `link` the websocket itself (its framing, reconnection);
//! - [`bridge`]: the cells' host-bridge calls, carried by the stdin channel;
//! - [`init`]: the code run in every new gateway kernel (cwd, environment,
//!   `sys.path`, the prelude, extension modules);
//! - [`local`]: the shared local gateway under `~/.cellbox/gateway/`, one per
//!   user, started on demand and reused by every cellbox process;
//! - [`net`]: the client socket (no-delay and `TCP_QUICKACK`);
//! - [`wire`]: the websocket framings (JSON, or the binary v1 protocol).
//!
//! Which gateway, if any, is a [`GatewaySetting`], read from the environment
//! (`CELLBOX_GATEWAY_URL`, `CELLBOX_GATEWAY_TOKEN`, `CELLBOX_BACKEND`).

pub mod bridge;
pub mod channels;
pub mod client;
pub mod init;
mod link;
pub mod local;
pub mod net;
mod route;
pub mod wire;

pub use channels::GatewayKernel;
pub use client::{Endpoint, GatewayClient, GatewayError};

/// The URL of an external gateway; setting it selects the gateway backend.
pub const URL_VAR: &str = "CELLBOX_GATEWAY_URL";
/// The token of the external gateway (sent as `Authorization: token …`).
pub const TOKEN_VAR: &str = "CELLBOX_GATEWAY_TOKEN";
/// `gateway` selects the shared local gateway; `process` (default) runner processes.
pub const BACKEND_VAR: &str = "CELLBOX_BACKEND";
/// The kernelspec to start on the gateway [default: `python3`].
pub const KERNEL_NAME_VAR: &str = "CELLBOX_GATEWAY_KERNEL";
/// The user name sent as `KERNEL_USERNAME` (Enterprise Gateway) [default: the local user, never root].
pub const USERNAME_VAR: &str = "CELLBOX_GATEWAY_USERNAME";

/// Seconds a gateway kernel may take to start (creation, connection, setup),
/// overriding the engine's startup timeout: remote kernels can take minutes.
pub const STARTUP_TIMEOUT_VAR: &str = "CELLBOX_GATEWAY_STARTUP_TIMEOUT";

/// The bound on a gateway kernel's start: `CELLBOX_GATEWAY_STARTUP_TIMEOUT`
/// seconds when set, else `default`; an unreadable value is an error that says so.
pub fn startup_timeout(default: std::time::Duration) -> Result<std::time::Duration, String> {
    match std::env::var(STARTUP_TIMEOUT_VAR) {
        Ok(value) if !value.trim().is_empty() => match value.trim().parse::<f64>() {
            Ok(seconds) if seconds.is_finite() && seconds > 0.0 => Ok(std::time::Duration::from_secs_f64(seconds)),
            _ => Err(format!(
                "{STARTUP_TIMEOUT_VAR}={value:?} is not a number of seconds: set it to how long a gateway kernel may \
                 take to start, e.g. 300"
            )),
        },
        _ => Ok(default),
    }
}

/// Which gateway runs Python kernels.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GatewaySetting {
    /// A gateway someone else runs: cellbox only talks to it.
    External {
        /// Base URL (`http://host:8888`, `https://…/gateway`).
        url: String,
        /// Sent as `Authorization: token …`, never in the query string.
        token: Option<String>,
    },
    /// One `python -m kernel_gateway` on 127.0.0.1 shared by every cellbox
    /// process of the user, started on the resolved interpreter.
    SharedLocal,
}

impl GatewaySetting {
    /// From `CELLBOX_GATEWAY_URL` (+ `CELLBOX_GATEWAY_TOKEN`), else
    /// `CELLBOX_BACKEND=gateway`; `None` for runner processes.
    pub fn from_env() -> Result<Option<GatewaySetting>, String> {
        let url = std::env::var(URL_VAR).ok().filter(|url| !url.trim().is_empty());
        let token = std::env::var(TOKEN_VAR).ok().filter(|token| !token.trim().is_empty());
        let backend = std::env::var(BACKEND_VAR).ok();
        GatewaySetting::choose(backend.as_deref(), url, token)
    }

    /// The setting for a `--backend` / `CELLBOX_BACKEND` value and an optional external URL.
    pub fn choose(
        backend: Option<&str>,
        url: Option<String>,
        token: Option<String>,
    ) -> Result<Option<GatewaySetting>, String> {
        let backend = backend.map(|b| b.trim().to_ascii_lowercase()).filter(|b| !b.is_empty());
        match (backend.as_deref(), url) {
            (Some("process" | "local"), _) => Ok(None),
            (None | Some("gateway"), Some(url)) => Ok(Some(GatewaySetting::External { url, token })),
            (Some("gateway"), None) => Ok(Some(GatewaySetting::SharedLocal)),
            (None, None) => Ok(None),
            (Some(other), _) => Err(format!(
                "unknown backend {other:?} (from --backend or {BACKEND_VAR}): use `process` (runner processes, the \
                 default) or `gateway` (a Jupyter gateway: {URL_VAR} if set, else the shared local one)"
            )),
        }
    }

    /// Whether cellbox manages the gateway process itself.
    pub fn is_local(&self) -> bool {
        matches!(self, GatewaySetting::SharedLocal)
    }
}
