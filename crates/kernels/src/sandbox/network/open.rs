//! Opening a connection for a kernel: the name judged, resolved (the hosts
//! file first), each address judged, and only an address that passed connected to.

use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::TcpStream;

use super::{Judge, Refusal};

/// How long a connection to an allowed host may take to open, each address and in all.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
const OPEN_DEADLINE: Duration = Duration::from_secs(60);
/// How long a client has to send what is checked (a ClientHello, a request's head).
pub const FIRST_BYTES_TIMEOUT: Duration = Duration::from_secs(60);

/// Why no connection was opened.
pub enum Failure {
    /// The policy said no (recorded, and reported to the engine).
    Refused(Refusal),
    /// Allowed, but it could not be reached.
    Unreachable(String),
}

impl Judge {
    /// A connection to `host:port` if the rules allow it, the reason otherwise.
    pub async fn open(&self, host: &str, port: u16) -> Result<(TcpStream, String), Failure> {
        let host = host.trim_matches(['[', ']']).trim_end_matches('.').to_ascii_lowercase();
        let checked = tokio::time::timeout(OPEN_DEADLINE, self.open_checked(&host, port)).await;
        let late = || Failure::Unreachable(format!("{host}: no connection in {}s", OPEN_DEADLINE.as_secs()));
        let result = checked.unwrap_or_else(|_| Err(late()));
        match &result {
            Ok(_) => self.log.allowed(),
            Err(Failure::Refused(refusal)) => self.log.refused(refusal),
            Err(Failure::Unreachable(_)) => {}
        }
        result.map(|stream| (stream, host))
    }

    async fn open_checked(&self, host: &str, port: u16) -> Result<TcpStream, Failure> {
        let matched = self.rules.check_name(host).map_err(Failure::Refused)?;
        let addresses = self.resolve(host, port).await?;
        let mut first_refusal = None;
        let mut last_error = None;
        for address in addresses {
            if let Err(refusal) = self.rules.check_address(host, matched, address.ip(), &self.local) {
                first_refusal.get_or_insert(refusal);
                continue;
            }
            match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(address)).await {
                Ok(Ok(stream)) => return Ok(stream),
                Ok(Err(error)) => last_error = Some(format!("{address}: {error}")),
                Err(_) => last_error = Some(format!("{address}: no answer in {}s", CONNECT_TIMEOUT.as_secs())),
            }
        }
        match (last_error, first_refusal) {
            (Some(error), _) => Err(Failure::Unreachable(error)),
            (None, Some(refusal)) => Err(Failure::Refused(refusal)),
            (None, None) => Err(Failure::Unreachable(format!("{host} has no address"))),
        }
    }

    async fn resolve(&self, host: &str, port: u16) -> Result<Vec<SocketAddr>, Failure> {
        if let Ok(address) = host.parse::<IpAddr>() {
            return Ok(vec![SocketAddr::new(address, port)]);
        }
        if let Some(addresses) = self.hosts.get(host) {
            return Ok(addresses.iter().map(|address| SocketAddr::new(*address, port)).collect());
        }
        // Lookups block a thread of the runtime's shared pool: a kernel has a few at a time.
        let Ok(_permit) = self.resolving.acquire().await else {
            return Err(Failure::Unreachable("the proxy is stopping".into()));
        };
        match tokio::net::lookup_host((host, port)).await {
            Ok(found) => Ok(found.collect()),
            Err(error) => Err(Failure::Unreachable(format!("{host} could not be resolved: {error}"))),
        }
    }
}

/// What a refused kernel is told: the host, why, and how to allow it.
pub fn explain(refusal: &Refusal) -> String {
    format!(
        "cellbox: the sandbox's network policy refused {}: {}. Start cellbox with --network allow:{} (or add it \
         to the allowlist) to let kernels reach it.",
        refusal.host, refusal.reason, refusal.host
    )
}

/// Carry `client` ↔ `upstream` (opened for `host`) once the client's
/// ClientHello, if it sends one, has named `host`; `early` is what the client
/// sent before the tunnel was up.
pub async fn tunnel(judge: &Judge, mut client: TcpStream, mut upstream: TcpStream, host: &str, early: Vec<u8>) {
    // Requests to a host that secrets go to are read, to put them in.
    #[cfg(feature = "tls")]
    if judge.secrets.iter().any(|secret| secret.applies_to(host)) {
        return super::intercept::relay(judge, client, upstream, host, early).await;
    }
    let checked = tokio::time::timeout(FIRST_BYTES_TIMEOUT, super::sni::check(&mut client, &upstream, early, host));
    let Ok(hello) = checked.await else { return };
    match hello {
        super::sni::Hello::Fine { bytes } => {
            if !bytes.is_empty() && upstream.write_all(&bytes).await.is_err() {
                return;
            }
            super::carry::carry(&mut client, &mut upstream, &judge.carrying).await;
        }
        super::sni::Hello::Http { bytes } => {
            let authority = authority(&upstream, host);
            let client = Rewind { prefix: bytes, inner: client };
            one_request(client, upstream, &authority, &judge.carrying, |head| head).await;
        }
        super::sni::Hello::Mismatch { named } => {
            let refusal = Refusal {
                host: named.clone(),
                reason: format!(
                    "a TLS connection opened for {host} asked for {named} (a name the tunnel was not allowed for)"
                ),
            };
            judge.log.refused(&refusal);
        }
        super::sni::Hello::Unreadable => {}
    }
}

/// `host`, with the port `upstream` is connected to unless it is 80 or 443:
/// what a request's `Host` says.
pub fn authority(upstream: &TcpStream, host: &str) -> String {
    let host = if host.contains(':') { format!("[{host}]") } else { host.to_string() };
    match upstream.peer_addr().map(|address| address.port()) {
        Ok(80 | 443) | Err(_) => host,
        Ok(port) => format!("{host}:{port}"),
    }
}

/// Read one request's head from `client` (in origin form: a request for
/// another site is not sent), set its `Host` to `authority` and ask for the
/// connection to close after the answer, pass it through `finish` (which puts
/// in secrets), and carry the rest both ways.
pub async fn one_request<C, U>(
    mut client: C,
    mut upstream: U,
    authority: &str,
    budget: &super::carry::Budget,
    finish: impl FnOnce(Vec<u8>) -> Vec<u8>,
) where
    C: AsyncRead + AsyncWrite + Unpin,
    U: AsyncRead + AsyncWrite + Unpin,
{
    let read = tokio::time::timeout(FIRST_BYTES_TIMEOUT, super::http::read_head(&mut client)).await;
    let Ok(Ok(Some((head, rest)))) = read else { return };
    let Some(head) = super::http::rebuild_origin_form(&head, authority) else { return };
    let head = finish(head);
    let sent = async {
        upstream.write_all(&head).await?;
        upstream.write_all(&rest).await?;
        // Over TLS the head may wait in the stream until flushed, and the client waits for the answer.
        upstream.flush().await
    };
    if sent.await.is_err() {
        return;
    }
    super::carry::carry(&mut client, &mut upstream, budget).await;
}

/// A stream that gives `prefix` back before reading on.
pub struct Rewind {
    pub prefix: Vec<u8>,
    pub inner: TcpStream,
}

impl AsyncRead for Rewind {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        if !self.prefix.is_empty() {
            let n = self.prefix.len().min(buf.remaining());
            buf.put_slice(&self.prefix[..n]);
            self.prefix.drain(..n);
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for Rewind {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, data: &[u8]) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, data)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
