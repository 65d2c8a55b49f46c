//! The control socket a forkable kernel is started with (fd 5, a Unix
//! SOCK_SEQPACKET socket): forks of the kernel are asked for on it
//! ([`super::fork`]). Here only what starting a kernel needs: whether its
//! runtime is forked here, and the socket pair.

use crate::runtime::Runtime;

/// The host's (or the child's) end of a kernel's control socket.
#[cfg(unix)]
pub type ControlEnd = std::os::fd::OwnedFd;
/// No kernel has a control socket off Unix.
#[cfg(not(unix))]
pub enum ControlEnd {}

/// Why kernels of `runtime` cannot be forked here, or `None` when they can.
pub fn unsupported(runtime: Runtime) -> Option<String> {
    if !cfg!(target_os = "linux") {
        return Some(
            "forking a kernel is supported on Linux only (macOS forbids forking a process that loaded its \
             system frameworks; Windows has no fork())"
                .into(),
        );
    }
    if runtime != Runtime::Python {
        return Some(format!("{runtime} kernels cannot be forked: only Python kernels can"));
    }
    None
}

/// A new control socket pair (host end, child end) for a kernel of
/// `runtime`, or `None` when such kernels are never forked.
pub(super) fn control_pair(runtime: Runtime) -> std::io::Result<Option<(ControlEnd, ControlEnd)>> {
    if unsupported(runtime).is_some() {
        return Ok(None);
    }
    #[cfg(target_os = "linux")]
    {
        use nix::sys::socket::{AddressFamily, SockFlag, SockType, socketpair};
        let (host, child) = socketpair(AddressFamily::Unix, SockType::SeqPacket, None, SockFlag::SOCK_CLOEXEC)
            .map_err(std::io::Error::from)?;
        Ok(Some((host, child)))
    }
    #[cfg(not(target_os = "linux"))]
    Ok(None)
}
