//! Memory and process limits: a cgroup per kernel where the host lets us
//! create one (v2, or the v1 `memory` / `pids` hierarchies), else an rlimit.
//!
//! A cgroup covers the whole process tree and its memory limit ends in the
//! kernel's OOM killer inside the group only, so the host stays healthy. The
//! rlimit fallbacks are weaker, and say so: `RLIMIT_AS` counts address space
//! per process, and `RLIMIT_NPROC` counts every process of the user (so it is
//! only used inside a fresh user namespace, where the count starts at zero)
//! and does not bind root at all.

use std::fs;
#[cfg(unix)]
use std::os::fd::OwnedFd;
#[cfg(windows)]
use std::os::windows::io::OwnedHandle as OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::Serialize;

use super::Unenforceable;

/// How one limit is enforced on this host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum LimitMethod {
    /// A cgroup v2 controller (`memory.max`, `pids.max`).
    CgroupV2,
    /// A cgroup v1 hierarchy (`memory.limit_in_bytes`, `pids.max`).
    CgroupV1,
    /// An rlimit (`RLIMIT_AS` or `RLIMIT_NPROC` in a user namespace).
    Rlimit,
    /// Not enforceable here.
    Unavailable,
}

/// Which controller a limit needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Controller {
    /// Memory of the whole tree (`memory.max` / `memory.limit_in_bytes`).
    Memory,
    /// Processes and threads of the whole tree (`pids.max`).
    Pids,
}

impl Controller {
    fn name(self) -> &'static str {
        match self {
            Controller::Memory => "memory",
            Controller::Pids => "pids",
        }
    }
}

/// A place where kernels' cgroups can be made: the parent folder and its version.
#[derive(Debug, Clone)]
pub struct CgroupParent {
    /// The folder new groups are made in (cellbox's own group).
    pub dir: PathBuf,
    /// A cgroup v2 group (else a v1 hierarchy).
    pub v2: bool,
}

/// The cgroup mount points from `/proc/self/mountinfo`-like `/proc/mounts`.
fn mounts() -> Vec<(PathBuf, String, String)> {
    let text = fs::read_to_string("/proc/self/mounts").unwrap_or_default();
    text.lines()
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            (f.len() >= 4 && (f[2] == "cgroup" || f[2] == "cgroup2"))
                .then(|| (PathBuf::from(f[1].replace("\\040", " ")), f[2].to_string(), f[3].to_string()))
        })
        .collect()
}

/// Every mount point of this process's mount namespace, in the order
/// `/proc/self/mounts` lists them (octal escapes undone).
#[cfg(target_os = "linux")]
pub(super) fn mount_points() -> Vec<PathBuf> {
    mount_points_in(&fs::read_to_string("/proc/self/mounts").unwrap_or_default())
}

/// The mount points a `/proc/<pid>/mounts` text names; the kernel writes
/// space, tab, newline and backslash in them as three-digit octal escapes.
#[cfg(target_os = "linux")]
fn mount_points_in(text: &str) -> Vec<PathBuf> {
    use std::os::unix::ffi::OsStringExt;
    text.lines()
        .filter_map(|line| line.split_whitespace().nth(1))
        .map(|escaped| {
            let bytes = escaped.as_bytes();
            let mut out = Vec::with_capacity(bytes.len());
            let mut i = 0;
            while i < bytes.len() {
                let digits = bytes.get(i + 1..i + 4).and_then(|d| std::str::from_utf8(d).ok());
                match (bytes[i], digits.and_then(|d| u8::from_str_radix(d, 8).ok())) {
                    (b'\\', Some(byte)) => {
                        out.push(byte);
                        i += 4;
                    }
                    (byte, _) => {
                        out.push(byte);
                        i += 1;
                    }
                }
            }
            PathBuf::from(std::ffi::OsString::from_vec(out))
        })
        .collect()
}

/// Our own cgroup path for a v1 controller (`Some(name)`) or v2 (`None`).
fn own_path(controller: Option<&str>) -> Option<String> {
    let text = fs::read_to_string("/proc/self/cgroup").ok()?;
    for line in text.lines() {
        let mut parts = line.splitn(3, ':');
        let (_, names, path) = (parts.next()?, parts.next()?, parts.next()?);
        match controller {
            None if names.is_empty() => return Some(path.to_string()),
            Some(c) if names.split(',').any(|n| n == c) => return Some(path.to_string()),
            _ => {}
        }
    }
    None
}

/// Where a cgroup with `controller` can be created by this process, if anywhere:
/// a v1 hierarchy for the controller, or a v2 group whose children get it.
pub fn find_parent(controller: Controller) -> Option<CgroupParent> {
    let name = controller.name();
    for (mount, fstype, options) in mounts() {
        let candidate = if fstype == "cgroup" && options.split(',').any(|o| o == name) {
            own_path(Some(name)).map(|p| (mount.join(p.trim_start_matches('/')), false))
        } else if fstype == "cgroup2" {
            own_path(None).map(|p| (mount.join(p.trim_start_matches('/')), true))
        } else {
            None
        };
        let Some((dir, v2)) = candidate else { continue };
        if v2 {
            let enabled = fs::read_to_string(dir.join("cgroup.subtree_control")).unwrap_or_default();
            if !enabled.split_whitespace().any(|c| c == name) {
                continue;
            }
        }
        if writable_dir(&dir) {
            return Some(CgroupParent { dir, v2 });
        }
    }
    None
}

#[cfg(not(unix))]
fn writable_dir(_dir: &Path) -> bool {
    false
}

#[cfg(unix)]
fn writable_dir(dir: &Path) -> bool {
    let Ok(c) = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()) else { return false };
    // SAFETY: a NUL-terminated path.
    unsafe { libc::access(c.as_ptr(), libc::W_OK | libc::X_OK) == 0 }
}

static NEXT: AtomicU64 = AtomicU64::new(1);

/// One kernel's cgroup in one hierarchy. Removed (once empty) when dropped.
#[derive(Debug)]
pub struct Cgroup {
    /// The group's folder.
    pub dir: PathBuf,
    /// Whether it is a cgroup v2 group (its files are named differently).
    pub v2: bool,
    /// What it limits.
    pub controller: Controller,
}

impl Cgroup {
    /// Create a fresh group under `parent` and set its limit.
    pub fn create(parent: &CgroupParent, controller: Controller, limit: u64) -> Result<Cgroup, Unenforceable> {
        sweep_stale(&parent.dir);
        let name = format!("cellbox-{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed));
        let dir = parent.dir.join(name);
        if let Err(e) = fs::create_dir(&dir) {
            return Err(Unenforceable::CreateCgroup { dir, source: Arc::new(e) });
        }
        let group = Cgroup { dir, v2: parent.v2, controller };
        group.set_limit(controller, limit)?;
        Ok(group)
    }

    /// Whether `controller`'s limit goes into this group rather than a new
    /// one under `parent`: a process is in one cgroup v2 group only, so on v2
    /// every limit of a kernel shares its group (a second group would take
    /// the kernel out of the first, and its limit with it).
    pub fn shares(&self, parent: &CgroupParent) -> bool {
        self.v2 && parent.v2 && self.dir.parent() == Some(parent.dir.as_path())
    }

    /// Set `controller`'s limit in this group.
    pub fn set_limit(&self, controller: Controller, limit: u64) -> Result<(), Unenforceable> {
        let group = self;
        let set = |file: &'static str, value: String| {
            fs::write(group.dir.join(file), value).map_err(|e| Unenforceable::SetCgroupLimit {
                file,
                dir: group.dir.clone(),
                source: Arc::new(e),
            })
        };
        match (controller, self.v2) {
            (Controller::Memory, true) => {
                set("memory.max", limit.to_string())?;
                let _ = set("memory.swap.max", "0".into());
            }
            (Controller::Memory, false) => {
                set("memory.limit_in_bytes", limit.to_string())?;
                // Without this the group would swap instead of hitting its limit.
                if group.dir.join("memory.memsw.limit_in_bytes").exists() {
                    let _ = set("memory.memsw.limit_in_bytes", limit.to_string());
                }
            }
            (Controller::Pids, _) => set("pids.max", limit.to_string())?,
        }
        Ok(())
    }

    /// The file a freshly forked, single-threaded child writes `0` into to
    /// join the group: `tasks` on cgroup v1, `cgroup.procs` on v2.
    ///
    /// Linux makes every move of a whole thread group (a write to
    /// `cgroup.procs`) wait until all CPUs agree on it, 7–20 ms on an idle
    /// host; a thread that moves only itself (`0` into v1's `tasks`) skips
    /// that wait, and a child between fork and `exec` is its only thread.
    /// Cgroup v2 refuses single threads across groups, so it pays the wait.
    pub fn join_fd(&self) -> Result<OwnedFd, Unenforceable> {
        self.open(if self.v2 { "cgroup.procs" } else { "tasks" })
    }

    /// The `cgroup.procs` file, for the host to move a whole process in.
    pub fn procs_fd(&self) -> Result<OwnedFd, Unenforceable> {
        self.open("cgroup.procs")
    }

    fn open(&self, file: &'static str) -> Result<OwnedFd, Unenforceable> {
        let opened = fs::OpenOptions::new().write(true).open(self.dir.join(file));
        let opened =
            opened.map_err(|e| Unenforceable::OpenCgroupFile { file, dir: self.dir.clone(), source: Arc::new(e) })?;
        Ok(opened.into())
    }

    /// Whether the group's OOM killer has struck (the limit was hit).
    pub fn oom_killed(&self) -> bool {
        let read = |f: &str| fs::read_to_string(self.dir.join(f)).unwrap_or_default();
        let counter = |text: &str, key: &str| {
            text.lines().find_map(|l| l.strip_prefix(key).and_then(|v| v.trim().parse::<u64>().ok())).unwrap_or(0)
        };
        if self.v2 {
            let events = read("memory.events");
            counter(&events, "oom_kill ") > 0 || counter(&events, "oom ") > 0
        } else {
            counter(&read("memory.oom_control"), "oom_kill ") > 0
                || read("memory.failcnt").trim().parse::<u64>().unwrap_or(0) > 0
        }
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        if fs::remove_dir(&self.dir).is_ok() {
            return;
        }
        // What is still in it outlived its kernel (a daemon a cell started with setsid, say):
        // it goes with the group.
        self.kill_members();
        // Still busy: its last processes are being reaped. Retry a little later.
        let dir = self.dir.clone();
        std::thread::spawn(move || {
            for _ in 0..50 {
                std::thread::sleep(std::time::Duration::from_millis(100));
                if fs::remove_dir(&dir).is_ok() || !dir.exists() {
                    return;
                }
            }
        });
    }
}

impl Cgroup {
    /// Kill every process still in the group: `cgroup.kill` where the kernel has it
    /// (cgroup v2, Linux 5.14+), else each pid of `cgroup.procs`.
    fn kill_members(&self) {
        if fs::write(self.dir.join("cgroup.kill"), "1").is_ok() {
            return;
        }
        let Ok(procs) = fs::read_to_string(self.dir.join("cgroup.procs")) else { return };
        #[cfg(unix)]
        for pid in procs.lines().filter_map(|line| line.trim().parse::<i32>().ok()) {
            // SAFETY: a plain kill(2) of a process of this group.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
            }
        }
        #[cfg(not(unix))]
        let _ = procs;
    }
}

/// Remove empty groups left behind by hosts that are gone.
fn sweep_stale(parent: &Path) {
    let Ok(entries) = fs::read_dir(parent) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = name.strip_prefix("cellbox-").and_then(|r| r.split('-').next()?.parse::<i32>().ok()) else {
            continue;
        };
        #[cfg(unix)]
        // SAFETY: signal 0 only checks that the pid exists.
        let alive =
            unsafe { libc::kill(pid, 0) } == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
        // No cgroups off Unix, so no group of a gone host either.
        #[cfg(not(unix))]
        let alive = pid != 0;
        if !alive {
            let _ = fs::remove_dir(entry.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(target_os = "linux")]
    #[test]
    fn mount_points_undo_the_kernels_escapes() {
        let text = "proc /proc proc rw 0 0\n\
                    /dev/sda1 /home/a\\040b\\011c ext4 rw 0 0\n\
                    tmpfs /x\\134y tmpfs rw 0 0\n\
                    tmpfs /odd\\9 tmpfs rw 0 0\n";
        let points = mount_points_in(text);
        assert_eq!(points, ["/proc", "/home/a b\tc", "/x\\y", "/odd\\9"].map(PathBuf::from).to_vec());
    }

    #[test]
    fn a_group_that_cannot_be_made_says_where() {
        let parent = CgroupParent { dir: PathBuf::from("/nonexistent-cellbox-cgroup"), v2: true };
        let error = Cgroup::create(&parent, Controller::Memory, 1 << 30).unwrap_err();
        assert!(matches!(&error, Unenforceable::CreateCgroup { dir, .. } if dir.starts_with(&parent.dir)), "{error:?}");
        let Unenforceable::CreateCgroup { dir, source } = &error else { unreachable!() };
        assert_eq!(error.to_string(), format!("could not create the cgroup {}: {source}", dir.display()));
        let wrapped = crate::sandbox::SandboxError::from(error.clone()).to_string();
        assert!(wrapped.starts_with(&format!("the sandbox cannot be enforced: {error}; ")), "{wrapped}");
    }

    /// On cgroup v2 a kernel's memory and process limits share one group
    /// (here in a plain folder standing in for a delegated v2 parent); on v1
    /// each hierarchy has its own.
    #[test]
    fn v2_limits_share_one_group_and_v1_limits_do_not() {
        let parent = tempfile::tempdir().unwrap();
        let v2 = CgroupParent { dir: parent.path().to_path_buf(), v2: true };
        let memory = Cgroup::create(&v2, Controller::Memory, 1 << 30).unwrap();
        assert!(memory.shares(&v2));
        memory.set_limit(Controller::Pids, 64).unwrap();
        assert_eq!(fs::read_to_string(memory.dir.join("memory.max")).unwrap(), (1u64 << 30).to_string());
        assert_eq!(fs::read_to_string(memory.dir.join("pids.max")).unwrap(), "64");
        let elsewhere = tempfile::tempdir().unwrap();
        assert!(!memory.shares(&CgroupParent { dir: elsewhere.path().to_path_buf(), v2: true }));
        assert!(!memory.shares(&CgroupParent { dir: parent.path().to_path_buf(), v2: false }));
        // Plain files are not a cgroup's: the group is removed by hand here.
        for file in ["memory.max", "memory.swap.max", "pids.max"] {
            let _ = fs::remove_file(memory.dir.join(file));
        }
    }
}
