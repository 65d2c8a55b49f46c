//! envd's processes: the `process.Process` Connect service (Start, Connect,
//! List, SendInput, StreamInput, SendSignal, CloseStdin, Update).
//!
//! A process is started exactly as the sandbox's kernels are (their sandbox
//! policy, their environment, a session of its own: see
//! `EvalEngine::command_like_a_kernel`), never with the server's rights. Its
//! output goes to every stream following it (Start's, then any Connect's);
//! a stream that goes away leaves the process running, as envd does. A PTY
//! process gets a pseudo-terminal as its controlling terminal.

use std::collections::{BTreeMap, HashMap};
use std::os::fd::{AsRawFd, OwnedFd};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::Path;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, watch};

use super::connect::{self, Code, Kind, RpcError};
use super::{Routed, Sandbox};
use input::{stream_input, write_input};

mod input;

/// Events a stream may fall behind its process before the process waits for it.
const STREAM_BACKLOG: usize = 256;
/// Bytes read from a process's output at once.
const READ_SIZE: usize = 32 << 10;
/// Processes one sandbox may have running at once: a process outlives the stream that started
/// it, so a client that starts and leaves would otherwise fill the machine.
pub(crate) const MAX_PROCESSES: usize = 128;
/// Keepalives when the client names no interval (`Keepalive-Ping-Interval`).
const DEFAULT_KEEPALIVE: Duration = Duration::from_secs(50);

/// The sandbox's running processes, by pid.
#[derive(Default)]
pub(crate) struct Processes {
    table: Mutex<HashMap<u32, Arc<Process>>>,
}

impl Processes {
    fn get(&self, pid: u32) -> Option<Arc<Process>> {
        self.table.lock().unwrap().get(&pid).cloned()
    }

    /// Kill every process (the sandbox ends).
    pub fn kill_all(&self) {
        let all: Vec<Arc<Process>> = self.table.lock().unwrap().drain().map(|(_, process)| process).collect();
        for process in all {
            process.signal(nix::sys::signal::Signal::SIGKILL);
        }
    }
}

/// How a stream learns what its process does.
#[derive(Debug, Clone)]
enum Event {
    Stdout(Vec<u8>),
    Stderr(Vec<u8>),
    Pty(Vec<u8>),
    End { exit_code: i32, exited: bool, status: String },
}

struct Process {
    pid: u32,
    tag: Option<String>,
    /// The `ProcessConfig` it was started with, for `List`.
    config: Value,
    stdin: tokio::sync::Mutex<Option<Writer>>,
    /// The terminal's master side, for resizing.
    pty: Option<OwnedFd>,
    /// The streams following its output.
    followers: Mutex<Vec<mpsc::Sender<Event>>>,
    /// Its end, once it has ended.
    ended: watch::Sender<Option<Event>>,
    /// Its sandbox's temp dir and cgroups, held while it runs.
    _guard: cellbox_kernels::sandbox::SandboxGuard,
}

impl Process {
    /// Signal its whole process group (it leads a session of its own).
    fn signal(&self, signal: nix::sys::signal::Signal) {
        let group = nix::unistd::Pid::from_raw(self.pid as i32);
        let _ = nix::sys::signal::killpg(group, signal);
    }

    fn follow(&self) -> mpsc::Receiver<Event> {
        let (sender, receiver) = mpsc::channel(STREAM_BACKLOG);
        self.followers.lock().unwrap().push(sender);
        receiver
    }

    /// Hand `event` to every follower (waiting for slow ones); those gone are forgotten.
    async fn publish(&self, event: Event) {
        let followers: Vec<mpsc::Sender<Event>> = self.followers.lock().unwrap().clone();
        for follower in followers {
            if follower.send(event.clone()).await.is_err() {
                self.followers.lock().unwrap().retain(|kept| !kept.same_channel(&follower));
            }
        }
    }
}

pub(crate) async fn rpc(
    Routed(sandbox): Routed,
    Path(method): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if method == "StreamInput" {
        return stream_input(&sandbox, &headers, &body).await;
    }
    let (kind, message) = match connect::read_request(&headers, &body) {
        Ok(request) => request,
        Err(error) => return connect::refuse(&headers, error),
    };
    let keepalive = keepalive_interval(&headers);
    let deadline = connect::timeout(&headers).map(|timeout| tokio::time::Instant::now() + timeout);
    match (method.as_str(), kind) {
        ("Start", Kind::ServerStream) => match start(&sandbox, &message) {
            Ok((process, events)) => follow_stream(sandbox, process, events, keepalive, deadline),
            Err(error) => connect::stream_error(error),
        },
        ("Connect", Kind::ServerStream) => match selected(&sandbox, &message, "process") {
            Ok(process) => {
                let events = process.follow();
                follow_stream(sandbox.clone(), process, events, keepalive, deadline)
            }
            Err(error) => connect::stream_error(error),
        },
        ("Start" | "Connect", Kind::Unary) => {
            RpcError::invalid(format!("{method} is a server stream: call it as one")).into_response()
        }
        (_, Kind::ServerStream) => {
            connect::stream_error(RpcError::invalid(format!("{method} is unary: call it as one")))
        }
        (_, Kind::Unary) => match unary(&sandbox, &method, &message).await {
            Ok(answer) => connect::unary(answer),
            Err(error) => error.into_response(),
        },
    }
}

fn keepalive_interval(headers: &HeaderMap) -> Duration {
    headers
        .get("keepalive-ping-interval")
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.trim().parse::<u64>().ok())
        .map_or(DEFAULT_KEEPALIVE, |seconds| Duration::from_secs(seconds.clamp(1, 3600)))
}

/// The process a `ProcessSelector` (`{pid}` or `{tag}`) under `key` names.
fn selected(sandbox: &Sandbox, message: &Value, key: &str) -> Result<Arc<Process>, RpcError> {
    let selector = message
        .get(key)
        .ok_or_else(|| RpcError::invalid(format!("name the process: {{\"{key}\": {{\"pid\": N}}}}")))?;
    if let Some(pid) = selector.get("pid") {
        let pid = pid
            .as_u64()
            .or_else(|| pid.as_str().and_then(|text| text.parse().ok()))
            .and_then(|pid| u32::try_from(pid).ok())
            .ok_or_else(|| RpcError::invalid("pid must be a whole number"))?;
        return sandbox
            .processes
            .get(pid)
            .ok_or_else(|| RpcError::new(Code::NotFound, format!("process with pid {pid} not found")));
    }
    if let Some(tag) = selector.get("tag").and_then(Value::as_str) {
        let table = sandbox.processes.table.lock().unwrap();
        return table
            .values()
            .find(|process| process.tag.as_deref() == Some(tag))
            .cloned()
            .ok_or_else(|| RpcError::new(Code::NotFound, format!("process with tag {tag:?} not found")));
    }
    Err(RpcError::invalid("a process is named by its pid or its tag"))
}

fn strings(value: Option<&Value>, what: &str) -> Result<Vec<String>, RpcError> {
    match value {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| {
                item.as_str().map(str::to_string).ok_or_else(|| RpcError::invalid(format!("{what} are strings")))
            })
            .collect(),
        Some(_) => Err(RpcError::invalid(format!("{what} must be a list of strings"))),
    }
}

fn string_map(value: Option<&Value>) -> Result<BTreeMap<String, String>, RpcError> {
    match value {
        None | Some(Value::Null) => Ok(BTreeMap::new()),
        Some(Value::Object(map)) => map
            .iter()
            .map(|(key, value)| {
                value
                    .as_str()
                    .map(|v| (key.clone(), v.to_string()))
                    .ok_or_else(|| RpcError::invalid("envs are strings"))
            })
            .collect(),
        Some(_) => Err(RpcError::invalid("envs must be an object of strings")),
    }
}

/// The terminal size of a `PTY` message.
fn window(pty: &Value) -> nix::pty::Winsize {
    let size = pty.get("size");
    let dimension = |name: &str| {
        size.and_then(|size| size.get(name)).and_then(Value::as_u64).map_or(0, |n| n.min(u16::MAX as u64) as u16)
    };
    nix::pty::Winsize { ws_row: dimension("rows"), ws_col: dimension("cols"), ws_xpixel: 0, ws_ypixel: 0 }
}

/// Start the process `message` describes; its events are followed from its first byte.
fn start(sandbox: &Arc<Sandbox>, message: &Value) -> Result<(Arc<Process>, mpsc::Receiver<Event>), RpcError> {
    let config = message
        .get("process")
        .ok_or_else(|| RpcError::invalid("Start needs a process: {\"process\": {\"cmd\": ...}}"))?;
    let cmd = config.get("cmd").and_then(Value::as_str).filter(|cmd| !cmd.is_empty());
    let cmd = cmd.ok_or_else(|| RpcError::invalid("the process needs a cmd"))?;
    let args = strings(config.get("args"), "args")?;
    let mut envs = sandbox.created.envs.clone();
    envs.extend(string_map(config.get("envs"))?);
    let cwd = match config.get("cwd").and_then(Value::as_str).filter(|cwd| !cwd.is_empty()) {
        Some(cwd) => std::path::PathBuf::from(sandbox.home.to_real(cwd)),
        None => sandbox.home.real().to_path_buf(),
    };
    if !cwd.is_dir() {
        return Err(RpcError::invalid(format!(
            "cwd {} is not a folder",
            sandbox.home.to_virtual(&cwd.display().to_string())
        )));
    }
    let running = sandbox.processes.table.lock().unwrap().len();
    if running >= MAX_PROCESSES {
        return Err(RpcError::new(
            Code::ResourceExhausted,
            format!(
                "this sandbox runs {running} processes, its limit: kill one (commands.kill) before starting another"
            ),
        ));
    }
    let pty = message.get("pty").filter(|pty| !pty.is_null());
    let stdin = message.get("stdin").and_then(Value::as_bool).unwrap_or(true);
    let tag = message.get("tag").and_then(Value::as_str).map(str::to_string);
    let (mut command, guard) =
        sandbox.engine.command_like_a_kernel(std::path::Path::new(cmd), &cwd, &envs).map_err(|error| {
            RpcError::new(Code::FailedPrecondition, format!("the sandbox cannot start processes: {error}"))
        })?;
    command.args(&args);
    let terminal = match pty {
        Some(pty) => {
            let opened = nix::pty::openpty(Some(&window(pty)), None)
                .map_err(|error| RpcError::new(Code::Internal, format!("no pseudo-terminal: {error}")))?;
            let slave = opened.slave;
            for (index, clone) in [slave.try_clone(), slave.try_clone(), slave.try_clone()].into_iter().enumerate() {
                let clone =
                    clone.map_err(|error| RpcError::new(Code::Internal, format!("no pseudo-terminal: {error}")))?;
                match index {
                    0 => command.stdin(Stdio::from(clone)),
                    1 => command.stdout(Stdio::from(clone)),
                    _ => command.stderr(Stdio::from(clone)),
                };
            }
            use std::os::unix::process::CommandExt as _;
            // SAFETY: one ioctl on fd 0 (the terminal, now stdin) in the child: async-signal-safe.
            // The sandbox's pre-exec step ran first and made the child a session leader.
            unsafe {
                command.pre_exec(|| {
                    if libc::ioctl(0, libc::TIOCSCTTY as _, 0) < 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
            drop(slave);
            Some(opened.master)
        }
        None => {
            command.stdin(if stdin { Stdio::piped() } else { Stdio::null() });
            command.stdout(Stdio::piped()).stderr(Stdio::piped());
            None
        }
    };
    let mut command = tokio::process::Command::from(command);
    command.kill_on_drop(false);
    let mut child = command.spawn().map_err(|error| {
        let code = if error.kind() == std::io::ErrorKind::NotFound { Code::NotFound } else { Code::Internal };
        RpcError::new(code, format!("cannot start {cmd}: {error}"))
    })?;
    let pid = child.id().ok_or_else(|| RpcError::new(Code::Internal, "the process ended before it started"))?;
    let (stdin_writer, readers, pty_fd): (Option<Writer>, Vec<Source>, _) = match terminal {
        Some(master) => {
            let clone = |fd: &OwnedFd| fd.try_clone().map(|fd| tokio::fs::File::from_std(std::fs::File::from(fd)));
            let (reader, writer) = match (clone(&master), clone(&master)) {
                (Ok(reader), Ok(writer)) => (reader, writer),
                (Err(error), _) | (_, Err(error)) => {
                    let _ = child.start_kill();
                    return Err(RpcError::new(Code::Internal, format!("no pseudo-terminal: {error}")));
                }
            };
            (
                Some(Box::new(writer)),
                vec![(Box::new(reader) as Reader, Event::Pty as fn(Vec<u8>) -> Event)],
                Some(master),
            )
        }
        None => {
            let writer = child.stdin.take().map(|stdin| Box::new(stdin) as Writer);
            let mut readers: Vec<Source> = Vec::new();
            if let Some(stdout) = child.stdout.take() {
                readers.push((Box::new(stdout), Event::Stdout));
            }
            if let Some(stderr) = child.stderr.take() {
                readers.push((Box::new(stderr), Event::Stderr));
            }
            (writer, readers, None)
        }
    };
    let process = Arc::new(Process {
        pid,
        tag,
        config: json!({"cmd": cmd, "args": args, "envs": string_map(config.get("envs"))?, "cwd": config.get("cwd")}),
        stdin: tokio::sync::Mutex::new(stdin_writer),
        pty: pty_fd,
        followers: Mutex::default(),
        ended: watch::channel(None).0,
        _guard: guard,
    });
    let events = process.follow();
    sandbox.processes.table.lock().unwrap().insert(pid, process.clone());
    tokio::spawn(run(sandbox.clone(), process.clone(), child, readers));
    Ok((process, events))
}

type Reader = Box<dyn AsyncRead + Send + Unpin>;
type Writer = Box<dyn AsyncWrite + Send + Unpin>;
/// An output of the process, and the event its bytes make.
type Source = (Reader, fn(Vec<u8>) -> Event);

/// Pass the process's output to its followers until it ends, then its end.
async fn run(sandbox: Arc<Sandbox>, process: Arc<Process>, mut child: tokio::process::Child, readers: Vec<Source>) {
    let mut reading = tokio::task::JoinSet::new();
    for (mut reader, event) in readers {
        let process = process.clone();
        reading.spawn(async move {
            let mut buffer = vec![0u8; READ_SIZE];
            loop {
                match reader.read(&mut buffer).await {
                    // A terminal's master reads EIO once its last user has gone: its end.
                    Ok(0) | Err(_) => return,
                    Ok(n) => process.publish(event(buffer[..n].to_vec())).await,
                }
            }
        });
    }
    let status = tokio::select! {
        status = child.wait() => status,
        () = sandbox.ended.cancelled() => {
            process.signal(nix::sys::signal::Signal::SIGKILL);
            child.wait().await
        }
    };
    // What it wrote before it ended is passed on before its end. A terminal whose
    // session left a process behind would hold its master open: that waits a moment only.
    if process.pty.is_some() {
        let _ =
            tokio::time::timeout(Duration::from_millis(500), async { while reading.join_next().await.is_some() {} })
                .await;
        reading.abort_all();
    } else {
        while reading.join_next().await.is_some() {}
    }
    let end = match status {
        Ok(status) => {
            use std::os::unix::process::ExitStatusExt as _;
            let (exit_code, text) = match (status.code(), status.signal()) {
                (Some(code), _) => (code, format!("exit status {code}")),
                (None, Some(signal)) => (-1, format!("signal: {}", signal_name(signal))),
                (None, None) => (-1, "ended".to_string()),
            };
            Event::End { exit_code, exited: status.code().is_some(), status: text }
        }
        Err(error) => Event::End { exit_code: -1, exited: false, status: format!("wait failed: {error}") },
    };
    sandbox.processes.table.lock().unwrap().remove(&process.pid);
    process.ended.send_replace(Some(end.clone()));
    process.publish(end).await;
    process.followers.lock().unwrap().clear();
}

fn signal_name(signal: i32) -> String {
    match nix::sys::signal::Signal::try_from(signal) {
        Ok(nix::sys::signal::Signal::SIGKILL) => "killed".into(),
        Ok(nix::sys::signal::Signal::SIGTERM) => "terminated".into(),
        Ok(nix::sys::signal::Signal::SIGINT) => "interrupt".into(),
        Ok(other) => other.as_str().to_lowercase(),
        Err(_) => format!("signal {signal}"),
    }
}

fn event_json(event: &Event) -> Value {
    let b64 = |bytes: &[u8]| base64::engine::general_purpose::STANDARD.encode(bytes);
    match event {
        Event::Stdout(bytes) => json!({"event": {"data": {"stdout": b64(bytes)}}}),
        Event::Stderr(bytes) => json!({"event": {"data": {"stderr": b64(bytes)}}}),
        Event::Pty(bytes) => json!({"event": {"data": {"pty": b64(bytes)}}}),
        Event::End { exit_code, exited, status } => {
            json!({"event": {"end": {"exitCode": exit_code, "exited": exited, "status": status}}})
        }
    }
}

/// A Start or Connect stream: `start{pid}`, the process's events, keepalives, the end.
fn follow_stream(
    sandbox: Arc<Sandbox>,
    process: Arc<Process>,
    events: mpsc::Receiver<Event>,
    keepalive: Duration,
    deadline: Option<tokio::time::Instant>,
) -> Response {
    struct Following {
        sandbox: Arc<Sandbox>,
        process: Arc<Process>,
        events: mpsc::Receiver<Event>,
        keepalive: Duration,
        deadline: Option<tokio::time::Instant>,
        started: bool,
        done: bool,
    }
    let following = Following { sandbox, process, events, keepalive, deadline, started: false, done: false };
    connect::stream(futures_util::stream::unfold(following, |mut following| async move {
        if following.done {
            return None;
        }
        if !following.started {
            following.started = true;
            let start = connect::message(&json!({"event": {"start": {"pid": following.process.pid}}}));
            // A process that ended before this stream followed it (Connect) shows its end.
            let ended = following.process.ended.borrow().clone();
            if let Some(end) = ended {
                following.done = true;
                let mut frames = start.to_vec();
                frames.extend_from_slice(&connect::message(&event_json(&end)));
                frames.extend_from_slice(&connect::end(None));
                return Some((Ok(Bytes::from(frames)), following));
            }
            return Some((Ok(start), following));
        }
        let deadline = async {
            match following.deadline {
                Some(deadline) => tokio::time::sleep_until(deadline).await,
                None => std::future::pending().await,
            }
        };
        let next = tokio::select! {
            event = following.events.recv() => Some(event),
            () = tokio::time::sleep(following.keepalive) => None,
            () = following.sandbox.ended.cancelled() => Some(None),
            // The client's time for the call is up: the stream ends (the process goes on, as when
            // a client goes away).
            () = deadline => {
                following.done = true;
                let late = RpcError::new(Code::DeadlineExceeded, "the call's time (Connect-Timeout-Ms) ran out");
                return Some((Ok(connect::end(Some(&late))), following));
            }
        };
        let frame = match next {
            None => connect::message(&json!({"event": {"keepalive": {}}})),
            Some(Some(event @ Event::End { .. })) => {
                following.done = true;
                let mut frames = connect::message(&event_json(&event)).to_vec();
                frames.extend_from_slice(&connect::end(None));
                Bytes::from(frames)
            }
            Some(Some(event)) => connect::message(&event_json(&event)),
            // The sandbox ended under the process: the answer is cut off, which E2B's
            // clients read as "the sandbox was killed or reached its end".
            Some(None) => {
                following.done = true;
                return Some((Err(std::io::Error::other("the sandbox was killed")), following));
            }
        };
        Some((Ok(frame), following))
    }))
}

async fn unary(sandbox: &Sandbox, method: &str, message: &Value) -> Result<Value, RpcError> {
    match method {
        "List" => {
            let table = sandbox.processes.table.lock().unwrap();
            let mut processes: Vec<Value> = table
                .values()
                .map(|process| {
                    let mut info = json!({"config": process.config, "pid": process.pid});
                    if let Some(tag) = &process.tag {
                        info["tag"] = tag.clone().into();
                    }
                    info
                })
                .collect();
            processes.sort_by_key(|info| info["pid"].as_u64());
            Ok(json!({"processes": processes}))
        }
        "SendInput" => {
            let process = selected(sandbox, message, "process")?;
            write_input(&process, message.get("input")).await?;
            Ok(json!({}))
        }
        "SendSignal" => {
            let process = selected(sandbox, message, "process")?;
            let signal = match message.get("signal") {
                Some(Value::String(name)) if name == "SIGNAL_SIGKILL" => nix::sys::signal::Signal::SIGKILL,
                Some(Value::String(name)) if name == "SIGNAL_SIGTERM" => nix::sys::signal::Signal::SIGTERM,
                Some(Value::Number(n)) if n.as_u64() == Some(9) => nix::sys::signal::Signal::SIGKILL,
                Some(Value::Number(n)) if n.as_u64() == Some(15) => nix::sys::signal::Signal::SIGTERM,
                other => {
                    return Err(RpcError::invalid(format!("signal {other:?} is not SIGNAL_SIGKILL or SIGNAL_SIGTERM")));
                }
            };
            process.signal(signal);
            Ok(json!({}))
        }
        "CloseStdin" => {
            let process = selected(sandbox, message, "process")?;
            if let Some(mut stdin) = process.stdin.lock().await.take() {
                let _ = stdin.shutdown().await;
            }
            Ok(json!({}))
        }
        "Update" => {
            let process = selected(sandbox, message, "process")?;
            let (Some(pty), Some(master)) = (message.get("pty").filter(|pty| !pty.is_null()), &process.pty) else {
                return Err(RpcError::invalid("only a PTY process's size can be updated"));
            };
            let size = window(pty);
            // SAFETY: TIOCSWINSZ reads a winsize this frame owns, on a descriptor the process holds open.
            let result = unsafe { libc::ioctl(master.as_raw_fd(), libc::TIOCSWINSZ as _, &size) };
            if result < 0 {
                return Err(RpcError::new(
                    Code::Internal,
                    format!("cannot resize: {}", std::io::Error::last_os_error()),
                ));
            }
            Ok(json!({}))
        }
        other => Err(RpcError::new(Code::Unimplemented, format!("process.Process has no method {other:?}"))),
    }
}
