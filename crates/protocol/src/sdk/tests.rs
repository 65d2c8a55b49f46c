use super::*;
use std::path::Path;

#[test]
fn names_and_codes_are_unique_and_found_again() {
    for method in Method::ALL {
        assert_eq!(Method::from_name(method.name()), Some(*method));
    }
    let mut names: Vec<_> = Method::ALL.iter().map(|m| m.name()).collect();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), Method::ALL.len());
    for code in ErrorCode::ALL {
        assert_eq!(ErrorCode::from_code(code.code()), Some(code));
    }
}

/// tests/protocol/sdk.jsonl, shared with the Python SDK's tests: each line
/// parses into the typed wire and serializes back to the same JSON, and
/// every method, the notification and every error code are in it.
#[test]
fn the_golden_corpus_round_trips() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/protocol/sdk.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    let (mut requested, mut answered, mut codes, mut notified) = (Vec::new(), Vec::new(), Vec::new(), 0);
    for (number, line) in text.lines().enumerate().filter(|(_, line)| !line.trim().is_empty()) {
        let at = format!("tests/protocol/sdk.jsonl:{}", number + 1);
        let entry: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{at}: {e}"));
        let message = entry["message"].clone();
        let method = entry["method"].as_str().and_then(Method::from_name);
        let again = match entry["kind"].as_str() {
            Some("request") => {
                let request = Request::parse(message.clone()).unwrap_or_else(|e| panic!("{at}: {e:?}"));
                assert_eq!(Some(request.call.method()), method, "{at}");
                requested.push(request.call.method());
                request.to_value()
            }
            Some("response") => {
                let method = method.unwrap_or_else(|| panic!("{at}: a response names its method"));
                let response = Response::parse(method, message.clone()).unwrap_or_else(|e| panic!("{at}: {e}"));
                assert!(response.outcome.is_ok(), "{at}");
                answered.push(method);
                response.to_value()
            }
            Some("error") => {
                let failure: Failure =
                    serde_json::from_value(message["error"].clone()).unwrap_or_else(|e| panic!("{at}: {e}"));
                codes.push(failure.code);
                response(&message["id"], Err(failure))
            }
            Some("notification") => {
                notified += 1;
                Notification::parse(message.clone()).unwrap_or_else(|e| panic!("{at}: {e}")).to_value()
            }
            other => panic!("{at}: kind {other:?}"),
        };
        assert_eq!(again, message, "{at}: the typed wire gives back other JSON");
    }
    for method in Method::ALL {
        assert!(requested.contains(method), "tests/protocol/sdk.jsonl has no request of {}", method.name());
        assert!(answered.contains(method), "tests/protocol/sdk.jsonl has no response of {}", method.name());
    }
    for code in ErrorCode::ALL {
        assert!(codes.contains(&code), "tests/protocol/sdk.jsonl has no {} error", code.name());
    }
    assert!(notified > 0);
}

#[test]
fn bad_requests_fail_with_their_codes_and_words() {
    let failure = Request::parse(json!({"id": 1, "method": "no_such"})).unwrap_err();
    assert_eq!(failure, Failure::new(ErrorCode::MethodNotFound, "no method \"no_such\""));
    let failure = Request::parse(json!({"id": 1, "method": "run_code", "params": {"cod": "1"}})).unwrap_err();
    assert_eq!(failure.code, ErrorCode::InvalidParams);
    assert!(failure.message.starts_with("run_code: unknown field `cod`"), "{}", failure.message);
    let failure = Request::parse(json!({"id": 1})).unwrap_err();
    assert_eq!(failure.code, ErrorCode::ParseError);
    // No params, or null: `{}`; a method without params ignores what it is given.
    let request = Request::parse(json!({"id": 2, "method": "list_contexts", "params": [1]})).unwrap();
    assert_eq!(request.call, Call::ListContexts(NoParams));
    let request = Request::parse(json!({"method": "files.list", "params": {"path": "."}})).unwrap();
    assert_eq!(request.call, Call::FilesList(FileList { path: ".".into(), depth: None }));
}
