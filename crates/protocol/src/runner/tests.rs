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
                RunnerFrame::Ready {
                    protocol,
                    python,
                    pid,
                    executable,
                    lost_threads: Vec::new(),
                    language: None,
                    parser: None,
                }
            }),
            text().prop_map(|id| RunnerFrame::Started { id }),
            (proptest::option::of(text()), text()).prop_map(|(id, data)| RunnerFrame::Stdout { id, data }),
            (proptest::option::of(text()), text()).prop_map(|(id, data)| RunnerFrame::Stderr { id, data }),
            (proptest::option::of(text()), bundle(), bundle())
                .prop_map(|(id, bundle, metadata)| RunnerFrame::Display { id, bundle, metadata }),
            (proptest::option::of(text()), bundle(), bundle()).prop_map(|(id, bundle, metadata)| RunnerFrame::Result {
                id,
                bundle,
                metadata
            }),
            (proptest::option::of(text()), text(), text(), proptest::collection::vec(text(), 0..4))
                .prop_map(|(id, ename, evalue, traceback)| RunnerFrame::Error { id, ename, evalue, traceback }),
            (text(), any::<bool>(), any::<u64>(), any::<bool>()).prop_map(|(id, ok, execution_count, cancelled)| {
                let status = if ok { DoneStatus::Ok } else { DoneStatus::Error };
                RunnerFrame::Done { id, status, execution_count, cancelled }
            }),
            (text(), text(), text()).prop_map(|(id, status, indent)| RunnerFrame::Completeness { id, status, indent }),
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
