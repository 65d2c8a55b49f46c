//! The name a TLS client asks for (its ClientHello's server name) must be the
//! host the tunnel was allowed for: otherwise one allowed host of a CDN could
//! carry a connection to any other host it serves.

use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;

/// The most of a ClientHello read before it must have been understood.
const MAX_HELLO: usize = 16 * 1024 + 5;

/// What the client's first bytes showed.
pub enum Hello {
    /// Not TLS, or TLS naming the allowed host (or no name): `bytes` go on to the server.
    Fine { bytes: Vec<u8> },
    /// A ClientHello naming another server.
    Mismatch { named: String },
    /// The client left, or sent a handshake that could not be read.
    Unreadable,
}

/// Read the client's first bytes (those already read are `early`), unless the
/// server speaks first, and check the server name of a TLS ClientHello
/// against `host`.
pub async fn check(client: &mut TcpStream, upstream: &TcpStream, mut early: Vec<u8>, host: &str) -> Hello {
    let mut chunk = [0u8; 4096];
    if early.is_empty() {
        tokio::select! {
            read = client.read(&mut chunk) => match read {
                Ok(0) | Err(_) => return Hello::Unreadable,
                Ok(n) => early.extend_from_slice(&chunk[..n]),
            },
            // A protocol whose server speaks first (SSH, SMTP) has no ClientHello to check.
            _ = upstream.readable() => return Hello::Fine { bytes: early },
        }
    }
    if early.first() != Some(&0x16) {
        return Hello::Fine { bytes: early };
    }
    let mut acceptor = rustls::server::Acceptor::default();
    let mut fed = 0;
    loop {
        while fed < early.len() {
            match acceptor.read_tls(&mut &early[fed..]) {
                Ok(0) | Err(_) => return Hello::Unreadable,
                Ok(n) => fed += n,
            }
        }
        match acceptor.accept() {
            Ok(Some(accepted)) => {
                let named = accepted.client_hello().server_name().map(str::to_ascii_lowercase);
                return match named {
                    Some(named) if named.trim_end_matches('.') != host => Hello::Mismatch { named },
                    _ => Hello::Fine { bytes: early },
                };
            }
            Ok(None) if early.len() < MAX_HELLO => match client.read(&mut chunk).await {
                Ok(0) | Err(_) => return Hello::Unreadable,
                Ok(n) => early.extend_from_slice(&chunk[..n]),
            },
            _ => return Hello::Unreadable,
        }
    }
}
