//! The HTTP proxy: `CONNECT host:port` tunnels (HTTPS, and anything else a
//! client tunnels), and plain `http://` requests in absolute form, sent on
//! with `Connection: close` so that each connection serves one host.

use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::Judge;
use super::open::{Failure, explain, tunnel};

/// The most a request's head may take, and how long it may take to arrive.
const MAX_HEAD: usize = 64 * 1024;
const HEAD_TIMEOUT: Duration = Duration::from_secs(60);

pub async fn serve(mut client: TcpStream, judge: Arc<Judge>) {
    let Ok(Some((head, rest))) = tokio::time::timeout(HEAD_TIMEOUT, read_head(&mut client)).await.unwrap_or(Ok(None))
    else {
        return;
    };
    let mut headers = [httparse::EMPTY_HEADER; 96];
    let mut request = httparse::Request::new(&mut headers);
    if !matches!(request.parse(&head), Ok(httparse::Status::Complete(_))) {
        return answer(&mut client, 400, "cellbox: the proxy could not read this request").await;
    }
    let (Some(method), Some(target)) = (request.method, request.path) else { return };
    if method.eq_ignore_ascii_case("CONNECT") {
        let Some((host, port)) = host_and_port(target, 443) else {
            return answer(&mut client, 400, "cellbox: CONNECT needs host:port").await;
        };
        match judge.open(&host, port).await {
            Ok((upstream, host)) => {
                if client.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n").await.is_ok() {
                    tunnel(&judge, client, upstream, &host, rest).await;
                }
            }
            Err(failure) => refuse(&mut client, failure).await,
        }
        return;
    }
    let Some(url) = target.strip_prefix("http://").or_else(|| target.strip_prefix("HTTP://")) else {
        return answer(&mut client, 400, "cellbox: the proxy takes CONNECT and absolute http:// requests").await;
    };
    let (authority, path) = url.find('/').map_or((url, "/"), |at| (&url[..at], &url[at..]));
    let Some((host, port)) = host_and_port(authority.rsplit('@').next().unwrap_or(authority), 80) else {
        return answer(&mut client, 400, "cellbox: no host in the request").await;
    };
    // Secrets go only inside TLS the proxy checked (see `intercept`), never in clear text.
    let mut upstream = match judge.open(&host, port).await {
        Ok((upstream, _)) => upstream,
        Err(failure) => return refuse(&mut client, failure).await,
    };
    let authority = authority.rsplit('@').next().unwrap_or(authority);
    let Some(sent) = rebuild(&head, Some(path), authority) else { return };
    if upstream.write_all(&sent).await.is_ok() && upstream.write_all(&rest).await.is_ok() {
        super::carry::carry(&mut client, &mut upstream, &judge.carrying).await;
    }
}

/// [`rebuild`] of a request that came through a tunnel: it must be in origin
/// form (`GET /path`, or `OPTIONS *`), since a request naming another site in
/// full would be sent there by a server that hosts both; `TRACE`, which sends
/// the request back, is not sent.
pub fn rebuild_origin_form(head: &[u8], authority: &str) -> Option<Vec<u8>> {
    let mut headers = [httparse::EMPTY_HEADER; 96];
    let mut request = httparse::Request::new(&mut headers);
    if !matches!(request.parse(head), Ok(httparse::Status::Complete(_))) {
        return None;
    }
    let (method, target) = (request.method?, request.path?);
    let origin_form = target.starts_with('/') || (target == "*" && method == "OPTIONS");
    if !origin_form || method.eq_ignore_ascii_case("TRACE") || method.eq_ignore_ascii_case("TRACK") {
        return None;
    }
    rebuild(head, None, authority)
}

/// A request's `head` to send on: its request line (with `target` in place
/// of its own, when given), its headers but the hop-by-hop ones and `Host`,
/// `Host: authority` (the server the connection was judged for: another
/// name would reach another site of a shared server), and `Connection:
/// close`, so that each connection carries one request.
pub fn rebuild(head: &[u8], target: Option<&str>, authority: &str) -> Option<Vec<u8>> {
    let mut headers = [httparse::EMPTY_HEADER; 96];
    let mut request = httparse::Request::new(&mut headers);
    if !matches!(request.parse(head), Ok(httparse::Status::Complete(_))) {
        return None;
    }
    let (method, own) = (request.method?, request.path?);
    let mut sent = format!("{method} {} HTTP/1.1\r\n", target.unwrap_or(own)).into_bytes();
    sent.extend_from_slice(format!("Host: {authority}\r\n").as_bytes());
    let dropped = ["host", "proxy-connection", "proxy-authorization", "connection", "keep-alive"];
    for header in request.headers.iter().filter(|h| !dropped.iter().any(|name| h.name.eq_ignore_ascii_case(name))) {
        sent.extend_from_slice(header.name.as_bytes());
        sent.extend_from_slice(b": ");
        sent.extend_from_slice(header.value);
        sent.extend_from_slice(b"\r\n");
    }
    sent.extend_from_slice(b"Connection: close\r\n\r\n");
    Some(sent)
}

/// The request's head (through its blank line) and what came after it.
pub async fn read_head<C: tokio::io::AsyncRead + Unpin>(client: &mut C) -> std::io::Result<Option<(Vec<u8>, Vec<u8>)>> {
    let mut buffer = Vec::with_capacity(2048);
    let mut chunk = [0u8; 4096];
    loop {
        let n = client.read(&mut chunk).await?;
        if n == 0 {
            return Ok(None);
        }
        let searched_from = buffer.len().saturating_sub(3);
        buffer.extend_from_slice(&chunk[..n]);
        if let Some(at) = memchr::memmem::find(&buffer[searched_from..], b"\r\n\r\n") {
            let end = searched_from + at + 4;
            let rest = buffer.split_off(end);
            return Ok(Some((buffer, rest)));
        }
        if buffer.len() > MAX_HEAD {
            return Ok(None);
        }
    }
}

/// `host:port`, `[v6]:port` or `host` (with `default` as its port).
pub fn host_and_port(text: &str, default: u16) -> Option<(String, u16)> {
    let (host, port) = if let Some(rest) = text.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        (host, after.strip_prefix(':'))
    } else {
        match text.rsplit_once(':') {
            Some((host, port)) if !host.contains(':') => (host, Some(port)),
            _ => (text, None),
        }
    };
    let port = match port {
        Some(port) => port.parse().ok().filter(|p| *p != 0)?,
        None => default,
    };
    (!host.is_empty()).then(|| (host.to_string(), port))
}

async fn refuse(client: &mut TcpStream, failure: Failure) {
    match failure {
        Failure::Refused(refusal) => answer(client, 403, &explain(&refusal)).await,
        Failure::Unreachable(why) => answer(client, 502, &format!("cellbox: could not connect: {why}")).await,
    }
}

async fn answer(client: &mut TcpStream, status: u16, message: &str) {
    let reason = match status {
        400 => "Bad Request",
        403 => "Forbidden",
        _ => "Bad Gateway",
    };
    let body = format!("{message}\n");
    let head = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = client.write_all(head.as_bytes()).await;
    let _ = client.write_all(body.as_bytes()).await;
    let _ = client.shutdown().await;
}

#[cfg(test)]
mod tests {
    use super::host_and_port;

    #[test]
    fn hosts_and_ports_are_read_as_clients_write_them() {
        assert_eq!(host_and_port("pypi.org:443", 80), Some(("pypi.org".into(), 443)));
        assert_eq!(host_and_port("pypi.org", 80), Some(("pypi.org".into(), 80)));
        assert_eq!(host_and_port("[::1]:8080", 80), Some(("::1".into(), 8080)));
        assert_eq!(host_and_port("::1", 80), Some(("::1".into(), 80)));
        assert_eq!(host_and_port("pypi.org:0", 80), None);
        assert_eq!(host_and_port("pypi.org:http", 80), None);
        assert_eq!(host_and_port(":443", 80), None);
    }
}
