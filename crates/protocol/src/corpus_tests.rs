//! The golden corpus (`tests/protocol/*.jsonl` at the repository's root:
//! one message per line, host → runner, runner → host, fork server both ways)
//! round-trips through the types, every type is in it, the committed schemas
//! are current, and the runners' homes for the wire name what this crate does.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::{self as protocol, FRAME_TYPES, HostRequest, REQUEST_TYPES, fork_server};
use serde_json::Value;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn corpus(name: &str) -> Vec<(String, Value)> {
    let path = repo().join("tests/protocol").join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| (line.to_string(), serde_json::from_str(line).unwrap_or_else(|e| panic!("{line}: {e}"))))
        .collect()
}

fn kind(value: &Value) -> &str {
    value["type"].as_str().expect("every corpus line has a type")
}

#[test]
fn runner_requests_round_trip() {
    let mut seen = BTreeSet::new();
    for (line, value) in corpus("runner_requests.jsonl") {
        let request: HostRequest = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{line}: {e}"));
        assert_eq!(request.type_name(), kind(&value));
        let encoded = request.encode();
        assert!(encoded.ends_with('\n') && encoded.matches('\n').count() == 1, "{encoded:?}");
        let again: Value = serde_json::from_str(&encoded).unwrap();
        assert_eq!(again, value, "the corpus line does not round-trip:\n{line}");
        seen.insert(kind(&value).to_string());
    }
    let all: BTreeSet<String> = REQUEST_TYPES.iter().map(|s| s.to_string()).collect();
    assert_eq!(seen, all, "the corpus covers every request type");
}

#[test]
fn runner_frames_round_trip() {
    let mut seen = BTreeSet::new();
    for (line, value) in corpus("runner_frames.jsonl") {
        let frame = protocol::parse_frame(line.as_bytes()).unwrap_or_else(|e| panic!("{line}: {e}"));
        assert_eq!(frame.type_name(), kind(&value));
        let again = serde_json::to_value(&frame).unwrap();
        assert_eq!(again, value, "the corpus line does not round-trip:\n{line}");
        seen.insert(kind(&value).to_string());
    }
    let all: BTreeSet<String> = FRAME_TYPES.iter().map(|s| s.to_string()).collect();
    assert_eq!(seen, all, "the corpus covers every frame type");
}

#[test]
fn fork_server_corpus_round_trips() {
    let mut seen = BTreeSet::new();
    for (line, value) in corpus("fork_server.jsonl") {
        let kind = kind(&value).to_string();
        let again = if kind == "fork" || kind == "file" {
            let request: fork_server::Request = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{line}: {e}"));
            serde_json::from_slice::<Value>(&request.encode().unwrap()).unwrap()
        } else {
            let message = fork_server::parse_message(line.as_bytes()).unwrap_or_else(|e| panic!("{line}: {e}"));
            serde_json::to_value(&message).unwrap()
        };
        assert_eq!(again, value, "the corpus line does not round-trip:\n{line}");
        seen.insert(kind);
    }
    let all: BTreeSet<String> = fork_server::MESSAGE_TYPES.iter().map(|s| s.to_string()).collect();
    assert_eq!(seen, all, "the corpus covers every fork-server message type");
}

#[test]
fn live_view_corpus_round_trips() {
    let mut seen = BTreeSet::new();
    for (line, value) in corpus("ui.jsonl") {
        let message: protocol::ui::LiveMessage = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{line}: {e}"));
        assert_eq!(message.kind.type_name(), kind(&value));
        assert_eq!(serde_json::to_value(&message).unwrap(), value, "the corpus line does not round-trip:\n{line}");
        seen.insert(kind(&value).to_string());
    }
    let all: BTreeSet<String> = protocol::ui::LiveKind::TYPES.iter().map(|s| s.to_string()).collect();
    assert_eq!(seen, all, "the corpus covers every live-view event type");
}

/// A frame of a known type with a renamed field is an error that names the
/// type; an unknown type is told apart (the host skips it).
#[test]
fn malformed_frames_are_told_from_unknown_ones() {
    match protocol::parse_frame(br#"{"type":"done","id":"r1","status":"ok","execution_count":3}"#) {
        Err(protocol::FrameError::Malformed { kind, id, error }) => {
            assert_eq!((kind, id.as_deref()), ("done", Some("r1")));
            assert!(error.to_string().contains("executionCount"), "{error}");
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        protocol::parse_frame(br#"{"type":"telemetry","id":"r1"}"#),
        Err(protocol::FrameError::UnknownType(kind)) if kind == "telemetry"
    ));
    assert!(matches!(protocol::parse_frame(b"[1]"), Err(protocol::FrameError::NotAFrame(_))));
}

#[test]
fn committed_generated_files_are_current() {
    for (name, text) in protocol::schema::files() {
        let path = repo().join(name);
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            committed == text,
            "{name} is stale: regenerate it with `{}` and commit it",
            protocol::schema::WRITE_COMMAND
        );
    }
}

/// `wire.py` and `wire.js` are the runners' one home for the wire: they name
/// every type and the shared MIME types as this crate does.
#[test]
fn runner_homes_name_every_type() {
    let constants = [protocol::STATUS_MIME, protocol::DATA_MIME, protocol::CHART_MIME];
    for (file, quote) in [("runner/cellbox_kernel/wire.py", '"'), ("runner-js/lib/wire.js", '\'')] {
        let text = std::fs::read_to_string(repo().join(file)).unwrap();
        for name in REQUEST_TYPES.iter().chain(FRAME_TYPES).chain(&constants) {
            assert!(text.contains(&format!("{quote}{name}{quote}")), "{file} does not name {name:?}");
        }
        assert!(
            text.contains(&format!("PROTOCOL_VERSION = {}", protocol::PROTOCOL_VERSION)),
            "{file} speaks another protocol version"
        );
    }
    let python = std::fs::read_to_string(repo().join("runner/cellbox_kernel/wire.py")).unwrap();
    let flag = format!("STARTED_FD_FLAG = \"{}\"", protocol::STARTED_FD_FLAG);
    assert!(python.contains(&flag), "wire.py does not declare {flag}");
    for name in fork_server::MESSAGE_TYPES {
        assert!(python.contains(&format!("\"{name}\"")), "wire.py does not name fork-server type {name:?}");
    }
}
