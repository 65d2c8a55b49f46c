//! The runner driven directly over its pipes: malformed request lines never
//! kill it, and each gets a `ProtocolError` (plus `done` when it named an id).

use crate::common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use cellbox_protocol::{RunnerFrame, parse_frame};

#[test]
fn malformed_lines_get_protocol_errors_and_the_loop_goes_on() {
    let runner = cellbox_kernels::runtime::python::ensure_runner().unwrap();
    let mut child = Command::new(common::python())
        .arg("-u")
        .arg(&runner)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut next_frame = || {
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        parse_frame(line.as_bytes()).unwrap_or_else(|e| panic!("bad frame {line:?}: {e}"))
    };
    assert!(matches!(next_frame(), RunnerFrame::Ready { protocol: 1, .. }));

    // (line, the id the runner should still answer with `done`)
    let cases: Vec<(Vec<u8>, Option<&str>)> = vec![
        (b"not json".to_vec(), None),
        (b"".to_vec(), None),
        (b"   ".to_vec(), None),
        (b"[1, 2]".to_vec(), None),
        (b"42".to_vec(), None),
        (b"\"a string\"".to_vec(), None),
        (b"null".to_vec(), None),
        (b"{\"id\": \"bad\xff\"}".to_vec(), None),
        (b"{\"code\": \"1\"}".to_vec(), None),
        (b"{\"id\": true, \"code\": \"1\"}".to_vec(), None),
        (b"{\"id\": \"m1\"}".to_vec(), Some("m1")),
        (b"{\"id\": \"m2\", \"code\": 5}".to_vec(), Some("m2")),
        (b"{\"id\": \"m3\", \"code\": \"1\", \"silent\": \"yes\"}".to_vec(), Some("m3")),
        (b"{\"id\": \"m4\", \"code\": \"1\", \"env\": [1]}".to_vec(), Some("m4")),
        (b"{\"id\": \"m5\", \"code\": \"1\", \"env\": {\"K\": 1}}".to_vec(), Some("m5")),
        (b"{\"id\": \"m6\", \"type\": \"launch\"}".to_vec(), Some("m6")),
        (b"{\"id\": 7, \"code\": \"1\", \"cwd\": 3}".to_vec(), Some("7")),
        (b"{\"id\": \"m8\", \"code\": \"1\"".to_vec(), None),
    ];
    for (line, id) in cases {
        stdin.write_all(&line).unwrap();
        stdin.write_all(b"\n").unwrap();
        let shown = String::from_utf8_lossy(&line).into_owned();
        match next_frame() {
            RunnerFrame::Error { id: got, ename, evalue, .. } => {
                assert_eq!(ename, "ProtocolError", "{shown}");
                assert!(!evalue.is_empty());
                assert_eq!(got.as_deref(), id, "{shown}");
            }
            other => panic!("{shown}: expected a ProtocolError, got {other:?}"),
        }
        if let Some(id) = id {
            match next_frame() {
                RunnerFrame::Done { id: got, .. } => assert_eq!(got, id),
                other => panic!("{shown}: expected done, got {other:?}"),
            }
        }
    }
    // Still alive and counting only real cells.
    stdin.write_all(b"{\"id\": 9, \"code\": \"6*7\"}\n").unwrap();
    assert!(matches!(next_frame(), RunnerFrame::Started { .. }));
    match next_frame() {
        RunnerFrame::Result { id, bundle, .. } => {
            assert_eq!(id.as_deref(), Some("9"));
            assert_eq!(bundle["text/plain"], "42");
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(next_frame(), RunnerFrame::Done { execution_count: 1, .. }));
    stdin.write_all(b"{\"type\":\"exit\"}\n").unwrap();
    assert!(child.wait().unwrap().success());
}
