//! The `Host` check, on every route: a request must name this server by a
//! loopback name, its listen address or an `--allowed-host`. Without it a web
//! page could reach a loopback server through a name it controls (DNS
//! rebinding); with it on `/mcp` only, the other routes still answered such
//! pages and copied their `Host` into the URLs they give out.

use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::response::Response;
use std::sync::Arc;

/// The host names (and ports, when given) a request may name.
#[derive(Debug, Clone)]
pub struct AllowedHosts {
    hosts: Vec<(String, Option<u16>)>,
}

impl AllowedHosts {
    /// `entries` are `name`, `name:port`, `[v6]` or `[v6]:port`.
    pub fn new(entries: &[String]) -> AllowedHosts {
        AllowedHosts { hosts: entries.iter().filter_map(|entry| authority(entry)).collect() }
    }

    /// Whether a `Host` header's value names this server.
    pub fn allows(&self, host: &str) -> bool {
        let Some((name, port)) = authority(host) else { return false };
        self.hosts
            .iter()
            .any(|(allowed, allowed_port)| *allowed == name && allowed_port.is_none_or(|p| Some(p) == port))
    }
}

/// A host and its port, lower-case, without the brackets of an IPv6 address.
fn authority(text: &str) -> Option<(String, Option<u16>)> {
    let text = text.trim();
    // A bare IPv6 address (`::1`, as --listen and the defaults name it) is no authority on its own.
    if let Ok(std::net::IpAddr::V6(ip)) = text.parse::<std::net::IpAddr>() {
        return Some((ip.to_string(), None));
    }
    let authority = text.parse::<axum::http::uri::Authority>().ok()?;
    let host = authority.host().trim_start_matches('[').trim_end_matches(']').to_ascii_lowercase();
    (!host.is_empty()).then_some((host, authority.port_u16()))
}

/// Refuse (403) a request whose `Host` does not name this server, and (400) one without a readable `Host`.
pub async fn check(
    State(allowed): State<Arc<AllowedHosts>>,
    request: Request,
    next: axum::middleware::Next,
) -> Response {
    let host = request.headers().get(header::HOST).and_then(|value| value.to_str().ok());
    match host {
        Some(host) if allowed.allows(host) => next.run(request).await,
        Some(_) => crate::web::json_error(
            StatusCode::FORBIDDEN,
            "the Host header does not name this server; add the name with --allowed-host",
        ),
        None => crate::web::json_error(StatusCode::BAD_REQUEST, "the request has no readable Host header"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_ports_are_told_apart() {
        let allowed =
            AllowedHosts::new(&["localhost".into(), "127.0.0.1".into(), "::1".into(), "box.example:443".into()]);
        for host in ["localhost", "LOCALHOST:8740", "127.0.0.1:1", "[::1]:8740", "box.example:443"] {
            assert!(allowed.allows(host), "{host}");
        }
        for host in ["evil.com", "localhost.evil.com", "127.0.0.1.nip.io", "box.example", "box.example:80", "", "a b"] {
            assert!(!allowed.allows(host), "{host}");
        }
    }
}
