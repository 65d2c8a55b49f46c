//! Helpers shared by the integration tests: a real interpreter, real kernels,
//! and a look at /proc to prove no process is left behind.
#![allow(dead_code)]

pub mod binary;
pub mod engine;
pub mod fake_bridge;
pub mod gateway;
pub mod mcp;
pub mod serve;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use cellbox_kernels::discovery::{self, DiscoveryInput, EnvActivation, env};
use cellbox_kernels::kernel::{CellOutput, Kernel, KernelOptions};

/// The interpreter under test: `$CELLBOX_TEST_PYTHON`, else what discovery finds on PATH.
pub fn python() -> &'static PathBuf {
    static PYTHON: OnceLock<PathBuf> = OnceLock::new();
    PYTHON.get_or_init(|| {
        if let Some(explicit) = std::env::var_os("CELLBOX_TEST_PYTHON") {
            return PathBuf::from(explicit);
        }
        let mut input = DiscoveryInput::from_env(std::env::temp_dir(), None);
        input.virtual_env = None;
        input.conda_prefix = None;
        input.home = None;
        discovery::resolve(&input, false).expect("tests need Python 3.8+ on PATH").executable
    })
}

pub fn test_env(extra: &[(&str, &str)]) -> BTreeMap<String, String> {
    let extra = extra.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    env::kernel_env(std::env::vars_os(), &EnvActivation::None, &extra)
}

pub fn options(cwd: &Path) -> KernelOptions {
    KernelOptions::new(python(), cwd, test_env(&[]))
}

pub async fn start() -> Kernel {
    Kernel::start(options(&std::env::temp_dir())).await.expect("kernel starts")
}

pub async fn run(kernel: &Kernel, code: &str) -> CellOutput {
    kernel.execute(code).await.expect("request sent").collect().await.expect("cell completes")
}

/// Live (non-zombie) processes whose process group is `pgid`.
pub fn group_members(pgid: u32) -> Vec<u32> {
    let mut members = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // Fields after the parenthesised command name: state ppid pgrp ...
        let Some(rest) = stat.rsplit_once(')').map(|(_, rest)| rest) else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if fields.len() > 2 && fields[0] != "Z" && fields[2] == pgid.to_string() {
            members.push(pid);
        }
    }
    members
}

/// How long a test waits for something that must happen soon (a process to
/// leave, a spare to be ready, a cell to reach a line) before it calls that a
/// failure, and how long a call may go unanswered before it counts as hung.
/// Far above what a loaded machine needs: a wait ends as soon as its
/// condition holds, so only a real failure ever waits this long. Speed is
/// measured in bench/, never asserted here.
pub const PATIENCE: Duration = Duration::from_secs(60);

/// Whether `pid` has left the process table, zombie included: its parent has
/// collected its exit status. For a kernel the host spawned, the host then
/// knows it died (its exit watch fires as the status is collected), so a
/// call made after this is not a race with the death.
pub fn reaped(pid: u32) -> bool {
    !Path::new(&format!("/proc/{pid}")).exists()
}

/// Python that blocks until the file `path` exists: a cell held open until
/// the test releases it (by creating the file), not for a time that a loaded
/// machine may or may not honour.
pub fn gate(path: &Path) -> String {
    format!(
        "import os as _os, time as _time\nwhile not _os.path.exists({:?}):\n    _time.sleep(0.02)\n",
        path.display().to_string()
    )
}

/// A folder holding a planted private key (`id_rsa`, `sk-secret`), for the
/// sandbox to be told to deny.
pub fn planted_key() -> tempfile::TempDir {
    let secret = tempfile::tempdir().unwrap();
    std::fs::write(secret.path().join("id_rsa"), "sk-secret").unwrap();
    secret
}

/// Wait until `check` holds, up to `limit`.
pub async fn eventually(limit: Duration, mut check: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if check() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    check()
}

/// [`eventually`] for tests without a runtime.
pub fn eventually_blocking(limit: Duration, mut check: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if check() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    check()
}

/// Python that defines `build_wheel(folder, version)`: a pure-Python wheel of
/// the distribution `cellbox-probe-dist` (import name `cellbox_probe_mod`,
/// `VERSION` = the major version), built on the spot so installs need no network.
pub const BUILD_WHEEL: &str = r#"
import os, zipfile
def build_wheel(folder, version):
    info = "cellbox_probe_dist-%s.dist-info" % version
    path = os.path.join(folder, "cellbox_probe_dist-%s-py3-none-any.whl" % version)
    files = {
        "cellbox_probe_mod/__init__.py": "VERSION = %s\n" % version.split(".")[0],
        info + "/METADATA": "Metadata-Version: 2.1\nName: cellbox-probe-dist\nVersion: %s\n" % version,
        info + "/WHEEL": "Wheel-Version: 1.0\nGenerator: cellbox-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        info + "/top_level.txt": "cellbox_probe_mod\n",
    }
    with zipfile.ZipFile(path, "w") as wheel:
        for name, text in files.items():
            wheel.writestr(name, text)
        wheel.writestr(info + "/RECORD", "".join("%s,,\n" % name for name in files) + info + "/RECORD,,\n")
    return path
"#;
/// What a request produced up to its end, which may be the kernel's death.
pub struct Ended {
    pub stdout: String,
    pub stderr: String,
    pub outcome: Result<cellbox_kernels::kernel::CellDone, cellbox_kernels::kernel::KernelError>,
}

/// Run `code` and keep everything it printed, even when the kernel dies.
pub async fn run_to_end(kernel: &Kernel, code: &str) -> Ended {
    use cellbox_kernels::kernel::{ExecEvent, KernelError};
    let mut ended = Ended { stdout: String::new(), stderr: String::new(), outcome: Err(KernelError::Closed) };
    let mut execution = kernel.execute(code).await.expect("request sent");
    let limit = Duration::from_secs(60);
    while let Some(item) = tokio::time::timeout(limit, execution.next()).await.expect("the cell ends") {
        match item {
            Ok(ExecEvent::Stdout(text)) => ended.stdout.push_str(&text),
            Ok(ExecEvent::Stderr(text)) => ended.stderr.push_str(&text),
            Ok(ExecEvent::Done(done)) => ended.outcome = Ok(done),
            Ok(_) => {}
            Err(error) => ended.outcome = Err(error),
        }
    }
    ended
}

/// An engine configuration rooted in `dir` (its cwd) on the interpreter under
/// test, with artifacts kept inside `dir`.
pub fn engine_config(dir: &Path) -> cellbox_engine::tool::EngineConfig {
    let mut config = cellbox_engine::tool::EngineConfig::new(dir);
    config.python = Some(python().display().to_string());
    config.artifacts_dir = dir.join("artifacts");
    config
}

/// Run `command` as if this Linux kernel had no Landlock: a seccomp filter
/// makes every Landlock system call fail with ENOSYS, as on kernels built
/// without it (the real mechanism cellbox probes, not a cellbox setting).
#[cfg(target_os = "linux")]
pub fn without_landlock(command: &mut std::process::Command) {
    use seccompiler::{SeccompAction, SeccompFilter, TargetArch};
    use std::os::unix::process::CommandExt;
    let arch = if cfg!(target_arch = "aarch64") { TargetArch::aarch64 } else { TargetArch::x86_64 };
    let rules = [libc::SYS_landlock_create_ruleset, libc::SYS_landlock_add_rule, libc::SYS_landlock_restrict_self]
        .into_iter()
        .map(|call| (call, vec![]))
        .collect();
    let filter = SeccompFilter::new(rules, SeccompAction::Allow, SeccompAction::Errno(libc::ENOSYS as u32), arch)
        .expect("a seccomp filter");
    let program: seccompiler::BpfProgram = filter.try_into().expect("it compiles");
    // SAFETY: prctl and seccomp on a program built before the fork; nothing is allocated.
    unsafe {
        command.pre_exec(move || seccompiler::apply_filter(&program).map_err(|_| std::io::Error::last_os_error()));
    }
}
