//! The shared local gateway through the CLI: one `kernel_gateway` for every
//! cellbox process, found again through `gateway.json`, replaced when stale,
//! stopped by `cellbox gateway stop`.

use crate::common;

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use cellbox_kernels::gateway::local::{GatewayInfo, read_info};
use common::gateway::processes_mentioning;

fn cellbox(state: &Path, args: &[&str]) -> Command {
    let mut command = common::binary::cellbox(args);
    command
        .env("CELLBOX_GATEWAY_DIR", state)
        .env("CELLBOX_BACKEND", "gateway")
        .env_remove("CELLBOX_GATEWAY_URL")
        .env("NO_COLOR", "1")
        .current_dir(state);
    command
}

fn run(state: &Path, code: &str) -> Output {
    cellbox(state, &["run", "-c", code]).output().unwrap()
}

fn text(output: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr))
}

/// Stops the recorded gateway whatever happens to the test.
struct StopOnDrop<'a>(&'a Path);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        let _ = cellbox(self.0, &["gateway", "stop"]).output();
    }
}

#[test]
fn two_processes_share_one_gateway_which_stops_on_request() {
    let state = tempfile::tempdir().unwrap();
    let dir = state.path();
    let _stop = StopOnDrop(dir);
    // Two cellbox processes race to a gateway that does not exist yet.
    let children: Vec<_> = (0..2)
        .map(|i| cellbox(dir, &["run", "-c", &format!("import os; print({i}, os.getcwd())")]).output_in_thread())
        .collect();
    let outputs: Vec<Output> = children.into_iter().map(|child| child.join().unwrap()).collect();
    for (i, output) in outputs.iter().enumerate() {
        assert!(output.status.success(), "{}", text(output));
        assert!(text(output).starts_with(&format!("{i} ")), "{}", text(output));
    }
    let info = read_info(dir).expect("gateway.json is written");
    let gateways = processes_mentioning(&format!("--KernelGatewayApp.port={}", info.port));
    assert_eq!(gateways, vec![info.pid], "exactly one gateway runs");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.join("gateway.json")).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "gateway.json holds a token");
    }

    // A third call reuses it.
    let again = run(dir, "6 * 7");
    assert_eq!(String::from_utf8_lossy(&again.stdout), "42\n", "{}", text(&again));
    assert_eq!(read_info(dir).unwrap(), info);

    let status = cellbox(dir, &["gateway", "status"]).output().unwrap();
    assert!(text(&status).contains("running and healthy"), "{}", text(&status));
    assert!(text(&status).contains(&info.url()), "{}", text(&status));

    let stop = cellbox(dir, &["gateway", "stop"]).output().unwrap();
    assert!(stop.status.success(), "{}", text(&stop));
    assert!(read_info(dir).is_none());
    let deadline = Instant::now() + common::PATIENCE;
    while !processes_mentioning(&dir.display().to_string()).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(processes_mentioning(&dir.display().to_string()), Vec::<u32>::new(), "no gateway or kernel is left");
}

#[test]
fn a_stale_gateway_record_is_replaced() {
    let state = tempfile::tempdir().unwrap();
    let dir = state.path();
    let _stop = StopOnDrop(dir);
    // A record of a gateway that died long ago (its pid is this test's child, reaped).
    let mut dead = Command::new("true").spawn().unwrap();
    dead.wait().unwrap();
    let stale = GatewayInfo {
        pid: dead.id(),
        port: 1,
        token: "old".into(),
        interpreter: "/nowhere/python".into(),
        version: "0".into(),
        started_at: 0,
    };
    std::fs::write(dir.join("gateway.json"), serde_json::to_string(&stale).unwrap()).unwrap();
    let output = run(dir, "1 + 1");
    assert_eq!(String::from_utf8_lossy(&output.stdout), "2\n", "{}", text(&output));
    let info = read_info(dir).unwrap();
    assert_ne!(info, stale);
    assert_ne!(info.pid, stale.pid);
}

#[test]
fn setup_gateway_check_reports_the_installed_modules() {
    let state = tempfile::tempdir().unwrap();
    let output = cellbox(state.path(), &["setup", "gateway", "--check"]).output().unwrap();
    assert!(output.status.success(), "{}", text(&output));
    assert!(text(&output).contains("jupyter_kernel_gateway"), "{}", text(&output));

    // An interpreter without them gets the install hint, and no gateway starts.
    let bare = tempfile::tempdir().unwrap();
    let venv = bare.path().join("venv");
    let made = Command::new(common::python()).args(["-m", "venv", "--without-pip"]).arg(&venv).status().unwrap();
    assert!(made.success());
    let missing = cellbox(state.path(), &["run", "--python", venv.join("bin/python").to_str().unwrap(), "-c", "1"])
        .output()
        .unwrap();
    assert!(!missing.status.success());
    assert!(text(&missing).contains("pip install jupyter_kernel_gateway ipykernel"), "{}", text(&missing));
    assert!(text(&missing).contains("cellbox setup gateway"), "{}", text(&missing));
    assert!(read_info(state.path()).is_none());
}

trait OutputInThread {
    fn output_in_thread(self) -> std::thread::JoinHandle<Output>;
}

impl OutputInThread for Command {
    fn output_in_thread(mut self) -> std::thread::JoinHandle<Output> {
        std::thread::spawn(move || self.output().unwrap())
    }
}
