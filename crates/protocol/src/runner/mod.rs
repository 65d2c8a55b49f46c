//! The NDJSON protocol between the host and a runner.
//!
//! One JSON object per `\n`-terminated UTF-8 line, both ways. Every line
//! carries its kind in `"type"`: [`HostRequest`] lists what the host may send
//! (the runners also take a line without `"type"` as `execute`), and
//! [`RunnerFrame`] what a runner may answer.
//!
//! Parsing a frame ([`parse_frame`]) tells three failures apart: a line that is
//! not a JSON object, an object whose `type` this host does not know (a
//! [`FrameError::UnknownType`], skipped with a log: a newer runner may say
//! more), and a frame of a known type with a field missing or of the wrong
//! kind (a [`FrameError::Malformed`], which fails the request it names: the
//! runner and the host disagree about the wire).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

/// A MIME bundle: MIME type → data (text, base64 for binary, JSON for
/// `application/json` and status events).
pub type MimeBundle = Map<String, Value>;

/// Host → runner: every request a runner accepts, by its `type`.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum HostRequest {
    /// Run a cell; answered by `started` (or, given `--started-fd`, its id
    /// written there), its output frames, then `done`.
    Execute(ExecuteRequest),
    /// Interrupt the running cell (where the host cannot send SIGINT, i.e. on
    /// Windows; a runner reads its requests on a thread of their own there).
    /// Between cells it is ignored. No answer.
    Interrupt,
    /// Exit cleanly. No answer.
    Exit,
    /// Is this code a whole cell yet? Answered by `completeness`.
    Complete(CompleteRequest),
    /// Check cells before any of them runs; answered by `checked`.
    Check(CheckRequest),
    /// Save the user namespace to a file; answered by `snapshot`.
    Snapshot(SnapshotRequest),
    /// Restore a namespace saved by `snapshot`; answered by `snapshot`.
    Restore(SnapshotRequest),
    /// Fork the kernel here (Python on Linux); answered on the control socket
    /// (see [`crate::fork_server`]), the copy then says `ready` on its own pipes.
    Fork(ForkRequest),
    /// The answer to a `bridge_call`, written while the cell runs.
    BridgeResult(BridgeResult),
}

/// The names of [`HostRequest`]'s types, as on the wire.
pub const REQUEST_TYPES: &[&str] =
    &["execute", "interrupt", "exit", "complete", "check", "snapshot", "restore", "fork", "bridge_result"];

impl HostRequest {
    /// The request's `type` on the wire.
    pub fn type_name(&self) -> &'static str {
        match self {
            HostRequest::Execute(_) => "execute",
            HostRequest::Interrupt => "interrupt",
            HostRequest::Exit => "exit",
            HostRequest::Complete(_) => "complete",
            HostRequest::Check(_) => "check",
            HostRequest::Snapshot(_) => "snapshot",
            HostRequest::Restore(_) => "restore",
            HostRequest::Fork(_) => "fork",
            HostRequest::BridgeResult(_) => "bridge_result",
        }
    }

    /// The request as one line (with its `\n`).
    pub fn encode(&self) -> String {
        match self {
            // The same bytes as the hot path writes.
            HostRequest::Execute(request) => encode_request(request),
            HostRequest::BridgeResult(result) => result.encode(),
            other => line(other),
        }
    }
}

fn line(value: &impl Serialize) -> String {
    let mut line = serde_json::to_string(value).expect("requests always serialize");
    line.push('\n');
    line
}

/// The requests the host sends often, borrowed: one serde pass, no copy.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum RequestRef<'a> {
    Execute(&'a ExecuteRequest),
    BridgeResult(&'a BridgeResult),
}

/// Host → runner: run `code`.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, JsonSchema)]
pub struct ExecuteRequest {
    pub id: String,
    pub code: String,
    /// Silent requests show no last-expression value and do not count as cells.
    #[serde(default)]
    pub silent: bool,
    /// Whether the request counts in `executionCount` and sets `_`.
    #[serde(rename = "storeHistory", default = "yes")]
    pub store_history: bool,
    /// Directory to `chdir` into (and put on `sys.path`) before running.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// Environment changes; `None` removes a variable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env: Option<BTreeMap<String, Option<String>>>,
    /// The code is TypeScript (Node runner: types are stripped first).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub typescript: bool,
    /// `env` is for this request only: the runner puts the variables it
    /// names back as they were once the request is done.
    #[serde(rename = "restoreEnv", default, skip_serializing_if = "std::ops::Not::not")]
    pub restore_env: bool,
    /// A list or dict that is the cell's value also goes as `application/json`
    /// (the Python SDK's `Result.json`); text front ends leave it off, because
    /// a model would read the value twice.
    #[serde(rename = "jsonResults", default, skip_serializing_if = "std::ops::Not::not")]
    pub json_results: bool,
}

fn yes() -> bool {
    true
}

/// Host → runner: is this code a whole cell? Answered by a `completeness` frame.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, JsonSchema)]
pub struct CompleteRequest {
    pub id: String,
    pub code: String,
}

/// Host → runner: check cells before any of them runs. The runner compiles
/// each (after its magic transform) without executing it, and with `lint`
/// also runs `ruff check` on it; answered by a `checked` frame. Nothing runs
/// and the kernel's state is untouched.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, JsonSchema)]
pub struct CheckRequest {
    pub id: String,
    pub cells: Vec<CheckCell>,
    #[serde(default)]
    pub lint: bool,
}

/// Host → runner: save the user namespace to `path` (type `snapshot`) or
/// restore one saved there into it (type `restore`); answered by a
/// `snapshot` frame. Runs between cells, in order with them.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, JsonSchema)]
pub struct SnapshotRequest {
    pub id: String,
    /// The file to write or read; with `file`, only the name messages give it.
    pub path: String,
    /// The host's version, written into the file's header.
    #[serde(default)]
    pub version: String,
    /// The file is not opened by path but arrives open on the kernel's
    /// control socket, as the `file` message with this id
    /// ([`crate::fork_server::Request::File`]): how a session is hibernated
    /// into a folder its kernel cannot reach. It is written from its start,
    /// not atomically (the host renames it once the answer says it is whole).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<u64>,
}

/// Host → runner: fork the kernel. `fork` is the id of the message carrying
/// the new kernel's pipes, sent just before on the control socket.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, JsonSchema)]
pub struct ForkRequest {
    pub id: String,
    pub fork: u64,
}

/// One cell of a [`CheckRequest`].
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, JsonSchema)]
pub struct CheckCell {
    /// 1-based position in the call, as messages name it ("Cell 2, line 3").
    pub number: usize,
    pub code: String,
    /// TypeScript (the Node runner strips its types before parsing).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub typescript: bool,
}

/// What the check found in one cell, in the request's order.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
pub struct CheckedCell {
    /// The cell does not compile.
    #[serde(default)]
    pub error: Option<SyntaxProblem>,
    /// What the linter reported (empty without `lint`).
    #[serde(default)]
    pub findings: Vec<LintFinding>,
}

/// A cell's compile error, with its traceback lines (the caret included).
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, JsonSchema)]
pub struct SyntaxProblem {
    pub ename: String,
    pub evalue: String,
    #[serde(default)]
    pub traceback: Vec<String>,
    /// 1-based line of the error in the cell, when known.
    #[serde(default)]
    pub line: Option<u64>,
}

/// One linter finding.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, JsonSchema)]
pub struct LintFinding {
    #[serde(default)]
    pub line: u64,
    #[serde(default)]
    pub column: u64,
    /// The rule (`F401`); empty when the linter gave none.
    #[serde(default)]
    pub code: String,
    pub message: String,
}

/// Runner → host frames. (`Serialize` is for tests and tools that play the runner's part.)
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum RunnerFrame {
    /// Handshake: the runner is set up and reading requests.
    Ready {
        protocol: u32,
        /// The interpreter's version (Node's for the JavaScript runner).
        python: String,
        pid: u32,
        executable: String,
        /// In a kernel forked from another: the threads of that kernel's cells,
        /// which a fork does not copy.
        #[serde(default, rename = "lostThreads", skip_serializing_if = "Vec::is_empty")]
        lost_threads: Vec<String>,
        /// `js` from the JavaScript runner (the Python runner leaves it out).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        language: Option<String>,
        /// JavaScript runner: whether Node exposes the parser it checks and
        /// transforms cells with.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        parser: Option<bool>,
    },
    /// The request began to run (sent before any of its code runs; a runner
    /// given `--started-fd` writes the id there instead).
    Started { id: String },
    /// Output text of a request (runners write output on fd 1/2 instead; kept
    /// for runners without those pipes).
    Stdout { id: Option<String>, data: String },
    /// See [`RunnerFrame::Stdout`].
    Stderr { id: Option<String>, data: String },
    /// A `display()` (status events included: [`crate::STATUS_MIME`]).
    Display {
        id: Option<String>,
        bundle: MimeBundle,
        #[serde(default, skip_serializing_if = "Map::is_empty")]
        metadata: Map<String, Value>,
    },
    /// The value of the cell's last expression.
    Result {
        id: Option<String>,
        bundle: MimeBundle,
        #[serde(default, skip_serializing_if = "Map::is_empty")]
        metadata: Map<String, Value>,
    },
    /// The cell raised (or the request was not valid: `ename` `ProtocolError`,
    /// `id` null when the line named none).
    Error {
        id: Option<String>,
        ename: String,
        evalue: String,
        #[serde(default)]
        traceback: Vec<String>,
    },
    /// The request is over; the last frame of an `execute`.
    Done {
        id: String,
        status: DoneStatus,
        #[serde(rename = "executionCount")]
        execution_count: u64,
        /// The cell was interrupted.
        #[serde(default)]
        cancelled: bool,
    },
    /// The answer to a `complete` request: is the code a whole cell yet?
    Completeness {
        id: String,
        /// `complete`, `incomplete` or `invalid`.
        status: String,
        /// The indent the next line wants when incomplete.
        #[serde(default)]
        indent: String,
    },
    /// The answer to a `check` request: one entry per cell, and notes about
    /// the check itself (the linter was not found, ...).
    Checked {
        id: String,
        #[serde(default)]
        cells: Vec<CheckedCell>,
        #[serde(default)]
        notes: Vec<String>,
    },
    /// The answer to a `snapshot` or `restore` request: what was saved or
    /// restored and what was skipped, or why nothing could be.
    Snapshot {
        id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        report: Option<Value>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// A cell asks the host for work (`completion`, `agent`, `tool`): answered
    /// by a [`BridgeResult`] with the same `id` on the request pipe.
    BridgeCall {
        /// The call's id, unique within the runner.
        id: String,
        /// The request (cell) that made the call; `None` outside any cell.
        cell: Option<String>,
        op: String,
        #[serde(default)]
        args: Value,
    },
}

/// The names of [`RunnerFrame`]'s types, as on the wire.
pub const FRAME_TYPES: &[&str] = &[
    "ready",
    "started",
    "stdout",
    "stderr",
    "display",
    "result",
    "error",
    "done",
    "completeness",
    "checked",
    "snapshot",
    "bridge_call",
];

impl RunnerFrame {
    /// The frame's `type` on the wire.
    pub fn type_name(&self) -> &'static str {
        match self {
            RunnerFrame::Ready { .. } => "ready",
            RunnerFrame::Started { .. } => "started",
            RunnerFrame::Stdout { .. } => "stdout",
            RunnerFrame::Stderr { .. } => "stderr",
            RunnerFrame::Display { .. } => "display",
            RunnerFrame::Result { .. } => "result",
            RunnerFrame::Error { .. } => "error",
            RunnerFrame::Done { .. } => "done",
            RunnerFrame::Completeness { .. } => "completeness",
            RunnerFrame::Checked { .. } => "checked",
            RunnerFrame::Snapshot { .. } => "snapshot",
            RunnerFrame::BridgeCall { .. } => "bridge_call",
        }
    }

    /// The request this frame belongs to, if any.
    pub fn request_id(&self) -> Option<&str> {
        match self {
            RunnerFrame::Ready { .. } => None,
            RunnerFrame::Started { id }
            | RunnerFrame::Done { id, .. }
            | RunnerFrame::Completeness { id, .. }
            | RunnerFrame::Checked { id, .. }
            | RunnerFrame::Snapshot { id, .. } => Some(id),
            RunnerFrame::BridgeCall { cell, .. } => cell.as_deref(),
            RunnerFrame::Stdout { id, .. }
            | RunnerFrame::Stderr { id, .. }
            | RunnerFrame::Display { id, .. }
            | RunnerFrame::Result { id, .. }
            | RunnerFrame::Error { id, .. } => id.as_deref(),
        }
    }
}

/// How a request ended.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum DoneStatus {
    Ok,
    Error,
}

/// Host → runner: the answer to a `bridge_call`, written on the request pipe
/// while the cell runs (the runner reads it on a thread of its own).
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, JsonSchema)]
pub struct BridgeResult {
    pub id: String,
    pub ok: bool,
    /// The value when `ok` (JSON null included).
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub value: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<BridgeErrorBody>,
}

/// A field that is there, `null` included, is `Some`.
fn present<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(deserializer).map(Some)
}

/// Why a bridge call failed: `kind` is a short machine word (`cancelled`,
/// `limit`, `unavailable`, `host`), `message` the text the cell's exception shows.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, JsonSchema)]
pub struct BridgeErrorBody {
    pub kind: String,
    pub message: String,
}

impl BridgeResult {
    /// A successful answer.
    pub fn ok(id: impl Into<String>, value: Value) -> Self {
        BridgeResult { id: id.into(), ok: true, value: Some(value), error: None }
    }

    /// A failed answer.
    pub fn err(id: impl Into<String>, kind: impl Into<String>, message: impl Into<String>) -> Self {
        BridgeResult {
            id: id.into(),
            ok: false,
            value: None,
            error: Some(BridgeErrorBody { kind: kind.into(), message: message.into() }),
        }
    }

    /// The frame as one line (with its `\n`).
    pub fn encode(&self) -> String {
        line(&RequestRef::BridgeResult(self))
    }
}

/// Why a line from the runner is not a frame the host can use.
#[derive(Debug)]
pub enum FrameError {
    /// Not a JSON object with a string `type`.
    NotAFrame(serde_json::Error),
    /// A `type` this host does not know (from a newer runner, say).
    UnknownType(String),
    /// A frame of a known type with a field missing or of the wrong kind.
    Malformed {
        /// The frame's `type`.
        kind: &'static str,
        /// The `id` it names, when that much could be read.
        id: Option<String>,
        error: serde_json::Error,
    },
}

impl std::fmt::Display for FrameError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FrameError::NotAFrame(error) => write!(f, "not a frame ({error})"),
            FrameError::UnknownType(kind) => write!(f, "a frame of unknown type {kind:?}"),
            FrameError::Malformed { kind, error, .. } => write!(f, "a `{kind}` frame the host cannot read: {error}"),
        }
    }
}

impl std::error::Error for FrameError {}

/// What a line that failed to parse still tells: its type and id.
#[derive(Deserialize)]
struct Envelope {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    id: Option<Value>,
}

/// Parse one line from the runner.
pub fn parse_frame(line: &[u8]) -> Result<RunnerFrame, FrameError> {
    match serde_json::from_slice(line) {
        Ok(frame) => Ok(frame),
        // Only on failure: the line is read once more, for what it is.
        Err(error) => Err(match serde_json::from_slice::<Envelope>(line) {
            Err(_) => FrameError::NotAFrame(error),
            Ok(envelope) => match FRAME_TYPES.iter().find(|known| **known == envelope.kind) {
                None => FrameError::UnknownType(envelope.kind),
                Some(kind) => {
                    let id = match envelope.id {
                        Some(Value::String(id)) => Some(id),
                        _ => None,
                    };
                    FrameError::Malformed { kind, id, error }
                }
            },
        }),
    }
}

/// Serialize an execute request as one line (with its `\n`): the hot path,
/// one serde pass over the borrowed request.
pub fn encode_request(request: &ExecuteRequest) -> String {
    line(&RequestRef::Execute(request))
}

/// The request as it may appear in logs: environment values are replaced,
/// since they may be secrets the caller chose to pass.
pub fn redacted(request: &ExecuteRequest) -> String {
    let mut copy = request.clone();
    if let Some(env) = copy.env.as_mut() {
        for value in env.values_mut() {
            if value.is_some() {
                *value = Some("<redacted>".into());
            }
        }
    }
    encode_request(&copy).trim_end().to_string()
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod fast_paths {
    use super::*;

    /// The hot path's borrowed encoders write what the typed requests do.
    #[test]
    fn borrowed_encoders_match_the_typed_requests() {
        let request = ExecuteRequest {
            id: "r1".into(),
            code: "x\n".into(),
            silent: false,
            store_history: true,
            cwd: Some("/t".into()),
            env: None,
            typescript: false,
            restore_env: false,
            json_results: true,
        };
        let typed = serde_json::to_string(&HostRequest::Execute(request.clone())).unwrap() + "\n";
        assert_eq!(encode_request(&request), typed);
        assert!(typed.starts_with(r#"{"type":"execute","id":"r1""#), "{typed}");
        let answer = BridgeResult::err("b1", "host", "no");
        let typed = serde_json::to_string(&HostRequest::BridgeResult(answer.clone())).unwrap() + "\n";
        assert_eq!(answer.encode(), typed);
        assert_eq!(HostRequest::Exit.encode(), "{\"type\":\"exit\"}\n");
        assert_eq!(HostRequest::Interrupt.encode(), "{\"type\":\"interrupt\"}\n");
    }
}
