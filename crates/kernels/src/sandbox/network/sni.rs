//! What a tunnel carries must be for the host it was allowed for: a TLS
//! ClientHello must name that host (otherwise one allowed host of a CDN could
//! carry a connection to any other host it serves), may not hide another
//! name (Encrypted Client Hello), and a plain HTTP request goes on with its
//! `Host` set to that host (see [`super::open::tunnel`]).

use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;

/// The most of a ClientHello read before it must have been understood.
const MAX_HELLO: usize = 16 * 1024 + 5;

/// The TLS extension of an Encrypted Client Hello.
const ENCRYPTED_CLIENT_HELLO: u16 = 0xfe0d;

/// What the client's first bytes showed.
pub enum Hello {
    /// A ClientHello naming the allowed host (or, for an address, none), or
    /// a protocol that is neither TLS nor HTTP: `bytes` go on to the server.
    Fine { bytes: Vec<u8> },
    /// A plain HTTP request, which goes on with its `Host` set.
    Http { bytes: Vec<u8> },
    /// A TLS connection that names, or may hide, another server.
    Mismatch { named: String },
    /// The client left, sent something unreadable, or a TLS record other than a handshake first.
    Unreadable,
}

/// Read the client's first bytes (those already read are `early`), unless the
/// server speaks first, and check them against `host`.
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
    match early[0] {
        0x16 => {}
        // Another TLS record before the handshake (an alert, application data): no client begins so.
        0x14 | 0x15 | 0x17 => return Hello::Unreadable,
        b'A'..=b'Z' => {
            // An HTTP method, then a space: read until the method is whole.
            while early.len() < 16 && !early.contains(&b' ') && early.iter().all(u8::is_ascii_uppercase) {
                match client.read(&mut chunk).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => early.extend_from_slice(&chunk[..n]),
                }
            }
            let method = early.iter().position(|b| *b == b' ');
            return match method {
                Some(end) if end > 0 && early[..end].iter().all(u8::is_ascii_uppercase) => Hello::Http { bytes: early },
                _ => Hello::Fine { bytes: early },
            };
        }
        _ => return Hello::Fine { bytes: early },
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
                let named =
                    accepted.client_hello().server_name().map(|name| name.trim_end_matches('.').to_ascii_lowercase());
                let is_address = host.parse::<std::net::IpAddr>().is_ok();
                return match (named, extensions(&early)) {
                    // The hello could not be walked within its first record, or hides another name.
                    (_, None) => Hello::Unreadable,
                    (named, Some(found)) if found.contains(&ENCRYPTED_CLIENT_HELLO) => {
                        Hello::Mismatch { named: format!("{} (an encrypted ClientHello)", named.unwrap_or_default()) }
                    }
                    (Some(named), _) if named != host => Hello::Mismatch { named },
                    (None, _) if !is_address => Hello::Mismatch { named: "no server name".into() },
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

/// The extension types of the ClientHello in `record` (a TLS handshake
/// record), or `None` when it is not whole within that record.
fn extensions(record: &[u8]) -> Option<Vec<u16>> {
    let length = usize::from(u16::from_be_bytes([*record.get(3)?, *record.get(4)?]));
    let body = record.get(5..5 + length)?;
    // Handshake type, length (3), version (2), random (32).
    let mut at = 4 + 2 + 32;
    let skip = |at: &mut usize, width: usize| -> Option<()> {
        let field = body.get(*at..*at + width)?;
        let size = field.iter().fold(0usize, |size, byte| size << 8 | usize::from(*byte));
        *at += width + size;
        Some(())
    };
    skip(&mut at, 1)?; // session id
    skip(&mut at, 2)?; // cipher suites
    skip(&mut at, 1)?; // compression methods
    let total = usize::from(u16::from_be_bytes([*body.get(at)?, *body.get(at + 1)?]));
    let end = at + 2 + total;
    at += 2;
    let mut found = Vec::new();
    while at + 4 <= end {
        found.push(u16::from_be_bytes([*body.get(at)?, *body.get(at + 1)?]));
        let size = usize::from(u16::from_be_bytes([*body.get(at + 2)?, *body.get(at + 3)?]));
        at += 4 + size;
    }
    (at == end && end <= body.len()).then_some(found)
}

#[cfg(all(test, feature = "tls"))]
mod tests {
    use super::*;

    /// A real ClientHello record, as rustls writes one for `name`.
    fn hello(name: &str) -> Vec<u8> {
        crate::tls::install_crypto();
        let roots = rustls::RootCertStore::empty();
        let config = rustls::ClientConfig::builder().with_root_certificates(roots).with_no_client_auth();
        let name = rustls::pki_types::ServerName::try_from(name.to_string()).unwrap();
        let mut connection = rustls::ClientConnection::new(std::sync::Arc::new(config), name).unwrap();
        let mut record = Vec::new();
        connection.write_tls(&mut record).unwrap();
        record
    }

    #[test]
    fn a_client_hello_s_extensions_are_read_and_a_cut_one_is_not() {
        let record = hello("pypi.org");
        let found = extensions(&record).expect("one whole record");
        assert!(found.contains(&0), "server_name: {found:?}");
        assert!(!found.contains(&ENCRYPTED_CLIENT_HELLO));
        assert_eq!(extensions(&record[..record.len() - 1]), None);
        assert_eq!(extensions(&[0x16, 3, 1, 0, 2, 1, 0]), None);
    }
}
