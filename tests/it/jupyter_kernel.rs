//! Jupyter kernels started from their kernelspecs and driven over ZeroMQ
//! ([`cellbox_kernels::jupyter::JupyterKernel`]): a real ipykernel (from the
//! test environment) and a real IRkernel (from the system's packages, which
//! the test command installs where it can; skipped with the reason where not).
#![cfg(target_os = "linux")]

use crate::common;

use std::path::PathBuf;
use std::time::Duration;

use cellbox_kernels::jupyter::kernel::Heartbeat;
use cellbox_kernels::jupyter::{JupyterKernel, KernelSpec, SearchPath};
use cellbox_kernels::kernel::process::{Signal, signal_pid};
use cellbox_kernels::kernel::{CellOutput, ExecEvent, Execution, KernelError, KernelOptions};
use cellbox_kernels::runtime::Runtime;

/// The ipykernel kernelspec of the test environment's Python.
pub fn ipykernel() -> KernelSpec {
    let prefix = common::python().parent().and_then(|bin| bin.parent()).expect("a venv python").to_path_buf();
    SearchPath { dirs: vec![prefix.join("share/jupyter")] }.find("python3").expect("ipykernel is in the test venv")
}

/// IRkernel's kernelspec, or `None` (said on stderr) when R or IRkernel is missing; a
/// failure instead when `CELLBOX_TEST_IRKERNEL=required` (scripts/test sets it once R is installed).
pub fn irkernel() -> Option<KernelSpec> {
    match SearchPath::from_env(None).find("ir") {
        Ok(spec) => Some(spec),
        Err(error) if std::env::var("CELLBOX_TEST_IRKERNEL").as_deref() == Ok("required") => {
            panic!("IRkernel is required (CELLBOX_TEST_IRKERNEL=required) and missing: {error}")
        }
        Err(error) => {
            eprintln!(
                "skipped: IRkernel is not installed ({error}); scripts/test installs r-cran-irkernel with apt-get"
            );
            None
        }
    }
}

fn options(cwd: PathBuf) -> KernelOptions {
    KernelOptions::for_runtime(Runtime::Jupyter, "", cwd, common::test_env(&[]))
}

/// [`options`] under workspace-write in `workspace`, with `secret` unreadable.
fn sandboxed(workspace: &std::path::Path, secret: &std::path::Path) -> KernelOptions {
    let mut options = options(workspace.into());
    options.sandbox = cellbox_kernels::sandbox::SandboxPolicy {
        mode: cellbox_kernels::sandbox::SandboxMode::WorkspaceWrite,
        deny_read: vec![secret.into()],
        ..Default::default()
    };
    options
}

/// Interrupt the cell of `execution` once it printed, and its output, which must say it was cancelled.
async fn interrupt_once_it_prints(kernel: &JupyterKernel, mut execution: Execution) -> CellOutput {
    loop {
        match execution.next().await {
            Some(Ok(ExecEvent::Stdout(_))) => break,
            Some(Ok(_)) => {}
            other => panic!("the cell ended before it printed: {other:?}"),
        }
    }
    kernel.interrupt().unwrap();
    let interrupted = execution.collect().await.unwrap();
    assert!(interrupted.done.cancelled, "{interrupted:?}");
    interrupted
}

async fn run(kernel: &JupyterKernel, code: &str) -> CellOutput {
    kernel.execute_with(code, Default::default()).await.unwrap().collect().await.unwrap()
}

#[tokio::test]
async fn ipykernel_keeps_state_streams_displays_and_reports_errors() {
    let cwd = tempfile::tempdir().unwrap();
    let kernel = JupyterKernel::start(options(cwd.path().into()), ipykernel()).await.expect("ipykernel starts");
    assert_eq!(kernel.language_info()["name"], "python");
    let first = run(&kernel, "x = 41\nprint('hello')\nimport sys; print('to err', file=sys.stderr)\nx + 1").await;
    assert_eq!(first.stdout(), "hello\n");
    assert_eq!(first.stderr(), "to err\n");
    assert_eq!(first.results()[0], "42", "{first:?}");
    let display = run(&kernel, "from IPython.display import display, HTML\ndisplay(HTML('<b>x</b>'))").await;
    assert_eq!(display.displays()[0]["text/html"], "<b>x</b>", "{display:?}");
    let error = run(&kernel, "1/0").await;
    assert_eq!(error.errors()[0].ename, "ZeroDivisionError");
    assert!(error.errors()[0].traceback.concat().contains("1/0"), "{error:?}");
    assert!(!error.errors()[0].traceback.concat().contains('\u{1b}'), "colour codes are stripped");
    assert_eq!(
        run(&kernel, "import os; print(os.getcwd())").await.stdout().trim(),
        cwd.path().canonicalize().unwrap().to_str().unwrap()
    );
    kernel.shutdown().await;
    assert!(!kernel.is_alive());
}

#[tokio::test]
async fn an_interrupt_keeps_the_state_and_a_crash_names_how_it_died() {
    use cellbox_kernels::jupyter::spec::InterruptMode;
    // SIGINT (the default), then an `interrupt_request` on the control channel, as the kernelspec asks.
    let mut kernel: Option<JupyterKernel> = None;
    for mode in [InterruptMode::Signal, InterruptMode::Message] {
        if let Some(previous) = kernel.take() {
            previous.shutdown().await;
        }
        let mut spec = ipykernel();
        spec.interrupt_mode = mode;
        let started = JupyterKernel::start(options(std::env::temp_dir()), spec).await.unwrap();
        run(&started, "kept = 'yes'").await;
        let execution = started
            .execute_with("import time\nprint('sleeping', flush=True)\ntime.sleep(600)", Default::default())
            .await
            .unwrap();
        interrupt_once_it_prints(&started, execution).await;
        assert_eq!(run(&started, "print(kept)").await.stdout(), "yes\n", "{mode:?}");
        kernel = Some(started);
    }
    let kernel = kernel.unwrap();
    let crashed = kernel.execute_with("import os; os._exit(3)", Default::default()).await.unwrap().collect().await;
    match crashed {
        Err(KernelError::Died { exit, .. }) => assert!(exit.contains("exit code 3"), "{exit}"),
        other => panic!("a crash is a death: {other:?}"),
    }
    assert!(!kernel.is_alive());
    assert!(kernel.execute_with("1", Default::default()).await.is_err());
}

#[tokio::test]
async fn a_kernel_that_stops_answering_its_heartbeat_while_idle_is_declared_dead() {
    let heartbeat = Heartbeat { interval: Duration::from_secs(1), misses: 3 };
    let kernel = JupyterKernel::start_with(options(std::env::temp_dir()), ipykernel(), heartbeat).await.unwrap();
    signal_pid(kernel.pid(), Signal::SIGSTOP).unwrap();
    let deadline = tokio::time::Instant::now() + common::PATIENCE;
    while kernel.is_alive() {
        assert!(tokio::time::Instant::now() < deadline, "a stopped kernel was never declared dead");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(kernel.death_reason().unwrap().contains("stopped answering its heartbeat"), "{:?}", kernel.death_reason());
}

#[tokio::test]
async fn a_kernel_that_cannot_start_says_why() {
    let mut spec = ipykernel();
    spec.argv = vec!["/no/such/kernel".into(), "{connection_file}".into()];
    let error = JupyterKernel::start(options(std::env::temp_dir()), spec).await.unwrap_err().to_string();
    assert!(error.contains("could not run /no/such/kernel"), "{error}");
    let mut spec = ipykernel();
    spec.argv = vec!["sh".into(), "-c".into(), "echo broken kernel >&2; exit 4".into()];
    let error = JupyterKernel::start(options(std::env::temp_dir()), spec).await.unwrap_err().to_string();
    assert!(error.contains("exit code 4") && error.contains("broken kernel"), "{error}");
}

#[tokio::test]
async fn irkernel_keeps_state_plots_and_reports_errors() {
    let Some(spec) = irkernel() else { return };
    // IRkernel answers heartbeats from its main loop: a cell longer than three missed beats
    // must not look like a dead kernel.
    let heartbeat = Heartbeat { interval: Duration::from_secs(1), misses: 3 };
    let kernel =
        JupyterKernel::start_with(options(std::env::temp_dir()), spec, heartbeat).await.expect("IRkernel starts");
    assert_eq!(run(&kernel, "Sys.sleep(5); cat('slept')").await.stdout(), "slept");
    assert!(kernel.is_alive());
    assert_eq!(kernel.language_info()["name"], "R");
    run(&kernel, "x <- 41").await;
    let out = run(&kernel, "cat('hello\\n'); x + 1").await;
    assert_eq!(out.stdout(), "hello\n");
    // IRkernel shows a value as display_data, in several formats.
    assert_eq!(out.displays()[0]["text/plain"], "[1] 42", "{out:?}");
    let plot = run(&kernel, "plot(1:10)").await;
    assert!(plot.displays().iter().any(|d| d.contains_key("image/png")), "{plot:?}");
    let error = run(&kernel, "stop('boom')").await;
    assert!(error.errors()[0].evalue.contains("boom"), "{error:?}");
    let execution = kernel.execute_with("cat('sleeping\\n'); Sys.sleep(600)", Default::default()).await.unwrap();
    let interrupted = interrupt_once_it_prints(&kernel, execution).await;
    assert_eq!(run(&kernel, "cat(x)").await.stdout(), "41", "{interrupted:?}");
    kernel.shutdown().await;
}

/// A kernelspec whose "kernel" is the Python script `script` (given the connection file, then `args`).
fn fake_kernel(script: &str, args: &[&str]) -> KernelSpec {
    let mut spec = ipykernel();
    spec.argv =
        vec![common::python().to_string_lossy().into_owned(), "-c".into(), script.into(), "{connection_file}".into()];
    spec.argv.extend(args.iter().map(|arg| arg.to_string()));
    spec.name = "fake".into();
    spec
}

/// Binds the sockets `first..=5` at the connection file's `ip`, then waits.
const BIND_REST: &str = r#"
import json, os, socket, sys, time
c = json.load(open(sys.argv[1]))
def bind(port):
    s = socket.socket(socket.AF_UNIX)
    s.bind(f"{c['ip']}-{port}")
    s.listen()
    return s
"#;

#[tokio::test]
async fn a_socket_the_kernel_replaced_by_a_symlink_is_never_followed() {
    let outside = tempfile::tempdir().unwrap();
    let service = outside.path().join("service.sock");
    let listener = std::os::unix::net::UnixListener::bind(&service).unwrap();
    listener.set_nonblocking(true).unwrap();
    let script = format!(
        "{BIND_REST}\nos.symlink(sys.argv[2], c['ip'] + '-1')\nheld = [bind(p) for p in range(2, 6)]\ntime.sleep(600)"
    );
    let error = JupyterKernel::start(options(std::env::temp_dir()), fake_kernel(&script, &[service.to_str().unwrap()]))
        .await
        .unwrap_err()
        .to_string();
    assert!(error.contains("k-1 in its connection folder is not a socket"), "{error}");
    assert!(listener.accept().is_err(), "the host connected to a socket the kernel pointed it at");
}

#[tokio::test]
async fn a_kernel_announcing_a_huge_frame_is_cut_off_and_the_host_lives() {
    // A ZMTP 3 greeting, then a frame header claiming 64 TiB, on every socket.
    let script = format!(
        "{BIND_REST}\nimport threading\nheld = [bind(p) for p in range(1, 6)]\n\
         greeting = b'\\xff' + bytes(8) + b'\\x7f\\x03\\x00NULL' + bytes(16) + b'\\x00' + bytes(31)\n\
         def serve(s):\n    while True:\n        conn, _ = s.accept()\n        conn.sendall(greeting + b'\\x02' + (1 << 46).to_bytes(8, 'big'))\n\
         for s in held:\n    threading.Thread(target=serve, args=(s,), daemon=True).start()\ntime.sleep(600)"
    );
    let error =
        JupyterKernel::start(options(std::env::temp_dir()), fake_kernel(&script, &[])).await.unwrap_err().to_string();
    assert!(error.contains("the kernel sent a frame of 70368744177664 bytes"), "{error}");
}

#[tokio::test]
async fn the_sandbox_holds_for_ipykernel() {
    let secret = common::planted_key();
    let outside = tempfile::tempdir().unwrap();
    let marker = outside.path().join("marker");
    let workspace = tempfile::tempdir().unwrap();
    let options = sandboxed(workspace.path(), secret.path());
    let kernel = JupyterKernel::start(options, ipykernel()).await.expect("a sandboxed ipykernel starts");
    let code = format!(
        "try:\n    print(open('{}/id_rsa').read())\nexcept OSError:\n    print('read-refused')\ntry:\n    open('{}', 'w')\n    print('wrote-outside')\nexcept OSError:\n    print('write-refused')\nopen('inside', 'w').write('ok')",
        secret.path().display(),
        marker.display()
    );
    let out = run(&kernel, &code).await;
    assert_eq!(out.stdout(), "read-refused\nwrite-refused\n", "{out:?}");
    assert!(!marker.exists(), "a marker outside the workspace appeared");
    assert!(workspace.path().join("inside").exists(), "the workspace is writable");
    kernel.shutdown().await;
}

/// tslab, a Jupyter kernel for TypeScript from the npm registry (scripts/test installs it into
/// tests/jupyter-npm), as a kernelspec on the test's Node; `None` (said) where it is not installed.
fn tslab() -> Option<KernelSpec> {
    let bin = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/jupyter-npm/node_modules/tslab/bin/tslab");
    if !bin.exists() {
        eprintln!("skipped: tslab is not installed ({}); scripts/test installs it with npm ci", bin.display());
        return None;
    }
    let node = std::env::var("CELLBOX_TEST_NODE").unwrap_or_else(|_| "node".into());
    Some(KernelSpec {
        name: "tslab".into(),
        dir: bin.parent().unwrap().into(),
        argv: vec![
            node,
            bin.display().to_string(),
            "kernel".into(),
            "--config-path".into(),
            "{connection_file}".into(),
        ],
        display_name: "TypeScript (tslab)".into(),
        language: "typescript".into(),
        interrupt_mode: Default::default(),
        env: Default::default(),
    })
}

#[tokio::test]
async fn tslab_from_npm_keeps_state_fails_and_dies_under_the_sandbox() {
    let Some(spec) = tslab() else { return };
    let secret = common::planted_key();
    let workspace = tempfile::tempdir().unwrap();
    // A project with Node's types installed, as tslab expects (it type-checks against them).
    let modules = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/jupyter-npm/node_modules");
    std::os::unix::fs::symlink(modules, workspace.path().join("node_modules")).unwrap();
    let options = sandboxed(workspace.path(), secret.path());
    let (options_again, spec_again) = (options.clone(), spec.clone());
    let kernel = JupyterKernel::start(options, spec).await.expect("tslab starts");
    run(&kernel, "let x: number = 41;").await;
    let out = run(&kernel, "console.log('hi'); x + 1").await;
    // tslab shows a cell's value on stdout, after what the cell printed.
    assert_eq!(out.stdout(), "hi\n42\n", "{out:?}");
    let code = format!(
        "import * as fs from 'fs';\ntry {{ console.log(fs.readFileSync('{}/id_rsa', 'utf8')) }} catch {{ \
         console.log('read-refused') }}",
        secret.path().display()
    );
    let read = run(&kernel, &code).await;
    assert_eq!(read.stdout(), "read-refused\n", "{read:?}");
    let error = run(&kernel, "throw new Error('boom')").await;
    // tslab writes a thrown error's stack to stderr and fails the request.
    assert!(error.stderr().contains("Error: boom"), "{error:?}");
    assert_eq!(error.done.status, cellbox_protocol::DoneStatus::Error, "{error:?}");
    // tslab aborts what it gets in the 200 ms after an error: the crash is a fresh kernel's.
    kernel.shutdown().await;
    let kernel = JupyterKernel::start(options_again, spec_again).await.expect("tslab starts again");
    let crashed = kernel.execute_with("process.exit(3)", Default::default()).await.unwrap().collect().await;
    match crashed {
        Err(KernelError::Died { exit, .. }) => assert!(exit.contains("exit code 3"), "{exit}"),
        other => panic!("a crash is a death: {other:?}"),
    }
}

/// Deno's own `deno jupyter`, from the npm registry (the binary for this
/// platform, which scripts/test installs into tests/jupyter-npm): a kernel that
/// speaks only TCP. `None` (said) where it is not installed.
fn deno() -> Option<KernelSpec> {
    let modules = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/jupyter-npm/node_modules/@deno");
    let bin = ["linux-x64-glibc", "linux-arm64-glibc"]
        .iter()
        .map(|dir| modules.join(dir).join("deno"))
        .find(|bin| bin.exists());
    let Some(bin) = bin else {
        eprintln!("skipped: Deno is not installed ({}); scripts/test installs it with npm ci", modules.display());
        return None;
    };
    Some(KernelSpec {
        name: "deno".into(),
        dir: bin.parent().unwrap().into(),
        argv: vec![
            bin.display().to_string(),
            "jupyter".into(),
            "--kernel".into(),
            "--conn".into(),
            "{connection_file}".into(),
        ],
        display_name: "Deno".into(),
        language: "typescript".into(),
        interrupt_mode: Default::default(),
        env: Default::default(),
    })
}

#[tokio::test]
async fn deno_from_npm_over_tcp_keeps_state_fails_and_is_sandboxed() {
    let Some(spec) = deno() else { return };
    assert!(spec.speaks_only_tcp());
    let secret = common::planted_key();
    let workspace = tempfile::tempdir().unwrap();
    let options = sandboxed(workspace.path(), secret.path());
    let kernel = JupyterKernel::start(options, spec).await.expect("Deno starts");
    // Deno may publish a cell's console output after the cell's end (so may be lost with it):
    // what is checked here goes through a file the cell writes.
    let out = workspace.path().join("out");
    run(&kernel, "const x: number = 41;").await;
    run(&kernel, "Deno.writeTextFileSync('out', String(x + 1))").await;
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "42", "the state is kept");
    let code = format!(
        "let read = 'read-refused'; try {{ read = Deno.readTextFileSync('{}/id_rsa') }} catch {{}}\n\
         Deno.writeTextFileSync('out', read)",
        secret.path().display()
    );
    run(&kernel, &code).await;
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "read-refused");
    let error = run(&kernel, "throw new Error('boom')").await;
    assert_eq!(error.done.status, cellbox_protocol::DoneStatus::Error, "{error:?}");
    // Deno ends on SIGINT (its kernelspec asks for signals): an interrupt is its death, named in the cell.
    // (The interrupt goes out once the kernel has said the cell started.)
    let spinning = kernel.execute_with("let n = 0; while (true) { n++ }", Default::default()).await.unwrap();
    kernel.interrupt().unwrap();
    match spinning.collect().await {
        Err(KernelError::Died { exit, .. }) => assert!(exit.contains("SIGINT"), "{exit}"),
        other => panic!("Deno dies of an interrupt: {other:?}"),
    }
}

/// A TCP kernel's ports close as it dies, and its process may take a while
/// longer to end (JJava's launcher outlives the JVM it started): the cell is
/// told how the process ended, not that a port refused and it was killed.
#[tokio::test]
async fn a_tcp_kernel_whose_ports_close_before_its_process_ends_is_named_by_its_exit() {
    // A "java" that runs ipykernel over TCP and lingers after it ends (3 s: the host's
    // reconnection comes long before).
    let bin = tempfile::tempdir().unwrap();
    let wrapper = bin.path().join("java");
    let script = format!(
        "#!/bin/sh\n'{}' -m ipykernel_launcher -f \"$1\"\ncode=$?\nsleep 3\nexit $code\n",
        common::python().display()
    );
    std::fs::write(&wrapper, script).unwrap();
    std::fs::set_permissions(&wrapper, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let mut spec = ipykernel();
    spec.argv = vec![wrapper.to_string_lossy().into_owned(), "{connection_file}".into()];
    spec.name = "lingering".into();
    assert!(spec.speaks_only_tcp());
    let workspace = tempfile::tempdir().unwrap();
    let secret = common::planted_key();
    let kernel = JupyterKernel::start(sandboxed(workspace.path(), secret.path()), spec).await.expect("it starts");
    assert_eq!(run(&kernel, "print(6 * 7)").await.stdout(), "42\n");
    let crashed = kernel.execute_with("import os; os._exit(9)", Default::default()).await.unwrap().collect().await;
    match crashed {
        Err(KernelError::Died { exit, .. }) => {
            assert!(exit.contains("exit code 9") && !exit.contains("killed"), "{exit}")
        }
        other => panic!("a crash is a death: {other:?}"),
    }
}
