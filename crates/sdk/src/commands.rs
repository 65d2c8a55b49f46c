//! The SDK's commands API (`sandbox.commands`): shell commands run the way
//! kernels run code, inside the same OS sandbox, environment filter and
//! process group, with the same interrupt → kill ladder.
//!
//! Each command is a Python cell in a hidden session of its own
//! (`sdk-command-N`, never a code context). The cell starts the command with
//! `subprocess` (`shell=True`, `/bin/bash` where there is one, stdin from
//! /dev/null, the given `cwd` and `envs` on top of the kernel's environment),
//! announces the child's pid with a status event, waits for it and ends with
//! its exit code as the cell's value. The child writes straight to the
//! kernel's captured stdout and stderr, which stream as the cell's output. A
//! timeout or a kill interrupts the cell, which then kills the child and
//! re-raises. When the cell is over its kernel is disposed of, which also
//! ends whatever the command left running in its process group, and only
//! then is the command's result known.
//!
//! Methods (parameters in [`super::wire`]):
//! - `commands.start`: start a command; answers `{id, pid}` once the child
//!   runs (`pid` is the shell's process id).
//! - `commands.wait`: `output` notifications of a command (`stdout` or
//!   `stderr` text, and the chunk's index), from a given chunk or from now
//!   on; then its result, `{exit_code, error, status}` with status `ok`,
//!   `killed`, `timeout` or `failed`. A `cancel` naming the call stops
//!   waiting; `release` lets the server forget the finished command.
//! - `commands.kill`: interrupt a running command by id or pid and answer
//!   once it has ended; false when no such command runs.
//! - `commands.list`: the running commands, as E2B's `ProcessInfo`s.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::Server;
use super::wire::{self, Answer, Call, CommandResult, CommandStarted, CommandStatus, ErrorCode, Failure, ProcessInfo};
use crate::sandbox::host_files::{HostFileError, Kind, lexical};
use crate::tool::{
    CallContext, CellParams, CellStatus, EvalEngine, EvalError, EvalEvent, EvalParams, EvalResult, Language,
};

/// The status event's `op` with which a command's cell names its child.
const STARTED_OP: &str = "sdk_command";
/// Finished commands kept for a late `commands.wait` (beyond those a
/// releasing wait let go of).
const KEEP_FINISHED: usize = 64;
/// How long `commands.kill` waits for the command to end (the engine's own
/// ladder ends a kernel that ignores the interrupt well before).
const KILL_WAIT: Duration = Duration::from_secs(30);
/// Bytes of a command's output kept for late `commands.wait` calls; past it
/// the earliest chunks go (a waiter already streaming sees every chunk).
const MAX_KEPT_OUTPUT: usize = 16 << 20;

/// The commands of one server, by id.
pub struct Commands {
    root: PathBuf,
    next: AtomicU64,
    all: Mutex<BTreeMap<u64, Arc<Command>>>,
}

struct Command {
    id: u64,
    spec: Spec,
    cancel: CancellationToken,
    state: Mutex<State>,
    /// Bumped whenever `state` changes.
    changed: watch::Sender<()>,
}

/// What was asked for, as the cell and `commands.list` see it.
#[derive(serde::Serialize)]
struct Spec {
    cmd: String,
    shell: Option<String>,
    cwd: String,
    envs: BTreeMap<String, String>,
}

#[derive(Default)]
struct State {
    pid: Option<u32>,
    /// The output chunks kept: chunk number `dropped + i` is `output[i]`.
    output: std::collections::VecDeque<(&'static str, String)>,
    /// Chunks no longer kept, from the first on.
    dropped: usize,
    /// Bytes of text in `output`.
    kept_bytes: usize,
    exit_value: Option<i64>,
    error: Option<String>,
    killed: bool,
    /// Set once the command's kernel is gone.
    outcome: Option<Result<CommandResult, Failure>>,
}

impl State {
    /// Keep one chunk of output, letting the earliest go past [`MAX_KEPT_OUTPUT`].
    fn keep(&mut self, kind: &'static str, text: String) {
        self.kept_bytes += text.len();
        self.output.push_back((kind, text));
        while self.kept_bytes > MAX_KEPT_OUTPUT && self.output.len() > 1 {
            let (_, gone) = self.output.pop_front().expect("more than one chunk");
            self.kept_bytes -= gone.len();
            self.dropped += 1;
        }
    }

    /// How many chunks the command has written so far.
    fn chunks(&self) -> usize {
        self.dropped + self.output.len()
    }
}

impl Commands {
    /// The commands of a server whose relative `cwd`s start at `root`.
    pub fn new(root: PathBuf) -> Commands {
        Commands { root, next: AtomicU64::new(0), all: Mutex::default() }
    }

    /// A command by id, else the running (else latest) one with that pid.
    fn find(&self, id: Option<u64>, pid: Option<u32>) -> Result<Option<Arc<Command>>, Failure> {
        let all = self.all.lock().unwrap();
        match (id, pid) {
            (Some(id), _) => Ok(all.get(&id).cloned()),
            (None, Some(pid)) => {
                let mut with_pid = all.values().rev().filter(|c| c.state.lock().unwrap().pid == Some(pid));
                let latest = with_pid.clone().next().cloned();
                Ok(with_pid.find(|c| c.state.lock().unwrap().outcome.is_none()).cloned().or(latest))
            }
            (None, None) => Err(Failure::invalid_params("name the command by its id or pid")),
        }
    }

    /// Forget finished commands past [`KEEP_FINISHED`], and past [`MAX_KEPT_OUTPUT`]
    /// of output kept over all of them, oldest first.
    fn prune(&self) {
        let mut all = self.all.lock().unwrap();
        let finished: Vec<(u64, usize)> = all
            .values()
            .filter_map(|c| {
                let state = c.state.lock().unwrap();
                state.outcome.is_some().then_some((c.id, state.kept_bytes))
            })
            .collect();
        let mut kept: usize = finished.iter().map(|(_, bytes)| bytes).sum();
        let mut left = finished.len();
        for (id, bytes) in finished {
            if left <= KEEP_FINISHED && kept <= MAX_KEPT_OUTPUT {
                break;
            }
            all.remove(&id);
            kept -= bytes;
            left -= 1;
        }
    }
}

impl Server {
    /// Answer one `commands.*` call (`id`: its request's, for `output` notifications).
    pub(super) async fn command_call(&self, id: &Value, call: Call) -> Result<Answer, Failure> {
        match call {
            Call::CommandsStart(params) => self.start_command(params).await.map(Answer::CommandsStart),
            Call::CommandsWait(params) => self.wait_command(id, params).await.map(Answer::CommandsWait),
            Call::CommandsKill(params) => {
                self.kill_command(self.commands.find(params.id, params.pid)?).await.map(Answer::CommandsKill)
            }
            Call::CommandsList(_) => {
                let all: Vec<Arc<Command>> = self.commands.all.lock().unwrap().values().cloned().collect();
                Ok(Answer::CommandsList(all.iter().filter_map(|command| command.info()).collect()))
            }
            other => {
                Err(Failure::new(ErrorCode::MethodNotFound, format!("no commands method {:?}", other.method().name())))
            }
        }
    }

    async fn start_command(&self, params: wire::CommandStart) -> Result<CommandStarted, Failure> {
        let timeout = match params.timeout {
            None => wire::DEFAULT_COMMAND_TIMEOUT_SECS,
            Some(seconds) if !seconds.is_finite() || seconds < 0.0 => {
                return Err(Failure::invalid_params(format!("timeout must be 0 or more seconds, not {seconds}")));
            }
            Some(0.0) => crate::tool::params::TIMEOUT_RANGE.1,
            Some(seconds) => seconds,
        };
        let root = &self.commands.root;
        let cwd = params.cwd.as_deref().map_or_else(|| root.clone(), |dir| lexical(&root.join(dir)));
        // Looked at with the kernel's rights (the command runs as the kernel, anywhere it may
        // go): a folder it may not reach is refused by its rule, never said to exist.
        let files = self.engine.host_files().map_err(Failure::invalid_params)?;
        match files.stat(&cwd) {
            Ok(Some(entry)) if entry.stat.kind == Kind::Dir => {}
            Ok(_) => return Err(Failure::invalid_params(format!("cwd {} is not a folder", cwd.display()))),
            Err(HostFileError::NotFound { .. } | HostFileError::NoParent { .. }) => {
                return Err(Failure::invalid_params(format!("cwd {} is not a folder", cwd.display())));
            }
            Err(error) => return Err(Failure::invalid_params(format!("cwd {error}"))),
        }
        let shell = Path::new("/bin/bash").is_file().then(|| "/bin/bash".to_string());
        let spec =
            Spec { cmd: params.cmd, shell, cwd: cwd.display().to_string(), envs: params.envs.unwrap_or_default() };
        let id = self.commands.next.fetch_add(1, Ordering::Relaxed) + 1;
        let command = Arc::new(Command {
            id,
            cancel: self.stopping.child_token(),
            state: Mutex::default(),
            changed: watch::channel(()).0,
            spec,
        });
        self.commands.prune();
        self.commands.all.lock().unwrap().insert(id, command.clone());
        // The kernel runs in the root, as the default context's does: `cwd` is the child's only.
        let eval = EvalParams {
            cells: vec![CellParams {
                code: command.cell_code(),
                language: Some(Language::Py),
                timeout: Some(timeout),
                ..Default::default()
            }],
            cwd: Some(root.display().to_string()),
            ..Default::default()
        };
        let mut changed = command.changed.subscribe();
        // A running command keeps the sandbox busy, waited for or not.
        let busy = self.lifetime.busy();
        let engine = self.engine.clone();
        let running = command.clone();
        tokio::spawn(async move {
            run(engine, running, eval, timeout).await;
            drop(busy);
        });
        loop {
            {
                let state = command.state.lock().unwrap();
                if let Some(pid) = state.pid {
                    return Ok(CommandStarted { id, pid });
                }
                if let Some(Err(failure)) = &state.outcome {
                    let failure = failure.clone();
                    drop(state);
                    self.commands.all.lock().unwrap().remove(&id);
                    return Err(failure);
                }
            }
            if changed.changed().await.is_err() {
                return Err(Failure::new(ErrorCode::Failed, "the command's runner went away"));
            }
        }
    }

    async fn wait_command(&self, call: &Value, params: wire::CommandWait) -> Result<CommandResult, Failure> {
        let command = self.commands.find(params.id, params.pid)?.ok_or_else(|| not_found(params.id, params.pid))?;
        let mut changed = command.changed.subscribe();
        let cancel = self.stopping.child_token();
        let key = call.to_string();
        self.running.lock().unwrap().insert(key.clone(), cancel.clone());
        let mut next = match params.from_chunk {
            Some(chunk) => usize::try_from(chunk).unwrap_or(usize::MAX),
            None => command.state.lock().unwrap().chunks(),
        };
        let outcome = loop {
            let (dropped, chunks, outcome) = {
                let state = command.state.lock().unwrap();
                let first = next.saturating_sub(state.dropped);
                (state.dropped, state.output.iter().skip(first).cloned().collect::<Vec<_>>(), state.outcome.clone())
            };
            if next < dropped {
                let text = format!(
                    "[cellbox: the first {} chunks of this command's output are no longer kept (it wrote more than \
                     {} MiB); the rest follows]\n",
                    dropped - next,
                    MAX_KEPT_OUTPUT >> 20
                );
                let note = wire::Output::Stderr { text, chunk: Some(dropped as u64 - 1) };
                let _ = self.out.send(wire::output(call, note));
                next = dropped;
            }
            for (kind, text) in chunks {
                let _ = self.out.send(wire::output(call, chunk_output(kind, text, next as u64)));
                next += 1;
            }
            if let Some(outcome) = outcome {
                break outcome;
            }
            tokio::select! {
                gone = changed.changed() => if gone.is_err() {
                    break Err(Failure::new(ErrorCode::Failed, "the command's runner went away"));
                },
                _ = cancel.cancelled() => break Err(Failure::new(ErrorCode::Failed, "stopped waiting for the command")),
            }
        };
        self.running.lock().unwrap().remove(&key);
        if params.release && outcome.is_ok() {
            // Its handle has the result now: nobody needs the output kept.
            self.commands.all.lock().unwrap().remove(&command.id);
        }
        outcome
    }

    async fn kill_command(&self, command: Option<Arc<Command>>) -> Result<bool, Failure> {
        let Some(command) = command else { return Ok(false) };
        let mut changed = command.changed.subscribe();
        {
            let mut state = command.state.lock().unwrap();
            if state.outcome.is_some() {
                return Ok(false);
            }
            state.killed = true;
        }
        command.cancel.cancel();
        let ended = async {
            while command.state.lock().unwrap().outcome.is_none() {
                if changed.changed().await.is_err() {
                    break;
                }
            }
        };
        let _ = tokio::time::timeout(KILL_WAIT, ended).await;
        Ok(true)
    }
}

/// Chunk number `chunk` of a command's output, of `kind` (`stdout` or `stderr`).
fn chunk_output(kind: &str, text: String, chunk: u64) -> wire::Output {
    match kind {
        "stderr" => wire::Output::Stderr { text, chunk: Some(chunk) },
        _ => wire::Output::Stdout { text, chunk: Some(chunk) },
    }
}

fn not_found(id: Option<u64>, pid: Option<u32>) -> Failure {
    let what = match (id, pid) {
        (Some(id), _) => format!("id {id}"),
        (None, pid) => format!("pid {}", pid.unwrap_or_default()),
    };
    Failure::new(ErrorCode::NotFound, format!("no command with {what} (it ended, or its result was taken)"))
}

/// Run the command's cell, then dispose of its kernel and settle its outcome.
async fn run(engine: Arc<EvalEngine>, command: Arc<Command>, eval: EvalParams, timeout: f64) {
    let session = format!("sdk-command-{}", command.id);
    let sink_command = command.clone();
    let sink = move |event: EvalEvent| sink_command.event(event);
    let result = engine.eval(&eval, &CallContext::new(session.clone()), &command.cancel, &sink).await;
    engine.dispose_owner(&session).await;
    engine.forget_history(&session);
    let outcome = command.outcome(result, timeout);
    command.state.lock().unwrap().outcome = Some(outcome);
    command.changed.send_replace(());
}

impl Command {
    /// The cell: the spec travels as JSON text in a JSON string literal,
    /// which is a valid Python string literal whatever the command holds.
    fn cell_code(&self) -> String {
        let spec = serde_json::to_string(&self.spec).expect("a spec serializes");
        let literal = serde_json::to_string(&spec).expect("a string serializes");
        format!(
            "import json as _json, os as _os, subprocess as _subprocess\n\
             _spec = _json.loads({literal})\n\
             _env = dict(_os.environ)\n\
             _env.update(_spec[\"envs\"])\n\
             _child = _subprocess.Popen(_spec[\"cmd\"], shell=True, executable=_spec[\"shell\"], cwd=_spec[\"cwd\"], \
             env=_env, stdin=_subprocess.DEVNULL)\n\
             emit_status(\"{STARTED_OP}\", pid=_child.pid)\n\
             try:\n    _child.wait()\n\
             except BaseException:\n    _child.kill()\n    _child.wait()\n    raise\n\
             _child.returncode\n"
        )
    }

    /// Keep what the cell streams: output, the child's pid, its exit code, an error.
    fn event(&self, event: EvalEvent) {
        let mut state = self.state.lock().unwrap();
        match event {
            EvalEvent::Stdout { text, .. } => state.keep("stdout", text),
            EvalEvent::Stderr { text, .. } => state.keep("stderr", text),
            EvalEvent::Status { event, .. } if event["op"] == STARTED_OP => {
                state.pid = event["pid"].as_u64().and_then(|pid| u32::try_from(pid).ok());
            }
            EvalEvent::Display { is_result: true, bundle, .. } => {
                state.exit_value = bundle.get("text/plain").and_then(Value::as_str).and_then(|t| t.trim().parse().ok());
            }
            EvalEvent::Error { error, .. } => state.error = Some(format!("{}: {}", error.ename, error.evalue)),
            _ => return,
        }
        drop(state);
        self.changed.send_replace(());
    }

    /// The result `commands.wait` answers, or why the command never started.
    fn outcome(&self, result: Result<EvalResult, EvalError>, timeout: f64) -> Result<CommandResult, Failure> {
        let state = self.state.lock().unwrap();
        let status = match result {
            Ok(result) => result.cells.first().map_or(CellStatus::Error, |cell| cell.status),
            Err(error) => return Err(Failure::new(ErrorCode::Failed, format!("the command could not start: {error}"))),
        };
        if state.pid.is_none() {
            let why = state.error.clone().unwrap_or_else(|| format!("its cell ended as {}", status.as_str()));
            return Err(Failure::new(ErrorCode::Failed, format!("the command could not start: {why}")));
        }
        let stopped = state.killed || self.cancel.is_cancelled();
        let (exit_code, error, status) = match (status, state.exit_value) {
            (CellStatus::Ok, Some(code)) if code >= 0 => (code, None, CommandStatus::Ok),
            _ if stopped => (-1, Some("signal: killed".to_string()), CommandStatus::Killed),
            (CellStatus::Ok, Some(code)) => (-1, Some(format!("signal: {}", -code)), CommandStatus::Ok),
            (CellStatus::Timeout | CellStatus::Killed, _) => {
                (-1, Some(format!("the command timed out after {timeout} s")), CommandStatus::Timeout)
            }
            _ => (
                -1,
                Some(state.error.clone().unwrap_or_else(|| "the command's kernel failed".into())),
                CommandStatus::Failed,
            ),
        };
        Ok(CommandResult { exit_code, error, status })
    }

    /// The command as `commands.list` shows it, while it runs.
    fn info(&self) -> Option<ProcessInfo> {
        let state = self.state.lock().unwrap();
        let pid = state.pid.filter(|_| state.outcome.is_none())?;
        let spec = &self.spec;
        Some(ProcessInfo {
            id: self.id,
            chunks: state.chunks() as u64,
            pid,
            tag: None,
            cmd: spec.shell.clone().unwrap_or_else(|| "/bin/sh".into()),
            args: vec!["-c".into(), spec.cmd.clone()],
            envs: spec.envs.clone(),
            cwd: Some(spec.cwd.clone()),
        })
    }
}
