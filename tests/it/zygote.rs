//! Preloaded kernels forked from the fork server, on real Python: the module
//! is imported once in another process, each child is a proper kernel (its
//! own pid, random state, env, cwd, sys.path, argv; output, interrupts,
//! shutdown and death work as for a spawned one), bad preloads fall back to a
//! spawn with one clear message, and nothing outlives the engine.

use crate::common;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use cellbox_engine::session::SpareLimits;
use cellbox_engine::tool::{CallContext, EvalEngine, EvalParams, EvalResult, ignore_events};
use cellbox_kernels::kernel::{ExecEvent, Kernel, KernelError, KernelOptions};
use common::{PATIENCE, eventually, group_members, python, run, run_to_end, test_env};
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// A folder of probe modules, put on the kernels' PYTHONPATH. Each test gets
/// its own (the folder is part of the environment, so of the zygote's key).
struct Probes {
    dir: tempfile::TempDir,
}

impl Probes {
    fn new() -> Probes {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, code: &str| std::fs::write(dir.path().join(name), code).unwrap();
        write("zyg_probe.py", "import os\nIMPORT_PID = os.getpid()\n");
        write("zyg_other.py", "import os\nIMPORT_PID = os.getpid()\n");
        write(
            "zyg_thread.py",
            "import threading, time\nthreading.Thread(target=time.sleep, args=(3600,), name='zyg-worker', daemon=True).start()\n",
        );
        Probes { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn options(&self, cwd: &Path, preload: &[&str]) -> KernelOptions {
        let pythonpath = self.path().display().to_string();
        let mut options = KernelOptions::new(python(), cwd, test_env(&[("PYTHONPATH", &pythonpath)]));
        options.preload = preload.iter().map(|m| m.to_string()).collect();
        options
    }
}

/// The fork servers are per process, and an engine's `dispose_all` lets go
/// of all of them: the tests of this file run one at a time, so one test's
/// clean-up never retires the server another test is forking from.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

async fn value(kernel: &Kernel, code: &str) -> String {
    let output = run(kernel, code).await;
    assert!(output.is_ok(), "{code}: {:?} {}", output.errors(), output.stderr());
    output.results().join("")
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|stat| stat.rsplit_once(')').map(|(_, rest)| !rest.trim_start().starts_with('Z')).unwrap_or(false))
        .unwrap_or(false)
}

#[tokio::test]
async fn a_preloaded_module_was_imported_by_the_zygote_not_the_kernel() {
    let _serial = SERIAL.lock().await;
    let probes = Probes::new();
    let kernel = Kernel::start(probes.options(probes.path(), &["zyg_probe"])).await.unwrap();
    let zygote = kernel.forked_from().expect("the kernel was forked");
    // The first cell finds it in sys.modules without importing it: it was
    // imported by another process, the kernel's parent.
    let found = value(
        &kernel,
        "import sys, os\nm = sys.modules.get('zyg_probe')\n(m is not None, m.IMPORT_PID == os.getppid(), m.IMPORT_PID != os.getpid())",
    )
    .await;
    assert_eq!(found, "(True, True, True)");
    assert_eq!(value(&kernel, "os.getppid()").await, zygote.to_string());
    assert_eq!(value(&kernel, "os.getpid()").await, kernel.pid().to_string());
    // Its own session and process group, as a spawned kernel.
    assert_eq!(value(&kernel, "(os.getsid(0) == os.getpid(), os.getpgrp() == os.getpid())").await, "(True, True)");
    kernel.shutdown().await;
}

#[tokio::test]
async fn forked_kernels_take_their_own_env_cwd_path_and_argv() {
    let _serial = SERIAL.lock().await;
    let probes = Probes::new();
    let one = tempfile::tempdir().unwrap();
    let two = tempfile::tempdir().unwrap();
    // Under the default sandbox the zygote runs inside the workspace's rules, so each workspace has its own.
    let a = Kernel::start(probes.options(one.path(), &["zyg_probe"])).await.unwrap();
    let b = Kernel::start(probes.options(two.path(), &["zyg_probe"])).await.unwrap();
    assert!(a.forked_from().is_some() && b.forked_from().is_some());
    if cellbox_kernels::sandbox::support().filesystem {
        assert_ne!(a.forked_from(), b.forked_from(), "the workspace is part of a sandboxed zygote's key");
    }
    check_own_env_cwd_path_and_argv(&probes, [(&a, one.path()), (&b, two.path())]).await;
    a.shutdown().await;
    b.shutdown().await;

    // With the sandbox off, each still has its own cwd, path and argv. (That both come from one
    // zygote is checked in tests/alone, where no other test's engine retires it in between.)
    let unconfined = |cwd: &Path| KernelOptions {
        sandbox: cellbox_kernels::sandbox::SandboxPolicy::off(),
        ..probes.options(cwd, &["zyg_probe"])
    };
    let a = Kernel::start(unconfined(one.path())).await.unwrap();
    let b = Kernel::start(unconfined(two.path())).await.unwrap();
    assert!(a.forked_from().is_some() && b.forked_from().is_some());
    check_own_env_cwd_path_and_argv(&probes, [(&a, one.path()), (&b, two.path())]).await;
    a.shutdown().await;
    b.shutdown().await;
}

/// Each kernel has its own cwd (also first on `sys.path`), an empty argv and the given environment.
async fn check_own_env_cwd_path_and_argv(probes: &Probes, kernels: [(&Kernel, &Path); 2]) {
    for (kernel, dir) in kernels {
        let dir = dir.display().to_string();
        assert_eq!(value(kernel, "import os\nos.getcwd()").await, format!("{dir:?}").replace('"', "'"));
        assert_eq!(value(kernel, "import sys\nsys.argv").await, "['']");
        assert_eq!(value(kernel, "sys.path[0]").await, format!("{dir:?}").replace('"', "'"));
        assert_eq!(value(kernel, "'/' in sys.path").await, "False", "the zygote's own cwd is not on sys.path");
        assert_eq!(value(kernel, "os.environ['PYTHONPATH']").await, format!("'{}'", probes.path().display()));
        assert_eq!(value(kernel, "os.environ.get('PWD', '') != '/'").await, "True");
    }
}

#[tokio::test]
async fn random_state_differs_between_forked_kernels() {
    let _serial = SERIAL.lock().await;
    let probes = Probes::new();
    let numpy = python_has("numpy");
    let preload: &[&str] = if numpy { &["zyg_probe", "numpy"] } else { &["zyg_probe"] };
    let a = Kernel::start(probes.options(probes.path(), preload)).await.unwrap();
    let b = Kernel::start(probes.options(probes.path(), preload)).await.unwrap();
    assert!(a.forked_from().is_some() && a.forked_from() == b.forked_from());
    let code = "import random\nrandom.random()";
    assert_ne!(value(&a, code).await, value(&b, code).await);
    let name = "import tempfile, os\nos.path.basename(tempfile.mktemp())";
    assert_ne!(value(&a, name).await, value(&b, name).await);
    if numpy {
        let code = "import numpy\nnumpy.random.random()";
        assert_ne!(value(&a, code).await, value(&b, code).await, "numpy's legacy global state was reseeded");
    }
    a.shutdown().await;
    b.shutdown().await;
}

fn python_has(module: &str) -> bool {
    std::process::Command::new(python())
        .args(["-c", &format!("import {module}")])
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

#[tokio::test]
async fn output_displays_interrupts_and_death_work_on_forked_kernels() {
    let _serial = SERIAL.lock().await;
    let probes = Probes::new();
    let kernel = Kernel::start(probes.options(probes.path(), &["zyg_probe"])).await.unwrap();
    assert!(kernel.forked_from().is_some());
    let output = run(
        &kernel,
        "import os, sys\nprint('out')\nsys.stderr.write('err\\n')\nos.write(1, b'raw\\n')\ndisplay({'a': 1})\n6*7",
    )
    .await;
    assert_eq!(output.stdout(), "out\nraw\n");
    assert_eq!(output.stderr(), "err\n");
    assert_eq!(output.displays().len(), 1);
    assert_eq!(output.results(), vec!["42"]);

    // An interrupt stops the cell and keeps the state.
    run(&kernel, "kept = 5").await;
    let execution = kernel.execute("import time\nprint('sleeping', flush=True)\ntime.sleep(60)").await.unwrap();
    let mut execution = execution;
    while let Some(event) = execution.next().await {
        if matches!(event, Ok(ExecEvent::Stdout(_))) {
            break;
        }
    }
    kernel.interrupt().unwrap();
    let mut interrupted = false;
    while let Some(event) = tokio::time::timeout(PATIENCE, execution.next()).await.unwrap() {
        match event.unwrap() {
            ExecEvent::Error(error) => interrupted = error.ename == "KeyboardInterrupt",
            ExecEvent::Done(done) => assert!(done.cancelled),
            _ => {}
        }
    }
    assert!(interrupted);
    assert_eq!(value(&kernel, "kept").await, "5");

    // A child started by a cell is in the kernel's group, and dies with it.
    run(&kernel, "import subprocess\nchild = subprocess.Popen(['sleep', '60'])").await;
    assert!(group_members(kernel.pid()).len() >= 2);

    // Death: the status comes from the zygote, the message as for a spawn.
    let ended = run_to_end(&kernel, "print('bye', flush=True)\nos._exit(3)").await;
    assert_eq!(ended.stdout, "bye\n");
    match ended.outcome {
        Err(KernelError::Died { exit, .. }) => assert!(exit.contains("exit code 3"), "{exit}"),
        other => panic!("expected the kernel to die, got {other:?}"),
    }
    kernel.shutdown().await;
    assert!(eventually(PATIENCE, || group_members(kernel.pid()).is_empty()).await);
}

#[tokio::test]
async fn a_forked_kernel_says_which_cell_began_through_its_started_page() {
    let _serial = SERIAL.lock().await;
    let probes = Probes::new();
    let kernel = Kernel::start(probes.options(probes.path(), &["zyg_probe"])).await.unwrap();
    assert!(kernel.forked_from().is_some());
    // It holds the page as a spawned kernel does, so no call wakes the host with a `started` frame.
    let pages = std::fs::read_dir(format!("/proc/{}/fd", kernel.pid()))
        .unwrap()
        .filter_map(|entry| std::fs::read_link(entry.unwrap().path()).ok())
        .filter(|target| target.to_string_lossy().contains("cellbox-started"))
        .count();
    assert_eq!(pages, 1, "the forked kernel's started page");
    assert_eq!(value(&kernel, "6*7").await, "42");
    // A cell that kills its kernel before writing anything had begun: the page says so.
    let mut execution = kernel.execute("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)").await.unwrap();
    let mut events = Vec::new();
    while let Some(event) = tokio::time::timeout(PATIENCE, execution.next()).await.unwrap() {
        events.push(event);
    }
    assert!(matches!(events.first(), Some(Ok(ExecEvent::Started))), "{events:?}");
    assert!(matches!(events.last(), Some(Err(KernelError::Died { .. }))), "{events:?}");
    kernel.shutdown().await;
}

#[tokio::test]
async fn the_shutdown_ladder_and_kill_reach_forked_kernels() {
    let _serial = SERIAL.lock().await;
    let probes = Probes::new();
    let kernel = Kernel::start(probes.options(probes.path(), &["zyg_probe"])).await.unwrap();
    assert!(kernel.forked_from().is_some());
    let exit = kernel.shutdown().await.expect("an exit status");
    assert_eq!(exit.code, Some(0), "a clean exit, reported by the zygote: {exit:?}");

    // A kernel that ignores SIGTERM and is stuck in a cell is killed.
    let stuck = Kernel::start(probes.options(probes.path(), &["zyg_probe"])).await.unwrap();
    let mut running = stuck
        .execute("import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nprint('x', flush=True)\ntime.sleep(60)")
        .await
        .unwrap();
    // Stopped once SIGTERM is ignored (the cell printed after that), not after a guess at how long that takes.
    loop {
        match tokio::time::timeout(PATIENCE, running.next()).await.expect("the cell prints") {
            Some(Ok(ExecEvent::Stdout(_))) => break,
            Some(Ok(_)) => {}
            other => panic!("the cell ended before it printed: {other:?}"),
        }
    }
    let exit = stuck.terminate_stuck().await.expect("an exit status");
    assert_eq!(exit.signal, Some(9), "{exit:?}");
    assert!(group_members(stuck.pid()).is_empty());
}

#[tokio::test]
async fn a_preload_that_starts_a_thread_is_refused_and_kernels_are_spawned() {
    let _serial = SERIAL.lock().await;
    let probes = Probes::new();
    let kernel = Kernel::start(probes.options(probes.path(), &["zyg_thread"])).await.unwrap();
    assert_eq!(kernel.forked_from(), None, "no fork from a zygote with threads");
    assert_eq!(value(&kernel, "import sys\n'zyg_thread' in sys.modules").await, "False");
    let problem = cellbox_kernels::kernel::zygote::problems()
        .into_iter()
        .find(|p| p.contains("'zyg_thread'"))
        .expect("the refusal is recorded");
    assert!(problem.contains("left 1 thread(s) running (zyg-worker)"), "{problem}");
    kernel.shutdown().await;
}

#[tokio::test]
async fn a_missing_module_gives_one_error_and_kernels_are_spawned() {
    let _serial = SERIAL.lock().await;
    let probes = Probes::new();
    let options = probes.options(probes.path(), &["zyg_probe", "zyg_missing_module"]);
    let a = Kernel::start(options.clone()).await.unwrap();
    let b = Kernel::start(options).await.unwrap();
    assert_eq!((a.forked_from(), b.forked_from()), (None, None));
    assert_eq!(value(&a, "1+1").await, "2");
    let problems: Vec<String> =
        cellbox_kernels::kernel::zygote::problems().into_iter().filter(|p| p.contains("zyg_missing_module")).collect();
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(problems[0].contains("ModuleNotFoundError"), "{}", problems[0]);
    a.shutdown().await;
    b.shutdown().await;
}

#[test]
fn the_cli_names_a_missing_preload_once_and_still_runs() {
    let output = common::binary::cellbox(["run", "--preload", "zyg_cli_missing", "-c", "print(6*7)"]).output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("42"), "{stdout}");
    assert_eq!(stderr.matches("No module named 'zyg_cli_missing'").count(), 1, "{stderr}");
}

#[tokio::test]
async fn the_zygote_restarts_when_the_preload_list_changes() {
    let _serial = SERIAL.lock().await;
    let probes = Probes::new();
    let first = Kernel::start(probes.options(probes.path(), &["zyg_probe"])).await.unwrap();
    let changed = Kernel::start(probes.options(probes.path(), &["zyg_probe", "zyg_other"])).await.unwrap();
    let (z1, z2) = (first.forked_from().unwrap(), changed.forked_from().unwrap());
    assert_ne!(z1, z2);
    assert_eq!(value(&changed, "import sys\n'zyg_other' in sys.modules").await, "True");
    assert_eq!(value(&first, "import sys\n'zyg_other' in sys.modules").await, "False");
    // The retired zygote still serves its kernel, and ends with it.
    assert!(alive(z1));
    first.shutdown().await;
    assert!(eventually(PATIENCE, || !alive(z1)).await, "the retired zygote ended");
    changed.shutdown().await;
}

fn engine(probes: &Probes, dir: &Path, spares: SpareLimits) -> Arc<EvalEngine> {
    let mut config = common::engine_config(dir);
    config.spare = spares;
    config.preload = vec!["zyg_probe".into()];
    config.extra_env.insert("PYTHONPATH".into(), probes.path().display().to_string());
    Arc::new(EvalEngine::new(config))
}

async fn eval(engine: &EvalEngine, session: &str, code: &str) -> EvalResult {
    let params = EvalParams::from_json(json!({"cells": [{"code": code}]})).unwrap();
    engine.eval(&params, &CallContext::new(session), &CancellationToken::new(), &ignore_events).await.unwrap()
}

const WHO: &str = "import os, sys\n(os.getpid(), os.getppid(), 'zyg_probe' in sys.modules)";

fn who(result: &EvalResult) -> (u32, u32, bool) {
    assert!(!result.is_error, "{}", result.text);
    let text = result.text.trim().trim_start_matches('(').trim_end_matches(')').to_string();
    let parts: Vec<&str> = text.split(", ").collect();
    (parts[0].parse().unwrap(), parts[1].parse().unwrap(), parts[2] == "True")
}

#[tokio::test]
async fn spares_are_forked_and_nothing_outlives_the_engine() {
    let _serial = SERIAL.lock().await;
    let probes = Probes::new();
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(&probes, dir.path(), SpareLimits { count: 1, idle: None });
    let (first, zygote, preloaded) = who(&eval(&engine, "a", WHO).await);
    assert!(preloaded);
    assert!(eventually(PATIENCE, || !engine.spare_pids().is_empty()).await, "a spare is ready");
    let spare = engine.spare_pids()[0];
    let (second, parent, preloaded) = who(&eval(&engine, "b", WHO).await);
    assert_eq!(second, spare, "the new session took the spare");
    assert_eq!(parent, zygote, "the spare was forked from the same zygote");
    assert!(preloaded);
    let mut kernels = engine.kernel_pids();
    kernels.extend(engine.spare_pids());
    engine.dispose_all().await;
    let gone = eventually(PATIENCE, || {
        kernels.iter().chain([&first, &second]).all(|pid| group_members(*pid).is_empty()) && !alive(zygote)
    })
    .await;
    assert!(gone, "kernels {kernels:?} and zygote {zygote} are gone after the engine's shutdown");
}

#[tokio::test]
async fn a_sandboxed_forked_kernel_cannot_write_outside_the_workspace() {
    let _serial = SERIAL.lock().await;
    use cellbox_kernels::sandbox::{SandboxMode, SandboxPolicy};
    if !cellbox_kernels::sandbox::support().filesystem {
        eprintln!("skipped: no Landlock ABI 3 here");
        return;
    }
    let probes = Probes::new();
    let root = tempfile::tempdir().unwrap();
    let root_path: PathBuf = root.path().canonicalize().unwrap();
    let work = root_path.join("work");
    let outside = root_path.join("outside");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    let mut options = probes.options(&work, &["zyg_probe"]);
    options.sandbox = SandboxPolicy { mode: SandboxMode::WorkspaceWrite, ..SandboxPolicy::off() };
    let kernel = Kernel::start(options).await.unwrap();
    assert!(kernel.forked_from().is_some(), "sandboxed kernels are forked too");
    let code = format!(
        "import os\nopen('inside.txt', 'w').write('ok')\ntry:\n    open({:?}, 'w').write('no')\n    outcome = 'written'\nexcept PermissionError:\n    outcome = 'refused'\noutcome",
        outside.join("x.txt").display().to_string()
    );
    assert_eq!(value(&kernel, &code).await, "'refused'");
    assert!(work.join("inside.txt").exists());
    assert!(!outside.join("x.txt").exists());
    kernel.shutdown().await;
}

#[tokio::test]
async fn a_cell_timeout_interrupts_a_forked_kernel_and_keeps_it() {
    let _serial = SERIAL.lock().await;
    let probes = Probes::new();
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(&probes, dir.path(), SpareLimits::OFF);
    let (pid, _, preloaded) = who(&eval(&engine, "t", WHO).await);
    assert!(preloaded);
    let params =
        EvalParams::from_json(json!({"cells": [{"code": "import time\ntime.sleep(60)", "timeout": 1}]})).unwrap();
    let result = engine.eval(&params, &CallContext::new("t"), &CancellationToken::new(), &ignore_events).await.unwrap();
    assert_eq!(result.cells[0].status, cellbox_engine::tool::CellStatus::Timeout, "{}", result.text);
    assert_eq!(who(&eval(&engine, "t", WHO).await).0, pid, "the same kernel goes on");
    engine.dispose_all().await;
}

#[tokio::test]
async fn a_forked_kernel_gets_its_own_memory_cgroup() {
    let _serial = SERIAL.lock().await;
    use cellbox_kernels::sandbox::{LimitMethod, SandboxPolicy};
    if matches!(cellbox_kernels::sandbox::support().memory_limit, LimitMethod::Rlimit | LimitMethod::Unavailable) {
        eprintln!("skipped: no memory cgroup here (a forked kernel is then spawned)");
        return;
    }
    let probes = Probes::new();
    let mut options = probes.options(probes.path(), &["zyg_probe"]);
    options.sandbox = SandboxPolicy { memory_limit: Some(256 << 20), ..SandboxPolicy::off() };
    let kernel = Kernel::start(options).await.unwrap();
    assert!(kernel.forked_from().is_some(), "kernels with a memory cgroup are forked too");
    let own = value(&kernel, "import os\nopen('/proc/self/cgroup').read()").await;
    assert!(own.contains("cellbox-"), "the kernel was moved into its own cgroup: {own}");
    let ended = run_to_end(
        &kernel,
        "x = bytearray(512 << 20)\nfor i in range(0, len(x), 4096):\n    x[i] = 1\nprint('allocated', len(x) >> 20)",
    )
    .await;
    match ended.outcome {
        Err(KernelError::Died { exit, .. }) => assert!(exit.contains("memory limit exceeded (256 MiB)"), "{exit}"),
        other => panic!("expected the memory limit to end the kernel, got {other:?} {}", ended.stdout),
    }
    kernel.shutdown().await;
}

#[test]
fn the_zygote_ends_with_the_host_process() {
    let probes = Probes::new();
    let output = common::binary::cellbox([
        "run",
        "--preload",
        "zyg_probe",
        "-c",
        "import os, sys\nprint('zyg_probe' in sys.modules, os.getppid())",
    ])
    .env("PYTHONPATH", probes.path())
    .output()
    .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    let line = stdout.lines().find(|l| l.starts_with("True ")).unwrap_or_else(|| panic!("{stdout}"));
    let zygote: u32 = line[5..].trim().parse().unwrap();
    let start = std::time::Instant::now();
    while alive(zygote) && start.elapsed() < PATIENCE {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!alive(zygote), "the fork server {zygote} outlived `cellbox run`");
}
