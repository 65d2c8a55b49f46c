//! Signals to a kernel's process group, and how a process ended.
//!
//! The runner is started with `setsid`, so it leads its own session and
//! process group (pgid = its pid) and has no controlling terminal: signals
//! reach every process a cell started, and nothing can block on a tty.

use std::fmt;
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

/// After the `exit` frame, how long the runner gets to leave by itself.
pub const EXIT_GRACE: Duration = Duration::from_secs(2);
/// After SIGTERM to the group, how long before SIGKILL.
pub const TERM_GRACE: Duration = Duration::from_secs(2);
/// A runner known to be stuck (it ignored an interrupt) gets this long after
/// SIGTERM to the group before SIGKILL: enough for a process that handles
/// SIGTERM to flush a file, short enough that nobody waits on a dead cell.
pub const STUCK_TERM_GRACE: Duration = Duration::from_millis(200);
/// After the runner is gone, how long its leftover children get after SIGTERM.
pub const SWEEP_GRACE: Duration = Duration::from_millis(500);

/// Send `signal` to the process group `pgid`; a group already gone is not an error.
pub fn signal_group(pgid: u32, signal: Signal) -> nix::Result<()> {
    match killpg(Pid::from_raw(pgid as i32), signal) {
        Err(nix::errno::Errno::ESRCH) => Ok(()),
        other => other,
    }
}

/// True while any process (zombies included) is still in the group.
pub fn group_exists(pgid: u32) -> bool {
    killpg(Pid::from_raw(pgid as i32), None).is_ok()
}

/// How the kernel process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExitInfo {
    pub code: Option<i32>,
    pub signal: Option<i32>,
}

impl From<std::process::ExitStatus> for ExitInfo {
    fn from(status: std::process::ExitStatus) -> Self {
        use std::os::unix::process::ExitStatusExt;
        ExitInfo { code: status.code(), signal: status.signal() }
    }
}

impl fmt::Display for ExitInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.code, self.signal) {
            (Some(code), _) => write!(f, "exit code {code}"),
            (None, Some(signal)) => match Signal::try_from(signal) {
                Ok(name) => write!(f, "killed by signal {signal} ({})", name.as_str()),
                Err(_) => write!(f, "killed by signal {signal}"),
            },
            (None, None) => f.write_str("unknown exit status"),
        }
    }
}
