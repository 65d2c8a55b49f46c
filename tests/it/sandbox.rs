//! Real escapes attempted from cells under each sandbox mode: each must fail
//! for the right reason (the OS refused it), and the very same cell must
//! succeed with the sandbox off. Run on Linux with Landlock ABI 3+, network
//! namespaces and writable memory/pids cgroups (or, for a non-root user,
//! user namespaces); `sandbox_support_is_probed` says what this host has.
//!
//! Unix only: the sandbox backends are Landlock (Linux) and Seatbelt (macOS).
#![cfg(unix)]

use crate::common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use cellbox_engine::tool::{CallContext, CellStatus, EngineConfig, EvalEngine, EvalParams, EvalResult, ignore_events};
use cellbox_kernels::sandbox::{NetworkMode, SandboxMode, SandboxPolicy};
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// A fixture: a home with an SSH key, a workspace, and a folder outside it.
struct Fixture {
    _dir: tempfile::TempDir,
    home: PathBuf,
    work: PathBuf,
    outside: PathBuf,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let home = root.join("home");
    let work = root.join("home/project");
    let outside = root.join("outside");
    for d in [&home.join(".ssh"), &work, &outside] {
        std::fs::create_dir_all(d).unwrap();
    }
    std::fs::write(home.join(".ssh/id_ed25519"), "PRIVATE KEY\n").unwrap();
    std::fs::write(home.join(".ssh/id_rsa"), "PRIVATE KEY\n").unwrap();
    std::fs::write(home.join("notes.txt"), "readable\n").unwrap();
    std::os::unix::fs::symlink(&outside, work.join("escape")).unwrap();
    Fixture { _dir: dir, home, work, outside }
}

fn engine(fx: &Fixture, policy: SandboxPolicy) -> EvalEngine {
    let mut config = default_config(fx);
    config.sandbox = policy;
    EvalEngine::new(config)
}

/// The fixture's engine configuration, its sandbox left at the library's default.
fn default_config(fx: &Fixture) -> EngineConfig {
    let mut config = EngineConfig::new(&fx.work);
    config.python = Some(common::python().display().to_string());
    config.artifacts_dir = fx.outside.join("../artifacts");
    config.artifact_retention = None;
    config.runner_cache_dir = Some(fx.outside.join("../runner-cache"));
    config.extra_env.insert("HOME".into(), fx.home.display().to_string());
    config
}

fn policy(mode: SandboxMode, network: NetworkMode) -> SandboxPolicy {
    SandboxPolicy { mode, network, ..SandboxPolicy::off() }
}

async fn eval(engine: &EvalEngine, code: &str) -> EvalResult {
    let params = EvalParams::from_json(json!({"cells": [{"code": code, "timeout": 60}]})).unwrap();
    let (context, cancel) = (CallContext::new("s"), CancellationToken::new());
    let call = engine.eval(&params, &context, &cancel, &ignore_events);
    tokio::time::timeout(Duration::from_secs(90), call).await.expect("no hang").expect("the call is answered")
}

/// Run `code` under `policy` and with the sandbox off; return both texts.
async fn both(fx: &Fixture, sandboxed: SandboxPolicy, code: &str) -> (EvalResult, EvalResult) {
    let on = engine(fx, sandboxed);
    let a = eval(&on, code).await;
    on.dispose_all().await;
    let off = engine(fx, SandboxPolicy::off());
    let b = eval(&off, code).await;
    off.dispose_all().await;
    (a, b)
}

const READ_KEY: &str = r#"
import os, subprocess
key = os.path.expanduser("~/.ssh/id_ed25519")
try:
    print("python:", open(key).read().strip())
except OSError as e:
    print("python:", type(e).__name__, e.errno)
r = subprocess.run(["cat", key], capture_output=True, text=True)
print("cat:", r.returncode, r.stdout.strip() or r.stderr.strip().split(":")[-1].strip())
try:
    print("listing:", sorted(os.listdir(os.path.expanduser("~/.ssh"))))
except OSError as e:
    print("listing: denied", e.errno)
print("other:", open(os.path.expanduser("~/notes.txt")).read().strip())
"#;

#[tokio::test(flavor = "multi_thread")]
async fn secrets_are_unreadable_in_every_mode_but_off() {
    let fx = fixture();
    for mode in [SandboxMode::WorkspaceWrite, SandboxMode::ReadOnly] {
        let (on, off) = both(&fx, policy(mode, NetworkMode::On), READ_KEY).await;
        assert!(on.text.contains("python: PermissionError 13"), "{mode}: {}", on.text);
        assert!(on.text.contains("cat: 1 Permission denied"), "{mode}: a child inherits the sandbox: {}", on.text);
        assert!(on.text.contains("listing: denied 13"), "{mode}: {}", on.text);
        assert!(on.text.contains("other: readable"), "{mode}: the rest of home stays readable: {}", on.text);
        assert!(!on.text.contains("PRIVATE KEY"), "{}", on.text);
        assert!(off.text.contains("python: PRIVATE KEY"), "{}", off.text);
        assert!(off.text.contains("cat: 0 PRIVATE KEY"), "{}", off.text);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_secret_created_after_start_is_unreadable_too() {
    let fx = fixture();
    let on = engine(&fx, policy(SandboxMode::WorkspaceWrite, NetworkMode::On));
    let first = eval(&on, "1").await;
    assert!(!first.is_error, "{}", first.text);
    std::fs::write(fx.home.join(".netrc"), "machine x password y\n").unwrap();
    let r = eval(&on, "import os\ntry:\n    open(os.path.expanduser('~/.netrc')).read()\nexcept OSError as e:\n    print(type(e).__name__)").await;
    assert_eq!(r.text.trim(), "PermissionError", "{}", r.text);
    on.dispose_all().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn writes_outside_the_workspace_fail() {
    let fx = fixture();
    let code = format!(
        r#"
import os
def attempt(label, path):
    try:
        with open(path, "w") as f:
            f.write("x")
        print(label, "written")
    except OSError as e:
        print(label, type(e).__name__, e.errno)
attempt("outside:", {outside:?})
attempt("symlink:", "escape/through-link.txt")
attempt("inside:", "inside.txt")
attempt("tmp:", os.path.join(os.environ.get("TMPDIR", "/tmp"), "t.txt"))
try:
    os.truncate({bashrc:?}, 0)
    print("truncate: done")
except OSError as e:
    print("truncate:", type(e).__name__)
"#,
        outside = fx.outside.join("direct.txt").display().to_string(),
        bashrc = fx.home.join("notes.txt").display().to_string(),
    );
    let (on, off) = both(&fx, policy(SandboxMode::WorkspaceWrite, NetworkMode::On), &code).await;
    assert!(on.text.contains("outside: PermissionError 13"), "{}", on.text);
    assert!(on.text.contains("symlink: PermissionError 13"), "{}", on.text);
    assert!(on.text.contains("inside: written"), "{}", on.text);
    assert!(on.text.contains("tmp: written"), "{}", on.text);
    assert!(on.text.contains("truncate: PermissionError"), "{}", on.text);
    assert!(!fx.outside.join("direct.txt").exists() || off.text.contains("outside: written"));
    assert_eq!(std::fs::read_to_string(fx.home.join("notes.txt")).unwrap_or_default(), "", "off truncated it");
    assert!(off.text.contains("outside: written"), "{}", off.text);
    assert!(off.text.contains("symlink: written"), "{}", off.text);

    std::fs::write(fx.home.join("notes.txt"), "readable\n").unwrap();
    let ro = engine(&fx, policy(SandboxMode::ReadOnly, NetworkMode::On));
    let r = eval(&ro, &code).await;
    ro.dispose_all().await;
    assert!(r.text.contains("inside: PermissionError 13"), "read-only: {}", r.text);
    assert!(r.text.contains("tmp: written"), "read-only keeps the private temp dir: {}", r.text);
    assert_eq!(std::fs::read_to_string(fx.home.join("notes.txt")).unwrap(), "readable\n");
}

#[tokio::test(flavor = "multi_thread")]
async fn network_off_cannot_reach_a_local_listener() {
    let fx = fixture();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            drop(stream);
        }
    });
    let code = format!(
        "import socket\ntry:\n    socket.create_connection(('127.0.0.1', {port}), timeout=5).close()\n    print('connected')\nexcept OSError as e:\n    print(type(e).__name__, e.errno)"
    );
    let (off_net, on_net) = both(&fx, policy(SandboxMode::Off, NetworkMode::Off), &code).await;
    assert_eq!(off_net.text.trim(), format!("OSError {}", libc::ENETUNREACH), "{}", off_net.text);
    assert_eq!(on_net.text.trim(), "connected", "{}", on_net.text);

    // localhost: the kernel's own loopback works, the host's services are not there.
    let local = engine(&fx, policy(SandboxMode::Off, NetworkMode::Localhost));
    let r = eval(&local, &code).await;
    assert_eq!(r.text.trim(), format!("ConnectionRefusedError {}", libc::ECONNREFUSED), "{}", r.text);
    let own = "import socket\ns = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen()\nc = socket.create_connection(s.getsockname(), timeout=5)\nprint('own loopback ok')";
    let r = eval(&local, own).await;
    assert_eq!(r.text.trim(), "own loopback ok", "{}", r.text);
    local.dispose_all().await;
}

const FORK_BOMB: &str = r#"
import os, time
children = []
try:
    for _ in range(120):
        pid = os.fork()
        if pid == 0:
            time.sleep(30)
            os._exit(0)
        children.append(pid)
    print("forked", len(children))
except OSError as e:
    print("stopped after", len(children), type(e).__name__, e.errno)
finally:
    for pid in children:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
"#;

#[tokio::test(flavor = "multi_thread")]
async fn a_fork_bomb_stops_at_the_process_limit() {
    let fx = fixture();
    let limited = SandboxPolicy { max_processes: Some(32), ..SandboxPolicy::off() };
    let (on, off) = both(&fx, limited, FORK_BOMB).await;
    let count: usize = on
        .text
        .strip_prefix("stopped after ")
        .and_then(|t| t.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("the limit did not stop it: {}", on.text));
    assert!(count < 32, "{}", on.text);
    assert!(on.text.trim().ends_with(&format!("BlockingIOError {}", libc::EAGAIN)), "{}", on.text);
    assert_eq!(off.text.trim(), "forked 120", "{}", off.text);
}

/// Every thread of a limited kernel, and what it starts, is in each of the
/// kernel's own cgroups, whether the kernel was spawned (joining from the
/// child) or forked by the fork server (moved in by the host).
#[tokio::test(flavor = "multi_thread")]
async fn a_limited_kernel_its_threads_and_its_children_are_all_in_its_cgroups() {
    use cellbox_kernels::sandbox::LimitMethod;
    let support = cellbox_kernels::sandbox::support();
    let cgroups = [&support.memory_limit, &support.process_limit]
        .iter()
        .filter(|method| matches!(method, LimitMethod::CgroupV1 | LimitMethod::CgroupV2))
        .count();
    if cgroups < 2 {
        eprintln!("skipped: this host gives kernels no memory and pids cgroups ({support:?})");
        return;
    }
    let code = r#"
import os, subprocess, threading
def groups(text):
    return sorted(line for line in text.splitlines() if "/cellbox-" in line)
own = groups(open("/proc/self/cgroup").read())
seen = []
thread = threading.Thread(target=lambda: seen.append(groups(open("/proc/thread-self/cgroup").read())))
thread.start(); thread.join()
child = groups(subprocess.run(["cat", "/proc/self/cgroup"], capture_output=True, text=True).stdout)
print(len(own), own == seen[0] == child, os.getppid())
"#;
    // One line per v1 hierarchy the kernel joined (a v2 process is in one group).
    let v1 = support.memory_limit == LimitMethod::CgroupV1 && support.process_limit == LimitMethod::CgroupV1;
    let expected = if v1 { "2 True" } else { "1 True" };
    let fx = fixture();
    // Spawned under Landlock; spawned with the limits alone; forked by a fork server and moved in by the host.
    for (base, preload) in
        [(SandboxPolicy::default(), false), (SandboxPolicy::off(), false), (SandboxPolicy::off(), true)]
    {
        let mut config = default_config(&fx);
        config.sandbox = SandboxPolicy { memory_limit: Some(1 << 30), max_processes: Some(64), ..base };
        config.preload = if preload { vec!["json".to_string()] } else { Vec::new() };
        let on = EvalEngine::new(config);
        let r = eval(&on, code).await;
        on.dispose_all().await;
        let (groups, parent) = r.text.trim().rsplit_once(' ').unwrap_or_else(|| panic!("{}", r.text));
        assert_eq!(groups, expected, "preload {preload}: {}", r.text);
        // A forked kernel's parent is its fork server; a spawned one's is this process.
        assert_eq!(parent == std::process::id().to_string(), !preload, "preload {preload}: {}", r.text);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn allocating_past_the_memory_limit_ends_the_cell_and_the_next_call_gets_a_fresh_kernel() {
    let fx = fixture();
    let code =
        "x = bytearray(512 << 20)\nfor i in range(0, len(x), 4096):\n    x[i] = 1\nprint('allocated', len(x) >> 20)";
    let limited = SandboxPolicy { memory_limit: Some(256 << 20), ..SandboxPolicy::off() };
    let on = engine(&fx, limited);
    assert!(!eval(&on, "state = 1").await.is_error);
    let r = eval(&on, code).await;
    assert!(r.is_error, "{}", r.text);
    assert_eq!(r.cells[0].status, CellStatus::Error);
    assert!(r.text.contains("memory limit exceeded (256 MiB)"), "{}", r.text);
    let next = eval(&on, "print('fresh', 'state' in globals())").await;
    assert!(next.text.contains("fresh False"), "{}", next.text);
    on.dispose_all().await;

    let off = engine(&fx, SandboxPolicy::off());
    let r = eval(&off, code).await;
    off.dispose_all().await;
    assert_eq!(r.text.trim(), "allocated 512", "{}", r.text);
}

/// Where no memory cgroup can be made (a non-root user here), the limit is an
/// address-space rlimit: the cell gets a MemoryError that names the limit and
/// the kernel (with its state) is kept. The rlimit is set from the cell itself
/// here, as root always gets a cgroup; the sandbox passes the same variable.
#[tokio::test(flavor = "multi_thread")]
async fn a_memory_error_under_the_rlimit_fallback_names_the_limit() {
    let fx = fixture();
    let mut config = EngineConfig::new(&fx.work);
    config.python = Some(common::python().display().to_string());
    config.artifacts_dir = fx.outside.join("../artifacts");
    config.runner_cache_dir = Some(fx.outside.join("../runner-cache"));
    config.extra_env.insert(cellbox_settings::MEMORY_RLIMIT.name.into(), "1 GiB".into());
    let engine = EvalEngine::new(config);
    assert!(!eval(&engine, "state = 1").await.is_error);
    let code = "import resource\nresource.setrlimit(resource.RLIMIT_AS, (1 << 30, resource.RLIM_INFINITY))\n\
                x = bytearray(2 << 30)";
    let r = eval(&engine, code).await;
    assert_eq!(r.cells[0].error.as_ref().unwrap().ename, "MemoryError", "{}", r.text);
    assert!(r.text.contains("memory limit exceeded (1 GiB)"), "{}", r.text);
    let next = eval(&engine, "print('kept', state)").await;
    assert!(next.text.contains("kept 1"), "{}", next.text);
    engine.dispose_all().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn pip_under_network_off_says_why_and_how_to_allow_it() {
    let fx = fixture();
    let on = engine(&fx, policy(SandboxMode::WorkspaceWrite, NetworkMode::Off));
    let r =
        eval(&on, "%pip install --no-cache-dir --index-url http://127.0.0.1:9/simple cellbox-no-such-package").await;
    on.dispose_all().await;
    assert!(r.is_error, "{}", r.text);
    assert!(r.text.contains("network is off"), "{}", r.text);
    assert!(r.text.contains("--network on"), "{}", r.text);
}

/// A refusal of the sandbox carries one note saying which rule refused it and the flag that lifts it.
#[tokio::test(flavor = "multi_thread")]
async fn refusals_name_their_rule_and_the_flag_that_lifts_it() {
    let fx = fixture();
    let on = engine(&fx, policy(SandboxMode::WorkspaceWrite, NetworkMode::Off));
    let outside = fx.outside.join("refused.txt");
    let write = eval(&on, &format!("open({:?}, 'w').write('x')", outside.display().to_string())).await;
    assert!(write.is_error, "{}", write.text);
    let note = write.notes.iter().find(|note| note.contains("--allow-write")).unwrap_or_else(|| panic!("{:#?}", write));
    assert!(
        note.contains(&fx.outside.display().to_string()) && note.contains(&fx.work.display().to_string()),
        "{note}"
    );
    assert!(write.text.contains(note.as_str()), "the model reads it: {}", write.text);
    let read = eval(&on, "import os; open(os.path.expanduser('~/.ssh/id_rsa')).read()").await;
    assert!(
        read.notes.iter().any(|note| note.contains("secret location") && note.contains("--sandbox off")),
        "{read:#?}"
    );
    let shell = eval(&on, "!cat ~/.ssh/id_rsa").await;
    assert!(shell.notes.iter().any(|note| note.contains("secret location")), "a child's refusal too: {shell:#?}");
    let connect = eval(&on, "import socket; socket.create_connection(('192.0.2.1', 80), timeout=5)").await;
    assert!(connect.notes.iter().any(|note| note.contains("--network on")), "{connect:#?}");
    // What the sandbox allows is not blamed on it.
    let fine = eval(&on, "open('inside.txt', 'w').write('x'); open('/nonexistent-folder/x')").await;
    assert!(fine.notes.iter().all(|note| !note.starts_with("Sandbox:")), "{fine:#?}");
    on.dispose_all().await;
}

/// Kernels of a server's principals each get a `/dev/shm` of their own: one cannot
/// read or plant another's shared memory, nor the host's, and multiprocessing still works.
#[tokio::test(flavor = "multi_thread")]
async fn a_private_dev_shm_is_shared_with_nobody() {
    let fx = fixture();
    let private = SandboxPolicy { private_shm: true, ..policy(SandboxMode::WorkspaceWrite, NetworkMode::On) };
    let (a, b) = (engine(&fx, private.clone()), engine(&fx, private));
    let name = format!("cellbox-test-{}", std::process::id());
    let planted = eval(&a, &format!("open('/dev/shm/{name}', 'w').write('from a'); sorted(os.listdir('/dev/shm')) if (os := __import__('os')) else 0")).await;
    assert!(!planted.is_error && planted.text.contains(&name), "{}", planted.text);
    assert!(!Path::new("/dev/shm").join(&name).exists(), "the host's /dev/shm got it");
    let looked = eval(&b, &format!("import os; os.path.exists('/dev/shm/{name}')")).await;
    assert_eq!(looked.text.trim(), "False", "{}", looked.text);
    let locks =
        eval(&b, "import multiprocessing as mp; lock = mp.Lock(); lock.acquire(); lock.release(); 'locked'").await;
    assert!(locks.text.contains("'locked'"), "{}", locks.text);
    std::fs::write(Path::new("/dev/shm").join(&name), "host").unwrap();
    let host = eval(&a, &format!("open('/dev/shm/{name}').read()")).await;
    assert_eq!(host.text.trim(), "'from a'", "a kernel sees its own, not the host's: {}", host.text);
    std::fs::remove_file(Path::new("/dev/shm").join(&name)).unwrap();
    // In its mount namespace every mount but the writable places is read-only: the modes, times and
    // owners of files outside cannot change either (Landlock has no right for them).
    let notes = fx.home.join("notes.txt").display().to_string();
    let outside = format!(
        "import os\nout = []\nfor change in [lambda: os.chmod({notes:?}, 0o777), lambda: os.utime({notes:?}, (0, 0)), \
         lambda: os.chmod('.', 0o755), lambda: open('x', 'w').write('x'), lambda: os.chmod('x', 0o600)]:\n\
         \x20   try:\n        change(); out.append('ok')\n    except OSError as e:\n        out.append(e.errno)\nout"
    );
    let changed = eval(&a, &outside).await;
    assert_eq!(changed.text.trim(), "[30, 30, 'ok', 'ok', 'ok']", "{}", changed.text);
    let meta = std::fs::metadata(fx.home.join("notes.txt")).unwrap();
    assert_ne!(std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o777, 0o777);
    a.dispose_all().await;
    b.dispose_all().await;
}

#[test]
fn sandbox_support_is_probed() {
    let support = cellbox_kernels::sandbox::support();
    let json = serde_json::to_value(&support).unwrap();
    for key in ["os", "landlock_abi", "filesystem", "network", "seccomp", "memory_limit", "process_limit", "notes"] {
        assert!(json.get(key).is_some(), "{key} missing from {json}");
    }
    // This suite's own cases need these; say so plainly when a host lacks them.
    assert!(support.filesystem, "Landlock ABI 3+ is needed: {}", support.to_text());
    assert!(support.network, "network namespaces are needed: {}", support.to_text());
}

#[test]
fn the_model_is_told_what_it_may_write_and_whether_it_has_network() {
    let p = SandboxPolicy {
        mode: SandboxMode::WorkspaceWrite,
        network: NetworkMode::Off,
        memory_limit: Some(4 << 30),
        ..SandboxPolicy::off()
    };
    let text = p.describe_for_model(Path::new("/w"));
    assert!(text.contains("write only under /w"), "{text}");
    assert!(text.contains("no network access"), "{text}");
    assert!(text.contains("4 GiB"), "{text}");
}

#[tokio::test(flavor = "multi_thread")]
async fn pip_into_the_workspace_venv_works_under_workspace_write() {
    let fx = fixture();
    let venv = fx.work.join(".venv");
    let made = std::process::Command::new(common::python()).args(["-m", "venv", "--without-pip"]).arg(&venv).status();
    assert!(made.unwrap().success());
    // A hand-made wheel, installed without network by uv or pip.
    let wheel = fx.outside.join("demo_pkg-0.1-py3-none-any.whl");
    let script = format!(
        "import zipfile\nwith zipfile.ZipFile({wheel:?}, 'w') as z:\n    z.writestr('demo_pkg/__init__.py', 'VALUE = 42\\n')\n    z.writestr('demo_pkg-0.1.dist-info/METADATA', 'Metadata-Version: 2.1\\nName: demo-pkg\\nVersion: 0.1\\n')\n    z.writestr('demo_pkg-0.1.dist-info/WHEEL', 'Wheel-Version: 1.0\\nGenerator: test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n')\n    z.writestr('demo_pkg-0.1.dist-info/RECORD', '')\n",
        wheel = wheel.display().to_string()
    );
    assert!(std::process::Command::new(common::python()).args(["-c", &script]).status().unwrap().success());
    let mut config = EngineConfig::new(&fx.work);
    config.python = Some(venv.join("bin/python").display().to_string());
    config.artifacts_dir = fx.outside.join("../artifacts");
    config.runner_cache_dir = Some(fx.outside.join("../runner-cache"));
    config.extra_env.insert("HOME".into(), fx.home.display().to_string());
    // uv (next to the test interpreter) installs into a venv made without pip.
    let uv_dir = common::python().parent().unwrap().display().to_string();
    config.extra_env.insert("PATH".into(), format!("{uv_dir}:/usr/bin:/bin"));
    config.sandbox = policy(SandboxMode::WorkspaceWrite, NetworkMode::Off);
    let engine = EvalEngine::new(config);
    let r = eval(
        &engine,
        &format!("%pip install --no-index {}\nimport demo_pkg\nprint('value', demo_pkg.VALUE)", wheel.display()),
    )
    .await;
    engine.dispose_all().await;
    assert!(r.text.contains("value 42"), "{}", r.text);
}

#[test]
fn the_mcp_server_takes_sandbox_flags_and_tells_the_model() {
    let fx = fixture();
    let output = common::mcp::client("sandbox_client.py")
        .arg(&fx.work)
        .arg(fx.home.join(".ssh/id_ed25519"))
        .env("HOME", &fx.home)
        .env("CELLBOX_PYTHON", common::python())
        .env("CELLBOX_ARTIFACTS_DIR", fx.outside.join("../artifacts"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "stdout:\n{stdout}\nstderr:\n{stderr}");
    assert!(stdout.contains("sandboxed mcp ok"), "{stdout}");
}

/// A cell that tries the two things the default must stop (reading a planted
/// key, writing outside the workspace) and one it must allow (writing inside).
fn escape_attempts(fx: &Fixture) -> String {
    format!(
        r#"
import os
for what, attempt in [
    ("read key", lambda: open(os.path.expanduser("~/.ssh/id_rsa")).read()),
    ("write outside", lambda: open({outside:?}, "w").write("x")),
    ("write inside", lambda: open("inside.txt", "w").write("x")),
]:
    try:
        attempt()
        print(what, "allowed")
    except PermissionError:
        print(what, "denied")
"#,
        outside = fx.outside.join("planted.txt").display().to_string()
    )
}

const CONFINED: &str = "read key denied\nwrite outside denied\nwrite inside allowed\n";

/// `cellbox ARGS` as a fresh install runs it: no sandbox setting anywhere, the fixture's home.
fn fresh_cellbox(fx: &Fixture, args: &[&str]) -> std::process::Command {
    let mut command = common::binary::cellbox(args);
    for var in ["CELLBOX_SANDBOX", "CELLBOX_NETWORK", "CELLBOX_ALLOW_WRITE", "CELLBOX_DENY_READ"] {
        command.env_remove(var);
    }
    command
        .current_dir(&fx.work)
        .env("HOME", &fx.home)
        .env("CELLBOX_ARTIFACTS_DIR", fx.outside.join("../artifacts"))
        .env("CELLBOX_CACHE_DIR", fx.outside.join("../cache"));
    command
}

#[tokio::test(flavor = "multi_thread")]
async fn by_default_the_library_confines_kernels_to_the_workspace() {
    let fx = fixture();
    let engine = EvalEngine::new(default_config(&fx));
    let result = eval(&engine, &escape_attempts(&fx)).await;
    engine.dispose_all().await;
    assert_eq!(result.text, CONFINED);
    assert!(!fx.outside.join("planted.txt").exists());
    assert!(fx.work.join("inside.txt").exists());
}

#[test]
fn by_default_the_command_line_confines_kernels_and_says_nothing() {
    let fx = fixture();
    let output = fresh_cellbox(&fx, &["run", "-c", &escape_attempts(&fx)]).output().unwrap();
    let (stdout, stderr) = (common::binary::text(&output.stdout), common::binary::text(&output.stderr));
    assert!(output.status.success(), "stdout:\n{stdout}\nstderr:\n{stderr}");
    assert_eq!(stdout, CONFINED, "stderr:\n{stderr}");
    assert!(!stderr.contains("sandbox"), "the default needs no warning here: {stderr}");
}

#[test]
fn opting_out_gives_full_rights_and_says_so_once() {
    let fx = fixture();
    // Two kernels in one process (Python, then a reset): still one notice.
    let code = escape_attempts(&fx);
    let cells = serde_json::json!({"cells": [{"code": code}, {"code": "print('again')", "reset": true}]});
    let params = fx.outside.join("params.json");
    std::fs::write(&params, cells.to_string()).unwrap();
    let output =
        fresh_cellbox(&fx, &["run", "--sandbox", "off", "--params", params.to_str().unwrap()]).output().unwrap();
    let (stdout, stderr) = (common::binary::text(&output.stdout), common::binary::text(&output.stderr));
    assert!(output.status.success(), "stdout:\n{stdout}\nstderr:\n{stderr}");
    assert!(stdout.contains("read key allowed\nwrite outside allowed\nwrite inside allowed\n"), "{stdout}");
    assert_eq!(stderr.matches("kernels run with this user's full rights").count(), 1, "{stderr}");
    // The variable is an opt-out too.
    let output = fresh_cellbox(&fx, &["run", "-c", "print(1)"]).env("CELLBOX_SANDBOX", "off").output().unwrap();
    assert!(common::binary::text(&output.stderr).contains("kernels run with this user's full rights"));
}

#[test]
#[cfg(target_os = "linux")]
fn without_landlock_kernels_still_start_and_the_warning_names_what_is_missing() {
    let fx = fixture();
    let mut command = fresh_cellbox(&fx, &["run", "-c", &escape_attempts(&fx)]);
    common::without_landlock(&mut command);
    let output = command.output().unwrap();
    let (stdout, stderr) = (common::binary::text(&output.stdout), common::binary::text(&output.stderr));
    assert!(output.status.success(), "stdout:\n{stdout}\nstderr:\n{stderr}");
    assert!(stdout.contains("read key allowed"), "nothing is enforced, and nothing pretends to be: {stdout}");
    let warning = "the workspace-write sandbox is not enforced: Landlock is not available in this Linux kernel";
    assert_eq!(stderr.matches(warning).count(), 1, "{stderr}");
    // doctor says the same.
    let mut doctor = fresh_cellbox(&fx, &["doctor", "--json"]);
    common::without_landlock(&mut doctor);
    let report: serde_json::Value = serde_json::from_slice(&doctor.output().unwrap().stdout).unwrap();
    let policy = report["sandbox"].as_array().unwrap().last().unwrap()["detail"].as_str().unwrap().to_string();
    assert!(policy.starts_with("sandbox workspace-write (the default), network on: NOT enforced here"), "{policy}");
}
