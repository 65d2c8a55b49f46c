//! `cellbox sdk-server`'s stdin and stdout: anonymous pipes (as the SDK starts
//! it) are read and written by the runtime itself, without touching the
//! descriptors its children may share; anything else (a named pipe, a socket)
//! by a thread each; a line that is not UTF-8 ends the engine with its kernels
//! and a reason.

use crate::common;

use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::process::{Child, Command, Stdio};

fn sdk_server(work: &std::path::Path) -> Command {
    let mut command = common::binary::cellbox(["sdk-server", "--spares", "0"]);
    command.current_dir(work).env("CELLBOX_ARTIFACTS_DIR", work.join("artifacts")).stderr(Stdio::piped());
    command
}

/// A cell that writes its kernel's pid to `pid` in the working folder.
const RUN_PID: &str = r#"{"jsonrpc":"2.0","id":1,"method":"run_code","params":{"code":"import os; open('pid', 'w').write(str(os.getpid()))"}}"#;

/// The next answer (not an output notification) among `lines`.
fn answer(lines: &mut impl Iterator<Item = std::io::Result<String>>) -> serde_json::Value {
    for line in lines {
        let message: serde_json::Value = serde_json::from_str(&line.unwrap()).unwrap();
        if message.get("method").is_none() {
            return message;
        }
    }
    panic!("the engine's output ended before an answer");
}

/// The names of the threads of process `pid`.
fn threads(pid: u32) -> Vec<String> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).unwrap();
    tasks
        .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("comm")).ok())
        .map(|name| name.trim().to_string())
        .collect()
}

/// Whether fd `fd` of process `pid` is in non-blocking mode (`O_NONBLOCK` in its flags).
fn non_blocking(pid: u32, fd: u32) -> bool {
    let info = std::fs::read_to_string(format!("/proc/{pid}/fdinfo/{fd}")).unwrap();
    let flags = info.lines().find_map(|line| line.strip_prefix("flags:")).expect("a flags line");
    u32::from_str_radix(flags.trim(), 8).unwrap() & libc::O_NONBLOCK as u32 != 0
}

/// The engine's exit status and what it wrote to stderr.
fn ended(mut child: Child) -> (std::process::ExitStatus, String) {
    let status = child.wait().unwrap();
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    (status, stderr)
}

fn ends_well(child: Child) {
    let (status, stderr) = ended(child);
    assert!(status.success(), "{status}: {stderr}");
}

/// An engine on pipes in `work`, its kernel started by a first cell that
/// wrote the kernel's pid to `pid` there; its input and its output's lines.
fn started_on_pipes(
    work: &std::path::Path,
) -> (Child, std::process::ChildStdin, impl Iterator<Item = std::io::Result<String>>) {
    let mut child = sdk_server(work).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    stdin.write_all(format!("{RUN_PID}\n").as_bytes()).unwrap();
    let first = answer(&mut lines);
    assert_eq!(first["result"]["status"], "ok", "{first}");
    (child, stdin, lines)
}

#[test]
fn pipes_are_served_by_the_runtime_and_fd_0_and_1_stay_blocking() {
    let work = tempfile::tempdir().unwrap();
    let (child, mut stdin, mut lines) = started_on_pipes(work.path());
    let names = threads(child.id());
    assert!(!names.iter().any(|name| name.starts_with("sdk-std")), "threads for stdin/stdout: {names:?}");
    assert!(!non_blocking(child.id(), 0) && !non_blocking(child.id(), 1), "fd 0 or 1 was made non-blocking");
    // The engine's new descriptors for them are its own: no kernel inherits them.
    let kernel = std::fs::read_to_string(work.path().join("pid")).unwrap();
    let ends = [0, 1].map(|fd| std::fs::read_link(format!("/proc/{}/fd/{fd}", child.id())).unwrap());
    for fd in std::fs::read_dir(format!("/proc/{kernel}/fd")).unwrap() {
        let target = std::fs::read_link(fd.unwrap().path()).unwrap_or_default();
        assert!(!ends.contains(&target), "the kernel holds the engine's {}", target.display());
    }
    // Many answers at once, larger than a pipe holds: each whole, after its own output.
    let big = r#"{"jsonrpc":"2.0","id":ID,"method":"run_code","params":{"code":"print('x' * 100000)"}}"#;
    let batch: String = (2..40).map(|id| big.replace("ID", &id.to_string()) + "\n").collect();
    stdin.write_all(batch.as_bytes()).unwrap();
    let mut printed = std::collections::HashMap::<i64, usize>::new();
    let mut answered = 0;
    while answered < 38 {
        let message: serde_json::Value = serde_json::from_str(&lines.next().expect("more output").unwrap()).unwrap();
        if message["method"] == "output" {
            let call = message["params"]["call"].as_i64().unwrap();
            *printed.entry(call).or_default() += message.to_string().matches('x').count();
            continue;
        }
        let id = message["id"].as_i64().unwrap();
        assert_eq!(message["result"]["status"], "ok", "{message}");
        assert!(printed.get(&id).copied().unwrap_or(0) >= 100_000, "call {id} was answered before its output");
        answered += 1;
    }
    drop(stdin);
    ends_well(child);
}

#[test]
fn a_named_pipe_whose_writer_left_ends_the_engine() {
    let work = tempfile::tempdir().unwrap();
    let fifo = work.path().join("requests");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
    // Opened without blocking for a writer, then made blocking again for the engine.
    let reader = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(&fifo).unwrap();
    let mut writer = std::fs::OpenOptions::new().write(true).open(&fifo).unwrap();
    writer.write_all(format!("{RUN_PID}\n").as_bytes()).unwrap();
    drop(writer);
    nix::fcntl::fcntl(&reader, nix::fcntl::FcntlArg::F_SETFL(nix::fcntl::OFlag::empty())).unwrap();
    let mut child = sdk_server(work.path()).stdin(Stdio::from(reader)).stdout(Stdio::piped()).spawn().unwrap();
    // The end of input stops the engine (the call it cut short is not answered).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            child.kill().unwrap();
            panic!("the engine never saw the end of its named pipe");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    ends_well(child);
}

#[test]
fn a_socket_is_served_by_threads() {
    let work = tempfile::tempdir().unwrap();
    let (ours, theirs) = std::os::unix::net::UnixStream::pair().unwrap();
    let input = std::os::fd::OwnedFd::from(theirs.try_clone().unwrap());
    let child = sdk_server(work.path())
        .stdin(Stdio::from(input))
        .stdout(Stdio::from(std::os::fd::OwnedFd::from(theirs)))
        .spawn();
    let child = child.unwrap();
    let mut lines = BufReader::new(ours.try_clone().unwrap()).lines();
    (&ours).write_all(format!("{RUN_PID}\n").as_bytes()).unwrap();
    let first = answer(&mut lines);
    assert_eq!(first["result"]["status"], "ok", "{first}");
    let names = threads(child.id());
    assert!(names.iter().any(|name| name == "sdk-stdin"), "no thread reads the socket: {names:?}");
    ours.shutdown(std::net::Shutdown::Write).unwrap();
    ends_well(child);
}

#[test]
fn a_line_that_is_not_utf8_stops_the_engine_and_its_kernels_with_a_reason() {
    let work = tempfile::tempdir().unwrap();
    let (child, mut stdin, _lines) = started_on_pipes(work.path());
    let kernel = std::fs::read_to_string(work.path().join("pid")).unwrap();
    let kernel: u32 = kernel.parse().unwrap_or_else(|_| panic!("not a pid: {kernel}"));
    assert!(
        std::path::Path::new(&format!("/proc/{kernel}")).exists(),
        "the kernel's pid {kernel} is not this machine's"
    );
    stdin.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"\xff\"}\n").unwrap();
    let (status, stderr) = ended(child);
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("UTF-8"), "{stderr}");
    // Stopped before the engine left, not by its own watch of its parent a second later.
    let state = std::fs::read_to_string(format!("/proc/{kernel}/stat")).unwrap_or_default();
    let state = state.rsplit(')').next().unwrap_or("").split_whitespace().next().unwrap_or("gone").to_string();
    assert!(state == "gone" || state == "Z", "the kernel {kernel} outlived its engine (state {state})");
}
