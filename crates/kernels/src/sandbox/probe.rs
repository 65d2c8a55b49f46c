//! What this OS can enforce, found by trying (a short-lived forked child
//! for namespaces, the real cgroup folders for limits), for `cellbox doctor`
//! and `cellbox setup --check`.

use serde::Serialize;

#[cfg(target_os = "linux")]
use super::fs::{MIN_ABI, kernel_abi};
use super::limits::{Controller, LimitMethod, find_parent};

/// Which parts of a [`super::SandboxPolicy`] this host can enforce, and how.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SandboxSupport {
    /// `linux`, `macos`, …
    pub os: String,
    /// The kernel's Landlock ABI (0: none).
    pub landlock_abi: i32,
    /// `workspace-write` and `read-only` work (Landlock ABI 3+).
    pub filesystem: bool,
    /// `--network off|localhost` work (a network namespace can be made).
    pub network: bool,
    /// Seccomp filters can be installed (they keep the namespace shut).
    pub seccomp: bool,
    /// Kernels would run as root.
    pub root: bool,
    /// How `--memory-limit` is enforced.
    pub memory_limit: LimitMethod,
    /// How `--max-processes` is enforced.
    pub process_limit: LimitMethod,
    /// What the above means, one line each.
    pub notes: Vec<String>,
}

impl SandboxSupport {
    /// Lines for a terminal.
    pub fn to_text(&self) -> String {
        let yes = |b: bool| if b { "yes" } else { "no" };
        let method = |m: &LimitMethod| match m {
            LimitMethod::CgroupV2 => "cgroup v2",
            LimitMethod::CgroupV1 => "cgroup v1",
            LimitMethod::Rlimit => "rlimit",
            LimitMethod::Unavailable => "not available",
        };
        let mut out = format!(
            "sandbox: filesystem (Landlock ABI {}): {}; network namespace: {}; seccomp: {}; memory limit: {}; \
             process limit: {}",
            self.landlock_abi,
            yes(self.filesystem),
            yes(self.network),
            yes(self.seccomp),
            method(&self.memory_limit),
            method(&self.process_limit)
        );
        for note in &self.notes {
            out.push_str("\n  ");
            out.push_str(note);
        }
        out
    }
}

/// Probe this host.
pub fn support() -> SandboxSupport {
    let linux = cfg!(target_os = "linux");
    // SAFETY: geteuid cannot fail.
    #[cfg(unix)]
    let root = unsafe { libc::geteuid() } == 0;
    // Windows has no root; an administrator is not kept out of anything we enforce, because nothing is.
    #[cfg(not(unix))]
    let root = false;
    let abi = landlock_abi();
    let network = can_make_network_namespace(root);
    let seccomp = linux
        && std::fs::read_to_string("/proc/self/status").is_ok_and(|s| s.lines().any(|l| l.starts_with("Seccomp:")));
    let cgroup = |c: Controller| match find_parent(c) {
        Some(p) if p.v2 => LimitMethod::CgroupV2,
        Some(_) => LimitMethod::CgroupV1,
        None => LimitMethod::Unavailable,
    };
    let memory_limit = match cgroup(Controller::Memory) {
        LimitMethod::Unavailable if linux => LimitMethod::Rlimit,
        m => m,
    };
    let process_limit = match cgroup(Controller::Pids) {
        LimitMethod::Unavailable if linux && !root && can_make_user_namespace() => LimitMethod::Rlimit,
        m => m,
    };
    let mut notes = Vec::new();
    // macOS applies the filesystem modes and --network off with a Seatbelt profile.
    let seatbelt =
        cfg!(target_os = "macos") && super::filesystem_unenforceable(&super::SandboxPolicy::default()).is_none();
    if cfg!(target_os = "macos") {
        notes.push(if seatbelt {
            "the filesystem modes, --network off and --network allow: use a Seatbelt profile (sandbox-exec; \
             allow: lets kernels reach only their proxies on the host's loopback); --network localhost, --secret, \
             --memory-limit and --max-processes are Linux-only"
                .into()
        } else {
            "/usr/bin/sandbox-exec is missing: the filesystem modes are not enforced and --network off cannot start"
                .into()
        });
    } else if !linux {
        notes.push("the sandbox is implemented for Linux and macOS only; use --sandbox off on this OS".into());
    }
    if linux && abi < MIN_ABI {
        notes.push(format!(
            "filesystem modes need Landlock ABI {MIN_ABI}+ (Linux 6.2+ with landlock in the lsm= list); this kernel has {abi}"
        ));
    }
    if memory_limit == LimitMethod::Rlimit {
        notes.push(
            "memory limit by RLIMIT_AS (per process, address space): a cell past it gets MemoryError rather than \
             the whole tree being held to the limit"
                .into(),
        );
    }
    if process_limit == LimitMethod::Unavailable && linux {
        notes.push(
            "--max-processes cannot be enforced here: no writable pids cgroup (and RLIMIT_NPROC does not bind root)"
                .into(),
        );
    }
    if root {
        notes.push(
            "kernels run as root: Landlock, the namespaces and seccomp still hold, but root keeps its other powers \
             (run cellbox as an ordinary user for a stronger boundary)"
                .into(),
        );
    }
    SandboxSupport {
        os: std::env::consts::OS.to_string(),
        landlock_abi: abi,
        filesystem: abi >= MIN_ABI || seatbelt,
        network: network || seatbelt,
        seccomp,
        root,
        memory_limit,
        process_limit,
        notes,
    }
}

/// Landlock ABIs below this cannot express the filesystem modes.
#[cfg(not(target_os = "linux"))]
const MIN_ABI: i32 = 3;

/// The Landlock ABI of the running kernel (0: none).
fn landlock_abi() -> i32 {
    #[cfg(target_os = "linux")]
    return kernel_abi();
    #[cfg(not(target_os = "linux"))]
    return 0;
}

/// Whether kernels can get a network namespace of their own (with a user
/// namespace when not root).
fn can_make_network_namespace(root: bool) -> bool {
    #[cfg(target_os = "linux")]
    return can_unshare(if root { libc::CLONE_NEWNET } else { libc::CLONE_NEWUSER | libc::CLONE_NEWNET });
    #[cfg(not(target_os = "linux"))]
    return {
        let _ = root;
        false
    };
}

/// Whether an unprivileged user namespace can be made here.
fn can_make_user_namespace() -> bool {
    #[cfg(target_os = "linux")]
    return can_unshare(libc::CLONE_NEWUSER);
    #[cfg(not(target_os = "linux"))]
    return false;
}

/// Whether kernels can get a `/dev/shm` of their own: a mount namespace
/// (in a user namespace when not root) with a fresh tmpfs on `/dev/shm`,
/// tried once per process in a forked child.
#[cfg(target_os = "linux")]
pub(crate) fn can_mount_private_shm() -> bool {
    static CAN: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *CAN.get_or_init(|| {
        let root = unsafe { libc::geteuid() } == 0;
        let flags = if root { libc::CLONE_NEWNS } else { libc::CLONE_NEWNS | libc::CLONE_NEWUSER };
        let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
        let maps = [format!("{uid} {uid} 1\n").into_bytes(), format!("{gid} {gid} 1\n").into_bytes()];
        // SAFETY: the child makes only system calls on buffers made before the fork, then _exits.
        unsafe {
            let pid = libc::fork();
            if pid == 0 {
                let ok = libc::unshare(flags) == 0
                    && (root
                        || (super::child::write_file(c"/proc/self/setgroups", b"deny").is_ok()
                            && super::child::write_file(c"/proc/self/uid_map", &maps[0]).is_ok()
                            && super::child::write_file(c"/proc/self/gid_map", &maps[1]).is_ok()))
                    && super::child::mount_private_shm().is_ok();
                libc::_exit(if ok { 0 } else { 1 });
            }
            exited_ok(pid)
        }
    })
}

/// Whether `unshare(flags)` works here: tried in a forked child that exits
/// at once. A success is remembered for the process (forking the whole host
/// costs about a millisecond, which every kernel's start would otherwise
/// pay; a host that later stops allowing it makes the kernel's own `unshare`
/// fail, and the kernel does not start). A failure is not: it may be passing
/// (a namespace or process limit a cell filled for a moment).
#[cfg(target_os = "linux")]
pub(crate) fn can_unshare(flags: libc::c_int) -> bool {
    static KNOWN: std::sync::Mutex<Vec<libc::c_int>> = std::sync::Mutex::new(Vec::new());
    if KNOWN.lock().unwrap().contains(&flags) {
        return true;
    }
    // SAFETY: the child only calls unshare and _exit (async-signal-safe).
    let can = unsafe {
        let pid = libc::fork();
        if pid == 0 {
            libc::_exit(if libc::unshare(flags) == 0 { 0 } else { 1 });
        }
        exited_ok(pid)
    };
    if can {
        KNOWN.lock().unwrap().push(flags);
    }
    can
}

/// Whether the forked child `pid` (negative: the fork failed) exited with 0; it is reaped.
#[cfg(target_os = "linux")]
fn exited_ok(pid: libc::pid_t) -> bool {
    if pid < 0 {
        return false;
    }
    let mut status = 0;
    // SAFETY: waits for our own child on a local status word.
    while unsafe { libc::waitpid(pid, &mut status, 0) } < 0 {
        if std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return false;
        }
    }
    libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0
}
