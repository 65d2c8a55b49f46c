//! Python kernels on a Jupyter gateway (Kernel Gateway or Enterprise
//! Gateway) instead of a local runner process.
//!
//! - [`client`]: the REST side (`/api/kernels`, interrupt, delete, health),
//!   with the token in the `Authorization` header and errors that say what to fix;
//! - [`channels`]: [`GatewayKernel`], the websocket side, mapping Jupyter
//!   messages onto the same [`crate::kernel::ExecEvent`]s a process kernel yields;
//!   `link` is the websocket itself (its framing, reconnection);
//! - [`crate::jupyter`]: what the messages mean for the requests in flight,
//!   shared with kernels started from their kernelspecs; its `bridge_stdin`
//!   carries the cells' host-bridge calls on the stdin channel;
//! - [`init`]: the code run in every new gateway kernel (cwd, environment,
//!   `sys.path`, the prelude, extension modules);
//! - [`local`]: the shared local gateway under `~/.cellbox/gateway/`, one per
//!   user, started on demand and reused by every cellbox process;
//! - [`net`]: the client socket (no-delay and `TCP_QUICKACK`);
//! - [`wire`]: the websocket framings (JSON, or the binary v1 protocol).
//!
//! Which gateway, if any, is a [`GatewaySetting`], which the front ends choose from
//! `--backend` (or `CELLBOX_BACKEND`), `CELLBOX_GATEWAY_URL` and `CELLBOX_GATEWAY_TOKEN`.

pub mod channels;
pub mod client;
pub mod init;
mod link;
pub mod local;
pub mod net;
pub mod wire;

pub use channels::GatewayKernel;
pub use client::{Endpoint, GatewayClient, GatewayError};

use crate::kernel::KernelError;
use crate::runtime::Runtime;
use crate::settings;

/// A gateway kernel that could not start (gateway kernels are Python's).
pub(crate) fn startup_error(error: impl std::fmt::Display) -> KernelError {
    KernelError::StartupFailed { runtime: Runtime::Python, reason: error.to_string(), stderr_tail: String::new() }
}

/// A gateway setting (a flag's or a `CELLBOX_*` variable's value) that cannot be used, so a
/// caller can tell which one; the text names the setting and what it takes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GatewayConfigError {
    #[error(
        "{name}={value:?} is not a number of seconds: set it to how long a gateway kernel may take to start, e.g. 300"
    )]
    BadStartupTimeout { name: &'static str, value: String },
    #[error(
        "unknown backend {backend:?} (from --backend or {backend_var}): use `process` (runner processes, the \
         default) or `gateway` (a Jupyter gateway: {url_var} if set, else the shared local one)",
        backend_var = settings::BACKEND.name,
        url_var = settings::GATEWAY_URL.name
    )]
    UnknownBackend { backend: String },
}

/// The bound on a gateway kernel's start: `CELLBOX_GATEWAY_STARTUP_TIMEOUT`
/// seconds when set, else `default`; an unreadable value is an error that says so.
pub fn startup_timeout(default: std::time::Duration) -> Result<std::time::Duration, GatewayConfigError> {
    let var = settings::GATEWAY_STARTUP_TIMEOUT;
    match var.get() {
        Some(value) => match value.parse::<f64>() {
            Ok(seconds) if seconds.is_finite() && seconds > 0.0 => Ok(std::time::Duration::from_secs_f64(seconds)),
            _ => Err(GatewayConfigError::BadStartupTimeout { name: var.name, value }),
        },
        None => Ok(default),
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
    /// The setting for a `--backend` / `CELLBOX_BACKEND` value and an optional external URL.
    pub fn choose(
        backend: Option<&str>,
        url: Option<String>,
        token: Option<String>,
    ) -> Result<Option<GatewaySetting>, GatewayConfigError> {
        let backend = backend.map(|b| b.trim().to_ascii_lowercase()).filter(|b| !b.is_empty());
        match (backend.as_deref(), url) {
            (Some("process" | "local"), _) => Ok(None),
            (None | Some("gateway"), Some(url)) => Ok(Some(GatewaySetting::External { url, token })),
            (Some("gateway"), None) => Ok(Some(GatewaySetting::SharedLocal)),
            (None, None) => Ok(None),
            (Some(other), _) => Err(GatewayConfigError::UnknownBackend { backend: other.to_string() }),
        }
    }

    /// Whether cellbox manages the gateway process itself.
    pub fn is_local(&self) -> bool {
        matches!(self, GatewaySetting::SharedLocal)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_backend_names_the_choices() {
        assert_eq!(GatewaySetting::choose(Some(" Gateway "), None, None), Ok(Some(GatewaySetting::SharedLocal)));
        let error = GatewaySetting::choose(Some("docker"), None, None).unwrap_err();
        assert_eq!(error, GatewayConfigError::UnknownBackend { backend: "docker".into() });
        assert_eq!(
            error.to_string(),
            format!(
                "unknown backend \"docker\" (from --backend or {}): use `process` (runner processes, the default) or \
                 `gateway` (a Jupyter gateway: {} if set, else the shared local one)",
                settings::BACKEND.name,
                settings::GATEWAY_URL.name
            )
        );
    }
}
