//! Attacks through the Python SDK: on a local engine (the SDK's own
//! process starts `cellbox sdk-server`) and on `cellbox serve` as a remote
//! principal (tests/it/security/sdk_attacks.py makes them).

use std::path::Path;
use std::process::Command;

use super::common::{self, binary};
use super::scene::{CANARY, Scene, Serve};

/// Run the scenario on a local sandbox in the scene's workspace.
fn local(scenario: &str) {
    let scene = Scene::new();
    let mut command = attack(scenario, &scene.work, &scene);
    command.env("CELLBOX_SDK_ENGINE", "process");
    check(scenario, command);
    scene.assert_untouched();
}

/// Run the scenario as principal alice of a server (bob is the other principal).
fn remote(scenario: &str) {
    let scene = Scene::new();
    let (server, tokens) = Serve::start(&scene, &["alice", "bob"], &[]);
    let work = server.root.join("alice");
    std::fs::create_dir_all(&work).unwrap();
    let mut command = attack(scenario, &work, &scene);
    command.args([&server.base(), &tokens[0], &tokens[1]]);
    check(scenario, command);
    scene.assert_untouched();
}

fn attack(scenario: &str, work: &Path, scene: &Scene) -> Command {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/security/sdk_attacks.py");
    let mut command = Command::new(common::python());
    command.arg(script).arg(scenario).arg(work).arg(&scene.outside).arg(CANARY);
    scene.hostile_env(&mut command);
    command.env("PYTHONDONTWRITEBYTECODE", "1");
    command
}

fn check(scenario: &str, mut command: Command) {
    let output = command.output().unwrap();
    let (stdout, stderr) = (binary::text(&output.stdout), binary::text(&output.stderr));
    assert!(output.status.success() && stdout.contains(&format!("ok {scenario}")), "{scenario}:\n{stdout}\n{stderr}");
    assert!(!stdout.contains(CANARY), "the canary came back: {stdout}");
}

#[test]
fn local_system_files_are_not_the_sandbox_s() {
    local("system_files");
}

#[test]
fn remote_system_files_are_not_the_sandbox_s() {
    remote("system_files");
}

#[test]
fn local_planted_links_and_fifos_lead_nowhere() {
    local("planted_links");
}

#[test]
fn remote_planted_links_and_fifos_lead_nowhere() {
    remote("planted_links");
}

#[test]
fn local_a_kernel_racing_the_files_api_never_wins() {
    local("race");
}

#[test]
fn remote_a_kernel_racing_the_files_api_never_wins() {
    remote("race");
}

#[test]
fn local_watches_do_not_walk_the_disk() {
    local("watch_everything");
}

#[test]
fn remote_watches_do_not_walk_the_disk() {
    remote("watch_everything");
}

#[test]
fn local_a_planted_interpreter_never_runs_outside_the_sandbox() {
    local("probe");
}

#[test]
fn remote_a_planted_interpreter_never_runs_outside_the_sandbox() {
    remote("probe");
}

#[test]
fn a_principal_reaches_nothing_of_another() {
    remote("other_principal");
}

/// Nothing of this test binary is left in the sandbox's environment variables either.
#[test]
fn the_session_s_sockets_do_not_reach_kernels() {
    let scene = Scene::new();
    let mut command = binary::bare([
        "run",
        "-c",
        "import os; print(sorted(k for k in os.environ if 'SOCK' in k or 'DATABASE' in k or 'API_KEY' in k))",
    ]);
    scene.hostile_env(&mut command);
    command.current_dir(&scene.work).env("DISPLAY", ":0").env("DBUS_SESSION_BUS_ADDRESS", "unix:path=/x");
    let output = command.output().unwrap();
    let stdout = binary::text(&output.stdout);
    assert!(output.status.success(), "{stdout}{}", binary::text(&output.stderr));
    assert!(stdout.contains("[]") && !stdout.contains(CANARY), "{stdout}");
}
