//! How a kernel process is made: spawned (`<program> <runner> …` in a new
//! session, with the sandbox applied before `exec`), or forked from the
//! preloading fork server ([`super::zygote`]) when `preload` is set.
//!
//! Either way the host has made every pipe itself and gets back the same
//! things: the pid (which leads its own process group), a watch that receives
//! the exit status, the request pipe's write end and what must live as long
//! as the kernel (its sandbox guard, the zygote that reports its exit).

use std::io::PipeReader;
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;

use tokio::process::Command;
use tokio::sync::watch;

#[cfg(unix)]
use super::channel;
use super::channel::ChildEnds;
use super::pipe;
use super::process::ExitInfo;
use super::zygote::{self, Zygote};
use super::{KernelError, KernelOptions};

/// A kernel process, however it was made.
pub(super) struct Launched {
    pub pid: u32,
    pub exit: watch::Receiver<Option<ExitInfo>>,
    /// Requests go here (the runner's fd 0).
    pub requests: pipe::Sender,
    /// The kernel's temp dir and cgroups, kept while it lives.
    pub guard: crate::sandbox::SandboxGuard,
    /// The fork server that reports this kernel's exit, when it was forked.
    pub zygote: Option<Arc<Zygote>>,
    /// The host's end of the kernel's control socket, on which forks of the
    /// kernel are asked for (Python on Linux; see [`super::fork`]).
    pub control: Option<super::control::ControlEnd>,
    /// Where the runner writes which request it began, when it was given one
    /// (see [`super::began`]); else it says `started`.
    pub started_page: Option<super::began::StartedPage>,
}

/// Make the runner process for `options`, with `ends` as its output pipes.
pub(super) async fn launch(options: &KernelOptions, runner: &Path, ends: ChildEnds) -> Result<Launched, KernelError> {
    crate::sandbox::announce(&options.sandbox);
    let spawn_error = |e: std::io::Error| KernelError::Spawn {
        runtime: options.runtime,
        program: options.program.clone(),
        message: e.to_string(),
    };
    let (request_read, request_write) = std::io::pipe().map_err(spawn_error)?;
    let requests = pipe::sender(request_write).map_err(spawn_error)?;
    let (control, child_control) = match super::control::control_pair(options.runtime) {
        Ok(Some((host, child))) => (Some(host), Some(child)),
        Ok(None) => (None, None),
        Err(error) => return Err(spawn_error(error)),
    };
    let started_page = super::began::StartedPage::create(options.runtime);
    // A kernel from the fork server gets the page after its control socket
    // (fd 6 after fd 5), so only with one; without, it says `started`.
    let page_forked = started_page.is_some() && child_control.is_some();
    let mut argv = vec![runner.to_string_lossy().into_owned()];
    argv.extend(host_args(&ends, child_control.is_some(), page_forked));
    let page_file = started_page.as_ref().filter(|_| page_forked).map(super::began::StartedPage::file);
    let forked = zygote::fork(options, runner, &argv, &ends, &request_read, child_control.as_ref(), page_file).await;
    if let Some(forked) = forked {
        return Ok(Launched {
            pid: forked.pid,
            exit: forked.exit,
            requests,
            guard: forked.guard,
            zygote: Some(forked.zygote),
            control,
            started_page: if page_forked { started_page } else { None },
        });
    }
    // The fork server got copies of the ends (or none was used); the host
    // drops its own below, so end of file still means the kernel is gone.
    // A fork that failed half-way may have left a child with the page: the
    // spawned kernel gets a page of its own.
    let started_page = if page_forked && !options.preload.is_empty() {
        super::began::StartedPage::create(options.runtime)
    } else {
        started_page
    };
    let spawn_args = host_args(&ends, child_control.is_some(), started_page.is_some());
    let places = ChildPlaces { control: child_control, started_page: started_page.as_ref() };
    let (pid, exit, guard) = spawn(options, runner, &spawn_args, ends, request_read, places)?;
    Ok(Launched { pid, exit, requests, guard, zygote: None, control, started_page })
}

/// What a spawned runner gets beside its pipes.
#[cfg_attr(not(unix), allow(dead_code, reason = "Windows kernels get neither"))]
struct ChildPlaces<'a> {
    control: Option<super::control::ControlEnd>,
    started_page: Option<&'a super::began::StartedPage>,
}

/// What the runner is told after its own file: the host's pid and where its
/// frames and diagnostics go (fd numbers on Unix, inherited handles on
/// Windows), its control socket's fd when it has one, and its started page's
/// when `started_page`.
fn host_args(ends: &ChildEnds, control: bool, started_page: bool) -> Vec<String> {
    #[cfg(unix)]
    let (flag, frames, diagnostics) = {
        let _ = ends;
        ("fd", channel::FRAMES_FD.to_string(), channel::DIAGNOSTICS_FD.to_string())
    };
    #[cfg(windows)]
    let (flag, frames, diagnostics) = {
        use std::os::windows::io::AsRawHandle;
        (
            "handle",
            (ends.frames.as_raw_handle() as usize).to_string(),
            (ends.diagnostics.as_raw_handle() as usize).to_string(),
        )
    };
    #[cfg_attr(not(unix), allow(unused_mut, reason = "only Unix kernels get a control socket"))]
    let mut args = vec![
        "--host-pid".to_string(),
        std::process::id().to_string(),
        format!("--frames-{flag}"),
        frames,
        format!("--diagnostics-{flag}"),
        diagnostics,
    ];
    #[cfg(unix)]
    if control {
        args.extend(["--control-fd".to_string(), channel::CONTROL_FD.to_string()]);
    }
    #[cfg(unix)]
    if started_page {
        args.extend([crate::protocol::STARTED_FD_FLAG.to_string(), channel::STARTED_FD.to_string()]);
    }
    #[cfg(not(unix))]
    let _ = (control, started_page);
    args
}

/// The runner's command line, environment and output pipes, the same on every OS.
fn command(options: &KernelOptions, runner: &Path, host_args: &[String], wrapper: &[std::ffi::OsString]) -> Command {
    // macOS applies its sandbox by starting the kernel through `sandbox-exec`.
    let mut command = match wrapper.split_first() {
        Some((wrapper, wrapper_args)) => {
            let mut command = Command::new(wrapper);
            command.args(wrapper_args).arg(&options.program);
            command
        }
        None => Command::new(&options.program),
    };
    command
        .args(options.runtime.runner_args(runner))
        .args(host_args)
        .current_dir(&options.cwd)
        .env_clear()
        .envs(&options.env);
    command
}

type Spawned = (u32, watch::Receiver<Option<ExitInfo>>, crate::sandbox::SandboxGuard);

/// Report the child's exit status on a watch, from a task that waits for it.
fn watch_exit(mut child: tokio::process::Child) -> watch::Receiver<Option<ExitInfo>> {
    let (exit_tx, exit_rx) = watch::channel(None);
    tokio::spawn(async move {
        let info = child.wait().await.map(ExitInfo::from).unwrap_or(ExitInfo { code: None, signal: None });
        let _ = exit_tx.send(Some(info));
    });
    exit_rx
}

/// Spawn the runner in its own session under the sandbox.
#[cfg(unix)]
fn spawn(
    options: &KernelOptions,
    runner: &Path,
    host_args: &[String],
    ends: ChildEnds,
    requests: PipeReader,
    places: ChildPlaces<'_>,
) -> Result<Spawned, KernelError> {
    use std::os::fd::AsRawFd;
    let ChildPlaces { control, started_page } = places;
    let mut sandbox = crate::sandbox::prepare(&options.sandbox, &options.cwd, &options.env)?;
    let mut command = command(options, runner, host_args, &sandbox.wrapper);
    command
        .envs(sandbox.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::from(requests))
        .stdout(Stdio::from(ends.stdout))
        .stderr(Stdio::from(ends.stderr));
    let frames_fd = ends.frames.as_raw_fd();
    let diagnostics_fd = ends.diagnostics.as_raw_fd();
    let control_fd = control.as_ref().map(AsRawFd::as_raw_fd);
    let started_fd = started_page.map(super::began::StartedPage::raw_fd);
    let guard = std::mem::take(&mut sandbox.guard);
    let sandbox = Arc::new(sandbox);
    let child_sandbox = sandbox.clone();
    // SAFETY: setsid, fcntl, dup2 and close are async-signal-safe and touch
    // no memory of the parent; so are the sandbox's system calls, made
    // before the fds are placed so that none of its own fds is overwritten.
    unsafe {
        command.pre_exec(move || {
            child_sandbox.enter_in_child()?;
            channel::place_in_child(frames_fd, diagnostics_fd, control_fd, started_fd)
        });
    }
    let spawned = command.spawn();
    // The ruleset and cgroup fds were for the child only.
    drop(sandbox);
    // The host keeps no write end: end of file then means the kernel is gone.
    drop(command);
    drop(ends.frames);
    drop(ends.diagnostics);
    drop(control);
    let child = spawned.map_err(|e| KernelError::Spawn {
        runtime: options.runtime,
        program: options.program.clone(),
        message: e.to_string(),
    })?;
    let pid = child.id().expect("a just-spawned child has a pid");
    Ok((pid, watch_exit(child), guard))
}

/// Spawn the runner in a process group and Job Object of its own, with the
/// frames and diagnostics pipes inherited as handles.
///
/// Windows hands every inheritable handle to every child spawned meanwhile:
/// a process the host starts at the same moment may hold a copy of these
/// pipes until it exits, which only delays the end of file that says this
/// kernel is gone.
#[cfg(windows)]
fn spawn(
    options: &KernelOptions,
    runner: &Path,
    host_args: &[String],
    ends: ChildEnds,
    requests: PipeReader,
    _places: ChildPlaces<'_>,
) -> Result<Spawned, KernelError> {
    use std::os::windows::io::AsRawHandle;
    use windows_sys::Win32::Foundation::{HANDLE_FLAG_INHERIT, SetHandleInformation};
    use windows_sys::Win32::System::Threading::{CREATE_NEW_PROCESS_GROUP, CREATE_NO_WINDOW};
    let spawn_error =
        |message: String| KernelError::Spawn { runtime: options.runtime, program: options.program.clone(), message };
    if options.runtime != crate::runtime::Runtime::Python {
        // Node cannot open an inherited handle as a file descriptor.
        return Err(spawn_error(format!(
            "{} kernels are not supported on Windows yet; Python kernels are",
            options.runtime
        )));
    }
    let mut sandbox = crate::sandbox::prepare(&options.sandbox, &options.cwd, &options.env)?;
    let mut command = command(options, runner, host_args, &sandbox.wrapper);
    command
        .envs(sandbox.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::from(requests))
        .stdout(Stdio::from(ends.stdout))
        .stderr(Stdio::from(ends.stderr))
        // No console window, and Ctrl-C in the host's console is the host's
        // to pass on (as an interrupt frame), as `setsid` does on Unix.
        .creation_flags(CREATE_NO_WINDOW | CREATE_NEW_PROCESS_GROUP);
    for end in [&ends.frames, &ends.diagnostics] {
        // SAFETY: a live handle owned by `ends` for the whole call.
        if unsafe { SetHandleInformation(end.as_raw_handle(), HANDLE_FLAG_INHERIT, HANDLE_FLAG_INHERIT) } == 0 {
            return Err(spawn_error(format!(
                "could not pass a pipe to the kernel: {}",
                std::io::Error::last_os_error()
            )));
        }
    }
    let spawned = command.spawn();
    drop(command);
    // The host keeps no write end: end of file then means the kernel is gone.
    drop(ends.frames);
    drop(ends.diagnostics);
    let child = spawned.map_err(|e| spawn_error(e.to_string()))?;
    let pid = child.id().expect("a just-spawned child has a pid");
    if let Err(error) = super::process::adopt(pid, &child) {
        tracing::warn!(
            "could not put kernel {pid} in a Job Object ({error}); processes its cells start may outlive it"
        );
    }
    let guard = std::mem::take(&mut sandbox.guard);
    Ok((pid, watch_exit(child), guard))
}
