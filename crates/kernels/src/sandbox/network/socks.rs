//! The SOCKS5 proxy (RFC 1928): `CONNECT` only, without authentication; a name
//! is resolved here (`socks5h://`), never by the kernel.

use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::Judge;
use super::open::{Failure, tunnel};

const GREETING_TIMEOUT: Duration = Duration::from_secs(60);

/// Reply codes.
const SUCCEEDED: u8 = 0;
const NOT_ALLOWED: u8 = 2;
const HOST_UNREACHABLE: u8 = 4;
const COMMAND_NOT_SUPPORTED: u8 = 7;
const ADDRESS_NOT_SUPPORTED: u8 = 8;

pub async fn serve(mut client: TcpStream, judge: Arc<Judge>) {
    let Ok(Some((host, port))) = tokio::time::timeout(GREETING_TIMEOUT, request(&mut client)).await.unwrap_or(Ok(None))
    else {
        return;
    };
    match judge.open(&host, port).await {
        Ok((upstream, host)) => {
            if reply(&mut client, SUCCEEDED).await.is_ok() {
                tunnel(&judge, client, upstream, &host, Vec::new()).await;
            }
        }
        Err(Failure::Refused(_)) => {
            let _ = reply(&mut client, NOT_ALLOWED).await;
        }
        Err(Failure::Unreachable(_)) => {
            let _ = reply(&mut client, HOST_UNREACHABLE).await;
        }
    }
}

/// The greeting and the request: where the client wants to go. Anything but
/// a CONNECT is answered here and gives `None`.
async fn request(client: &mut TcpStream) -> std::io::Result<Option<(String, u16)>> {
    let mut head = [0u8; 2];
    client.read_exact(&mut head).await?;
    if head[0] != 5 {
        return Ok(None);
    }
    let mut methods = vec![0u8; usize::from(head[1])];
    client.read_exact(&mut methods).await?;
    if !methods.contains(&0) {
        client.write_all(&[5, 0xff]).await?;
        return Ok(None);
    }
    client.write_all(&[5, 0]).await?;
    let mut fixed = [0u8; 4];
    client.read_exact(&mut fixed).await?;
    let [version, command, _, kind] = fixed;
    if version != 5 {
        return Ok(None);
    }
    let host = match kind {
        1 => {
            let mut octets = [0u8; 4];
            client.read_exact(&mut octets).await?;
            Ipv4Addr::from(octets).to_string()
        }
        3 => {
            let mut length = [0u8; 1];
            client.read_exact(&mut length).await?;
            let mut name = vec![0u8; usize::from(length[0])];
            client.read_exact(&mut name).await?;
            match String::from_utf8(name) {
                Ok(name) => name,
                Err(_) => {
                    reply(client, ADDRESS_NOT_SUPPORTED).await?;
                    return Ok(None);
                }
            }
        }
        4 => {
            let mut octets = [0u8; 16];
            client.read_exact(&mut octets).await?;
            Ipv6Addr::from(octets).to_string()
        }
        _ => {
            reply(client, ADDRESS_NOT_SUPPORTED).await?;
            return Ok(None);
        }
    };
    let mut port = [0u8; 2];
    client.read_exact(&mut port).await?;
    if command != 1 {
        // BIND and UDP ASSOCIATE: a kernel's traffic goes out through CONNECT only.
        reply(client, COMMAND_NOT_SUPPORTED).await?;
        return Ok(None);
    }
    Ok(Some((host, u16::from_be_bytes(port))))
}

async fn reply(client: &mut TcpStream, code: u8) -> std::io::Result<()> {
    client.write_all(&[5, code, 0, 1, 0, 0, 0, 0, 0, 0]).await
}
