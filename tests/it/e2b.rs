//! E2B's API on `cellbox serve`: E2B's own Python SDKs, unmodified, given only
//! E2B_API_URL, E2B_SANDBOX_URL and E2B_API_KEY (tests/serve/e2b_client.py),
//! and hostile requests on every route: another principal's sandbox, forged
//! tokens and signatures, bad JSON and Connect envelopes, paths out of the
//! sandbox. (E2B's own test suites run in scripts/e2b-tests.)

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

use crate::common::binary;
use crate::common::serve::Server;

/// The client script's JSON answer for `scenario`, as the holder of `key`.
fn client(server: &Server, key: &str, scenario: &str) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/serve/e2b_client.py");
    let mut command = Command::new(crate::common::python());
    command.arg(script).args([&server.base(), key, scenario]);
    let output = binary::output_with_input(&mut command, "");
    let stdout = binary::text(&output.stdout);
    assert!(output.status.success(), "{scenario} failed:\n{stdout}\n{}", binary::text(&output.stderr));
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

/// Whether the Python the tests run has E2B's SDKs (scripts/test's .venv-test does).
fn has_e2b_sdks() -> bool {
    let probe = Command::new(crate::common::python())
        .args(["-c", "import e2b, e2b_code_interpreter, httpx"])
        .output()
        .is_ok_and(|output| output.status.success());
    if !probe {
        eprintln!("skipped: the test Python has no e2b / e2b_code_interpreter (scripts/test installs them)");
    }
    probe
}

/// A server with principals alice and bob, their tokens in E2B's shape.
fn e2b_server() -> (Server, String, String) {
    let python = crate::common::python().display().to_string();
    let (server, tokens) = Server::start(&["alice --e2b", "bob --e2b"], &["--python", &python]);
    let (alice, bob) = (tokens[0].clone(), tokens[1].clone());
    assert!(alice.starts_with("e2b_") && alice[4..].bytes().all(|b| b.is_ascii_hexdigit()), "{alice}");
    (server, alice, bob)
}

async fn request(
    method: reqwest::Method,
    url: &str,
    headers: &[(&str, &str)],
    body: Vec<u8>,
) -> (u16, reqwest::header::HeaderMap, Vec<u8>) {
    cellbox_kernels::tls::install_crypto();
    let mut request = reqwest::Client::new().request(method, url).body(body);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.unwrap();
    let (status, headers) = (response.status().as_u16(), response.headers().clone());
    (status, headers, response.bytes().await.unwrap_or_default().to_vec())
}

fn json_of(body: &[u8]) -> Value {
    serde_json::from_slice(body).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(body)))
}

/// A sandbox of the holder of `key`: its id and access token.
async fn create(server: &Server, key: &str) -> (String, String) {
    let url = format!("{}/v2/sandboxes", server.base());
    let (status, _, body) =
        request(reqwest::Method::POST, &url, &[("x-api-key", key)], br#"{"templateID":"base"}"#.to_vec()).await;
    assert_eq!(status, 201, "{}", String::from_utf8_lossy(&body));
    let body = json_of(&body);
    (body["sandboxID"].as_str().unwrap().to_string(), body["envdAccessToken"].as_str().unwrap().to_string())
}

/// A Connect envelope holding `message`.
fn envelope(flags: u8, message: &[u8]) -> Vec<u8> {
    let mut bytes = vec![flags];
    bytes.extend_from_slice(&(message.len() as u32).to_be_bytes());
    bytes.extend_from_slice(message);
    bytes
}

#[test]
fn the_official_python_sdk_runs_code_with_charts_contexts_and_streams() {
    if !has_e2b_sdks() {
        return;
    }
    let (server, alice, _) = e2b_server();
    let seen = client(&server, &alice, "code_interpreter");
    assert_eq!(seen["first"], "2");
    assert_eq!(
        seen["streamed"].as_array().map(|chunks| chunks.iter().filter_map(Value::as_str).collect::<String>()),
        Some("0\n1\n2\n".into())
    );
    assert_eq!(seen["env"], "hello", "Sandbox.create(envs=...) reaches the kernels");
    assert_eq!(seen["per_call_env"], "yes");
    assert_eq!(seen["per_call_env_after"], Value::Null, "a call's envs are that call's only");
    assert_eq!(seen["indented"], "42");
    assert_eq!(seen["chart_formats"], json!([["text", "png", "chart"]]));
    assert_eq!(seen["chart_type"], "line");
    assert_eq!(seen["error"], json!(["ZeroDivisionError", "division by zero"]));
    assert_eq!(seen["context_state"], "42");
    assert_eq!(seen["context_cwd"], "/home/user");
    assert_eq!(seen["kernel_cwd"], "/home/user /home/user", "the sandbox's folder is bound at /home/user");
    assert_eq!(seen["context_kernel_cwd"], "/home/user");
    assert_eq!(seen["shell_pwd"], "/home/user\n/home/user\n");
    assert_eq!(seen["js_cwd"], "/home/user");
    assert_eq!(seen["js"], "2,4,6");
    assert_eq!(seen["listed"], json!([seen["sandbox_id"]]));
    assert_eq!(seen["metadata"], json!({"purpose": "test"}));
    let lifetime = seen["end_after_timeout_s"].as_i64().unwrap();
    assert!((120..=130).contains(&lifetime), "set_timeout(120) moved the end: {lifetime}");
    assert_eq!(seen["killed"], true);
    assert_eq!(seen["running_after_kill"], false);
}

#[test]
fn the_official_python_sdk_moves_files_and_runs_commands_in_the_sandbox() {
    if !has_e2b_sdks() {
        return;
    }
    let (server, alice, _) = e2b_server();
    let seen = client(&server, &alice, "files_and_commands");
    assert_eq!(seen["read"], "alpha");
    assert_eq!(seen["written_many"], json!(["/home/user/b.bin", "/home/user/notes/c.txt"]));
    assert_eq!(seen["bytes"], json!([0, 1, 2]));
    assert_eq!(seen["list"], json!(["a.txt", "c.txt"]));
    assert_eq!(seen["exists"], json!([true, false]));
    assert_eq!(seen["make_dir"], json!([true, false]));
    assert_eq!(seen["renamed"], "/home/user/d/a.txt");
    assert_eq!(seen["info"], json!(["a.txt", "file", 5, "/home/user/d/a.txt"]));
    assert_eq!(seen["missing"], "FileNotFoundException");
    assert_eq!(seen["signed_download"], "alpha");
    assert_eq!(seen["signed_upload"], json!([200, "uploaded"]));
    assert_eq!(seen["forged_download"], 401);
    assert_eq!(seen["big_round_trip"], true, "a 9 MB file goes up and down in pieces");
    assert_eq!(seen["watched"], true);
    assert_eq!((&seen["run"][0], &seen["run"][2]), (&json!("out\nsbx call\n"), &json!(0)));
    // (A login shell may add its profile's complaints before it.)
    assert!(seen["run"][1].as_str().is_some_and(|stderr| stderr.ends_with("err\n")), "{}", seen["run"]);
    assert_eq!(seen["cwd_run"], "a.txt\n");
    assert_eq!(seen["exit"], 3);
    assert_eq!(seen["listed_pids"], true);
    assert_eq!(seen["killed"], true);
    assert_eq!(seen["stdin"], "got:hi\n");
    assert_eq!(seen["streamed"], "line1\nline2\nline3\n");
    let outside = seen["outside_write"].as_str().unwrap();
    assert!(!outside.contains("status:0"), "a process wrote beside its sandbox's folder: {outside}");
    let marker = server.dir.path().join("root").join("alice").join("e2b").join("escape-marker");
    assert!(!marker.exists(), "{} appeared", marker.display());
    assert_eq!(seen["killed_sandbox"], true);
}

#[test]
fn a_client_that_gives_up_interrupts_its_cell_and_state_is_kept() {
    if !has_e2b_sdks() {
        return;
    }
    let (server, alice, _) = e2b_server();
    let seen = client(&server, &alice, "interrupt_on_disconnect");
    assert_eq!(seen["first"], "TimeoutException");
    assert_eq!(seen["after"], "state", "the next cell ran once the sleeping one was interrupted");
}

#[test]
fn killing_a_sandbox_ends_the_cell_it_runs() {
    if !has_e2b_sdks() {
        return;
    }
    let (server, alice, _) = e2b_server();
    let seen = client(&server, &alice, "killed_during_cell");
    assert_eq!(seen["killed"], true);
    assert_eq!(seen["thread_done"], true, "the cell's request ended with its sandbox: {seen}");
    assert_ne!(seen["cell"], "finished");
}

#[tokio::test]
async fn another_principals_sandbox_is_not_found_on_every_route() {
    let (server, alice, bob) = e2b_server();
    let base = server.base();
    let (id, token) = create(&server, &alice).await;
    let bob_key = [("x-api-key", bob.as_str())];
    let bob_routes = [
        (reqwest::Method::GET, format!("/sandboxes/{id}"), Vec::new()),
        (reqwest::Method::DELETE, format!("/sandboxes/{id}"), Vec::new()),
        (reqwest::Method::POST, format!("/sandboxes/{id}/timeout"), br#"{"timeout":1}"#.to_vec()),
        (reqwest::Method::POST, format!("/v2/sandboxes/{id}/connect"), br#"{"timeout":1}"#.to_vec()),
        (reqwest::Method::POST, format!("/sandboxes/{id}/pause"), Vec::new()),
        (reqwest::Method::GET, format!("/sandboxes/{id}/metrics"), Vec::new()),
    ];
    for (method, path, body) in bob_routes {
        let (status, _, answer) = request(method.clone(), &format!("{base}{path}"), &bob_key, body).await;
        let answer = json_of(&answer);
        assert_eq!((status, answer["code"].as_u64()), (404, Some(404)), "{method} {path}: {answer}");
        assert!(!answer.to_string().contains(&token));
    }
    let (status, _, listed) = request(reqwest::Method::GET, &format!("{base}/v2/sandboxes"), &bob_key, vec![]).await;
    assert_eq!((status, json_of(&listed)), (200, json!([])), "bob lists none of alice's sandboxes");
    // The sandbox's own routes: without its token, or with another's, there is no such sandbox.
    let (_, bob_token) = create(&server, &bob).await;
    for headers in [
        vec![("e2b-sandbox-id", id.as_str())],
        vec![("e2b-sandbox-id", id.as_str()), ("x-access-token", bob_token.as_str())],
    ] {
        let (status, _, _) = request(reqwest::Method::GET, &format!("{base}/health"), &headers, vec![]).await;
        assert_eq!(status, 502);
        let (status, _, body) =
            request(reqwest::Method::GET, &format!("{base}/files?path=/home/user"), &headers, vec![]).await;
        assert_eq!(status, 502, "{}", String::from_utf8_lossy(&body));
        let mut rpc = headers.clone();
        rpc.push(("content-type", "application/json"));
        let (status, _, _) =
            request(reqwest::Method::POST, &format!("{base}/process.Process/List"), &rpc, b"{}".to_vec()).await;
        assert_eq!(status, 502);
        let (status, _, _) =
            request(reqwest::Method::POST, &format!("{base}/execute"), &rpc, br#"{"code":"1"}"#.to_vec()).await;
        assert_eq!(status, 502);
    }
    // A wrong key is E2B's 401 with its error body.
    let (status, _, body) =
        request(reqwest::Method::GET, &format!("{base}/v2/sandboxes"), &[("x-api-key", "e2b_00")], vec![]).await;
    assert_eq!((status, json_of(&body)["code"].as_u64()), (401, Some(401)));
    // And alice's sandbox is untouched by all of it.
    let alice_key = [("x-api-key", alice.as_str())];
    let (status, _, info) = request(reqwest::Method::GET, &format!("{base}/sandboxes/{id}"), &alice_key, vec![]).await;
    assert_eq!((status, json_of(&info)["state"].as_str()), (200, Some("running")));
}

#[tokio::test]
async fn hostile_requests_get_e2b_errors_and_change_nothing() {
    let (server, alice, _) = e2b_server();
    let base = server.base();
    let key = [("x-api-key", alice.as_str())];
    let post = |path: &str, body: &[u8]| {
        let (url, body) = (format!("{base}{path}"), body.to_vec());
        let key = key.to_vec();
        async move { request(reqwest::Method::POST, &url, &key, body).await }
    };
    for (body, status) in [
        (&b"{not json"[..], 400),
        (br#"{"templateID": 3}"#, 400),
        (br#"{"templateID":"my-own-image"}"#, 404),
        (br#"{"templateID":"base","timeout":99999999}"#, 400),
        (br#"{"templateID":"base","volumeMounts":[{"name":"v","path":"/data"}]}"#, 400),
        (br#"{"templateID":"base","network":{"denyOut":["10.0.0.0/8"],"allowOut":["10.1.1.1"]}}"#, 400),
        (br#"{"templateID":"base","network":{"denyOut":["0.0.0.0/0"],"allowOut":["bad host!"]}}"#, 400),
        (br#"{"templateID":"base","network":{"rules":{"example.com":{"transform":[]}}}}"#, 400),
    ] {
        let (got, _, answer) = post("/v2/sandboxes", body).await;
        let answer = json_of(&answer);
        assert_eq!((got, answer["code"].as_u64()), (status, Some(status as u64)), "{answer}");
        assert!(answer["message"].as_str().is_some_and(|m| !m.is_empty()));
    }
    let (status, _, listed) = request(reqwest::Method::GET, &format!("{base}/v2/sandboxes"), &key, vec![]).await;
    assert_eq!((status, json_of(&listed)), (200, json!([])), "no refused request made a sandbox");
    let (status, _, body) = post("/sandboxes/nonexistent/timeout", br#"{"timeout":5}"#).await;
    assert_eq!((status, json_of(&body)["code"].as_u64()), (404, Some(404)));

    let (id, token) = create(&server, &alice).await;
    let routed = [("e2b-sandbox-id", id.as_str()), ("x-access-token", token.as_str())];
    let rpc = |method: &str, content_type: &'static str, body: Vec<u8>| {
        let url = format!("{base}/{method}");
        let mut headers = routed.to_vec();
        headers.push(("content-type", content_type));
        async move { request(reqwest::Method::POST, &url, &headers, body).await }
    };
    // Unary: bad JSON, a wrong type, an unknown method, a codec not served.
    let (status, _, body) = rpc("filesystem.Filesystem/Stat", "application/json", b"{oops".to_vec()).await;
    assert_eq!((status, json_of(&body)["code"].as_str()), (400, Some("invalid_argument")));
    let (status, _, body) = rpc("filesystem.Filesystem/Stat", "application/json", br#"{"path": 7}"#.to_vec()).await;
    assert_eq!((status, json_of(&body)["code"].as_str()), (400, Some("invalid_argument")));
    let (status, _, body) = rpc("filesystem.Filesystem/Chown", "application/json", b"{}".to_vec()).await;
    assert_eq!((status, json_of(&body)["code"].as_str()), (501, Some("unimplemented")));
    let (status, _, _) = rpc("filesystem.Filesystem/Stat", "application/proto", vec![0, 1]).await;
    assert_eq!(status, 501);
    // Streams: a length that lies, a compressed flag, a length past any body, no envelope at all.
    let start = br#"{"process":{"cmd":"/bin/true"}}"#;
    let mut lying = envelope(0, start);
    lying.extend_from_slice(b"trailing");
    let mut compressed = envelope(0, start);
    compressed[0] = 1;
    for body in [lying, compressed, vec![0, 0xff, 0xff, 0xff, 0xff, b'{'], b"{}".to_vec()] {
        let (status, _, answer) = rpc("process.Process/Start", "application/connect+json", body).await;
        // On a stream the error is the end envelope's.
        assert_eq!(status, 200);
        assert_eq!(answer[0], 2, "an end-of-stream envelope: {answer:?}");
        let end = json_of(&answer[5..]);
        assert!(end["error"]["code"].as_str().is_some(), "{end}");
    }
    // Paths out of the sandbox: `..`, the host's /proc and /dev, a symlink a kernel planted.
    let files = |query: &str| format!("{base}/files?{query}");
    let (status, _, _) = request(reqwest::Method::GET, &files("path=/proc/self/environ"), &routed, vec![]).await;
    assert_eq!(status, 403);
    let (status, _, _) = request(reqwest::Method::GET, &files("path=/dev/zero"), &routed, vec![]).await;
    assert_eq!(status, 403);
    let marker = server.dir.path().join("root").join("alice").join("escape.txt");
    let mut octets = routed.to_vec();
    octets.push(("content-type", "application/octet-stream"));
    let (status, _, _) =
        request(reqwest::Method::POST, &files("path=/home/user/../../escape.txt"), &octets, b"x".to_vec()).await;
    assert_eq!(status, 403);
    let outside = tempfile::tempdir().unwrap();
    let planted = format!("import os; os.symlink({:?}, 'link')", outside.path().display().to_string());
    let executed = {
        let url = format!("{base}/execute");
        let body = json!({"code": planted}).to_string().into_bytes();
        request(reqwest::Method::POST, &url, &routed, body).await
    };
    assert_eq!(executed.0, 200);
    let (status, _, _) =
        request(reqwest::Method::POST, &files("path=/home/user/link/marker.txt"), &octets, b"x".to_vec()).await;
    assert_ne!(status, 200);
    assert!(!outside.path().join("marker.txt").exists(), "a write followed a kernel's symlink out");
    assert!(!marker.exists(), "{} appeared", marker.display());
    // A file from the sandbox is never a page of the server's origin (where the live view lives):
    // a browser may not sniff it into HTML, and shows it, if at all, as a sandboxed document.
    let page = b"<script>fetch('/ui/api/sessions')</script>".to_vec();
    let (status, _, _) = request(reqwest::Method::POST, &files("path=/home/user/page.html"), &octets, page).await;
    assert_eq!(status, 200);
    let (status, headers, _) =
        request(reqwest::Method::GET, &files("path=/home/user/page.html"), &routed, vec![]).await;
    assert_eq!(status, 200);
    assert_eq!(headers["x-content-type-options"], "nosniff");
    assert!(headers["content-security-policy"].to_str().unwrap().starts_with("sandbox"), "{headers:?}");
    // Signed URLs: a forged signature and an expired one are refused.
    let (status, _, _) = request(reqwest::Method::GET, &files("path=x&signature=v1_forged"), &[], vec![]).await;
    assert_eq!(status, 401);
    let (status, _, _) =
        request(reqwest::Method::GET, &files("path=x&signature=v1_forged&signature_expiration=1"), &[], vec![]).await;
    assert_eq!(status, 401);
    // The code interpreter: a context that is not there, a language that is not served.
    let mut jsonish = routed.to_vec();
    jsonish.push(("content-type", "application/json"));
    let url = format!("{base}/execute");
    let (status, _, _) =
        request(reqwest::Method::POST, &url, &jsonish, br#"{"code":"1","context_id":"nope"}"#.to_vec()).await;
    assert_eq!(status, 404);
    let (status, _, _) =
        request(reqwest::Method::POST, &url, &jsonish, br#"{"code":"1","language":"cobol"}"#.to_vec()).await;
    assert_eq!(status, 400);
    let (status, _, _) = request(reqwest::Method::POST, &url, &jsonish, b"[1,2]".to_vec()).await;
    assert_eq!(status, 400);
    // After all that, the sandbox still answers.
    let (status, _, body) = request(reqwest::Method::POST, &url, &jsonish, br#"{"code":"6*7"}"#.to_vec()).await;
    assert_eq!(status, 200);
    assert!(String::from_utf8_lossy(&body).contains(r#""text":"42""#), "{}", String::from_utf8_lossy(&body));
}

#[tokio::test]
async fn a_sandbox_ends_when_its_time_runs_out() {
    let (server, alice, _) = e2b_server();
    let base = server.base();
    let key = [("x-api-key", alice.as_str())];
    let url = format!("{base}/v2/sandboxes");
    let (status, _, body) =
        request(reqwest::Method::POST, &url, &key, br#"{"templateID":"base","timeout":1}"#.to_vec()).await;
    assert_eq!(status, 201);
    let id = json_of(&body)["sandboxID"].as_str().unwrap().to_string();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let (status, _, _) = request(reqwest::Method::GET, &format!("{base}/sandboxes/{id}"), &key, vec![]).await;
        if status == 404 {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "the sandbox outlived its timeout by a minute");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn processes_a_client_starts_and_leaves_are_capped_and_end_with_their_sandbox() {
    let (server, alice, _) = e2b_server();
    let base = server.base();
    let (id, token) = create(&server, &alice).await;
    let url = format!("{base}/process.Process/Start");
    let start = envelope(0, br#"{"process":{"cmd":"/bin/sleep","args":["600"]},"stdin":false}"#);
    let client = reqwest::Client::new();
    let mut pids = Vec::new();
    // Each stream is left after its first event: the process goes on, as on E2B.
    for _ in 0..128 {
        let mut response = client
            .post(&url)
            .header("e2b-sandbox-id", &id)
            .header("x-access-token", &token)
            .header("content-type", "application/connect+json")
            .body(start.clone())
            .send()
            .await
            .unwrap();
        let first = response.chunk().await.unwrap().expect("the start event");
        let event = json_of(&first[5..]);
        pids.push(event["event"]["start"]["pid"].as_u64().unwrap_or_else(|| panic!("{event}")));
    }
    let headers = [("e2b-sandbox-id", id.as_str()), ("x-access-token", token.as_str())];
    let mut streamed = headers.to_vec();
    streamed.push(("content-type", "application/connect+json"));
    let (status, _, answer) = request(reqwest::Method::POST, &url, &streamed, start.clone()).await;
    assert_eq!(status, 200);
    let end = json_of(&answer[5..]);
    assert_eq!(end["error"]["code"], "resource_exhausted", "the 129th process: {end}");
    let mut unary = headers.to_vec();
    unary.push(("content-type", "application/json"));
    let list = format!("{base}/process.Process/List");
    let (_, _, listed) = request(reqwest::Method::POST, &list, &unary, b"{}".to_vec()).await;
    assert_eq!(json_of(&listed)["processes"].as_array().map(Vec::len), Some(128));
    // Killing the sandbox ends them all.
    let key = [("x-api-key", alice.as_str())];
    let (status, _, _) = request(reqwest::Method::DELETE, &format!("{base}/sandboxes/{id}"), &key, vec![]).await;
    assert_eq!(status, 204);
    // SIGKILL is delivered as each process next runs: wait for that, a minute at most.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    for pid in pids {
        loop {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            // Gone, or a zombie its parent has not reaped yet: not running.
            let state = stat.rsplit(')').next().and_then(|rest| rest.split_whitespace().next()).unwrap_or("X");
            if matches!(state, "X" | "Z") {
                break;
            }
            assert!(std::time::Instant::now() < deadline, "process {pid} outlived its sandbox: {stat}");
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    }
}

/// What a cell printed, run in sandbox `id` through the code interpreter's `/execute`.
async fn execute(server: &Server, id: &str, token: &str, code: &str) -> String {
    let headers = [("e2b-sandbox-id", id), ("x-access-token", token), ("content-type", "application/json")];
    let body = json!({"code": code}).to_string().into_bytes();
    let (status, _, answer) =
        request(reqwest::Method::POST, &format!("{}/execute", server.base()), &headers, body).await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&answer));
    let lines = String::from_utf8_lossy(&answer).lines().map(json_of_line).collect::<Vec<_>>();
    lines.iter().filter(|line| line["type"] == "stdout").filter_map(|line| line["text"].as_str()).collect()
}

fn json_of_line(line: &str) -> Value {
    serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"))
}

/// The folder on the host that holds sandbox `id`'s files.
fn folder_of(server: &Server, id: &str) -> std::path::PathBuf {
    let root = server.dir.path().join("root");
    let found = walkdir(&root).into_iter().find(|path| path.file_name().is_some_and(|name| name == id));
    found.unwrap_or_else(|| panic!("no folder for {id} under {}", root.display()))
}

fn walkdir(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        if entry.file_type().is_ok_and(|kind| kind.is_dir()) {
            found.push(entry.path());
            found.extend(walkdir(&entry.path()));
        }
    }
    found
}

const ATTEMPTS: &str = r#"
import os
def attempt(label, act):
    try:
        act()
        print(label, "DONE")
    except Exception as e:
        print(label, "refused")
"#;

#[tokio::test(flavor = "multi_thread")]
async fn a_sandboxs_folder_is_its_own_and_no_other_kernel_of_its_principal_reaches_it() {
    let (server, alice, _) = e2b_server();
    let (a, a_token) = create(&server, &alice).await;
    let (b, b_token) = create(&server, &alice).await;
    assert_eq!(execute(&server, &a, &a_token, "open('a.txt', 'w').write('mine'); print('ok')").await, "ok\n");
    let a_dir = folder_of(&server, &a);
    let a_file = a_dir.join("a.txt");
    let outside = server.dir.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    // The principal's own kernels (here its MCP session) can neither read a sandbox's folder nor
    // swap it for a link, which would have moved the next kernel's writable folder elsewhere.
    let swap = format!(
        "{ATTEMPTS}attempt('read:', lambda: open({a_file:?}).read())\nattempt('list:', lambda: os.listdir({a_dir:?}))\n\
         attempt('swap:', lambda: os.rename({a_dir:?}, {a_dir:?} + '.old'))\n\
         attempt('link:', lambda: os.symlink({outside:?}, {a_dir:?} + '.new'))\n",
        a_file = a_file.display().to_string(),
        a_dir = a_dir.display().to_string(),
        outside = outside.display().to_string(),
    );
    let headers = crate::common::serve::raw_session(&server.url, &alice).await;
    let (status, _, body) = crate::common::serve::spawn_eval(&server.url, &headers, 2, &swap, None).await.unwrap();
    assert_eq!(status, 200, "{body}");
    for line in ["read: refused", "list: refused", "swap: refused", "link: refused"] {
        assert!(body.contains(line), "missing {line:?}: {body}");
    }
    // Another sandbox of the same principal does not reach it either.
    let across = format!(
        "{ATTEMPTS}attempt('read:', lambda: open({a_file:?}).read())\nattempt('write:', lambda: open({a_dir:?} + '/b.txt', 'w').write('x'))\n",
        a_file = a_file.display().to_string(),
        a_dir = a_dir.display().to_string(),
    );
    assert_eq!(execute(&server, &b, &b_token, &across).await, "read: refused\nwrite: refused\n");
    assert_eq!(std::fs::read_to_string(&a_file).unwrap(), "mine");
    assert!(!a_dir.join("b.txt").exists());
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
    // E2B's egress lists may narrow the server's network, never widen it: the server's default is an
    // allowlist, so a sandbox may turn its network off, and not list hosts of its own.
    let url = format!("{}/v2/sandboxes", server.base());
    let wider = br#"{"templateID":"base","network":{"denyOut":["0.0.0.0/0"],"allowOut":["127.0.0.1","10.0.0.0/8"]}}"#;
    let (status, _, answer) = request(reqwest::Method::POST, &url, &[("x-api-key", &alice)], wider.to_vec()).await;
    assert_eq!(status, 400, "{}", String::from_utf8_lossy(&answer));
    assert!(json_of(&answer)["message"].as_str().unwrap().contains("narrow"), "{}", String::from_utf8_lossy(&answer));
    let off = br#"{"templateID":"base","network":{"denyOut":["0.0.0.0/0"]}}"#;
    let (status, _, answer) = request(reqwest::Method::POST, &url, &[("x-api-key", &alice)], off.to_vec()).await;
    assert_eq!(status, 201, "{}", String::from_utf8_lossy(&answer));
    let answer = json_of(&answer);
    let (c, c_token) = (answer["sandboxID"].as_str().unwrap(), answer["envdAccessToken"].as_str().unwrap());
    let seen = execute(&server, c, c_token, "import os; print(os.environ['CELLBOX_NETWORK'])").await;
    assert_eq!(seen, "off\n");
    // And the sandbox still has its folder.
    assert_eq!(execute(&server, &a, &a_token, "print(open('/home/user/a.txt').read())").await, "mine\n");
}

#[tokio::test(flavor = "multi_thread")]
async fn on_a_server_with_the_host_network_a_sandbox_may_list_its_hosts() {
    let python = crate::common::python().display().to_string();
    let (server, tokens) = Server::start(&["alice --e2b"], &["--python", &python, "--network", "on"]);
    let url = format!("{}/v2/sandboxes", server.base());
    for (network, expected) in [
        (r#"{"denyOut":["0.0.0.0/0"],"allowOut":["example.com","*.pypi.org"]}"#, "allow:example.com,*.pypi.org"),
        (r#"{"denyOut":["10.0.0.0/8"]}"#, "deny:10.0.0.0/8"),
        (r#"{"allowOut":["example.com"]}"#, "on"),
    ] {
        let body = format!(r#"{{"templateID":"base","network":{network}}}"#).into_bytes();
        let (status, _, answer) = request(reqwest::Method::POST, &url, &[("x-api-key", &tokens[0])], body).await;
        assert_eq!(status, 201, "{}", String::from_utf8_lossy(&answer));
        let answer = json_of(&answer);
        let (id, token) = (answer["sandboxID"].as_str().unwrap(), answer["envdAccessToken"].as_str().unwrap());
        let seen = execute(&server, id, token, "import os; print(os.environ['CELLBOX_NETWORK'])").await;
        assert_eq!(seen.trim(), expected, "{network}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn pause_hibernates_a_sandboxs_python_kernel_and_its_next_code_wakes_it() {
    let (server, alice, _) = e2b_server();
    let base = server.base();
    let (id, token) = create(&server, &alice).await;
    let printed = execute(&server, &id, &token, "import os; kept = 'across the pause'; print(os.getpid())").await;
    let pid: u32 = printed.trim().parse().unwrap_or_else(|_| panic!("{printed}"));
    let key = [("x-api-key", alice.as_str())];
    let (status, _, body) = request(reqwest::Method::POST, &format!("{base}/sandboxes/{id}/pause"), &key, vec![]).await;
    assert_eq!(status, 204, "{}", String::from_utf8_lossy(&body));
    let stopped = crate::common::eventually(crate::common::PATIENCE, || crate::common::group_members(pid).is_empty());
    assert!(stopped.await, "the paused sandbox's kernel is stopped");
    let connect = br#"{"timeout": 60}"#.to_vec();
    let (status, _, _) =
        request(reqwest::Method::POST, &format!("{base}/v2/sandboxes/{id}/connect"), &key, connect).await;
    assert_eq!(status, 201);
    let headers =
        [("e2b-sandbox-id", id.as_str()), ("x-access-token", token.as_str()), ("content-type", "application/json")];
    let body = json!({"code": "print(kept)"}).to_string().into_bytes();
    let (status, _, answer) = request(reqwest::Method::POST, &format!("{base}/execute"), &headers, body).await;
    assert_eq!(status, 200);
    let lines: Vec<Value> = String::from_utf8_lossy(&answer).lines().map(json_of_line).collect();
    let text = |kind: &str| -> String {
        lines.iter().filter(|line| line["type"] == kind).filter_map(|line| line["text"].as_str()).collect()
    };
    assert_eq!(text("stdout"), "across the pause\n");
    assert!(text("stderr").contains("hibernated (the sandbox was paused) and woke now: "), "{}", text("stderr"));
}
