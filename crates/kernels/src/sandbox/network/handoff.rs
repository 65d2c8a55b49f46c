//! The proxies' listeners are made by the kernel's process itself, in its new
//! network namespace before `exec` (where the host could not bind: a
//! non-root host may not enter a namespace of the kernel's user namespace),
//! and handed to the host over a socket pair, which then accepts on them.

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

impl Proxy {
    /// Serve the listeners the child sends down `host_end` (nothing, when the
    /// child ends first) with `setup`'s rules, until the returned value is dropped.
    pub(in crate::sandbox) fn start(host_end: OwnedFd, setup: super::Setup) -> Proxy {
        Proxy::serve(receive(host_end), setup)
    }
}

/// The two listeners, once the child has sent them.
async fn receive(host_end: OwnedFd) -> Option<[std::net::TcpListener; 2]> {
    use nix::sys::socket::{ControlMessageOwned, MsgFlags, recvmsg};
    let stream = std::os::unix::net::UnixStream::from(host_end);
    stream.set_nonblocking(true).ok()?;
    let stream = tokio::net::UnixStream::from_std(stream).ok()?;
    let fd = stream.as_raw_fd();
    let fds = stream
        .async_io(tokio::io::Interest::READABLE, || {
            let mut byte = [0u8; 1];
            let mut iov = [std::io::IoSliceMut::new(&mut byte)];
            let mut space = nix::cmsg_space!([std::os::fd::RawFd; 2]);
            let message = recvmsg::<()>(fd, &mut iov, Some(&mut space), MsgFlags::MSG_CMSG_CLOEXEC)?;
            let mut fds = Vec::new();
            for control in message.cmsgs()? {
                if let ControlMessageOwned::ScmRights(received) = control {
                    fds.extend(received);
                }
            }
            Ok(fds)
        })
        .await
        .ok()?;
    // SAFETY: descriptors the kernel just passed to this process, owned from here on.
    let mut owned = fds.into_iter().map(|fd| unsafe { OwnedFd::from_raw_fd(fd) });
    let listener = |fd: OwnedFd| {
        let listener = std::net::TcpListener::from(fd);
        listener.set_nonblocking(true).ok().map(|_| listener)
    };
    let (http, socks) = (owned.next()?, owned.next()?);
    Some([listener(http)?, listener(socks)?])
}
