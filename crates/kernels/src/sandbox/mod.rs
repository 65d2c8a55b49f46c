//! An OS sandbox around every kernel: filesystem (Landlock), network (a
//! network namespace, with seccomp keeping it shut), memory and processes
//! (cgroups, else rlimits).
//!
//! Everything that can fail or allocate is done in the host by [`prepare`]
//! before the kernel is forked: the Landlock ruleset is built, the cgroups
//! are created and the files to join them opened, the seccomp program is
//! compiled and the id-map lines are formatted. The forked child then only
//! makes async-signal-safe system calls ([`Prepared::apply_in_child`]) before
//! `exec`, and everything the runner starts (`!cmd`, `%pip`, subprocesses,
//! multiprocessing) inherits the result.
//!
//! The default policy (`workspace-write`, network on) never keeps a kernel
//! from starting: where the OS cannot enforce the filesystem rules (no
//! Landlock, another OS), kernels start without them after one warning that
//! names what is missing ([`filesystem_unenforceable`]). What a user asks for
//! beyond that (no network, limits) fails [`prepare`] with what is missing.
//! Neither is ever a silent downgrade.

// Only the policy "off" is prepared on other systems: the rest is unused there.
#![cfg_attr(not(target_os = "linux"), allow(dead_code, unused_imports))]

mod access;
#[cfg(target_os = "linux")]
mod child;
mod command;
mod confine;
#[cfg(target_os = "linux")]
mod fs;
mod guard;
pub mod host_files;
mod limits;
#[cfg(target_os = "macos")]
mod macos;
pub mod network;
mod policy;
mod probe;
pub mod seatbelt;
#[cfg(target_os = "linux")]
mod seccomp;
mod temp;
mod view;

use std::collections::BTreeMap;
#[cfg(target_os = "linux")]
use std::os::fd::AsRawFd;
#[cfg(unix)]
use std::os::fd::OwnedFd;
/// The Landlock ruleset and cgroup files are Linux's; on Windows these lists
/// stay empty and only need a type.
#[cfg(windows)]
use std::os::windows::io::OwnedHandle as OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use access::{Denial, FileAccess, cache_env, file_access, kernel_home, resolve};
pub use command::command_like_a_kernel;
#[cfg(target_os = "linux")]
pub use command::command_like_a_tcp_kernel;
pub use confine::{ConfineError, Confinement};
#[cfg(target_os = "linux")]
pub use fs::{Grant, plan as plan_rules};
pub use guard::SandboxGuard;
pub use limits::LimitMethod;
#[cfg(target_os = "macos")]
pub use macos::prepare;
pub use network::{HostRules, NetworkLog, Refusal};
pub use policy::{
    NetworkMode, NetworkSetting, PolicyError, PrivateRoot, SandboxMode, SandboxPolicy, default_kernel_files,
    default_secret_paths, format_size, parse_size,
};
pub use probe::{SandboxSupport, support};
pub use temp::KERNEL_TEMP_PREFIX;
pub use view::{HomeView, home_view, seen_cwd};

use crate::settings;
use limits::{Cgroup, Controller};

/// How to start without the sandbox, for error messages.
const HOW_TO_DISABLE: &str = "run without it with `--sandbox off --network on` (or CELLBOX_SANDBOX=off), without --memory-limit / --max-processes";

/// Why a policy cannot be enforced here. The message names what is missing.
#[derive(Debug, Clone, thiserror::Error)]
#[error("the sandbox cannot be enforced: {reason}; {HOW_TO_DISABLE}")]
pub struct SandboxError {
    #[from]
    pub reason: Unenforceable,
}

/// What is missing for a policy, one variant per cause, so a caller can tell a host
/// without Landlock from a cgroup it may not write; `Arc` keeps the OS errors cloneable.
#[derive(Debug, Clone, thiserror::Error)]
pub enum Unenforceable {
    #[error("it is only implemented on Linux; this OS ({os}) is not supported")]
    UnsupportedOs { os: &'static str },
    #[error("could not create the cgroup {dir}: {source}")]
    CreateCgroup { dir: PathBuf, source: Arc<std::io::Error> },
    #[error("could not set {file} in {dir}: {source}")]
    SetCgroupLimit { file: &'static str, dir: PathBuf, source: Arc<std::io::Error> },
    #[error("could not open {}/{file}: {source}", .dir.display())]
    OpenCgroupFile { file: &'static str, dir: PathBuf, source: Arc<std::io::Error> },
    #[error(
        "--max-processes for a kernel run as root needs a writable pids cgroup (v1 `pids` hierarchy or a delegated \
         cgroup v2 group with the pids controller), and none is writable here (RLIMIT_NPROC does not bind root)"
    )]
    NoPidsCgroupForRoot,
    #[error("this host does not allow creating a network namespace (needed for --network off/localhost)")]
    NoNetworkNamespace,
    #[error(
        "this host does not allow unprivileged user namespaces, which --network off/localhost (and \
         --max-processes without a pids cgroup) need for a non-root user (check \
         /proc/sys/kernel/unprivileged_userns_clone or AppArmor's restrict_unprivileged_userns)"
    )]
    NoUserNamespace,
    #[error("could not create the kernel's private temp dir: {source}")]
    TempDir { source: Arc<std::io::Error> },
    #[error("seccomp filters are not built for the {arch} architecture")]
    SeccompArch { arch: &'static str },
    #[cfg(target_os = "linux")]
    #[error("could not build the seccomp filter: {source}")]
    SeccompBuild { source: Arc<seccompiler::BackendError> },
    #[cfg(target_os = "linux")]
    #[error("could not compile the seccomp filter: {source}")]
    SeccompCompile { source: Arc<seccompiler::BackendError> },
    #[error("Landlock is not available in this Linux kernel (it needs Linux 5.19+ with `landlock` in the `lsm=` list)")]
    NoLandlock,
    #[error("this kernel's Landlock ABI is {version}; the sandbox needs ABI {needed}+ (Linux 6.2+)")]
    OldLandlock { version: i32, needed: i32 },
    #[cfg(target_os = "linux")]
    #[error("could not build the Landlock ruleset: {source}")]
    Ruleset { source: Arc<landlock::RulesetError> },
    #[cfg(target_os = "linux")]
    #[error("could not add a Landlock rule for {path}: {source}")]
    LandlockRule { path: PathBuf, source: Arc<landlock::RulesetError> },
    #[error("Landlock did not create a ruleset")]
    NoRuleset,
    #[error("{path} is missing: the macOS sandbox starts kernels through it")]
    NoSandboxExec { path: &'static str },
    #[error("--network localhost gives a kernel a loopback of its own, which only Linux can; use --network off or on")]
    NoPrivateLoopback,
    #[error(
        "--network allow:/deny: sends a kernel's traffic through proxies it alone can reach, which only Linux and \
         macOS do; use --network off or on"
    )]
    NoNetworkFilter,
    #[error(
        "--secret needs proxies that only the kernel can reach, which only Linux gives it (in a network namespace \
         of its own); on macOS they listen on the host's loopback, where another program could have the secret put \
         into its requests. Pass the credential as a variable (--env) instead, or run on Linux"
    )]
    SecretsNeedPrivateProxy,
    #[error("the kernel's folder cannot be shown at {}: {message}", .seen.display())]
    HomeView { seen: PathBuf, message: String },
    #[error("could not read the hosts file {} (CELLBOX_NETWORK_HOSTS): {source}", .path.display())]
    HostsFile { path: PathBuf, source: Arc<std::io::Error> },
    #[error("could not set up the kernel's network proxy: {source}")]
    Proxy { source: Arc<std::io::Error> },
    #[error("could not give the host sockets in the kernel's network namespace: {source}")]
    KernelSockets { source: Arc<std::io::Error> },
    #[error("the host's file work for kernels could not be confined: {message}")]
    Confine { message: String },
}

fn fail(reason: Unenforceable) -> SandboxError {
    SandboxError { reason }
}

/// A policy made ready for one spawn: what the child applies, and what the
/// host keeps ([`Prepared::guard`]).
#[derive(Debug, Default)]
pub struct Prepared {
    landlock: Option<OwnedFd>,
    /// The files the child writes `0` into to join its cgroups ([`limits::Cgroup::join_fd`]).
    cgroup_joins: Vec<OwnedFd>,
    unshare_flags: libc::c_int,
    /// `setgroups`, `uid_map` and `gid_map` contents for a new user namespace.
    id_maps: Option<[Vec<u8>; 2]>,
    loopback_up: bool,
    /// The child's end of the pair its proxies' listeners are handed over on.
    #[cfg(target_os = "linux")]
    proxy_channel: Option<OwnedFd>,
    /// The child's end of the pair it hands this many unconnected TCP sockets
    /// of its network namespace over on ([`Prepared::hand_over_sockets`]).
    #[cfg(target_os = "linux")]
    socket_channel: Option<(OwnedFd, usize)>,
    /// The kernel has a mount namespace of its own (for its `/dev/shm`, its
    /// home view), whose mounts are made private before any other step.
    mount_ns: bool,
    /// Mount a tmpfs of its own on `/dev/shm` (in its own mount namespace),
    /// and give it these Landlock rights (when the kernel has a ruleset).
    private_shm: Option<u64>,
    /// The workspace shown at another path ([`view`]).
    #[cfg(target_os = "linux")]
    view: Option<view::Mounts>,
    /// In that mount namespace, the writable places are bound onto
    /// themselves (their mounts below keep their own flags), and every other
    /// mount (`read_only_mounts`, from the host's mount table) is made
    /// read-only on its own: Landlock has no right for a file's mode, owner,
    /// times or extended attributes, a read-only mount refuses changing them.
    #[cfg(target_os = "linux")]
    writable_mounts: Vec<std::ffi::CString>,
    #[cfg(target_os = "linux")]
    read_only_mounts: Vec<std::ffi::CString>,
    rlimits: Vec<(libc::c_int, u64)>,
    #[cfg(target_os = "linux")]
    seccomp: Option<seccompiler::BpfProgram>,
    /// Variables the kernel's environment gets (`TMPDIR`, the mode).
    pub env: Vec<(String, String)>,
    /// A program and its arguments that start the kernel's own command line
    /// under the sandbox (macOS's `sandbox-exec -p PROFILE`); empty when the
    /// rules are applied in the forked child instead (Linux).
    pub wrapper: Vec<std::ffi::OsString>,
    pub guard: SandboxGuard,
}

/// Get everything ready, in the host, to start one kernel under `policy` in
/// `cwd` with environment `env`. On other systems than Linux and macOS only
/// the policy "off" can be prepared; a filesystem mode is warned about and
/// not enforced.
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
pub fn prepare(policy: &SandboxPolicy, _cwd: &Path, _env: &BTreeMap<String, String>) -> Result<Prepared, SandboxError> {
    let files_only = SandboxPolicy { mode: SandboxMode::Off, ..policy.clone() };
    if files_only.is_off() {
        let mut prepared = Prepared::default();
        let mode = enforceable_mode(policy.mode);
        prepared.env.push((settings::SANDBOX.name.into(), mode.to_string()));
        Ok(prepared)
    } else {
        Err(fail(Unenforceable::UnsupportedOs { os: std::env::consts::OS }))
    }
}

/// The filesystem part every backend shares: the kernel's private temp dir
/// (kept by `prepared`'s guard, named in its `TMPDIR`, `TMP` and `TEMP`), the
/// variables that point its tools at its own caches, and the paths `mode`
/// gives it.
fn prepare_files(
    prepared: &mut Prepared,
    policy: &SandboxPolicy,
    mode: SandboxMode,
    cwd: &Path,
    env: &BTreeMap<String, String>,
) -> Result<FileAccess, SandboxError> {
    let home = kernel_home(env);
    let temp_error = |e| fail(Unenforceable::TempDir { source: Arc::new(e) });
    let temp_root = policy.temp_root();
    crate::paths::private_dir_builder().create(&temp_root).map_err(temp_error)?;
    let tmp = temp::KernelTemp::create(&temp_root).map_err(temp_error)?;
    let tmp_path = tmp.path().to_path_buf();
    for name in ["TMPDIR", "TMP", "TEMP"] {
        prepared.env.push((name.into(), tmp_path.display().to_string()));
    }
    match mode {
        SandboxMode::WorkspaceWrite => prepared.env.extend(access::cache_env(&policy.caches())),
        SandboxMode::ReadOnly => {
            prepared.env.push(("MPLCONFIGDIR".into(), tmp_path.join("matplotlib").display().to_string()));
        }
        SandboxMode::Off => {}
    }
    prepared.guard.tmp = Some(Arc::new(tmp));
    Ok(access::file_access(policy, mode, cwd, &home, Some(&tmp_path)))
}

/// Why the filesystem part of `policy` (`workspace-write`, `read-only`) cannot
/// be enforced on this host, or `None` when it can (or is `off`). Kernels
/// then start without it, after a warning: see [`prepare`].
pub fn filesystem_unenforceable(policy: &SandboxPolicy) -> Option<Unenforceable> {
    if policy.mode == SandboxMode::Off {
        return None;
    }
    #[cfg(target_os = "linux")]
    return fs::missing_once();
    #[cfg(target_os = "macos")]
    return macos::check_sandbox_exec().err();
    #[cfg(not(any(target_os = "linux", target_os = "macos")))]
    return Some(Unenforceable::UnsupportedOs { os: std::env::consts::OS });
}

/// [`SandboxPolicy::describe_for_model`] for what this host really enforces:
/// where the filesystem rules cannot be enforced, the model is told that code
/// has the user's full file access, not what was asked for.
pub fn describe_enforced(policy: &SandboxPolicy, workspace: &Path) -> String {
    match filesystem_unenforceable(policy) {
        None => policy.describe_for_model(workspace),
        Some(_) => format!(
            "{} (The {} sandbox cannot be enforced on this machine.)",
            SandboxPolicy { mode: SandboxMode::Off, ..policy.clone() }.describe_for_model(workspace),
            policy.mode
        ),
    }
}

/// The filesystem mode kernels really get: `mode`, or `off` (with one warning
/// per process saying what is not enforced and why) where the OS cannot
/// enforce it. Refusing to start would leave a user nothing but `--sandbox
/// off`; starting quietly would let them believe they are protected.
fn enforceable_mode(mode: SandboxMode) -> SandboxMode {
    let policy = SandboxPolicy { mode, ..SandboxPolicy::default() };
    match filesystem_unenforceable(&policy) {
        None => mode,
        Some(reason) => {
            crate::notice::warn_once(&format!(
                "the {mode} sandbox is not enforced: {reason}. Kernels start without it and can read and write \
                 everything this user can; `cellbox doctor` shows what this OS enforces"
            ));
            SandboxMode::Off
        }
    }
}

/// Say once per process, when a kernel starts with the sandbox off, that it
/// has the user's full rights: an opt-out is allowed, but not unnoticed.
pub fn announce(policy: &SandboxPolicy) {
    if policy.mode == SandboxMode::Off {
        crate::notice::warn_once(&format!(
            "the sandbox is off ({}=off or --sandbox off): kernels run with this user's full rights",
            settings::SANDBOX.name
        ));
    }
}

/// Get everything ready, in the host, to start one kernel under `policy` in
/// `cwd` with environment `env` (its `HOME` and cache variables decide where
/// the caches are).
#[cfg(target_os = "linux")]
pub fn prepare(policy: &SandboxPolicy, cwd: &Path, env: &BTreeMap<String, String>) -> Result<Prepared, SandboxError> {
    let mut prepared = Prepared::default();
    if policy.is_off() {
        return Ok(prepared);
    }
    let root = unsafe { libc::geteuid() } == 0;

    // Resources first: the cgroups are joined before any namespace is made.
    if let Some(limit) = policy.memory_limit {
        prepared.guard.memory_limit = Some(limit);
        match limits::find_parent(Controller::Memory) {
            Some(parent) => {
                let group = Cgroup::create(&parent, Controller::Memory, limit)?;
                prepared.cgroup_joins.push(group.join_fd()?);
                prepared.guard.cgroups.push(Arc::new(group));
            }
            None => {
                prepared.rlimits.push((libc::RLIMIT_AS as libc::c_int, limit));
                // The kernel survives a MemoryError under an rlimit: the runner
                // names the limit in that error, as the cgroup's death note does.
                // The limit as people read it (`4 GiB`), so a `MemoryError` can name it.
                prepared.env.push((settings::MEMORY_RLIMIT.name.into(), format_size(limit)));
            }
        }
    }
    let mut nproc_in_userns = false;
    if let Some(limit) = policy.max_processes {
        match limits::find_parent(Controller::Pids) {
            Some(parent) if prepared.guard.cgroups.iter().any(|group| group.shares(&parent)) => {
                let shared = prepared.guard.cgroups.iter().find(|group| group.shares(&parent));
                shared.expect("found above").set_limit(Controller::Pids, limit)?;
            }
            Some(parent) => {
                let group = Cgroup::create(&parent, Controller::Pids, limit)?;
                prepared.cgroup_joins.push(group.join_fd()?);
                prepared.guard.cgroups.push(Arc::new(group));
            }
            None if !root => {
                nproc_in_userns = true;
                prepared.rlimits.push((libc::RLIMIT_NPROC as libc::c_int, limit));
            }
            None => {
                return Err(fail(Unenforceable::NoPidsCgroupForRoot));
            }
        }
    }

    // Network: a namespace of its own. Root makes one directly; anyone else
    // inside a user namespace that maps only their own ids.
    let wants_netns = policy.network != NetworkMode::On;
    if wants_netns {
        prepared.unshare_flags |= libc::CLONE_NEWNET;
        prepared.loopback_up = matches!(policy.network, NetworkMode::Localhost | NetworkMode::Filtered);
    }
    if policy.network == NetworkMode::Filtered {
        let setup = network::setup(policy)?;
        let (host_end, child_end) =
            network::handoff::pair().map_err(|e| fail(Unenforceable::Proxy { source: Arc::new(e) }))?;
        prepared.env.extend(network::proxy_env([network::HTTP_PORT, network::SOCKS_PORT]));
        prepared.env.extend(network::secrets::kernel_env(&setup));
        prepared.proxy_channel = Some(child_end);
        prepared.guard.proxy = Some(Arc::new(network::Proxy::start(host_end, setup)));
    }
    let mode = enforceable_mode(policy.mode);
    // POSIX shared memory of its own, where asked for and the host allows it.
    let private_shm = policy.private_shm && mode != SandboxMode::Off && Path::new(SHM).is_dir();
    let mount_shm = private_shm && probe::can_mount_private_shm();
    if private_shm && !mount_shm {
        crate::notice::warn_once(
            "/dev/shm is closed to kernels: this host cannot give each its own (a mount namespace and a tmpfs), so \
             POSIX shared memory and multiprocessing's locks are unavailable in cells",
        );
    }
    let home_view = view::home_view(policy, cwd);
    let mount_ns = mount_shm || home_view.is_some();
    if mount_ns {
        prepared.unshare_flags |= libc::CLONE_NEWNS;
        prepared.mount_ns = true;
    }
    if (wants_netns || nproc_in_userns || mount_ns) && !root {
        prepared.unshare_flags |= libc::CLONE_NEWUSER;
        let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
        prepared.id_maps = Some([format!("{uid} {uid} 1\n").into_bytes(), format!("{gid} {gid} 1\n").into_bytes()]);
    }
    if prepared.unshare_flags != 0 && !probe::can_unshare(prepared.unshare_flags) {
        return Err(fail(if root { Unenforceable::NoNetworkNamespace } else { Unenforceable::NoUserNamespace }));
    }
    if wants_netns {
        // A namespace is only a wall while the kernel cannot join another one.
        prepared.seccomp = Some(seccomp::program()?);
    }

    // Filesystem.
    if mode != SandboxMode::Off {
        let mut access = prepare_files(&mut prepared, policy, mode, cwd, env)?;
        if private_shm {
            // The host's /dev/shm is no kernel's: its own is granted in the child (or none at all).
            let shm = resolve(Path::new(SHM));
            access.writable.retain(|place| *place != shm);
            if !mount_shm {
                access.denied.push(shm);
            }
        }
        let mut grants = vec![(PathBuf::from("/"), Grant::Read)];
        grants.extend(access.writable.into_iter().map(|path| (path, Grant::Write)));
        if mount_ns {
            use std::os::unix::ffi::OsStrExt;
            let writable: Vec<&PathBuf> =
                grants.iter().filter(|(path, grant)| *grant == Grant::Write && path.exists()).map(|(p, _)| p).collect();
            let c_string = |path: &Path| std::ffi::CString::new(path.as_os_str().as_bytes()).ok();
            prepared.writable_mounts = writable.iter().filter_map(|path| c_string(path)).collect();
            let shm = resolve(Path::new(SHM));
            prepared.read_only_mounts = limits::mount_points()
                .into_iter()
                .filter(|mount| !mount.starts_with(&shm) && !writable.iter().any(|place| mount.starts_with(place)))
                .filter_map(|mount| c_string(&mount))
                .collect();
        }
        let rules = fs::plan(&grants, &access.denied);
        let scoping = if wants_netns { fs::Scoping::SignalsAndAbstractUnix } else { fs::Scoping::Signals };
        prepared.landlock = Some(fs::build_ruleset(&rules, scoping)?);
        if mount_shm {
            prepared.private_shm = Some(fs::all_rights());
        }
    } else if mount_shm {
        prepared.private_shm = Some(0);
    }
    if let Some(home_view) = home_view {
        use std::os::unix::ffi::OsStrExt;
        let writable: Vec<PathBuf> =
            prepared.writable_mounts.iter().map(|c| PathBuf::from(std::ffi::OsStr::from_bytes(c.as_bytes()))).collect();
        prepared.view = Some(
            view::plan(&home_view, &writable)
                .map_err(|message| fail(Unenforceable::HomeView { seen: home_view.seen.clone(), message }))?,
        );
        prepared.env.push(("HOME".into(), home_view.seen.display().to_string()));
    }
    prepared.env.push((settings::SANDBOX.name.into(), mode.to_string()));
    prepared.env.push((settings::NETWORK.name.into(), policy.network_setting().to_string()));
    Ok(prepared)
}

/// Where POSIX shared memory lives.
#[cfg(target_os = "linux")]
const SHM: &str = "/dev/shm";

impl Prepared {
    /// True when the child has something to apply.
    /// Have the child make `count` unconnected TCP sockets in its network
    /// namespace and send them down the returned end (read them with
    /// [`network::handoff::receive_sockets`]): the host connects them to what
    /// the kernel listens on there. Needs a namespace of the kernel's own.
    #[cfg(target_os = "linux")]
    pub fn hand_over_sockets(&mut self, count: usize) -> std::io::Result<OwnedFd> {
        if self.unshare_flags & libc::CLONE_NEWNET == 0 {
            return Err(std::io::Error::other("the kernel has no network namespace of its own"));
        }
        let (host_end, child_end) = network::handoff::pair()?;
        self.socket_channel = Some((child_end, count));
        Ok(host_end)
    }

    pub fn is_active(&self) -> bool {
        self.landlock.is_some() || !self.cgroup_joins.is_empty() || self.unshare_flags != 0 || !self.rlimits.is_empty()
    }

    /// True when all there is to apply is joining the cgroups, which the
    /// host can do for a process it did not start itself (a kernel forked by
    /// the fork server, see [`Prepared::move_process`]).
    pub fn only_cgroups(&self) -> bool {
        self.landlock.is_none() && self.unshare_flags == 0 && self.rlimits.is_empty() && !self.has_seccomp()
    }

    fn has_seccomp(&self) -> bool {
        #[cfg(target_os = "linux")]
        return self.seccomp.is_some();
        #[cfg(not(target_os = "linux"))]
        return false;
    }

    /// Move process `pid` into the prepared cgroups, from the host: for a
    /// kernel that was forked elsewhere instead of spawned here.
    pub fn move_process(&self, pid: u32) -> std::io::Result<()> {
        use std::io::Write;
        for group in &self.guard.cgroups {
            let fd = group.procs_fd().map_err(std::io::Error::other)?;
            std::fs::File::from(fd).write_all(pid.to_string().as_bytes())?;
        }
        Ok(())
    }

    /// The first steps of every kernel process (a spawned runner, the fork
    /// server), between fork and `exec`: a session of its own, so that the
    /// host can signal the kernel's whole process group, then the sandbox.
    /// Only async-signal-safe calls, and no allocation: an error keeps its
    /// errno, which is all `Command::spawn` reports of a failed pre-exec step.
    #[cfg(unix)]
    pub fn enter_in_child(&self) -> std::io::Result<()> {
        nix::unistd::setsid().map_err(std::io::Error::from)?;
        if self.is_active() {
            self.apply_in_child()?;
        }
        Ok(())
    }

    /// Apply the sandbox to the calling process (nothing to do: only the
    /// policy "off" can be prepared on this OS).
    #[cfg(not(target_os = "linux"))]
    pub fn apply_in_child(&self) -> std::io::Result<()> {
        Ok(())
    }

    /// Apply the sandbox to the calling process: for a forked child before
    /// `exec`. Only async-signal-safe system calls; nothing is allocated.
    #[cfg(target_os = "linux")]
    pub fn apply_in_child(&self) -> std::io::Result<()> {
        let check = |rc: libc::c_long| if rc < 0 { Err(std::io::Error::last_os_error()) } else { Ok(()) };
        // SAFETY: plain system calls on fds and buffers this value owns.
        unsafe {
            for fd in &self.cgroup_joins {
                check(libc::write(fd.as_raw_fd(), b"0".as_ptr().cast(), 1) as libc::c_long)?;
            }
            if self.unshare_flags != 0 {
                check(libc::unshare(self.unshare_flags) as libc::c_long)?;
            }
            if let Some([uid_map, gid_map]) = &self.id_maps {
                child::write_file(c"/proc/self/setgroups", b"deny")?;
                child::write_file(c"/proc/self/uid_map", uid_map)?;
                child::write_file(c"/proc/self/gid_map", gid_map)?;
            }
            if self.loopback_up {
                child::loopback_up()?;
            }
            if let Some(channel) = &self.proxy_channel {
                network::handoff::hand_over(channel.as_raw_fd())?;
            }
            if let Some((channel, count)) = &self.socket_channel {
                network::handoff::hand_over_sockets(channel.as_raw_fd(), *count)?;
            }
            if self.mount_ns {
                child::make_mounts_private()?;
                child::bind_onto_themselves(&self.writable_mounts);
                if let Some(view) = &self.view {
                    view.show()?;
                }
                if self.private_shm.is_some() {
                    child::mount_shm()?;
                }
                child::read_only(&self.read_only_mounts);
                if let Some(view) = &self.view {
                    child::read_only_each(view.sealed());
                }
            }
            if let (Some(rights), Some(ruleset)) = (self.private_shm, &self.landlock)
                && rights != 0
            {
                child::grant_private_shm(ruleset.as_raw_fd(), rights)?;
            }
            for (resource, value) in &self.rlimits {
                let limit = libc::rlimit { rlim_cur: *value as libc::rlim_t, rlim_max: *value as libc::rlim_t };
                check(libc::setrlimit(*resource as _, &limit) as libc::c_long)?;
            }
            if let Some(fd) = &self.landlock {
                check(libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) as libc::c_long)?;
                check(libc::syscall(libc::SYS_landlock_restrict_self, fd.as_raw_fd(), 0u32))?;
            }
        }
        if let Some(program) = &self.seccomp {
            seccompiler::apply_filter(program).map_err(|_| std::io::Error::last_os_error())?;
        }
        Ok(())
    }
}
