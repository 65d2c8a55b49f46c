//! The requests in flight on a gateway kernel, and what each Jupyter message
//! means for the request it answers ([`route`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::{Map, Value, json};
use tokio::sync::{Notify, mpsc};

use super::Outgoing;
use super::bridge_stdin::{CallRequest, GatewayBridge};
use crate::kernel::{CellDone, CellError, Completeness, ExecEvent, KernelError};
use crate::protocol::DoneStatus;

/// The name `input()` raises under, as in cellbox's own kernels.
const STDIN_ERROR_NAME: &str = "StdinNotSupportedError";
const STDIN_ERROR_TEXT: &str = "input() is not supported: cellbox cells have no interactive stdin. Pass the data in \
                                the code instead (a variable, a file, or an argument).";
/// The text a Jupyter server sends in place of output it dropped.
const RATE_LIMIT_TEXT: &str = "data rate exceeded";

pub(crate) type EventSender = mpsc::Sender<Result<ExecEvent, KernelError>>;

/// One request in flight.
pub(crate) struct Pending {
    pub sender: EventSender,
    pub started: bool,
    pub idle: bool,
    pub reply: Option<CellDone>,
    pub stdin_requested: bool,
    /// `input_reply`s sent for it: a kernel asking without end gets [`MAX_STDIN_REPLIES`].
    pub stdin_replies: u8,
    pub rate_noted: bool,
    /// An interrupt was sent for it: a failed reply is then the interrupt's doing.
    pub interrupted: bool,
    /// cellbox's own request around a cell (per-cell variables), never interrupted.
    pub internal: bool,
}

/// The most `input_request`s of one request that are answered.
const MAX_STDIN_REPLIES: u8 = 16;

#[derive(Default)]
pub(crate) struct Routes {
    pub pending: HashMap<String, Pending>,
    /// Set once the kernel can no longer run cells: the error new requests get.
    pub dead: Option<KernelError>,
}

pub(crate) struct Shared {
    pub routes: Mutex<Routes>,
    /// The cells' host-bridge calls (gateway kernels carry them on the stdin channel).
    pub bridge: Option<Arc<GatewayBridge>>,
    /// Tells the connection to drop its socket (see [`super::GatewayKernel::drop_connection_for_test`]).
    pub drop_for_test: Notify,
    /// Woken when a request starts running, when one ends, and when the
    /// kernel is lost (an interrupt waits for these, not on a timer).
    pub progress: Notify,
}

/// `restarting` or `dead`: the kernel's state is gone (a crash the gateway saw).
pub(crate) fn kernel_lost(message: &Value) -> Option<&str> {
    if message.pointer("/header/msg_type").and_then(Value::as_str) != Some("status") {
        return None;
    }
    match message.pointer("/content/execution_state").and_then(Value::as_str)? {
        state @ ("restarting" | "dead" | "autorestarting") => Some(state),
        _ => None,
    }
}

pub(crate) type Delivery = (EventSender, Result<ExecEvent, KernelError>);

/// What `message` means for the request it answers. Its parts are moved
/// into the events, not copied (a stream message can carry megabytes).
pub(crate) fn route(
    shared: &Shared,
    message: Value,
    outgoing: &mpsc::UnboundedSender<Outgoing>,
    session: &str,
) -> Vec<Delivery> {
    let Value::Object(mut message) = message else { return Vec::new() };
    let header = message.remove("header").unwrap_or(Value::Null);
    let mut content = message.remove("content").unwrap_or(Value::Null);
    let msg_type = header.get("msg_type").and_then(Value::as_str).unwrap_or_default();
    let Some(parent) = message.get("parent_header").and_then(|p| p.get("msg_id")).and_then(Value::as_str) else {
        return Vec::new();
    };
    if msg_type == "input_request"
        && let Some(bridge) = &shared.bridge
        && let Some(request) = CallRequest::from_content(&content)
    {
        let running = shared.routes.lock().unwrap().pending.contains_key(parent);
        bridge.on_request(header.clone(), running.then(|| parent.to_string()), request);
        return Vec::new();
    }
    let mut routes = shared.routes.lock().unwrap();
    let Some(pending) = routes.pending.get_mut(parent) else { return Vec::new() };
    let mut events = Vec::new();
    if !pending.started && msg_type != "is_complete_reply" {
        pending.started = true;
        events.push(ExecEvent::Started);
        shared.progress.notify_waiters();
    }
    let content = &mut content;
    let mut finished = None;
    match msg_type {
        "status" if content.get("execution_state").and_then(Value::as_str) == Some("idle") => pending.idle = true,
        "stream" => {
            let chunk = take_text(content, "text");
            let rate_limited = chunk.contains(RATE_LIMIT_TEXT);
            let stderr = content.get("name").and_then(Value::as_str) == Some("stderr");
            events.push(if stderr { ExecEvent::Stderr(chunk) } else { ExecEvent::Stdout(chunk) });
            if rate_limited && !pending.rate_noted {
                pending.rate_noted = true;
                events.push(ExecEvent::Stderr(
                    "[cellbox: the gateway dropped part of this cell's output (IOPub rate limit). Run the gateway \
                     with --ZMQChannelsWebsocketConnection.iopub_data_rate_limit=0 to keep it all, or print less.]\n"
                        .into(),
                ));
            }
        }
        "display_data" | "update_display_data" => events
            .push(ExecEvent::Display { bundle: take_map(content, "data"), metadata: take_map(content, "metadata") }),
        "execute_result" => events
            .push(ExecEvent::Result { bundle: take_map(content, "data"), metadata: take_map(content, "metadata") }),
        "error" => events.push(ExecEvent::Error(CellError {
            ename: take_text(content, "ename"),
            evalue: take_text(content, "evalue"),
            traceback: content
                .get("traceback")
                .and_then(Value::as_array)
                .map(|lines| lines.iter().filter_map(Value::as_str).map(traceback_line).collect())
                .unwrap_or_default(),
        })),
        "execute_reply" => {
            let text = |key: &str| content.get(key).and_then(Value::as_str);
            pending.reply = Some(CellDone {
                status: if text("status") == Some("ok") { DoneStatus::Ok } else { DoneStatus::Error },
                execution_count: content.get("execution_count").and_then(Value::as_u64).unwrap_or(0),
                // ipykernel raises KeyboardInterrupt; IRkernel answers `abort`; others fail with
                // an error of their own (JJava's EvaluationInterruptedException) once interrupted.
                cancelled: text("ename") == Some("KeyboardInterrupt")
                    || text("status") == Some("abort")
                    || (pending.interrupted && text("status") != Some("ok")),
            });
        }
        "is_complete_reply" => {
            let (status, indent) = (take_text(content, "status"), take_text(content, "indent"));
            finished = Some(ExecEvent::Completeness(Completeness { status, indent }));
        }
        "input_request" if pending.stdin_replies < MAX_STDIN_REPLIES => {
            pending.stdin_requested = true;
            pending.stdin_replies += 1;
            // The request's header, but only its short fields: the kernel wrote it.
            let short = |key: &str| header.get(key).and_then(Value::as_str).filter(|text| text.len() <= 256);
            let parent_header = json!({
                "msg_id": short("msg_id"), "msg_type": short("msg_type"), "session": short("session"),
                "username": short("username"), "version": short("version"),
            });
            let reply = json!({
                "header": {
                    "msg_id": format!("{session}_input_{}", pending.stdin_replies), "msg_type": "input_reply",
                    "session": session, "username": "cellbox", "version": "5.3",
                },
                "parent_header": parent_header,
                "metadata": {}, "content": { "value": "" }, "channel": "stdin", "buffers": [],
            });
            let _ = outgoing.send(Outgoing::Message(reply));
        }
        _ => {}
    }
    if finished.is_none()
        && pending.idle
        && let Some(mut done) = pending.reply
    {
        if pending.stdin_requested {
            events.push(ExecEvent::Error(CellError {
                ename: STDIN_ERROR_NAME.into(),
                evalue: STDIN_ERROR_TEXT.into(),
                traceback: vec![format!("{STDIN_ERROR_NAME}: {STDIN_ERROR_TEXT}")],
            }));
            done.status = DoneStatus::Error;
        }
        finished = Some(ExecEvent::Done(done));
    }
    let sender = pending.sender.clone();
    if let Some(last) = finished {
        events.push(last);
        routes.pending.remove(parent);
        shared.progress.notify_waiters();
        if let Some(bridge) = &shared.bridge {
            bridge.cell_ended(parent);
        }
    }
    events.into_iter().map(|event| (sender.clone(), Ok(event))).collect()
}

/// The string `content[key]`, moved out (empty when missing).
fn take_text(content: &mut Value, key: &str) -> String {
    match content.get_mut(key).map(Value::take) {
        Some(Value::String(text)) => text,
        _ => String::new(),
    }
}

/// The object `content[key]`, moved out (empty when missing).
fn take_map(content: &mut Value, key: &str) -> Map<String, Value> {
    match content.get_mut(key).map(Value::take) {
        Some(Value::Object(map)) => map,
        _ => Map::new(),
    }
}

/// A traceback entry as cellbox's own tracebacks have them: no colour
/// codes, ending with a newline (Jupyter's entries are joined by front ends).
fn traceback_line(entry: &str) -> String {
    let mut line = strip_ansi(entry);
    if !line.ends_with('\n') {
        line.push('\n');
    }
    line
}

/// A traceback line without its terminal colour codes.
fn strip_ansi(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' && chars.peek() == Some(&'[') {
            chars.next();
            for code in chars.by_ref() {
                if ('@'..='~').contains(&code) {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_colour_codes() {
        assert_eq!(strip_ansi("\u{1b}[0;31mZeroDivisionError\u{1b}[0m: x"), "ZeroDivisionError: x");
    }

    #[test]
    fn restarting_and_dead_mean_the_kernel_is_lost() {
        let status = |state: &str| json!({"header": {"msg_type": "status"}, "content": {"execution_state": state}});
        assert_eq!(kernel_lost(&status("restarting")), Some("restarting"));
        assert_eq!(kernel_lost(&status("dead")), Some("dead"));
        assert_eq!(kernel_lost(&status("busy")), None);
    }
}
