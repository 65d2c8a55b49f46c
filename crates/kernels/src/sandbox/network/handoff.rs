//! The proxies' listeners are made by the kernel's process itself, in its new
//! network namespace before `exec` (where the host could not bind: a
//! non-root host may not enter a namespace of the kernel's user namespace),
//! and handed to the host over a socket pair, which then accepts on them.
//! Unconnected sockets are handed over the same way, for the host to connect
//! to what a kernel listens on in that namespace (a Jupyter kernel that
//! speaks only TCP): a socket stays in the namespace it was made in.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use super::{HTTP_PORT, Proxy, SOCKS_PORT};

/// The host's and the child's ends of the pair the listeners go through.
pub fn pair() -> std::io::Result<(OwnedFd, OwnedFd)> {
    use nix::sys::socket::{AddressFamily, SockFlag, SockType, socketpair};
    socketpair(AddressFamily::Unix, SockType::Stream, None, SockFlag::SOCK_CLOEXEC).map_err(std::io::Error::from)
}

/// In the child, its network namespace made and its loopback up: listen on
/// the two proxy ports of 127.0.0.1 and send both sockets down `channel`.
/// Only async-signal-safe calls on the stack.
pub unsafe fn hand_over(channel: libc::c_int) -> std::io::Result<()> {
    let mut fds = [-1 as libc::c_int; 2];
    for (slot, port) in fds.iter_mut().zip([HTTP_PORT, SOCKS_PORT]) {
        // SAFETY: a socket, a sockaddr_in on the stack, bind and listen.
        unsafe {
            let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
            if fd < 0 {
                return Err(std::io::Error::last_os_error());
            }
            *slot = fd;
            let mut address: libc::sockaddr_in = std::mem::zeroed();
            address.sin_family = libc::AF_INET as libc::sa_family_t;
            address.sin_port = port.to_be();
            address.sin_addr.s_addr = u32::from_be_bytes([127, 0, 0, 1]).to_be();
            let size = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
            if libc::bind(fd, (&raw const address).cast(), size) < 0 || libc::listen(fd, 128) < 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
    }
    // SAFETY: a msghdr with one byte of data and an SCM_RIGHTS message, all on the stack.
    unsafe {
        let mut byte = [0u8; 1];
        let mut iov = libc::iovec { iov_base: byte.as_mut_ptr().cast(), iov_len: 1 };
        let mut control = [0u64; 8];
        let mut message: libc::msghdr = std::mem::zeroed();
        message.msg_iov = &mut iov;
        message.msg_iovlen = 1;
        message.msg_control = control.as_mut_ptr().cast();
        message.msg_controllen = libc::CMSG_SPACE(std::mem::size_of_val(&fds) as u32) as _;
        let header = libc::CMSG_FIRSTHDR(&message);
        (*header).cmsg_level = libc::SOL_SOCKET;
        (*header).cmsg_type = libc::SCM_RIGHTS;
        (*header).cmsg_len = libc::CMSG_LEN(std::mem::size_of_val(&fds) as u32) as _;
        std::ptr::copy_nonoverlapping(fds.as_ptr(), libc::CMSG_DATA(header).cast(), 2);
        let sent = libc::sendmsg(channel, &message, libc::MSG_NOSIGNAL);
        let error = std::io::Error::last_os_error();
        libc::close(fds[0]);
        libc::close(fds[1]);
        if sent < 0 { Err(error) } else { Ok(()) }
    }
}

/// The most sockets [`hand_over_sockets`] sends.
pub const MAX_SOCKETS: usize = 32;

/// In the child, in its network namespace: make `count` (at most
/// [`MAX_SOCKETS`]) unconnected TCP sockets and send them down `channel`.
/// Only async-signal-safe calls on the stack.
pub unsafe fn hand_over_sockets(channel: libc::c_int, count: usize) -> std::io::Result<()> {
    let count = count.min(MAX_SOCKETS);
    let mut fds = [-1 as libc::c_int; MAX_SOCKETS];
    let close_all = |fds: &[libc::c_int]| {
        for fd in fds.iter().filter(|fd| **fd >= 0) {
            // SAFETY: sockets this function made.
            unsafe { libc::close(*fd) };
        }
    };
    for slot in fds.iter_mut().take(count) {
        // SAFETY: a plain socket call.
        let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
        if fd < 0 {
            let error = std::io::Error::last_os_error();
            close_all(&fds);
            return Err(error);
        }
        *slot = fd;
    }
    // SAFETY: a msghdr with one byte of data and an SCM_RIGHTS message, all on the stack.
    unsafe {
        let mut byte = [0u8; 1];
        let mut iov = libc::iovec { iov_base: byte.as_mut_ptr().cast(), iov_len: 1 };
        let mut control = [0u64; 24];
        let size = (count * std::mem::size_of::<libc::c_int>()) as u32;
        let mut message: libc::msghdr = std::mem::zeroed();
        message.msg_iov = &mut iov;
        message.msg_iovlen = 1;
        message.msg_control = control.as_mut_ptr().cast();
        message.msg_controllen = libc::CMSG_SPACE(size) as _;
        let header = libc::CMSG_FIRSTHDR(&message);
        (*header).cmsg_level = libc::SOL_SOCKET;
        (*header).cmsg_type = libc::SCM_RIGHTS;
        (*header).cmsg_len = libc::CMSG_LEN(size) as _;
        std::ptr::copy_nonoverlapping(fds.as_ptr(), libc::CMSG_DATA(header).cast(), count);
        let sent = libc::sendmsg(channel, &message, libc::MSG_NOSIGNAL);
        let error = std::io::Error::last_os_error();
        close_all(&fds);
        if sent < 0 { Err(error) } else { Ok(()) }
    }
}

/// The sockets [`hand_over_sockets`] sent down the pair whose host end this
/// is, once the child has sent them (an error when it ended first).
pub async fn receive_sockets(host_end: OwnedFd) -> std::io::Result<Vec<std::net::TcpStream>> {
    let fds = receive_fds::<MAX_SOCKETS>(host_end).await?;
    if fds.is_empty() {
        return Err(std::io::Error::other("the kernel's process sent no sockets before it started"));
    }
    Ok(fds.into_iter().map(std::net::TcpStream::from).collect())
}

impl Proxy {
    /// Serve the listeners the child sends down `host_end` (nothing, when the
    /// child ends first) with `setup`'s rules, until the returned value is dropped.
    pub(in crate::sandbox) fn start(host_end: OwnedFd, setup: super::Setup) -> Proxy {
        Proxy::serve(receive(host_end), setup)
    }
}

/// The two listeners, once the child has sent them.
async fn receive(host_end: OwnedFd) -> Option<[std::net::TcpListener; 2]> {
    let mut owned = receive_fds::<2>(host_end).await.ok()?.into_iter();
    let listener = |fd: OwnedFd| {
        let listener = std::net::TcpListener::from(fd);
        listener.set_nonblocking(true).ok().map(|_| listener)
    };
    let (http, socks) = (owned.next()?, owned.next()?);
    Some([listener(http)?, listener(socks)?])
}

/// Up to `N` descriptors from one message on `host_end` (none: the child ended first).
async fn receive_fds<const N: usize>(host_end: OwnedFd) -> std::io::Result<Vec<OwnedFd>> {
    use nix::sys::socket::{ControlMessageOwned, MsgFlags, recvmsg};
    let stream = std::os::unix::net::UnixStream::from(host_end);
    stream.set_nonblocking(true)?;
    let stream = tokio::net::UnixStream::from_std(stream)?;
    let fd = stream.as_raw_fd();
    let fds = stream
        .async_io(tokio::io::Interest::READABLE, || {
            let mut byte = [0u8; 1];
            let mut iov = [std::io::IoSliceMut::new(&mut byte)];
            let mut space = nix::cmsg_space!([std::os::fd::RawFd; N]);
            let message = recvmsg::<()>(fd, &mut iov, Some(&mut space), MsgFlags::MSG_CMSG_CLOEXEC)?;
            let mut fds = Vec::new();
            for control in message.cmsgs()? {
                if let ControlMessageOwned::ScmRights(received) = control {
                    fds.extend(received);
                }
            }
            Ok(fds)
        })
        .await?;
    // SAFETY: descriptors the kernel's process just passed to this one, owned from here on.
    Ok(fds.into_iter().map(|fd| unsafe { OwnedFd::from_raw_fd(fd) }).collect())
}
