//! File work the host does for a kernel or a principal (the SDK's files API,
//! notebook exports, watches), done with no more rights than its kernels.
//!
//! Landlock restricts a thread, not a process: a thread that calls
//! `landlock_restrict_self` with the kernels' ruleset reaches exactly what
//! the kernels reach, and the rest of the host is untouched. So
//! [`Confinement::run`] starts a thread for each piece of work, confines it
//! with the same rules the principal's kernels get (built once, from the same
//! [`FileAccess`]), runs the work there and joins it. A kernel that swaps a
//! folder for a symlink while the host works gains nothing: the host's thread
//! cannot write or read anywhere the kernel could not itself. What Landlock
//! cannot say (no `/proc`, regular files only, no symlink followed by a
//! change) is checked on the opened descriptors ([`super::host_files`]).
//!
//! Where the kernels are not confined by Landlock (the policy is `off`, or
//! this Linux has no Landlock, or another OS), the work runs on a plain
//! thread and the descriptor checks are the whole rule: they compare what was
//! opened with the same [`FileAccess`].

use std::path::{Path, PathBuf};
#[cfg(target_os = "linux")]
use std::sync::Arc;

use super::access::{FileAccess, file_access};
use super::policy::{SandboxMode, SandboxPolicy};
use super::{SandboxError, Unenforceable};

/// The rules one principal's host-side file work runs under.
#[derive(Debug)]
pub struct Confinement {
    mode: SandboxMode,
    /// What the policy gives its kernels; `None` when the mode is `off`.
    access: Option<FileAccess>,
    /// The kernels' Landlock ruleset, when this host enforces it.
    #[cfg(target_os = "linux")]
    ruleset: Option<Arc<std::os::fd::OwnedFd>>,
}

/// Why a piece of confined work did not run.
#[derive(Debug, thiserror::Error)]
pub enum ConfineError {
    #[error("could not start a confined thread for the work: {0}")]
    Thread(std::io::Error),
    #[error("could not confine the thread to the kernels' rules: {0}")]
    Restrict(std::io::Error),
    #[error("the confined work panicked")]
    Panicked,
}

impl Confinement {
    /// The rules of `policy`'s kernels working in `workspace`, whose home is
    /// `home` (where the secret locations are). Fails only when this host
    /// enforces Landlock and the ruleset cannot be built.
    pub fn new(policy: &SandboxPolicy, workspace: &Path, home: &Path) -> Result<Confinement, SandboxError> {
        let mode = policy.mode;
        if mode == SandboxMode::Off {
            return Ok(Confinement::off());
        }
        let access = file_access(policy, mode, workspace, home, None);
        #[cfg(target_os = "linux")]
        let ruleset = match super::fs::check_abi() {
            Ok(()) => {
                let mut grants = vec![(PathBuf::from("/"), super::fs::Grant::Read)];
                grants.extend(access.writable.iter().map(|path| (path.clone(), super::fs::Grant::Write)));
                let rules = super::fs::plan(&grants, &access.denied);
                Some(Arc::new(super::fs::build_ruleset(&rules, super::fs::Scoping::None)?))
            }
            Err(_) => None,
        };
        Ok(Confinement {
            mode,
            access: Some(access),
            #[cfg(target_os = "linux")]
            ruleset,
        })
    }

    /// No rules: the policy is `off`, kernels have the user's full rights.
    pub fn off() -> Confinement {
        Confinement {
            mode: SandboxMode::Off,
            access: None,
            #[cfg(target_os = "linux")]
            ruleset: None,
        }
    }

    /// The sandbox mode the rules come from.
    pub fn mode(&self) -> SandboxMode {
        self.mode
    }

    /// What the policy lets kernels reach (`None`: everything, the mode is `off`).
    pub fn access(&self) -> Option<&FileAccess> {
        self.access.as_ref()
    }

    /// Whether the OS holds the work to the rules (else only the descriptor checks do).
    pub fn is_enforced(&self) -> bool {
        #[cfg(target_os = "linux")]
        return self.ruleset.is_some();
        #[cfg(not(target_os = "linux"))]
        return false;
    }

    /// The same rules kept by the descriptor checks alone, as on a host
    /// without Landlock: for tests that the checks hold by themselves.
    #[cfg(test)]
    pub(crate) fn without_os_rules(self) -> Confinement {
        Confinement {
            #[cfg(target_os = "linux")]
            ruleset: None,
            ..self
        }
    }

    /// Run `work` on a thread of its own under the kernels' rules, and wait for it.
    pub fn run<T: Send>(&self, work: impl FnOnce() -> T + Send) -> Result<T, ConfineError> {
        std::thread::scope(|scope| {
            let thread = std::thread::Builder::new()
                .name("cellbox-confined".into())
                .spawn_scoped(scope, || -> Result<T, ConfineError> {
                    self.confine_this_thread().map_err(ConfineError::Restrict)?;
                    Ok(work())
                })
                .map_err(ConfineError::Thread)?;
            thread.join().map_err(|_| ConfineError::Panicked)?
        })
    }

    #[cfg(target_os = "linux")]
    fn confine_this_thread(&self) -> std::io::Result<()> {
        use std::os::fd::AsRawFd;
        let Some(ruleset) = &self.ruleset else { return Ok(()) };
        let check = |rc: libc::c_long| if rc < 0 { Err(std::io::Error::last_os_error()) } else { Ok(()) };
        // SAFETY: plain system calls; both apply to the calling thread only.
        unsafe {
            check(libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) as libc::c_long)?;
            check(libc::syscall(libc::SYS_landlock_restrict_self, ruleset.as_raw_fd(), 0u32))
        }
    }

    #[cfg(not(target_os = "linux"))]
    fn confine_this_thread(&self) -> std::io::Result<()> {
        Ok(())
    }
}

impl From<ConfineError> for SandboxError {
    fn from(error: ConfineError) -> SandboxError {
        SandboxError { reason: Unenforceable::Confine { message: error.to_string() } }
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn only_the_confined_thread_is_held_to_the_rules() {
        if super::super::fs::check_abi().is_err() {
            eprintln!("skipped: no Landlock here");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let (workspace, outside, home) = (dir.path().join("work"), dir.path().join("outside"), dir.path().join("home"));
        for folder in [&workspace, &outside, &home.join(".ssh")] {
            std::fs::create_dir_all(folder).unwrap();
        }
        std::fs::write(home.join(".ssh/id_rsa"), "secret").unwrap();
        let policy = SandboxPolicy { kernel_files: Some(dir.path().join("caches")), ..SandboxPolicy::default() };
        let confinement = Confinement::new(&policy, &workspace, &home).unwrap();
        assert!(confinement.is_enforced());
        let (inside, escaped, secret) = confinement
            .run(|| {
                (
                    std::fs::write(workspace.join("ok"), "x").is_ok(),
                    std::fs::write(outside.join("marker"), "x").is_ok(),
                    std::fs::read(home.join(".ssh/id_rsa")).is_ok(),
                )
            })
            .unwrap();
        assert!(inside && !escaped && !secret, "inside {inside}, escaped {escaped}, secret {secret}");
        // This thread (and so the rest of the host) is as it was.
        std::fs::write(outside.join("host"), "x").unwrap();
        assert_eq!(std::fs::read_to_string(home.join(".ssh/id_rsa")).unwrap(), "secret");
    }
}
