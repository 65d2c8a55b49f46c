//! Opening a connection for a kernel: the name judged, resolved (the hosts
//! file first), each address judged, and only an address that passed connected to.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use tokio::net::TcpStream;

use super::{Judge, Refusal};

/// How long a connection to an allowed host may take to open.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

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
        let result = self.open_checked(&host, port).await;
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
            if let Err(refusal) = self.rules.check_address(host, matched, address.ip()) {
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
    use tokio::io::AsyncWriteExt;
    // Requests to a host that secrets go to are read, to put them in.
    #[cfg(feature = "tls")]
    if judge.secrets.iter().any(|secret| secret.applies_to(host)) {
        return super::intercept::relay(judge, client, upstream, host, early).await;
    }
    match super::sni::check(&mut client, &upstream, early, host).await {
        super::sni::Hello::Fine { bytes } => {
            if !bytes.is_empty() && upstream.write_all(&bytes).await.is_err() {
                return;
            }
            let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
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
