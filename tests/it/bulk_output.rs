//! Bulk output through the eval tool: every byte reaches the artifact in
//! order, whatever the write sizes, with stderr and displays interleaved where
//! they happened, and the bounded text keeps its head and tail.

use crate::common;

use cellbox_engine::tool::{CallContext, EvalEngine, EvalParams, EvalResult, ignore_events};
use serde_json::json;
use tokio_util::sync::CancellationToken;

async fn eval(engine: &EvalEngine, code: &str) -> EvalResult {
    let params = EvalParams::from_json(json!({"cells": [{"code": code, "timeout": 120}]})).unwrap();
    engine.eval(&params, &CallContext::new("bulk"), &CancellationToken::new(), &ignore_events).await.unwrap()
}

fn whole_artifact(engine: &EvalEngine, result: &EvalResult) -> String {
    let uri = result.artifact.clone().expect("the output is saved");
    let (_, size) = engine.read_artifact(&uri, 0, 1).unwrap();
    let (text, read) = engine.read_artifact(&uri, 0, size as usize).unwrap();
    assert_eq!(read, size);
    text
}

/// Large `os.write` chunks of numbered, multi-byte text (so characters are cut
/// between the host's reads), with stderr lines and a display between them
/// (the display is the fence: two pipes written in turn with nothing between
/// them are read in either order, as from any process).
const MIXED: &str = r#"
import os, sys
def block(n):
    return ''.join('%06d é€😀\n' % (n * 1000 + i) for i in range(20000)).encode()
for n in range(4):
    os.write(1, block(n))
    if n == 1:
        sys.stderr.write('between\n'); sys.stderr.flush()
        os.write(2, b'raw stderr\n')
        display('a display')
"#;

fn expected_mixed() -> String {
    let block = |n: usize| -> String { (0..20000).map(|i| format!("{:06} é€😀\n", n * 1000 + i)).collect() };
    let mut text = String::new();
    for n in 0..4 {
        text.push_str(&block(n));
        if n == 1 {
            text.push_str("between\nraw stderr\n'a display'\n");
        }
    }
    text
}

#[tokio::test]
async fn every_byte_reaches_the_artifact_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let engine = EvalEngine::new(common::engine_config(dir.path()));
    let result = eval(&engine, MIXED).await;
    assert!(!result.is_error, "{}", result.text);
    assert!(result.truncated);
    let expected = expected_mixed();
    let saved = whole_artifact(&engine, &result);
    assert_eq!(saved.len(), expected.len());
    if saved != expected {
        let at = saved.bytes().zip(expected.bytes()).position(|(a, b)| a != b).unwrap_or(0);
        let around = |text: &str| {
            String::from_utf8_lossy(&text.as_bytes()[at.saturating_sub(40)..(at + 80).min(text.len())]).into_owned()
        };
        panic!("the artifact differs at byte {at}: {:?} where the cell wrote {:?}", around(&saved), around(&expected));
    }
    // The bounded text is the head and the tail of the same stream.
    let (head, tail) = result.text.split_once("[… ").expect("a marker");
    assert!(expected.starts_with(head), "{head}");
    let tail = tail.split_once("]\n").unwrap().1;
    assert!(expected.ends_with(tail), "{tail}");
    assert!(head.starts_with("000000 é€😀\n") && tail.ends_with("022999 é€😀\n"), "{head} … {tail}");
    engine.dispose_all().await;
}

#[tokio::test]
async fn calls_after_bulk_output_keep_their_own_artifacts() {
    let dir = tempfile::tempdir().unwrap();
    let engine = EvalEngine::new(common::engine_config(dir.path()));
    let big =
        eval(&engine, "import os\nfor _ in range(40):\n    os.write(1, b'y' * 99 + b'\\n' * 1 + b'z' * 250_000)").await;
    let small = eval(&engine, "print('after')").await;
    assert_eq!(small.text, "after\n");
    let saved = whole_artifact(&engine, &big);
    assert_eq!(saved.len(), 40 * 250_100);
    assert_eq!(saved.matches('\n').count(), 40);
    assert!(saved.ends_with(&"z".repeat(250_000)));
    assert_eq!(whole_artifact(&engine, &small), "after\n");
    engine.dispose_all().await;
}

#[tokio::test]
async fn the_artifact_cap_still_applies_to_bulk_output() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = common::engine_config(dir.path());
    config.max_artifact_bytes = 3_000_000;
    let engine = EvalEngine::new(config);
    let result = eval(&engine, "import os\nfor i in range(8):\n    os.write(1, str(i).encode() * 1_000_000)").await;
    let saved = whole_artifact(&engine, &result);
    assert!(saved.starts_with(&"0".repeat(1_000_000)), "the start is kept");
    assert!(saved[..3_000_000].ends_with(&"2".repeat(1_000_000)));
    assert!(saved[3_000_000..].starts_with("\n[cellbox: artifact capped at 3000000 bytes"), "{}", &saved[3_000_000..]);
    assert!(result.text.contains("reached its size cap"), "{}", result.text);
    engine.dispose_all().await;
}
