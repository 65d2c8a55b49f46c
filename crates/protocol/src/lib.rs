//! The NDJSON wire protocol between the host and the Python runner.
//!
//! One JSON object per `\n`-terminated UTF-8 line, both ways. This module owns
//! every frame type, so the runner's `protocol.py` and this file are the two
//! places to read when the protocol changes.

pub mod sdk;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Protocol version the runner announces in its `ready` frame; the host
/// refuses a runner that speaks another one.
pub const PROTOCOL_VERSION: u32 = 1;

/// A MIME bundle: MIME type → data (text, base64 for binary, JSON for
/// `application/json` and status events).
pub type MimeBundle = Map<String, Value>;

/// Host → runner: run `code`.
#[derive(Debug, Clone, Serialize)]
pub struct ExecuteRequest {
    pub id: String,
    pub code: String,
    /// Silent requests show no last-expression value and do not count as cells.
    pub silent: bool,
    /// Whether the request counts in `executionCount` and sets `_`.
    #[serde(rename = "storeHistory")]
    pub store_history: bool,
    /// Directory to `chdir` into (and put on `sys.path`) before running.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// Environment changes; `None` removes a variable.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub env: Option<BTreeMap<String, Option<String>>>,
    /// The code is TypeScript (Node runner: types are stripped first).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub typescript: bool,
    /// `env` is for this request only: the runner puts the variables it
    /// names back as they were once the request is done.
    #[serde(rename = "restoreEnv", skip_serializing_if = "std::ops::Not::not")]
    pub restore_env: bool,
    /// A list or dict that is the cell's value also goes as `application/json`
    /// (the Python SDK's `Result.json`); text front ends leave it off, because
    /// a model would read the value twice.
    #[serde(rename = "jsonResults", skip_serializing_if = "std::ops::Not::not")]
    pub json_results: bool,
}

/// Host → runner: is this code a whole cell? Answered by a `completeness` frame.
#[derive(Debug, Clone, Serialize)]
pub struct CompleteRequest {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub id: String,
    pub code: String,
}

/// Host → runner: check cells before any of them runs. The runner compiles
/// each (after its magic transform) without executing it, and with `lint`
/// also runs `ruff check` on it; answered by a `checked` frame. Nothing runs
/// and the kernel's state is untouched.
#[derive(Debug, Clone, Serialize)]
pub struct CheckRequest {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub id: String,
    pub cells: Vec<CheckCell>,
    pub lint: bool,
}

/// Host → runner: save the user namespace to `path` (`kind` "snapshot") or
/// restore one saved there into it (`kind` "restore"); answered by a
/// `snapshot` frame. Runs between cells, in order with them.
#[derive(Debug, Clone, Serialize)]
pub struct SnapshotRequest {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub id: String,
    pub path: String,
    /// Written into the file's header.
    pub version: &'static str,
}

/// One cell of a [`CheckRequest`].
#[derive(Debug, Clone, Serialize)]
pub struct CheckCell {
    /// 1-based position in the call, as messages name it ("Cell 2, line 3").
    pub number: usize,
    pub code: String,
    /// TypeScript (the Node runner strips its types before parsing).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub typescript: bool,
}

/// What the check found in one cell, in the request's order.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
pub struct CheckedCell {
    /// The cell does not compile.
    #[serde(default)]
    pub error: Option<SyntaxProblem>,
    /// What the linter reported (empty without `lint`).
    #[serde(default)]
    pub findings: Vec<LintFinding>,
}

/// A cell's compile error, with its traceback lines (the caret included).
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
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
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
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

/// Host → runner: exit cleanly.
pub const EXIT_FRAME: &str = "{\"type\":\"exit\"}";

/// Host → runner, one whole line: interrupt the running cell (where the
/// host cannot send SIGINT, i.e. on Windows; a runner reads its requests on a
/// thread of their own there). Between cells it is ignored.
pub const INTERRUPT_FRAME: &str = "{\"type\":\"interrupt\"}\n";

/// Runner → host frames. (`Serialize` is for tests and tools that play the runner's part.)
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum RunnerFrame {
    /// Handshake: the runner is set up and reading requests.
    Ready {
        protocol: u32,
        python: String,
        pid: u32,
        executable: String,
        /// In a kernel forked from another: the threads of that kernel's cells,
        /// which a fork does not copy.
        #[serde(default, rename = "lostThreads", skip_serializing_if = "Vec::is_empty")]
        lost_threads: Vec<String>,
    },
    Started {
        id: String,
    },
    Stdout {
        id: Option<String>,
        data: String,
    },
    Stderr {
        id: Option<String>,
        data: String,
    },
    Display {
        id: Option<String>,
        bundle: MimeBundle,
        #[serde(default)]
        metadata: Map<String, Value>,
    },
    Result {
        id: Option<String>,
        bundle: MimeBundle,
        #[serde(default)]
        metadata: Map<String, Value>,
    },
    Error {
        id: Option<String>,
        ename: String,
        evalue: String,
        #[serde(default)]
        traceback: Vec<String>,
    },
    Done {
        id: String,
        status: DoneStatus,
        #[serde(rename = "executionCount")]
        execution_count: u64,
        #[serde(default)]
        cancelled: bool,
    },
    /// The answer to a `complete` request: is the code a whole cell yet?
    Completeness {
        id: String,
        status: String,
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
        #[serde(default)]
        report: Option<Value>,
        #[serde(default)]
        error: Option<String>,
    },
    /// A cell asks the host for work (`completion`, `agent`, `tool`): answered
    /// by a [`BridgeResult`] with the same `id` on the request pipe.
    #[serde(rename = "bridge_call")]
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

impl RunnerFrame {
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
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum DoneStatus {
    Ok,
    Error,
}

/// Host → runner: the answer to a `bridge_call`, written on the request pipe
/// while the cell runs (the runner reads it on a thread of its own).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct BridgeResult {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub id: String,
    pub ok: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<BridgeErrorBody>,
}

/// Why a bridge call failed: `kind` is a short machine word (`cancelled`,
/// `limit`, `unavailable`, `host`), `message` the text the cell's exception shows.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct BridgeErrorBody {
    pub kind: String,
    pub message: String,
}

impl BridgeResult {
    /// A successful answer.
    pub fn ok(id: impl Into<String>, value: Value) -> Self {
        BridgeResult { kind: "bridge_result", id: id.into(), ok: true, value: Some(value), error: None }
    }

    /// A failed answer.
    pub fn err(id: impl Into<String>, kind: impl Into<String>, message: impl Into<String>) -> Self {
        BridgeResult {
            kind: "bridge_result",
            id: id.into(),
            ok: false,
            value: None,
            error: Some(BridgeErrorBody { kind: kind.into(), message: message.into() }),
        }
    }

    /// The frame as one line (with its `\n`).
    pub fn encode(&self) -> String {
        let mut line = serde_json::to_string(self).expect("bridge results always serialize");
        line.push('\n');
        line
    }
}

/// Parse one line from the runner.
pub fn parse_frame(line: &[u8]) -> Result<RunnerFrame, serde_json::Error> {
    serde_json::from_slice(line)
}

/// Serialize a request as one line (with its `\n`).
pub fn encode_request(request: &ExecuteRequest) -> String {
    let mut line = serde_json::to_string(request).expect("requests always serialize");
    line.push('\n');
    line
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
mod tests {
    use super::*;

    #[test]
    fn parses_every_frame_type() {
        let lines = [
            r#"{"type":"ready","protocol":1,"python":"3.11.7","pid":7,"executable":"/p"}"#,
            r#"{"type":"started","id":"a"}"#,
            r#"{"type":"stdout","id":"a","data":"x"}"#,
            r#"{"type":"stderr","id":null,"data":"y"}"#,
            r#"{"type":"display","id":"a","bundle":{"text/plain":"1"}}"#,
            r#"{"type":"result","id":"a","bundle":{"text/plain":"2"},"metadata":{"k":1}}"#,
            r#"{"type":"error","id":"a","ename":"E","evalue":"v","traceback":["t"]}"#,
            r#"{"type":"done","id":"a","status":"ok","executionCount":3,"cancelled":false}"#,
            r#"{"type":"bridge_call","id":"b1","cell":"a","op":"completion","args":{"prompt":"hi"}}"#,
            r#"{"type":"checked","id":"k1","cells":[{"error":null,"findings":[]},{"error":{"ename":"SyntaxError","evalue":"x","traceback":["  ^\n"],"line":2}}],"notes":["n"]}"#,
        ];
        for line in lines {
            parse_frame(line.as_bytes()).unwrap_or_else(|e| panic!("{line}: {e}"));
        }
        assert_eq!(parse_frame(lines[8].as_bytes()).unwrap().request_id(), Some("a"));
        match parse_frame(lines[9].as_bytes()).unwrap() {
            RunnerFrame::Checked { id, cells, notes } => {
                assert_eq!((id.as_str(), cells.len(), notes.len()), ("k1", 2, 1));
                assert_eq!(cells[1].error.as_ref().unwrap().line, Some(2));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            parse_frame(lines[7].as_bytes()).unwrap(),
            RunnerFrame::Done { id: "a".into(), status: DoneStatus::Ok, execution_count: 3, cancelled: false }
        );
    }

    #[test]
    fn rejects_unknown_frames() {
        assert!(parse_frame(br#"{"type":"bogus"}"#).is_err());
        assert!(parse_frame(b"not json").is_err());
    }

    mod fuzz {
        use proptest::prelude::*;
        use serde_json::json;

        use super::*;

        /// Examples per property: `CELLBOX_FUZZ_CASES`, default 200.
        fn config() -> ProptestConfig {
            let cases = cellbox_settings::FUZZ_CASES.parse().ok().flatten().unwrap_or(200);
            ProptestConfig { cases, failure_persistence: None, ..ProptestConfig::default() }
        }

        fn text() -> impl Strategy<Value = String> {
            prop_oneof![any::<String>(), "[a-z\\\\\"\\n\u{0}\u{fffd}é😀]{0,12}"]
        }

        fn bundle() -> impl Strategy<Value = MimeBundle> {
            let value = prop_oneof![
                text().prop_map(Value::from),
                any::<i64>().prop_map(Value::from),
                proptest::collection::vec(text(), 0..3).prop_map(Value::from),
            ];
            proptest::collection::btree_map(text(), value, 0..4).prop_map(|m| m.into_iter().collect())
        }

        fn frame() -> impl Strategy<Value = RunnerFrame> {
            prop_oneof![
                (any::<u32>(), text(), any::<u32>(), text()).prop_map(|(protocol, python, pid, executable)| {
                    RunnerFrame::Ready { protocol, python, pid, executable, lost_threads: Vec::new() }
                }),
                text().prop_map(|id| RunnerFrame::Started { id }),
                (proptest::option::of(text()), text()).prop_map(|(id, data)| RunnerFrame::Stdout { id, data }),
                (proptest::option::of(text()), text()).prop_map(|(id, data)| RunnerFrame::Stderr { id, data }),
                (proptest::option::of(text()), bundle(), bundle())
                    .prop_map(|(id, bundle, metadata)| RunnerFrame::Display { id, bundle, metadata }),
                (proptest::option::of(text()), bundle(), bundle())
                    .prop_map(|(id, bundle, metadata)| RunnerFrame::Result { id, bundle, metadata }),
                (proptest::option::of(text()), text(), text(), proptest::collection::vec(text(), 0..4))
                    .prop_map(|(id, ename, evalue, traceback)| RunnerFrame::Error { id, ename, evalue, traceback }),
                (text(), any::<bool>(), any::<u64>(), any::<bool>()).prop_map(
                    |(id, ok, execution_count, cancelled)| {
                        let status = if ok { DoneStatus::Ok } else { DoneStatus::Error };
                        RunnerFrame::Done { id, status, execution_count, cancelled }
                    }
                ),
                (text(), text(), text()).prop_map(|(id, status, indent)| RunnerFrame::Completeness {
                    id,
                    status,
                    indent
                }),
            ]
        }

        /// Objects shaped like frames, with fields of the wrong kind or missing.
        fn frame_like() -> impl Strategy<Value = Vec<u8>> {
            let kind = prop_oneof![
                Just(json!("ready")),
                Just(json!("started")),
                Just(json!("stdout")),
                Just(json!("display")),
                Just(json!("error")),
                Just(json!("done")),
                Just(json!("completeness")),
                text().prop_map(Value::from),
                any::<i64>().prop_map(Value::from),
            ];
            let field = prop_oneof![
                Just(Value::Null),
                any::<bool>().prop_map(Value::from),
                any::<i64>().prop_map(Value::from),
                any::<f64>().prop_map(|f| json!(f)),
                text().prop_map(Value::from),
                bundle().prop_map(Value::Object),
                proptest::collection::vec(text(), 0..3).prop_map(Value::from),
            ];
            let names = proptest::sample::select(vec![
                "id",
                "data",
                "bundle",
                "metadata",
                "ename",
                "evalue",
                "traceback",
                "status",
                "executionCount",
                "cancelled",
                "protocol",
                "pid",
                "python",
                "executable",
                "indent",
            ]);
            (kind, proptest::collection::btree_map(names, field, 0..8)).prop_map(|(kind, fields)| {
                let mut object: Map<String, Value> = fields.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
                object.insert("type".into(), kind);
                serde_json::to_vec(&object).unwrap()
            })
        }

        proptest! {
            #![proptest_config(config())]

            #[test]
            fn any_bytes_parse_or_fail_cleanly(line in proptest::collection::vec(any::<u8>(), 0..256)) {
                let _ = parse_frame(&line);
            }

            #[test]
            fn frame_shaped_objects_parse_or_fail_cleanly(line in frame_like()) {
                if let Ok(frame) = parse_frame(&line) {
                    // Whatever parses is a frame the host can route.
                    let _ = frame.request_id();
                }
            }

            #[test]
            fn valid_frames_round_trip(frame in frame()) {
                let mut line = serde_json::to_vec(&frame).unwrap();
                line.push(b'\n');
                prop_assert_eq!(parse_frame(&line).unwrap(), frame);
            }

            #[test]
            fn requests_encode_as_one_line_of_json(id in text(), code in text(), cwd in proptest::option::of(text())) {
                let request =
                    ExecuteRequest { id, code, silent: false, store_history: true, cwd, env: None, typescript: false, restore_env: false, json_results: false };
                let line = encode_request(&request);
                prop_assert!(line.ends_with('\n'));
                prop_assert_eq!(line.matches('\n').count(), 1);
                let value: Value = serde_json::from_str(&line).unwrap();
                prop_assert_eq!(value["code"].as_str(), Some(request.code.as_str()));
                prop_assert_eq!(value["id"].as_str(), Some(request.id.as_str()));
            }
        }
    }

    #[test]
    fn redaction_hides_env_values_only() {
        let request = ExecuteRequest {
            id: "i".into(),
            code: "c".into(),
            silent: true,
            store_history: false,
            cwd: None,
            env: Some(BTreeMap::from([("TOKEN".into(), Some("s3cret".into())), ("GONE".into(), None)])),
            typescript: false,
            restore_env: false,
            json_results: false,
        };
        let text = redacted(&request);
        assert!(!text.contains("s3cret"));
        assert!(text.contains("TOKEN"));
        assert!(text.contains("\"GONE\":null"));
    }
}
