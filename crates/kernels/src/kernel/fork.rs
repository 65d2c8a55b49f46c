//! Forking a live kernel ([`super::Kernel::fork`]): a copy-on-write copy of
//! the whole process at a cell boundary, which then lives as a kernel of its
//! own (its own pipes, process group, cgroup and request ids).
//!
//! Python kernels on Linux are started with a control socket (fd 5, a Unix
//! SOCK_SEQPACKET socket). To fork one, the host makes the new kernel's
//! pipes exactly as for a start, sends their child ends over that socket, and
//! then writes a `fork` request line, which the runner reads in order with the
//! other requests: a fork therefore happens after the cells sent before it,
//! never in the middle of one. The source kernel forks, answers `forked` with
//! the new pid on the control socket, and is the new kernel's parent: it
//! reaps it and reports its exit there, as the preloading fork server does
//! for its kernels ([`crate::protocol::fork_server`] declares both). If the source
//! kernel ends first, the copy lives on and its exit status is reported as
//! unknown. The copy says `ready` on its new frames pipe, as a started kernel does.
//!
//! Not forked: Node kernels (V8 cannot be forked), kernels on other systems
//! (macOS forbids forking a process that touched its system frameworks,
//! Windows has no `fork()`), and kernels behind a gateway (not ours to copy).

use std::time::Duration;

/// How long the source kernel may take to answer a fork request once it has
/// read it: the fork itself takes milliseconds even for gigabytes.
pub const FORK_ANSWER_TIMEOUT: Duration = Duration::from_secs(30);

#[cfg(unix)]
use super::control::control_pair;
pub use super::control::{ControlEnd, unsupported};

#[cfg(unix)]
pub(super) use self::unix::Control;

#[cfg(unix)]
mod unix {
    use std::os::fd::{AsRawFd, OwnedFd, RawFd};
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::{Arc, Mutex, OnceLock};

    use super::super::KernelError;
    use super::super::zygote::wire;
    use crate::protocol::fork_server;

    /// The host's side of one kernel's control socket.
    pub struct Control {
        socket: OwnedFd,
        routes: Arc<wire::Routes>,
        /// The thread that reads the socket, started at the first fork (most
        /// kernels are never forked and need none).
        reader: OnceLock<Result<(), String>>,
        next_id: AtomicU64,
        /// Sends are whole messages; the lock keeps a fork's id and fds together with its turn.
        send_lock: Mutex<()>,
    }

    impl Control {
        pub fn new(socket: OwnedFd) -> Control {
            Control {
                socket,
                routes: Arc::default(),
                reader: OnceLock::new(),
                next_id: AtomicU64::new(1),
                send_lock: Mutex::new(()),
            }
        }

        fn start_reader(&self) -> Result<(), KernelError> {
            let started = self.reader.get_or_init(|| {
                let socket = self.socket.try_clone().map_err(|e| e.to_string())?;
                let routes = self.routes.clone();
                std::thread::Builder::new()
                    .name("cellbox-fork-control".into())
                    .spawn(move || wire::read_loop(socket, &routes))
                    .map(drop)
                    .map_err(|e| e.to_string())
            });
            started.clone().map_err(|why| KernelError::ForkFailed(format!("cannot read the control socket: {why}")))
        }

        /// Send fork `id`'s fds; the answer arrives on the returned receiver
        /// once the kernel has read the matching request line.
        pub fn send(
            &self,
            fds: &[RawFd],
        ) -> Result<
            (u64, tokio::sync::oneshot::Receiver<Result<wire::Forked, super::super::zygote::ZygoteError>>),
            KernelError,
        > {
            self.start_reader()?;
            let id = self.next_id.fetch_add(1, Ordering::Relaxed);
            let answer = self
                .routes
                .expect_fork(id)
                .ok_or_else(|| KernelError::ForkFailed("the kernel's control socket is closed".into()))?;
            let message = fork_server::Request::Fork(fork_server::Fork { id, cwd: None, env: None, argv: None });
            let body = message.encode().map_err(|e| KernelError::ForkFailed(e.to_string()))?;
            let _turn = self.send_lock.lock().unwrap();
            if let Err(error) = wire::send(self.socket.as_raw_fd(), &body, fds) {
                self.routes.forget_fork(id);
                return Err(KernelError::ForkFailed(format!("cannot reach the kernel's control socket: {error}")));
            }
            Ok((id, answer))
        }

        /// Hand the kernel one open file (a `file` message with `fd`
        /// attached); the request line that uses it names the returned id.
        pub fn send_file(&self, fd: RawFd) -> Result<u64, KernelError> {
            let id = self.next_id.fetch_add(1, Ordering::Relaxed);
            let message = fork_server::Request::File(fork_server::FileHandoff { id });
            let body = message.encode().map_err(|e| KernelError::Snapshot(e.to_string()))?;
            let _turn = self.send_lock.lock().unwrap();
            // Never waits: a kernel that leaves its control socket full is refused, not waited for.
            wire::send_now(self.socket.as_raw_fd(), &body, &[fd])
                .map_err(|error| KernelError::Snapshot(format!("cannot reach the kernel's control socket: {error}")))?;
            Ok(id)
        }
    }
}

impl super::Kernel {
    /// Fork this kernel: a new kernel whose process is a copy-on-write copy
    /// of this one after the requests already sent (a running cell first
    /// finishes). Names, imports, objects, the working folder, environment
    /// and execution count carry over; threads that cells started do not
    /// (the copy lists them in [`super::ReadyInfo::lost_threads`]). The copy
    /// gets its own process group, pipes and, when the kernel has memory or
    /// process limits, cgroup.
    ///
    /// `wait` bounds the whole fork, including the wait for a running cell.
    pub async fn fork(&self, wait: Duration) -> Result<super::Kernel, super::KernelError> {
        self.fork_placed(wait, true).await
    }

    /// [`Kernel::fork`] for a checkpoint: the copy stays in this kernel's
    /// cgroups, under the same limits, so that memory pressure there finds
    /// the copy (the OOM killer's first choice once its score is raised)
    /// before this kernel; the cgroups last as long as either of them.
    pub async fn checkpoint(&self, wait: Duration) -> Result<super::Kernel, super::KernelError> {
        self.fork_placed(wait, false).await
    }

    async fn fork_placed(&self, wait: Duration, own_cgroup: bool) -> Result<super::Kernel, super::KernelError> {
        #[cfg(unix)]
        {
            self.fork_unix(wait, own_cgroup).await
        }
        #[cfg(not(unix))]
        {
            let _ = (wait, own_cgroup);
            Err(super::KernelError::ForkUnsupported(unsupported(self.shared.runtime).unwrap_or_default()))
        }
    }

    #[cfg(unix)]
    async fn fork_unix(&self, wait: Duration, own_cgroup: bool) -> Result<super::Kernel, super::KernelError> {
        use std::os::fd::AsRawFd;

        use super::{KernelError, channel, launch, pipe};

        let shared = &self.shared;
        let Some(control) = shared.control.as_ref() else {
            let why = unsupported(shared.runtime)
                .unwrap_or_else(|| "this kernel was started without a control socket, so it cannot be forked".into());
            return Err(KernelError::ForkUnsupported(why));
        };
        if !self.is_alive() {
            return Err(self.death_error().await);
        }
        let io_error = |e: std::io::Error| KernelError::ForkFailed(e.to_string());
        let (child_ends, host_ends) = channel::create().map_err(io_error)?;
        let (request_read, request_write) = std::io::pipe().map_err(io_error)?;
        let requests = pipe::sender(request_write).map_err(io_error)?;
        let (control_host, control_child) =
            control_pair(shared.runtime).map_err(io_error)?.expect("a kernel with a control socket is forkable");
        let fds = [
            request_read.as_raw_fd(),
            child_ends.stdout.as_raw_fd(),
            child_ends.stderr.as_raw_fd(),
            child_ends.frames.as_raw_fd(),
            child_ends.diagnostics.as_raw_fd(),
            control_child.as_raw_fd(),
        ];
        let (id, answer) = control.send(&fds)?;
        // The kernel holds its own copies now (in flight on the socket): the
        // host's go, so end of file on a pipe means the copy has ended.
        drop((request_read, child_ends, control_child));
        let request =
            crate::protocol::HostRequest::Fork(crate::protocol::ForkRequest { id: format!("f{id}"), fork: id });
        shared.write_line(&request.encode()).await;
        let (pid, exit) = match tokio::time::timeout(wait, answer).await {
            Ok(Ok(Ok(forked))) => forked,
            Ok(Ok(Err(why))) => return Err(KernelError::ForkFailed(why.to_string())),
            Ok(Err(_)) => return Err(self.death_error().await),
            Err(_) => {
                return Err(KernelError::ForkFailed(format!(
                    "the kernel did not fork within {}s (a cell may still be running)",
                    wait.as_secs()
                )));
            }
        };
        // The pid came from the kernel, which runs user code: only a child of
        // it is taken as the copy (the host signals that pid's group later).
        if parent_of(pid) != Some(shared.pid) {
            return Err(KernelError::ForkFailed(format!("the kernel answered with pid {pid}, which is not its child")));
        }
        let options = shared.options.clone();
        // The copy's sandbox is the source's (the OS copied it): it writes to
        // the source's temp dir, which therefore lives as long as either.
        let guard = if own_cgroup {
            match own_cgroup_for(&options, pid) {
                Ok(guard) => guard.with_temp_dir_of(&shared.sandbox),
                Err(error) => {
                    let _ = super::process::signal_group(pid, super::process::Signal::SIGKILL);
                    return Err(error);
                }
            }
        } else {
            shared.sandbox.shared()
        };
        // No started page: the fork says `started` (it closed its source's page).
        let launched = launch::Launched {
            pid,
            exit,
            requests,
            guard,
            zygote: None,
            control: Some(control_host),
            started_page: None,
        };
        let fork = super::Kernel::attach(options, shared.runner.clone(), launched, host_ends, Some(shared.pid)).await?;
        if fork.ready_info().pid != pid {
            return Err(KernelError::ForkFailed(format!(
                "the copy said it is pid {}, the kernel said {pid}",
                fork.ready_info().pid
            )));
        }
        // A crash of the copy quotes the cells it inherited.
        *fork.shared.cells.lock().unwrap() = shared.cells.lock().unwrap().clone();
        Ok(fork)
    }
}

/// The parent pid of process `pid` (Linux /proc), or `None` when it is gone.
#[cfg(unix)]
fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces and parentheses: fields follow the last ')'.
    stat.rsplit_once(')')?.1.split_whitespace().nth(1)?.parse().ok()
}

/// The copy's own cgroup when the kernel has memory or process limits that
/// cgroups carry (rlimits are inherited by the fork as they are).
#[cfg(unix)]
fn own_cgroup_for(
    options: &super::KernelOptions,
    pid: u32,
) -> Result<crate::sandbox::SandboxGuard, super::KernelError> {
    let limits = super::zygote::limits_policy(&options.sandbox);
    if limits.is_off() {
        return Ok(crate::sandbox::SandboxGuard::default());
    }
    let prepared = crate::sandbox::prepare(&limits, &options.cwd, &options.env)?;
    if !prepared.only_cgroups() {
        return Ok(crate::sandbox::SandboxGuard::default());
    }
    prepared
        .move_process(pid)
        .map_err(|e| super::KernelError::ForkFailed(format!("cannot move the copy into its cgroup: {e}")))?;
    Ok(prepared.guard)
}
