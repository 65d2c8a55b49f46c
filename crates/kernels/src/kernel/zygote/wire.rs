//! The host's end of a zygote's socket (the messages are declared in
//! [`crate::protocol::fork_server`]): fork requests out (with the kernel's
//! pipe ends attached as SCM_RIGHTS), and one reader thread that routes what
//! the zygote says back: `ready`/`failed` once, `forked` per request, `exit`
//! per kernel.
//!
//! The reader is a plain thread and the answers travel on tokio channels,
//! which work from any runtime: a zygote outlives the runtime that started
//! it (tests run one runtime each; the registry is process-wide).

use std::collections::HashMap;
use std::io::IoSlice;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::Mutex;
use std::time::Duration;

use nix::sys::socket::{ControlMessage, MsgFlags, recv, sendmsg};
use tokio::sync::{oneshot, watch};

use super::ZygoteError;
use crate::kernel::process::{self, ExitInfo};
use crate::protocol::fork_server::{self, Message};

/// A forked kernel: its pid and where its exit status will arrive.
pub type Forked = (u32, watch::Receiver<Option<ExitInfo>>);

/// What the reader thread shares with the zygote's owner.
#[derive(Default)]
pub struct Routes {
    /// The answer to the first message: the zygote's pid, or why it failed.
    pub ready: Mutex<Option<oneshot::Sender<Result<u32, ZygoteError>>>>,
    forks: Mutex<HashMap<u64, oneshot::Sender<Result<Forked, ZygoteError>>>>,
    exits: Mutex<HashMap<u32, watch::Sender<Option<ExitInfo>>>>,
    /// Set once the socket is at its end: no fork can be answered any more.
    closed: Mutex<bool>,
}

impl Routes {
    /// Register request `id` before it is sent; `None` when the zygote is gone.
    pub fn expect_fork(&self, id: u64) -> Option<oneshot::Receiver<Result<Forked, ZygoteError>>> {
        let closed = self.closed.lock().unwrap();
        if *closed {
            return None;
        }
        let (tx, rx) = oneshot::channel();
        self.forks.lock().unwrap().insert(id, tx);
        drop(closed);
        Some(rx)
    }

    /// Forget request `id` (it could not be sent).
    pub fn forget_fork(&self, id: u64) {
        self.forks.lock().unwrap().remove(&id);
    }

    fn route(&self, message: Message) {
        match message {
            Message::Ready { pid, .. } => {
                if let Some(ready) = self.ready.lock().unwrap().take() {
                    let _ = ready.send(Ok(pid));
                }
            }
            Message::Failed { message } => {
                if let Some(ready) = self.ready.lock().unwrap().take() {
                    let _ = ready.send(Err(ZygoteError::Said { message }));
                }
            }
            Message::Forked { id, pid, .. } => {
                // The exit route exists before anyone can learn the pid, so an
                // exit reported right after is never missed.
                let (tx, rx) = watch::channel(None);
                self.exits.lock().unwrap().insert(pid, tx);
                if let Some(answer) = self.forks.lock().unwrap().remove(&id) {
                    let _ = answer.send(Ok((pid, rx)));
                }
            }
            Message::ForkFailed { id, message } => {
                let answer = id.and_then(|id| self.forks.lock().unwrap().remove(&id));
                if let Some(answer) = answer {
                    let _ = answer.send(Err(ZygoteError::Said { message }));
                }
            }
            Message::Exit { pid, code, signal } => {
                if let Some(exit) = self.exits.lock().unwrap().remove(&pid) {
                    let _ = exit.send(Some(ExitInfo { code, signal }));
                }
            }
        }
    }

    /// The socket ended (at end of file, or on the read error `failed`):
    /// nothing more will be answered. Kernels still running lost the one who
    /// could report their status: each is watched until its process group is
    /// gone, then reported with an unknown status.
    fn close(&self, failed: Option<nix::errno::Errno>) {
        let why = || match failed {
            None => ZygoteError::Exited,
            Some(source) => ZygoteError::Read { source },
        };
        *self.closed.lock().unwrap() = true;
        if let Some(ready) = self.ready.lock().unwrap().take() {
            let _ = ready.send(Err(why()));
        }
        for (_, answer) in self.forks.lock().unwrap().drain() {
            let _ = answer.send(Err(why()));
        }
        let mut orphans: Vec<(u32, watch::Sender<Option<ExitInfo>>)> = self.exits.lock().unwrap().drain().collect();
        while !orphans.is_empty() {
            orphans.retain(|(pid, exit)| {
                let gone = !process::group_exists(*pid) && !process_exists(*pid);
                if gone {
                    let _ = exit.send(Some(ExitInfo { code: None, signal: None }));
                }
                !gone
            });
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

fn process_exists(pid: u32) -> bool {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), None).is_ok()
}

/// Read the zygote's messages until end of file (run on a thread of its own).
pub fn read_loop(socket: OwnedFd, routes: &Routes) {
    let mut buffer = vec![0u8; 1 << 16];
    let failed = loop {
        match recv(socket.as_raw_fd(), &mut buffer, MsgFlags::empty()) {
            Ok(0) => break None,
            Ok(n) => match fork_server::parse_message(&buffer[..n]) {
                Ok(message) => routes.route(message),
                Err(error) => tracing::warn!(
                    "skipping a message from the fork server that is not understood ({error}): {}",
                    String::from_utf8_lossy(&buffer[..n.min(512)])
                ),
            },
            Err(nix::errno::Errno::EINTR) => continue,
            Err(error) => break Some(error),
        }
    };
    routes.close(failed);
}

/// Send one request with `fds` attached.
pub fn send(socket: RawFd, body: &[u8], fds: &[RawFd]) -> std::io::Result<()> {
    send_with(socket, body, fds, MsgFlags::empty())
}

/// [`send`] that never waits: a socket whose queue is full (a kernel that
/// reads no control messages) is an error (`WouldBlock`), not a hang.
pub fn send_now(socket: RawFd, body: &[u8], fds: &[RawFd]) -> std::io::Result<()> {
    send_with(socket, body, fds, MsgFlags::MSG_DONTWAIT)
}

fn send_with(socket: RawFd, body: &[u8], fds: &[RawFd], flags: MsgFlags) -> std::io::Result<()> {
    let iov = [IoSlice::new(body)];
    let control = [ControlMessage::ScmRights(fds)];
    loop {
        match sendmsg::<()>(socket, &iov, &control, flags, None) {
            Ok(_) => return Ok(()),
            Err(nix::errno::Errno::EINTR) => continue,
            Err(error) => return Err(error.into()),
        }
    }
}
