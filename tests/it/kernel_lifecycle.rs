//! Starting, interrupting, crashing and stopping real kernels, and proving
//! no process is left behind.

use crate::common;

use std::time::Duration;

use cellbox_kernels::kernel::{ExecEvent, Kernel, KernelError, KernelOptions};
use common::{PATIENCE, eventually, gate, group_members, options, python, run, start};

async fn wait_started(execution: &mut cellbox_kernels::kernel::Execution) {
    match execution.next().await {
        Some(Ok(ExecEvent::Started)) => {}
        other => panic!("expected started, got {other:?}"),
    }
}

#[tokio::test]
async fn sigint_cancels_a_busy_cell_and_keeps_state() {
    let kernel = start().await;
    run(&kernel, "state = [1, 2, 3]").await;
    let mut execution = kernel.execute("print('spinning', flush=True)\nwhile True:\n    pass").await.unwrap();
    wait_started(&mut execution).await;
    // Interrupted once the loop runs (it printed), not after a guess at how long that takes.
    assert!(matches!(execution.next().await, Some(Ok(ExecEvent::Stdout(_)))));
    kernel.interrupt().unwrap();
    let mut events = Vec::new();
    // The loop never ends by itself: a cell that ends at all was interrupted.
    while let Some(event) = tokio::time::timeout(PATIENCE, execution.next()).await.expect("the interrupt ends the cell")
    {
        events.push(event.unwrap());
    }
    let Some(ExecEvent::Done(done)) = events.last() else { panic!("{events:?}") };
    assert!(done.cancelled);
    assert!(events.iter().any(|e| matches!(e, ExecEvent::Error(err) if err.ename == "KeyboardInterrupt")));
    assert_eq!(run(&kernel, "state").await.results(), ["[1, 2, 3]"]);
}

#[tokio::test]
async fn sigint_between_cells_is_ignored() {
    let kernel = start().await;
    run(&kernel, "x = 1").await;
    // Between cells the runner's handler drops SIGINT (the gate is disarmed
    // before `done`): nothing is left to interrupt the next cell.
    kernel.interrupt().unwrap();
    assert!(kernel.is_alive());
    let output = run(&kernel, "x + 1").await;
    assert_eq!(output.results(), ["2"]);
    assert!(!output.done.cancelled);
}

#[tokio::test]
async fn a_cells_own_sigint_handler_ends_with_the_cell() {
    let kernel = start().await;
    run(&kernel, "import signal\ndef loud(*_):\n    raise RuntimeError('the cell handler ran')\nsignal.signal(signal.SIGINT, loud)").await;
    // Had the cell's handler outlived it, this SIGINT would raise in the runner's own loop.
    kernel.interrupt().unwrap();
    let output = run(&kernel, "x = 41\nx + 1").await;
    assert_eq!(output.results(), ["42"], "{output:?}");
    assert!(!output.done.cancelled);
    assert!(kernel.is_alive());
}

#[tokio::test]
async fn a_cell_stuck_in_c_is_killed_by_the_ladder_with_its_children() {
    let kernel = start().await;
    let pgid = kernel.pid();
    let code = "import ctypes, signal, subprocess\n\
                child = subprocess.Popen(['sleep', '100'])\n\
                signal.signal(signal.SIGINT, signal.SIG_IGN)\n\
                print('blocked', flush=True)\n\
                ctypes.CDLL(None).sleep(100)";
    let mut execution = kernel.execute(code).await.unwrap();
    wait_started(&mut execution).await;
    match execution.next().await {
        Some(Ok(ExecEvent::Stdout(text))) => assert_eq!(text, "blocked\n"),
        other => panic!("expected the marker, got {other:?}"),
    }
    assert_eq!(group_members(pgid).len(), 2, "runner and its sleep child");
    kernel.interrupt().unwrap();
    let answered = tokio::time::timeout(Duration::from_millis(500), execution.next()).await;
    assert!(answered.is_err(), "SIGINT is ignored, so no answer is expected: {answered:?}");
    let exit = kernel.shutdown().await;
    assert!(exit.is_some(), "the runner was stopped");
    assert!(!kernel.is_alive());
    // The runner is gone; its `sleep` child was sent SIGTERM, then SIGKILL at the latest.
    assert!(eventually(PATIENCE, || group_members(pgid).is_empty()).await, "{:?} left", group_members(pgid));
    match execution.next().await {
        Some(Err(KernelError::Died { .. })) | Some(Err(KernelError::Closed)) => {}
        other => panic!("the pending cell must resolve with an error, got {other:?}"),
    }
}

#[tokio::test]
async fn shutdown_removes_children_started_by_cells() {
    let kernel = start().await;
    let pgid = kernel.pid();
    run(&kernel, "import subprocess\np = subprocess.Popen(['sleep', '100'])").await;
    assert_eq!(group_members(pgid).len(), 2);
    let exit = kernel.shutdown().await.expect("exited");
    assert_eq!(exit.code, Some(0), "left through the exit frame: {exit}");
    // The runner is gone; its `sleep` child was sent SIGTERM, then SIGKILL at the latest.
    assert!(eventually(PATIENCE, || group_members(pgid).is_empty()).await, "{:?} left", group_members(pgid));
    assert!(kernel.shutdown().await.is_some(), "shutdown is idempotent");
    assert!(matches!(kernel.execute("1").await, Err(KernelError::Closed)));
}

#[tokio::test]
async fn dropping_a_kernel_kills_its_group() {
    let kernel = start().await;
    let pgid = kernel.pid();
    run(&kernel, "import subprocess\np = subprocess.Popen(['sleep', '100'])").await;
    drop(kernel);
    assert!(eventually(PATIENCE, || group_members(pgid).is_empty()).await);
}

#[tokio::test]
async fn a_crash_mid_cell_resolves_the_request_with_the_exit_code() {
    let kernel = start().await;
    let result = kernel.execute("print('before')\nimport os\nos._exit(3)").await.unwrap().collect().await;
    match result {
        Err(KernelError::Died { exit, .. }) => assert_eq!(exit, "exit code 3"),
        other => panic!("expected Died, got {other:?}"),
    }
    assert!(!kernel.is_alive());
    let again = kernel.execute("1").await;
    assert!(matches!(again, Err(KernelError::Died { .. })), "{:?}", again.err());
}

#[tokio::test]
async fn a_kill_by_signal_names_the_signal() {
    let kernel = start().await;
    let result =
        kernel.execute("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)").await.unwrap().collect().await;
    let error = result.unwrap_err();
    assert!(error.to_string().contains("signal 9 (SIGKILL)"), "{error}");
}

#[tokio::test]
async fn queued_requests_all_resolve_when_the_kernel_dies() {
    let kernel = start().await;
    // The first cell dies only once the second request is queued behind it.
    let dir = tempfile::tempdir().unwrap();
    let go = dir.path().join("go");
    let first = kernel.execute(&format!("import os\n{}os._exit(5)", gate(&go))).await.unwrap();
    let second = kernel.execute("1").await.unwrap();
    std::fs::write(&go, "").unwrap();
    assert!(first.collect().await.is_err());
    assert!(matches!(second.collect().await, Err(KernelError::Died { .. })));
}

#[tokio::test]
async fn the_runner_is_rewritten_when_deleted_between_spawns() {
    let cache = tempfile::tempdir().unwrap();
    let mut opts = options(&std::env::temp_dir());
    opts.cache_dir = Some(cache.path().to_path_buf());
    let first = Kernel::start(opts.clone()).await.unwrap();
    first.shutdown().await;
    for entry in std::fs::read_dir(cache.path()).unwrap() {
        std::fs::remove_dir_all(entry.unwrap().path()).unwrap();
    }
    let second = Kernel::start(opts).await.expect("runner rewritten");
    assert_eq!(run(&second, "6 * 7").await.results(), ["42"]);
    second.shutdown().await;
}

#[tokio::test]
async fn a_bad_cwd_is_refused_before_spawning() {
    let missing = Kernel::start(options(std::path::Path::new("/no/such/dir"))).await;
    let error = missing.expect_err("refused");
    assert!(matches!(error, KernelError::InvalidCwd { .. }));
    assert!(error.to_string().contains("/no/such/dir"));
    let file = tempfile::NamedTempFile::new().unwrap();
    let error = Kernel::start(options(file.path())).await.expect_err("refused");
    assert!(error.to_string().contains("is not a directory"), "{error}");
}

#[tokio::test]
async fn the_init_request_sets_cwd_and_sys_path() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("localmod.py"), "VALUE = 'local'\n").unwrap();
    let kernel = Kernel::start(options(dir.path())).await.unwrap();
    let output = run(&kernel, "import os, localmod\n(os.getcwd() == os.path.realpath('.'), localmod.VALUE)").await;
    assert_eq!(output.results(), ["(True, 'local')"]);
    let cwd = run(&kernel, "import os; os.getcwd()").await.results()[0].clone();
    assert!(cwd.contains(&*dir.path().file_name().unwrap().to_string_lossy()));
}

#[tokio::test]
async fn startup_failures_are_explained() {
    let cwd = std::env::temp_dir();
    let missing = Kernel::start(KernelOptions::new("/no/such/python", &cwd, Default::default())).await;
    let error = missing.err().unwrap();
    assert!(matches!(error, KernelError::Spawn { .. }), "{error}");
    assert!(error.to_string().contains("setup python --check"));

    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("fake-python");
    std::fs::write(&script, "#!/bin/sh\necho 'fake python is broken' >&2\nexit 4\n").unwrap();
    make_executable(&script);
    let error = Kernel::start(KernelOptions::new(&script, &cwd, Default::default())).await.err().unwrap();
    let text = error.to_string();
    assert!(text.contains("exit code 4") && text.contains("fake python is broken"), "{text}");

    let slow = dir.path().join("slow-python");
    std::fs::write(&slow, "#!/bin/sh\nexec sleep 30\n").unwrap();
    make_executable(&slow);
    let mut opts = KernelOptions::new(&slow, &cwd, Default::default());
    opts.startup_timeout = Duration::from_millis(500);
    // (Had the timeout been ignored, the script would end after 30 s as a failed start, not a timeout.)
    let error = Kernel::start(opts).await.err().unwrap();
    assert!(matches!(error, KernelError::StartupTimeout { .. }), "{error}");
}

fn make_executable(path: &std::path::Path) {
    #[cfg(unix)]
    std::fs::set_permissions(path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    #[cfg(not(unix))]
    let _ = path;
}

#[tokio::test]
async fn an_orphaned_runner_exits_by_itself() {
    use std::io::BufRead;
    let runner = cellbox_kernels::runtime::python::ensure_runner().unwrap();
    // A shell, the runner's parent and host, starts the runner as its own
    // session and stays until the test has seen the runner running; the test
    // then kills it, as a crashed host would end (a host that ended at once
    // could be gone before the runner was ever seen). The runner's stdin is the
    // test's pipe, held open (a background command's stdin would otherwise be
    // /dev/null, whose end alone makes a runner leave), so only the host watch
    // can make it leave.
    let script = format!(
        "exec 3<&0; setsid {} -u {} --host-pid $$ <&3 3<&- >/dev/null 2>&1 & echo $!; exec sleep 600 3<&-",
        python().display(),
        runner.display()
    );
    let shell = std::process::Command::new("sh")
        .arg("-c")
        .arg(script)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut shell = KilledOnDrop(shell);
    let _stdin_held_open = shell.0.stdin.take();
    let mut line = String::new();
    std::io::BufReader::new(shell.0.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let pid: u32 = line.trim().parse().unwrap();
    // The runner, once `setsid` (whose command line names it too) has made its session and run it.
    let is_runner = || {
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let program = cmdline.split(|byte| *byte == 0).next().unwrap_or_default();
        !program.ends_with(b"setsid")
            && String::from_utf8_lossy(&cmdline).contains(&*runner.to_string_lossy())
            && !group_members(pid).is_empty()
    };
    assert!(eventually(PATIENCE, is_runner).await, "the runner started");
    assert!(!group_members(pid).is_empty(), "the runner left while its host lived");
    drop(shell);
    let gone = eventually(PATIENCE, || group_members(pid).is_empty()).await;
    assert!(gone, "the orphaned runner is still running");
}

/// A child killed (and reaped) when the test is done with it, or panics.
struct KilledOnDrop(std::process::Child);

impl Drop for KilledOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn environment_filtering_keeps_secrets_out_of_user_code() {
    use std::ffi::OsString;
    let planted: Vec<(OsString, OsString)> = [
        ("PATH", std::env::var("PATH").unwrap().as_str()),
        ("HOME", "/home/test"),
        ("OPENAI_API_KEY", "sk-planted"),
        ("ANTHROPIC_API_KEY", "planted"),
        ("DATABASE_URL", "postgres://user:planted@db/x"),
        ("AWS_SECRET_ACCESS_KEY", "planted"),
        ("GITHUB_TOKEN", "planted"),
        ("CELLBOX_SERVICE_TOKEN", "planted"),
        ("CELLBOX_MODE", "kept"),
        ("LC_TIME", "C"),
    ]
    .iter()
    .map(|(k, v)| (OsString::from(k), OsString::from(v)))
    .collect();
    let extra = std::collections::BTreeMap::from([("CHOSEN".to_string(), "passed-on-purpose".to_string())]);
    let env =
        cellbox_kernels::discovery::env::kernel_env(planted, &cellbox_kernels::discovery::EnvActivation::None, &extra);
    let kernel = Kernel::start(KernelOptions::new(python(), std::env::temp_dir(), env)).await.unwrap();
    let output = run(
        &kernel,
        "import os, subprocess\n\
         child = subprocess.run(['env'], capture_output=True, text=True).stdout\n\
         print('planted' in repr(dict(os.environ)), 'planted' in child)\n\
         print(sorted(k for k in os.environ if k in ('CELLBOX_MODE', 'LC_TIME', 'CHOSEN', 'HOME', 'MPLBACKEND', 'PYTHONUNBUFFERED')))",
    )
    .await;
    assert_eq!(
        output.stdout(),
        "False False\n['CELLBOX_MODE', 'CHOSEN', 'HOME', 'LC_TIME', 'MPLBACKEND', 'PYTHONUNBUFFERED']\n"
    );
}

#[tokio::test]
async fn sigint_interrupts_a_blocking_sleep() {
    let kernel = start().await;
    let mut execution = kernel.execute("import time\nprint('sleeping', flush=True)\ntime.sleep(3600)").await.unwrap();
    wait_started(&mut execution).await;
    assert!(matches!(execution.next().await, Some(Ok(ExecEvent::Stdout(_)))));
    kernel.interrupt().unwrap();
    let output = tokio::time::timeout(PATIENCE, execution.collect()).await.expect("the interrupt ends the sleep");
    assert!(output.unwrap().done.cancelled);
}
