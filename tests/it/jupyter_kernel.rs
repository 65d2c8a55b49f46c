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
use cellbox_kernels::kernel::{CellOutput, ExecEvent, KernelError, KernelOptions};
use cellbox_kernels::runtime::Runtime;

/// The ipykernel kernelspec of the test environment's Python.
pub fn ipykernel() -> KernelSpec {
    let prefix = common::python().parent().and_then(|bin| bin.parent()).expect("a venv python").to_path_buf();
    SearchPath { dirs: vec![prefix.join("share/jupyter")] }.find("python3").expect("ipykernel is in the test venv")
}

/// IRkernel's kernelspec, or `None` (said on stderr) when R or IRkernel is missing.
pub fn irkernel() -> Option<KernelSpec> {
    match SearchPath::from_env(None).find("ir") {
        Ok(spec) => Some(spec),
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
    let kernel = JupyterKernel::start(options(std::env::temp_dir()), ipykernel()).await.unwrap();
    run(&kernel, "kept = 'yes'").await;
    let mut execution = kernel
        .execute_with("import time\nprint('sleeping', flush=True)\ntime.sleep(600)", Default::default())
        .await
        .unwrap();
    loop {
        match execution.next().await {
            Some(Ok(ExecEvent::Stdout(_))) => break,
            Some(Ok(_)) => {}
            other => panic!("the cell ended before it slept: {other:?}"),
        }
    }
    kernel.interrupt().unwrap();
    let interrupted = execution.collect().await.unwrap();
    assert!(interrupted.done.cancelled, "{interrupted:?}");
    assert_eq!(run(&kernel, "print(kept)").await.stdout(), "yes\n");
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
    let heartbeat = Heartbeat { interval: Duration::from_millis(200), misses: 3 };
    let kernel = JupyterKernel::start_with(options(std::env::temp_dir()), ipykernel(), heartbeat).await.unwrap();
    // A long cell is not a missed heartbeat, whatever the kernel does meanwhile.
    let slow = run(&kernel, "import time; time.sleep(1.5); print('done')").await;
    assert_eq!(slow.stdout(), "done\n");
    assert!(kernel.is_alive());
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
    let kernel = JupyterKernel::start(options(std::env::temp_dir()), spec).await.expect("IRkernel starts");
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
    let mut execution = kernel.execute_with("cat('sleeping\\n'); Sys.sleep(600)", Default::default()).await.unwrap();
    loop {
        match execution.next().await {
            Some(Ok(ExecEvent::Stdout(_))) => break,
            Some(Ok(_)) => {}
            other => panic!("the cell ended before it slept: {other:?}"),
        }
    }
    kernel.interrupt().unwrap();
    let interrupted = execution.collect().await.unwrap();
    assert!(interrupted.done.cancelled, "{interrupted:?}");
    assert_eq!(run(&kernel, "cat(x)").await.stdout(), "41", "{interrupted:?}");
    kernel.shutdown().await;
}
