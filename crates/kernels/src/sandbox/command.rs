//! A program the host starts for a kernel's sake (an interpreter probe, an
//! E2B sandbox's process), or a kernel that is not a runner of ours (a
//! Jupyter kernel), started the way cellbox's own kernels are.

use std::collections::BTreeMap;
use std::path::Path;
#[cfg(unix)]
use std::sync::Arc;

use super::{Prepared, SandboxError, SandboxGuard, SandboxPolicy, prepare};

/// A short-lived program the host runs for a kernel's sake (an interpreter
/// probe), started the way the kernel would be: under `policy` (its limits
/// too: what it leaves running goes with its cgroups), in `cwd`, in a session
/// of its own, with `env` and nothing else of the host's environment. The
/// guard must outlive the program (it holds its temp dir and cgroups).
pub fn command_like_a_kernel(
    program: &Path,
    policy: &SandboxPolicy,
    cwd: &Path,
    env: &BTreeMap<String, String>,
) -> Result<(std::process::Command, SandboxGuard), SandboxError> {
    Ok(command_from(prepare(policy, cwd, env)?, program, policy, cwd, env))
}

/// [`command_like_a_kernel`] for a kernel the host reaches on loopback ports
/// of the kernel's own network namespace (which `policy` must give it): the
/// child also makes `sockets` unconnected TCP sockets there before `exec` and
/// sends them down the returned end (read by
/// [`super::network::handoff::receive_sockets`]). A non-root host may not
/// enter that namespace itself.
#[cfg(target_os = "linux")]
pub fn command_like_a_tcp_kernel(
    program: &Path,
    policy: &SandboxPolicy,
    cwd: &Path,
    env: &BTreeMap<String, String>,
    sockets: usize,
) -> Result<(std::process::Command, SandboxGuard, std::os::fd::OwnedFd), SandboxError> {
    let mut prepared = prepare(policy, cwd, env)?;
    let host_end = prepared
        .hand_over_sockets(sockets)
        .map_err(|source| SandboxError { reason: super::Unenforceable::KernelSockets { source: Arc::new(source) } })?;
    let (command, guard) = command_from(prepared, program, policy, cwd, env);
    Ok((command, guard, host_end))
}

#[cfg_attr(not(unix), allow(unused_variables))]
fn command_from(
    mut prepared: Prepared,
    program: &Path,
    policy: &SandboxPolicy,
    cwd: &Path,
    env: &BTreeMap<String, String>,
) -> (std::process::Command, SandboxGuard) {
    let mut command = match prepared.wrapper.split_first() {
        Some((wrapper, wrapper_args)) => {
            let mut command = std::process::Command::new(wrapper);
            command.args(wrapper_args).arg(program);
            command
        }
        None => std::process::Command::new(program),
    };
    command.current_dir(cwd).env_clear().envs(env).envs(prepared.env.iter().map(|(k, v)| (k, v)));
    let guard = std::mem::take(&mut prepared.guard);
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        use std::os::unix::process::CommandExt;
        let prepared = Arc::new(prepared);
        // The folder is entered again once the sandbox's mounts are in place: the child
        // entered it before they were, on the mount that is now read-only below them.
        // Where the kernel's folder is shown elsewhere, the program is given it there.
        let seen = super::seen_cwd(policy, cwd);
        let folder = std::ffi::CString::new(seen.as_os_str().as_bytes()).ok();
        // SAFETY: the sandbox's steps are async-signal-safe system calls on
        // what `prepared` holds (see `Prepared::apply_in_child`); `chdir` on a
        // path made before the fork is too.
        unsafe {
            command.pre_exec(move || {
                prepared.enter_in_child()?;
                if let Some(folder) = &folder
                    && libc::chdir(folder.as_ptr()) != 0
                {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    (command, guard)
}
