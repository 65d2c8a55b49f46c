//! The client's TCP socket to a gateway.
//!
//! A kernel round trip is a few small websocket frames each way. With Nagle
//! on one side and delayed ACKs on the other, each costs ~40 ms; no-delay
//! and, on Linux, `TCP_QUICKACK` (which the kernel clears again after each
//! ACK, so it is set again after every read) bring a warm round trip to a
//! few milliseconds.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

/// A TCP stream that acknowledges at once after every read.
#[derive(Debug)]
pub struct QuickAckStream {
    inner: TcpStream,
}

impl QuickAckStream {
    /// Connect to `host:port` with no-delay and quick ACKs on.
    pub async fn connect(host: &str, port: u16) -> io::Result<QuickAckStream> {
        let inner = TcpStream::connect((host, port)).await?;
        inner.set_nodelay(true)?;
        quick_ack(&inner);
        Ok(QuickAckStream { inner })
    }
}

/// Ask Linux to ACK immediately (best effort; other systems have no such switch).
#[cfg(target_os = "linux")]
fn quick_ack(stream: &TcpStream) {
    use std::os::fd::AsRawFd;
    let on: libc::c_int = 1;
    // SAFETY: a valid socket fd and a pointer to a live c_int of the given size.
    unsafe {
        libc::setsockopt(
            stream.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_QUICKACK,
            &on as *const libc::c_int as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
    }
}

#[cfg(not(target_os = "linux"))]
fn quick_ack(_stream: &TcpStream) {}

impl AsyncRead for QuickAckStream {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_read(cx, buf);
        if polled.is_ready() {
            quick_ack(&this.inner);
        }
        polled
    }
}

impl AsyncWrite for QuickAckStream {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}
