//! The one task that reads every pipe from a process kernel's runner and turns what it wrote
//! into the [`ExecEvent`]s of the running request.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::io::AsyncReadExt;

use super::{
    CellDone, CellError, CheckReport, Completeness, DIAGNOSTICS_BYTES, ExecEvent, HandshakeError, KernelError,
    MAX_PENDING_OUTPUT, READ_CHUNK, ReadyInfo, STDERR_TAIL_BYTES, Shared, bridge_relay, channel, crash_dump, pipe,
    process,
};
use crate::kernel::process::Signal;
use crate::protocol::{self, RunnerFrame};

/// Which output pipe a chunk came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stream {
    Stdout,
    Stderr,
}

impl Stream {
    fn event(self, text: String) -> ExecEvent {
        match self {
            Stream::Stdout => ExecEvent::Stdout(text),
            Stream::Stderr => ExecEvent::Stderr(text),
        }
    }
}

/// The one task that reads every pipe from the runner.
///
/// Order: the runner writes a frame only once the host has read all output
/// written before it, and goes on after a display only once the host has
/// read the frame, so reading the pipes in turn and handling each read in
/// full before the next keeps frames and output in the order they happened.
pub(super) struct Reader {
    shared: Arc<Shared>,
    stdout: channel::Utf8Stream,
    stderr: channel::Utf8Stream,
    /// The request whose `Started` has been delivered.
    started: Option<String>,
    /// Output written while no request ran, for the next one.
    held: Vec<(Stream, String)>,
    held_bytes: usize,
    dropped_bytes: usize,
    /// A partial frame line.
    line: Vec<u8>,
    /// The runner's own diagnostics (fd 4), quoted when it dies: its failure
    /// messages, faulthandler's dump when it crashed.
    diagnostics: String,
    /// The runner's folder, as its frames may name it (see [`crash_dump`]).
    runner_roots: Vec<String>,
    /// The last of fd 2, quoted when the runner died without diagnostics.
    recent_stderr: String,
}

impl Reader {
    pub(super) fn new(shared: Arc<Shared>, runner_roots: Vec<String>) -> Self {
        Reader {
            shared,
            stdout: channel::Utf8Stream::default(),
            stderr: channel::Utf8Stream::default(),
            started: None,
            held: Vec::new(),
            held_bytes: 0,
            dropped_bytes: 0,
            line: Vec::with_capacity(1 << 16),
            diagnostics: String::new(),
            runner_roots,
            recent_stderr: String::new(),
        }
    }

    pub(super) async fn run(mut self, ends: channel::HostEnds) {
        let channel::HostEnds { stdout: mut out, stderr: mut err, mut frames, mut diagnostics } = ends;
        let mut frame_buffer = vec![0u8; READ_CHUNK];
        let mut diagnostics_buffer = vec![0u8; 8192];
        let (mut out_open, mut err_open, mut diagnostics_open) = (true, true, true);
        loop {
            tokio::select! {
                read = frames.read(&mut frame_buffer) => match read {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        // Output written before these frames is in the pipes by now: the
                        // Python runner waits for the host to read it (but only so long,
                        // and a loaded host may not have), Node does not wait at all.
                        let mut events = self.drain(&out, Stream::Stdout);
                        events.extend(self.drain(&err, Stream::Stderr));
                        for (id, event) in events {
                            self.deliver(Some(id), event).await;
                        }
                        self.frame_bytes(&frame_buffer[..n]).await
                    }
                },
                read = out.read_buf(self.stdout.buffer()), if out_open => match read {
                    Ok(0) | Err(_) => out_open = false,
                    Ok(_) => self.output(Stream::Stdout).await,
                },
                read = err.read_buf(self.stderr.buffer()), if err_open => match read {
                    Ok(0) | Err(_) => err_open = false,
                    Ok(_) => {
                        // When both pipes hold output, stdout's goes first: the runner
                        // flushes Python's stdout before its stderr. What was just read
                        // from stderr waits in its buffer meanwhile.
                        let pending = self.stderr.take();
                        for (id, event) in self.drain(&out, Stream::Stdout) {
                            self.deliver(Some(id), event).await;
                        }
                        if let Some((id, event)) = self.route_output(Stream::Stderr, pending) {
                            self.deliver(Some(id), event).await;
                        }
                    }
                },
                read = diagnostics.read(&mut diagnostics_buffer), if diagnostics_open => match read {
                    Ok(0) | Err(_) => diagnostics_open = false,
                    Ok(n) => self.diagnostic(&diagnostics_buffer[..n]),
                },
            }
        }
        // The frame channel closed: the runner exited, or something cut it.
        let shared = self.shared.clone();
        let mut lingering = false;
        if shared.wait_exit(Duration::from_secs(2)).await.is_none() {
            // It can no longer be driven.
            lingering = true;
            let _ = process::signal_group(shared.pid, Signal::SIGKILL);
        }
        let exit = shared.wait_exit(Duration::from_secs(2)).await;
        // Everything the runner wrote is in the pipes now: deliver it before the error.
        let mut events = self.drain(&out, Stream::Stdout);
        events.extend(self.drain(&err, Stream::Stderr));
        let mut total = 0usize;
        while total < 64 << 20 {
            match diagnostics.try_read(&mut diagnostics_buffer) {
                Ok(0) => break,
                Ok(n) => {
                    total += n;
                    self.diagnostic(&diagnostics_buffer[..n]);
                }
                Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            }
        }
        for (id, event) in events {
            self.deliver(Some(id), event).await;
        }
        self.flush_output().await;
        self.started_from_page().await;
        let mut exit = match exit {
            Some(exit) => shared.describe_exit(exit),
            None => "output closed".to_string(),
        };
        if lingering {
            exit = format!(
                "{exit}: it closed its protocol channel while still running, so it was stopped; code \
                 outside Python, such as a C extension, probably closed the runner's private file descriptors"
            );
        }
        let quoted = self.last_words().await;
        let error = KernelError::Died { runtime: shared.runtime, exit, stderr_tail: quoted };
        shared.bridge_state.lock().unwrap().cancel(None);
        let (error, pending, ready) = {
            let mut routes = shared.routes.lock().unwrap();
            // A deliberate shutdown already recorded `Closed`; keep that.
            let error = routes.dead.get_or_insert(error).clone();
            routes.running.clear();
            (error, std::mem::take(&mut routes.pending), routes.ready.take())
        };
        drop(ready); // startup sees a closed channel and reports the exit itself
        for sender in pending.into_values() {
            let _ = sender.send(Err(error.clone())).await;
        }
    }

    async fn frame_bytes(&mut self, bytes: &[u8]) {
        let mut rest = bytes;
        while let Some(end) = rest.iter().position(|&b| b == b'\n') {
            let (head, tail) = rest.split_at(end + 1);
            rest = tail;
            if self.line.is_empty() {
                self.frame_line(head).await;
            } else {
                let mut line = std::mem::take(&mut self.line);
                line.extend_from_slice(head);
                self.frame_line(&line).await;
                line.clear();
                self.line = line;
            }
        }
        self.line.extend_from_slice(rest);
    }

    async fn frame_line(&mut self, line: &[u8]) {
        if self.shared.trace {
            tracing::info!(target: "cellbox::ipc", "runner → host {}", String::from_utf8_lossy(line).trim_end());
        }
        match protocol::parse_frame(line) {
            Ok(frame) => self.route(frame).await,
            Err(protocol::FrameError::Malformed { kind, id, error }) => self.malformed(kind, id, error, line).await,
            // A type this host does not know (a newer runner's), or a line that
            // is no frame at all: nothing can be routed, so it is only logged.
            Err(error) => {
                let shown = shown_line(line);
                tracing::warn!(target: "cellbox::ipc", "skipping a line the runner sent: {error}: {shown}")
            }
        }
    }

    /// A frame of a known type that does not parse: the runner and the host
    /// disagree about the wire. The request it names (else the running one)
    /// fails with the frame, the error and the line, instead of waiting for a
    /// frame that will never come.
    async fn malformed(&mut self, kind: &'static str, id: Option<String>, error: serde_json::Error, line: &[u8]) {
        let message = format!(
            "protocol error: the {} runner sent a `{kind}` frame the host cannot read ({error}); the runner and \
             the host disagree about the wire. The line: {}",
            self.shared.runtime,
            shown_line(line)
        );
        tracing::error!(target: "cellbox::ipc", "{message}");
        if kind == "ready" {
            let ready = self.shared.routes.lock().unwrap().ready.take();
            if let Some(ready) = ready {
                let _ = ready.send(Err(HandshakeError::Malformed(message)));
            }
            return;
        }
        let target = {
            let routes = self.shared.routes.lock().unwrap();
            // A bridge call's id is the call's own; its cell is the running one.
            let named = id.filter(|id| kind != "bridge_call" && routes.pending.contains_key(id));
            named.or_else(|| routes.running.front().cloned())
        };
        let Some(target) = target else { return };
        if matches!(kind, "done" | "completeness" | "checked" | "snapshot") {
            // The request is over on the runner's side: the next one runs now.
            self.shared.routes.lock().unwrap().running.retain(|queued| *queued != target);
            if self.started.as_deref() == Some(target.as_str()) {
                self.started = None;
            }
        }
        let sender = self.shared.routes.lock().unwrap().pending.remove(&target);
        if let Some(sender) = sender {
            let _ = sender.send(Err(KernelError::Protocol(message))).await;
        }
    }

    fn diagnostic(&mut self, bytes: &[u8]) {
        let text = String::from_utf8_lossy(bytes);
        if self.shared.trace {
            tracing::info!(target: "cellbox::ipc", "runner diagnostics: {}", text.trim_end());
        }
        push_tail(&mut self.diagnostics, &text, DIAGNOSTICS_BYTES);
        push_tail(&mut self.shared.stderr_tail.lock().unwrap(), &text, STDERR_TAIL_BYTES);
    }

    /// What the `Died` error quotes; a crash dump goes to the running
    /// request first (see [`crash_dump::last_words`]).
    async fn last_words(&mut self) -> String {
        let running = self.shared.routes.lock().unwrap().running.front().cloned();
        let words = {
            let cells = self.shared.cells.lock().unwrap();
            let running = running.as_deref().map(|id| (id, &*cells));
            crash_dump::last_words(&self.diagnostics, &self.recent_stderr, running, &self.runner_roots)
        };
        if let Some(id) = running {
            for event in words.events {
                self.deliver(Some(id.clone()), event).await;
            }
        }
        words.quoted
    }

    async fn output(&mut self, stream: Stream) {
        if let Some((id, event)) = self.output_now(stream) {
            self.deliver(Some(id), event).await;
        }
    }

    /// The decoder of `stream`, which owns the buffer its reads fill.
    fn decoder(&mut self, stream: Stream) -> &mut channel::Utf8Stream {
        match stream {
            Stream::Stdout => &mut self.stdout,
            Stream::Stderr => &mut self.stderr,
        }
    }

    /// Read what is left in `pipe` without waiting (bounded: a child of the
    /// kernel may still be writing); the events it makes, in order.
    fn drain(&mut self, pipe: &pipe::Receiver, stream: Stream) -> Vec<(String, ExecEvent)> {
        let mut events = Vec::new();
        let mut total = 0usize;
        while total < 64 << 20 {
            match pipe.try_read_buf(self.decoder(stream).buffer()) {
                Ok(0) => break,
                Ok(n) => {
                    total += n;
                    events.extend(self.output_now(stream));
                }
                Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            }
        }
        events
    }

    /// Decode what was read; hold it when no request runs, else return where it goes.
    fn output_now(&mut self, stream: Stream) -> Option<(String, ExecEvent)> {
        let text = self.decoder(stream).take();
        self.route_output(stream, text)
    }

    /// Where decoded output goes: the running request, else held for the next one.
    fn route_output(&mut self, stream: Stream, text: String) -> Option<(String, ExecEvent)> {
        if text.is_empty() {
            return None;
        }
        if self.shared.trace {
            tracing::info!(target: "cellbox::ipc", "runner {stream:?}: {} bytes", text.len());
        }
        if stream == Stream::Stderr {
            push_tail(&mut self.recent_stderr, &text, STDERR_TAIL_BYTES);
        }
        let current = self.shared.routes.lock().unwrap().running.front().cloned();
        match current {
            Some(id) => Some((id, stream.event(text))),
            None => {
                if stream == Stream::Stderr {
                    // Outside a request: startup failures of the interpreter itself.
                    push_tail(&mut self.shared.stderr_tail.lock().unwrap(), &text, STDERR_TAIL_BYTES);
                }
                self.hold(stream, text);
                None
            }
        }
    }

    fn hold(&mut self, stream: Stream, text: String) {
        if self.held_bytes + text.len() > MAX_PENDING_OUTPUT {
            self.dropped_bytes += text.len();
            return;
        }
        self.held_bytes += text.len();
        match self.held.last_mut() {
            Some((last, held)) if *last == stream => held.push_str(&text),
            _ => self.held.push((stream, text)),
        }
    }

    /// Deliver what the decoders still hold (the end of a request's output).
    async fn flush_output(&mut self) {
        for stream in [Stream::Stdout, Stream::Stderr] {
            let text = match stream {
                Stream::Stdout => self.stdout.finish(),
                Stream::Stderr => self.stderr.finish(),
            };
            if text.is_empty() {
                continue;
            }
            let current = self.shared.routes.lock().unwrap().running.front().cloned();
            match current {
                Some(id) => self.deliver(Some(id), stream.event(text)).await,
                None => self.hold(stream, text),
            }
        }
    }

    /// After the runner died: a request its started page names had begun,
    /// though nothing of it was read (see [`super::began`]).
    async fn started_from_page(&mut self) {
        let Some(page) = &self.shared.started_page else { return };
        let Some(front) = self.shared.routes.lock().unwrap().running.front().cloned() else { return };
        if self.started.as_deref() != Some(front.as_str()) && page.last_begun().as_deref() == Some(front.as_str()) {
            self.ensure_started(&front).await;
        }
    }

    /// Before the first event of request `id`: `Started`, then the output held for it.
    async fn ensure_started(&mut self, id: &str) {
        if self.started.as_deref() == Some(id) {
            return;
        }
        self.started = Some(id.to_string());
        self.send(id, ExecEvent::Started, false).await;
        let held = std::mem::take(&mut self.held);
        self.held_bytes = 0;
        for (stream, text) in held {
            self.send(id, stream.event(text), false).await;
        }
        let dropped = std::mem::take(&mut self.dropped_bytes);
        if dropped > 0 {
            let note = format!("[cellbox: {dropped} bytes of background output were dropped]\n");
            self.send(id, ExecEvent::Stderr(note), false).await;
        }
    }

    fn is_running(&self, id: &str) -> bool {
        self.shared.routes.lock().unwrap().running.iter().any(|queued| queued == id)
    }

    async fn route(&mut self, frame: RunnerFrame) {
        let (id, event) = match frame {
            RunnerFrame::Ready { protocol: version, python, pid, executable, lost_threads, .. } => {
                let ready = self.shared.routes.lock().unwrap().ready.take();
                if let Some(ready) = ready {
                    let answer = if version == protocol::PROTOCOL_VERSION {
                        Ok(ReadyInfo { pid, python_version: python, executable, lost_threads })
                    } else {
                        Err(HandshakeError::ProtocolMismatch { runner: version, host: protocol::PROTOCOL_VERSION })
                    };
                    let _ = ready.send(answer);
                }
                return;
            }
            RunnerFrame::Started { id } => (Some(id), ExecEvent::Started),
            RunnerFrame::Stdout { id, data } => (id, ExecEvent::Stdout(data)),
            RunnerFrame::Stderr { id, data } => (id, ExecEvent::Stderr(data)),
            RunnerFrame::Display { id, bundle, metadata } => (id, ExecEvent::Display { bundle, metadata }),
            RunnerFrame::Result { id, bundle, metadata } => (id, ExecEvent::Result { bundle, metadata }),
            RunnerFrame::Error { id, ename, evalue, traceback } => {
                (id, ExecEvent::Error(CellError { ename, evalue, traceback }))
            }
            RunnerFrame::Done { id, status, execution_count, cancelled } => {
                (Some(id), ExecEvent::Done(CellDone { status, execution_count, cancelled }))
            }
            RunnerFrame::Completeness { id, status, indent } => {
                (Some(id), ExecEvent::Completeness(Completeness { status, indent }))
            }
            RunnerFrame::Checked { id, cells, notes } => (Some(id), ExecEvent::Checked(CheckReport { cells, notes })),
            RunnerFrame::Snapshot { id, report, error } => {
                let answer = match (report, error) {
                    (Some(report), None) => Ok(report),
                    (_, error) => Err(error.unwrap_or_else(|| "the runner gave no report".into())),
                };
                (Some(id), ExecEvent::Snapshot(answer))
            }
            RunnerFrame::BridgeCall { id, cell, op, args } => {
                self.bridge_call(id, cell, op, args).await;
                return;
            }
        };
        if let Some(request) = id.as_deref().filter(|request| self.is_running(request)) {
            let request = request.to_string();
            self.ensure_started(&request).await;
            match event {
                // Synthesized by ensure_started, before any output of the request.
                ExecEvent::Started => return,
                ExecEvent::Done(done) => {
                    self.shared.cells.lock().unwrap().done(&request, done.execution_count);
                    // Whatever its threads still wait for is of no use now.
                    self.shared.cancel_bridge_calls(Some(&request), "its cell has finished");
                    self.shared.bridge_state.lock().unwrap().counts.remove(&request);
                    self.flush_output().await;
                    self.shared.routes.lock().unwrap().running.retain(|queued| *queued != request);
                    self.started = None;
                }
                _ => {}
            }
        }
        self.deliver(id, event).await;
    }

    /// Hand a cell's bridge call to the handler (see [`bridge_relay::dispatch`]).
    async fn bridge_call(&mut self, id: String, cell: Option<String>, op: String, args: Value) {
        let cell = cell.filter(|cell| self.is_running(cell));
        if let Some(cell) = &cell {
            self.ensure_started(cell).await;
        }
        let hook = self.shared.bridge.lock().unwrap().clone();
        bridge_relay::dispatch(&self.shared, hook, id, cell, op, args);
    }

    async fn deliver(&mut self, id: Option<String>, event: ExecEvent) {
        let Some(id) = id else {
            tracing::debug!(target: "cellbox::ipc", "frame for no request: {event:?}");
            return;
        };
        let done = matches!(
            event,
            ExecEvent::Done(_) | ExecEvent::Completeness(_) | ExecEvent::Checked(_) | ExecEvent::Snapshot(_)
        );
        if !done && self.is_running(&id) {
            self.ensure_started(&id).await;
        }
        self.send(&id, event, done).await;
    }

    /// Hand `event` to request `id`'s consumer (`last` removes its route).
    async fn send(&self, id: &str, event: ExecEvent, last: bool) {
        let sender = {
            let mut routes = self.shared.routes.lock().unwrap();
            if last { routes.pending.remove(id) } else { routes.pending.get(id).cloned() }
        };
        match sender {
            Some(sender) => {
                if sender.send(Ok(event)).await.is_err() {
                    // The caller stopped listening; later events of this request are dropped.
                    self.shared.routes.lock().unwrap().pending.remove(id);
                }
            }
            None => tracing::debug!(target: "cellbox::ipc", "event for no pending request {id}: {event:?}"),
        }
    }
}

/// A line as a log or an error quotes it: lossy UTF-8, at most 500 bytes.
fn shown_line(line: &[u8]) -> String {
    let text = String::from_utf8_lossy(line);
    let text = text.trim_end();
    match text.char_indices().nth(500) {
        Some((cut, _)) => format!("{}… ({} bytes)", &text[..cut], line.len()),
        None => text.to_string(),
    }
}

/// Append `text` to a tail of at most `limit` bytes.
fn push_tail(tail: &mut String, text: &str, limit: usize) {
    tail.push_str(text);
    if tail.len() > limit {
        let mut cut = tail.len() - limit;
        while !tail.is_char_boundary(cut) {
            cut += 1;
        }
        tail.drain(..cut);
    }
}
