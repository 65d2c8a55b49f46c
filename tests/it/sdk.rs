//! The Python SDK: its own tests (tests/sdk/*.py: its models, `Sandbox` and `AsyncSandbox`
//! against this build's engine, in the test's process (`cellbox._engine`, built here) and as a
//! `cellbox sdk-server` child, with real kernels on the interpreter under test), and the
//! server's answers to bad requests.

use crate::common;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

/// This build's in-process engine (`cellbox._engine`), built once per test run
/// with the profile of the tests themselves.
fn in_process_engine() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        let binary_dir = Path::new(env!("CARGO_BIN_EXE_cellbox")).parent().unwrap();
        let mut build = Command::new(env!("CARGO"));
        build.args(["build", "--quiet", "-p", "cellbox-sdk-engine"]).current_dir(env!("CARGO_MANIFEST_DIR"));
        if binary_dir.ends_with("release") {
            build.arg("--release");
        }
        let status = build.status().expect("cargo runs");
        assert!(status.success(), "cargo build -p cellbox-sdk-engine failed");
        let library = binary_dir.join(if cfg!(target_os = "macos") { "lib_engine.dylib" } else { "lib_engine.so" });
        assert!(library.is_file(), "{} was not built", library.display());
        library
    })
}

/// Run `python -m unittest` on the SDK tests matching `pattern`, with this
/// build's binary first on PATH (the SDK looks there after its own scripts dir)
/// and its in-process engine as the SDK's default engine.
fn sdk_unit_tests(pattern: &str) {
    sdk_unit_tests_on(pattern, &in_process_engine().display().to_string());
}

/// [`sdk_unit_tests`] with `CELLBOX_SDK_ENGINE` set to `engine`.
fn sdk_unit_tests_on(pattern: &str, engine: &str) {
    let root = env!("CARGO_MANIFEST_DIR");
    let binary_dir = Path::new(env!("CARGO_BIN_EXE_cellbox")).parent().unwrap();
    let path = std::env::join_paths(
        std::iter::once(binary_dir.to_path_buf())
            .chain(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())),
    )
    .unwrap();
    let artifacts = tempfile::tempdir().unwrap();
    let output = Command::new(common::python())
        .args(["-m", "unittest", "discover", "-s", "tests/sdk", "-p", pattern, "-v"])
        .current_dir(root)
        .env("PATH", path)
        .env("CELLBOX_TEST_PYTHON", common::python())
        .env("CELLBOX_ARTIFACTS_DIR", artifacts.path())
        .env("CELLBOX_SDK_ENGINE", engine)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "SDK tests ({pattern}) failed:\n{report}");
    assert!(report.contains("\nOK"), "{report}");
}

#[test]
fn models_match_the_code_interpreter_contract() {
    sdk_unit_tests("test_models.py");
}

#[test]
fn names_and_signatures_match_e2b_s_package() {
    sdk_unit_tests("test_contract.py");
}

#[test]
fn sandbox_and_async_sandbox_run_cells_on_the_real_engine() {
    sdk_unit_tests("test_*sandbox.py");
}

/// The same tests on the engine a sandbox runs as a child process (`engine="process"`).
#[test]
fn sandbox_and_async_sandbox_run_cells_on_the_child_engine() {
    sdk_unit_tests_on("test_*sandbox.py", "process");
}

/// cellbox's own branching: fork_code_context, undo, snapshot and restore (with the settings
/// replayed), which are Linux's only (elsewhere they raise SandboxException).
#[cfg(target_os = "linux")]
#[test]
fn contexts_fork_undo_snapshot_and_restore() {
    sdk_unit_tests("test_branches.py");
}

#[test]
fn the_in_process_engine_is_chosen_stops_and_refuses_what_it_cannot_do() {
    sdk_unit_tests("test_in_process.py");
}

#[test]
fn examples_run_as_written() {
    sdk_unit_tests("test_examples.py");
}

#[test]
fn files_work_on_the_real_engine_under_the_sandbox_policy() {
    sdk_unit_tests("test_files.py");
}

#[test]
fn commands_and_async_files_and_commands_run_on_the_real_engine() {
    sdk_unit_tests("test_*commands.py");
}

/// The SDK's side of the wire: its generated `_wire` module, its error
/// mapping and the shared corpus (tests/protocol/sdk.jsonl); no engine runs.
#[test]
fn the_sdk_speaks_the_declared_wire() {
    sdk_unit_tests("test_wire.py");
}

#[test]
fn remote_sandboxes_work_against_cellbox_serve() {
    sdk_unit_tests("test_remote.py");
}

/// The files and commands methods, spoken to directly: missing paths and
/// commands are NOT_FOUND, bad parameters INVALID_PARAMS, a refused write
/// DENIED; binary content travels as base64.
#[test]
fn sdk_server_answers_files_and_commands_requests() {
    let work = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let refused = outside.path().join("refused.txt");
    let requests = [
        r#"{"jsonrpc":"2.0","id":1,"method":"files.write","params":{"files":[{"path":"a.bin","data":"AAEC/w=="}]}}"#
            .to_string(),
        r#"{"jsonrpc":"2.0","id":2,"method":"files.read","params":{"path":"a.bin"}}"#.to_string(),
        r#"{"jsonrpc":"2.0","id":3,"method":"files.read","params":{"path":"missing.txt"}}"#.to_string(),
        r#"{"jsonrpc":"2.0","id":4,"method":"files.list","params":{"path":".","depth":0}}"#.to_string(),
        format!(
            r#"{{"jsonrpc":"2.0","id":5,"method":"files.write","params":{{"files":[{{"path":{},"data":""}}]}}}}"#,
            serde_json::Value::from(refused.display().to_string())
        ),
        r#"{"jsonrpc":"2.0","id":6,"method":"files.nothing"}"#.to_string(),
        r#"{"jsonrpc":"2.0","id":7,"method":"commands.wait","params":{"id":404}}"#.to_string(),
        r#"{"jsonrpc":"2.0","id":8,"method":"commands.kill","params":{"pid":999999}}"#.to_string(),
        r#"{"jsonrpc":"2.0","id":9,"method":"commands.start","params":{"cmd":"true","timeout":-1}}"#.to_string(),
        r#"{"jsonrpc":"2.0","id":10,"method":"files.write","params":{"files":[{"path":"b","data":"not base64!"}]}}"#
            .to_string(),
    ];
    let mut command = common::binary::cellbox(["sdk-server", "--spares", "0"]);
    command.current_dir(work.path()).env("CELLBOX_ARTIFACTS_DIR", work.path().join("artifacts"));
    let mut child = command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::inherit()).spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    // Calls run at once: the read of a.bin is sent once its write is answered.
    let mut answers: Vec<serde_json::Value> = Vec::new();
    for batch in [&requests[..1], &requests[1..]] {
        stdin.write_all((batch.join("\n") + "\n").as_bytes()).unwrap();
        for line in lines.by_ref().take(batch.len()) {
            answers.push(serde_json::from_str(&line.unwrap()).unwrap());
        }
    }
    drop(stdin);
    assert!(child.wait().unwrap().success());
    let answer = |id: i64| answers.iter().find(|a| a["id"] == id).unwrap_or_else(|| panic!("no answer to {id}"));
    let code = |id: i64| answer(id)["error"]["code"].as_i64();
    assert_eq!(answer(1)["result"][0]["path"], work.path().canonicalize().unwrap().join("a.bin").display().to_string());
    assert_eq!(answer(2)["result"], serde_json::json!({"data": "AAEC/w==", "eof": true}));
    assert_eq!(code(3), Some(-32001));
    assert_eq!(code(4), Some(-32602));
    assert_eq!(code(5), Some(-32003), "{}", answer(5));
    assert!(!refused.exists());
    assert_eq!(code(6), Some(-32601));
    assert_eq!(code(7), Some(-32001));
    assert_eq!(answer(8)["result"], false);
    assert_eq!(code(9), Some(-32602));
    assert_eq!(code(10), Some(-32602));
    assert!(!work.path().join("b").exists());
}

/// The engine's side of the wire, spoken to directly: what a client that
/// gets the protocol wrong (or a newer SDK) is told, without the engine
/// stopping.
#[test]
fn sdk_server_answers_bad_requests_with_json_rpc_errors() {
    let work = tempfile::tempdir().unwrap();
    let mut command = common::binary::cellbox(["sdk-server", "--spares", "0"]);
    command.current_dir(work.path()).env("CELLBOX_ARTIFACTS_DIR", work.path().join("artifacts"));
    let requests = [
        "not json",
        r#"{"jsonrpc":"2.0","id":1,"method":"no_such_method"}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"run_code","params":{"code":"1","language":"cobol"}}"#,
        r#"{"jsonrpc":"2.0","id":3,"method":"run_code","params":{"code":"1","timeout":-1}}"#,
        r#"{"jsonrpc":"2.0","id":4,"method":"run_code","params":{"code":"1","language":"python","context_id":"python"}}"#,
        r#"{"jsonrpc":"2.0","id":5,"method":"run_code","params":{"code":"1","context_id":"ctx-404"}}"#,
        r#"{"jsonrpc":"2.0","id":6,"method":"remove_context","params":{}}"#,
        r#"{"jsonrpc":"2.0","id":7,"method":"create_context","params":{"cwd":"missing"}}"#,
        r#"{"jsonrpc":"2.0","id":8,"method":"run_code","params":{"code":"6 * 7"}}"#,
    ];
    // Input stays open until the last answer: end of input stops the engine and its calls.
    let mut child = command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::inherit()).spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all((requests.join("\n") + "\n").as_bytes()).unwrap();
    let mut answers: Vec<serde_json::Value> = Vec::new();
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let message: serde_json::Value = serde_json::from_str(&line.unwrap()).unwrap();
        if message.get("method").is_some() {
            continue; // an output notification
        }
        let last = message["id"] == 8;
        answers.push(message);
        if last {
            break;
        }
    }
    drop(stdin);
    assert!(child.wait().unwrap().success());
    let code_of = |id: serde_json::Value| {
        let answer = answers.iter().find(|answer| answer["id"] == id).unwrap_or_else(|| panic!("no answer to {id}"));
        (answer["error"]["code"].as_i64(), answer["error"]["message"].as_str().unwrap_or("").to_string())
    };
    let (code, message) = code_of(serde_json::Value::Null);
    assert_eq!(code, Some(-32700), "{message}");
    assert_eq!(code_of(1.into()).0, Some(-32601));
    let (code, message) = code_of(2.into());
    assert_eq!(code, Some(-32602));
    assert!(message.contains("cobol") && message.contains("python"), "{message}");
    assert_eq!(code_of(3.into()).0, Some(-32602));
    assert_eq!(code_of(4.into()).0, Some(-32602));
    assert_eq!(code_of(5.into()).0, Some(-32001));
    assert_eq!(code_of(6.into()).0, Some(-32602));
    assert_eq!(code_of(7.into()).0, Some(-32602));
    // After all that, the engine still runs cells.
    let last = answers.iter().find(|answer| answer["id"] == 8).expect("an answer to the cell");
    assert_eq!(last["result"]["status"], "ok", "{last}");
}
