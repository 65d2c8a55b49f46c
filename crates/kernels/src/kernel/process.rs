//! Stopping a kernel's whole process tree, and how a process ended.
//!
//! On Unix the runner is started with `setsid`, so it leads its own session
//! and process group (pgid = its pid) and has no controlling terminal: signals
//! reach every process a cell started, and nothing can block on a tty.
//!
//! Windows has neither signals nor process groups that can be killed as one:
//! each kernel is put in a Job Object right after it starts, and "signalling
//! the group" terminates the job (every process in it). Interrupts travel
//! over the request pipe instead (see `Kernel::interrupt`).

use std::fmt;
#[cfg(unix)]
use std::io;
use std::time::Duration;

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

#[cfg(unix)]
pub use nix::sys::signal::Signal;

/// The three ways the host stops a tree, named as on Unix so that one call
/// site serves both. On Windows SIGTERM and SIGKILL both terminate the job,
/// and SIGINT is not sent this way at all.
#[cfg(windows)]
#[allow(clippy::upper_case_acronyms, reason = "the POSIX names, so one call site serves both platforms")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    SIGINT,
    SIGTERM,
    SIGKILL,
}

/// Send `signal` to the process group `pgid`; a group already gone is not an error.
#[cfg(unix)]
pub fn signal_group(pgid: u32, signal: Signal) -> io::Result<()> {
    use nix::unistd::Pid;
    match nix::sys::signal::killpg(Pid::from_raw(pgid as i32), signal) {
        Err(nix::errno::Errno::ESRCH) | Ok(()) => Ok(()),
        Err(errno) => Err(errno.into()),
    }
}

/// True while any process (zombies included) is still in the group.
#[cfg(unix)]
pub fn group_exists(pgid: u32) -> bool {
    nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pgid as i32), None).is_ok()
}

/// Whether process `pid` exists (it may belong to another user).
#[cfg(unix)]
pub fn pid_alive(pid: u32) -> bool {
    use nix::errno::Errno;
    matches!(nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), None), Ok(()) | Err(Errno::EPERM))
}

/// Send `signal` to the one process `pid` (not its group).
#[cfg(unix)]
pub fn signal_pid(pid: u32, signal: Signal) -> io::Result<()> {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), signal).map_err(io::Error::from)
}

/// Put a just-started kernel's tree under the host's control (Unix: it leads
/// its own process group already).
#[cfg(unix)]
pub fn adopt(_pid: u32, _child: &tokio::process::Child) -> io::Result<()> {
    Ok(())
}

/// The host is done with the tree of `pid` (Unix: nothing is held).
#[cfg(unix)]
pub fn release(_pid: u32) {}

#[cfg(windows)]
pub use self::jobs::{adopt, group_exists, pid_alive, release, signal_group, signal_pid};

#[cfg(windows)]
mod jobs {
    use std::collections::HashMap;
    use std::io;
    use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle};
    use std::sync::{LazyLock, Mutex};

    use windows_sys::Win32::System::JobObjects::{
        AssignProcessToJobObject, CreateJobObjectW, JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
        JOBOBJECT_BASIC_ACCOUNTING_INFORMATION, JOBOBJECT_EXTENDED_LIMIT_INFORMATION,
        JobObjectBasicAccountingInformation, JobObjectExtendedLimitInformation, QueryInformationJobObject,
        SetInformationJobObject, TerminateJobObject,
    };

    use super::Signal;

    /// Each kernel's job, by the runner's pid. Closing a job's handle kills
    /// what is still in it, so a host that exits leaves no kernel behind.
    static JOBS: LazyLock<Mutex<HashMap<u32, OwnedHandle>>> = LazyLock::new(Default::default);

    /// Make a job that dies with its handle and put the kernel in it. A
    /// process the kernel starts from now on is in the job too.
    pub fn adopt(pid: u32, child: &tokio::process::Child) -> io::Result<()> {
        let process = child.raw_handle().ok_or_else(|| io::Error::other("the kernel process has already exited"))?;
        // SAFETY: plain Win32 calls on a new job handle this function owns and
        // on the child's live process handle; the info struct is zeroed POD.
        unsafe {
            let job = CreateJobObjectW(std::ptr::null(), std::ptr::null());
            if job.is_null() {
                return Err(io::Error::last_os_error());
            }
            let job = OwnedHandle::from_raw_handle(job);
            let mut limits: JOBOBJECT_EXTENDED_LIMIT_INFORMATION = std::mem::zeroed();
            limits.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE;
            let set = SetInformationJobObject(
                job.as_raw_handle(),
                JobObjectExtendedLimitInformation,
                (&raw const limits).cast(),
                size_of::<JOBOBJECT_EXTENDED_LIMIT_INFORMATION>() as u32,
            );
            if set == 0 || AssignProcessToJobObject(job.as_raw_handle(), process) == 0 {
                return Err(io::Error::last_os_error());
            }
            JOBS.lock().unwrap().insert(pid, job);
        }
        Ok(())
    }

    /// SIGTERM and SIGKILL terminate every process in the job; a tree the
    /// host no longer holds is not an error. SIGINT has no meaning here.
    pub fn signal_group(pid: u32, signal: Signal) -> io::Result<()> {
        if signal == Signal::SIGINT {
            return Err(io::Error::new(io::ErrorKind::Unsupported, "interrupts go over the request pipe on Windows"));
        }
        let jobs = JOBS.lock().unwrap();
        let Some(job) = jobs.get(&pid) else { return Ok(()) };
        // SAFETY: a live job handle held in JOBS.
        if unsafe { TerminateJobObject(job.as_raw_handle(), 1) } == 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// True while any process of the tree still runs.
    pub fn group_exists(pid: u32) -> bool {
        let jobs = JOBS.lock().unwrap();
        let Some(job) = jobs.get(&pid) else { return false };
        // SAFETY: a live job handle and a zeroed POD struct of the queried class's size.
        unsafe {
            let mut info: JOBOBJECT_BASIC_ACCOUNTING_INFORMATION = std::mem::zeroed();
            let ok = QueryInformationJobObject(
                job.as_raw_handle(),
                JobObjectBasicAccountingInformation,
                (&raw mut info).cast(),
                size_of::<JOBOBJECT_BASIC_ACCOUNTING_INFORMATION>() as u32,
                std::ptr::null_mut(),
            );
            ok != 0 && info.ActiveProcesses > 0
        }
    }

    /// Whether process `pid` still runs.
    pub fn pid_alive(pid: u32) -> bool {
        use windows_sys::Win32::Foundation::STILL_ACTIVE;
        use windows_sys::Win32::System::Threading::{GetExitCodeProcess, PROCESS_QUERY_LIMITED_INFORMATION};
        let Some(process) = open(pid, PROCESS_QUERY_LIMITED_INFORMATION) else { return false };
        let mut code = 0u32;
        // SAFETY: a live process handle and a local out-parameter.
        unsafe { GetExitCodeProcess(process.as_raw_handle(), &mut code) != 0 && code == STILL_ACTIVE as u32 }
    }

    /// SIGTERM and SIGKILL terminate process `pid` (Windows cannot ask a
    /// process to leave); SIGINT is not sent this way.
    pub fn signal_pid(pid: u32, signal: Signal) -> io::Result<()> {
        use windows_sys::Win32::System::Threading::{PROCESS_TERMINATE, TerminateProcess};
        if signal == Signal::SIGINT {
            return Err(io::Error::new(io::ErrorKind::Unsupported, "no interrupt signal on Windows"));
        }
        let process = open(pid, PROCESS_TERMINATE).ok_or_else(io::Error::last_os_error)?;
        // SAFETY: a live process handle opened for termination.
        if unsafe { TerminateProcess(process.as_raw_handle(), 1) } == 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    fn open(pid: u32, access: u32) -> Option<OwnedHandle> {
        use windows_sys::Win32::System::Threading::OpenProcess;
        // SAFETY: OpenProcess returns a new handle (owned from here) or null.
        let handle = unsafe { OpenProcess(access, 0, pid) };
        // SAFETY: a non-null handle just returned to us.
        (!handle.is_null()).then(|| unsafe { OwnedHandle::from_raw_handle(handle) })
    }

    /// Close the job: whatever is left of the tree ends with it.
    pub fn release(pid: u32) {
        JOBS.lock().unwrap().remove(&pid);
    }
}

/// How the kernel process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExitInfo {
    pub code: Option<i32>,
    pub signal: Option<i32>,
}

impl From<std::process::ExitStatus> for ExitInfo {
    fn from(status: std::process::ExitStatus) -> Self {
        #[cfg(unix)]
        let signal = std::os::unix::process::ExitStatusExt::signal(&status);
        #[cfg(not(unix))]
        let signal = None;
        ExitInfo { code: status.code(), signal }
    }
}

impl fmt::Display for ExitInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.code, self.signal) {
            (Some(code), _) => write!(f, "exit code {code}"),
            (None, Some(signal)) => match signal_name(signal) {
                Some(name) => write!(f, "killed by signal {signal} ({name})"),
                None => write!(f, "killed by signal {signal}"),
            },
            (None, None) => f.write_str("unknown exit status"),
        }
    }
}

#[cfg(unix)]
fn signal_name(signal: i32) -> Option<&'static str> {
    Signal::try_from(signal).ok().map(Signal::as_str)
}

#[cfg(not(unix))]
fn signal_name(_signal: i32) -> Option<&'static str> {
    None
}
