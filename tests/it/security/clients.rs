//! `cellbox serve` under hostile clients and hostile configurations: stalled
//! and half-sent requests, too many connections, a client that never reads,
//! overlong lines, one principal taking every place, foreign `Host` names,
//! tokens and keys that would let one principal become another, and several
//! principals where the sandbox cannot keep them apart.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use super::common::{self, binary, serve};
use super::scene::{Scene, Serve, drain};

fn address(server: &Serve) -> String {
    server.base().trim_start_matches("http://").to_string()
}

/// Read until the server closes the connection; the bytes read, or `None` if it was still open at the deadline.
fn read_to_close(stream: &mut TcpStream) -> Option<Vec<u8>> {
    stream.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
    let deadline = Instant::now() + common::PATIENCE;
    let mut seen = Vec::new();
    let mut buffer = [0u8; 65536];
    while Instant::now() < deadline {
        match stream.read(&mut buffer) {
            Ok(0) => return Some(seen),
            Ok(n) => seen.extend_from_slice(&buffer[..n]),
            Err(error) if matches!(error.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
            Err(_) => return Some(seen),
        }
    }
    None
}

#[test]
fn a_half_sent_request_is_closed_and_does_not_hold_the_shutdown() {
    let scene = Scene::new();
    let (mut server, _) = Serve::start(&scene, &["alice"], &["--client-timeout", "1", "--shutdown-grace", "1"]);
    let mut stalled = TcpStream::connect(address(&server)).unwrap();
    stalled.write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Le").unwrap();
    assert!(read_to_close(&mut stalled).is_some(), "a half-sent request kept its connection");
    // Another one, held through the stop: the server still ends after its grace period.
    let mut held = TcpStream::connect(address(&server)).unwrap();
    held.write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n").unwrap();
    assert!(server.terminate().is_some(), "a stalled client held the server past --shutdown-grace");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_call_that_never_ends_does_not_hold_the_shutdown() {
    let scene = Scene::new();
    let (mut server, tokens) = Serve::start(&scene, &["alice"], &["--shutdown-grace", "1"]);
    let headers = serve::raw_session(&server.url, &tokens[0]).await;
    let never = scene.dir.path().join("never-opened");
    let call = serve::spawn_eval(&server.url, &headers, 2, &common::gate(&never), None);
    let deadline = Instant::now() + common::PATIENCE;
    while !drain(&server.stderr).is_empty() || Instant::now() < deadline {
        let (_, metrics) = serve_get(&server, "/metrics").await;
        if metrics.contains("cellbox_kernels_by_state{state=\"busy\"} 1") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(server.terminate().is_some(), "a call in progress held the server past --shutdown-grace");
    let _ = call.await;
}

async fn serve_get(server: &Serve, path: &str) -> (u16, String) {
    cellbox_kernels::tls::install_crypto();
    let response = reqwest::get(format!("{}{path}", server.base())).await.unwrap();
    (response.status().as_u16(), response.text().await.unwrap())
}

#[tokio::test(flavor = "multi_thread")]
async fn connections_past_the_cap_are_closed_and_counted() {
    connections_past(&["--max-connections", "2"]).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn connections_past_one_address_s_share_are_closed_and_counted() {
    connections_past(&["--max-connections", "100", "--max-connections-per-ip", "2"]).await;
}

/// Two idle connections fill the place `cap` gives; a third is closed at once and counted.
async fn connections_past(cap: &[&str]) {
    cellbox_kernels::tls::install_crypto();
    let scene = Scene::new();
    let flags: Vec<&str> = cap.iter().copied().chain(["--client-timeout", "600"]).collect();
    let (server, _) = Serve::start(&scene, &["alice"], &flags);
    let idle: Vec<TcpStream> = (0..2).map(|_| TcpStream::connect(address(&server)).unwrap()).collect();
    // A third is closed at once: long before the client timeout would close it.
    let mut third = TcpStream::connect(address(&server)).unwrap();
    let _ = third.write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    let answer = read_to_close(&mut third).expect("the connection past the cap was closed");
    assert!(answer.is_empty(), "it was served: {}", String::from_utf8_lossy(&answer));
    // The count is read over a connection that holds a place: a new one could itself be refused
    // (and counted) before the server has seen others close.
    let mut held = idle.into_iter().next().unwrap();
    held.write_all(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n").unwrap();
    let metrics = String::from_utf8(read_to_close(&mut held).expect("the metrics are answered")).unwrap();
    assert!(
        metrics.contains("cellbox_refused_connections_total 1\n"),
        "the refused connection was not counted: {metrics}"
    );
}

/// A raw `/sdk` connection as `token`: the answer's status line, and the stream when it was upgraded.
fn sdk_connect(server: &Serve, token: &str) -> (String, Option<TcpStream>) {
    let mut stream = TcpStream::connect(address(server)).unwrap();
    let request = format!(
        "GET /sdk HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\nConnection: upgrade\r\nUpgrade: cellbox-sdk\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).unwrap();
    stream.set_read_timeout(Some(common::PATIENCE)).unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if stream.read(&mut byte).unwrap() == 0 {
            break;
        }
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    let status = head.lines().next().unwrap_or_default().to_string();
    let upgraded = status.contains(" 101 ");
    (status, upgraded.then_some(stream))
}

/// One line the server sent (read within a deadline far above any need).
fn read_line(stream: &mut TcpStream) -> String {
    stream.set_read_timeout(Some(common::PATIENCE)).unwrap();
    let mut line = Vec::new();
    let mut byte = [0u8; 1];
    while stream.read(&mut byte).expect("the server answers within the deadline") == 1 && byte[0] != b'\n' {
        line.push(byte[0]);
    }
    String::from_utf8_lossy(&line).into_owned()
}

#[test]
fn one_principal_cannot_take_every_sandbox_and_sdk_lines_are_bounded() {
    let scene = Scene::new();
    let (server, tokens) =
        Serve::start(&scene, &["alice", "bob"], &["--max-sandboxes", "4", "--principal-share", "25"]);
    let (status, first) = sdk_connect(&server, &tokens[0]);
    let mut first = first.unwrap_or_else(|| panic!("{status}"));
    let (status, second) = sdk_connect(&server, &tokens[0]);
    assert!(second.is_none() && status.contains(" 429 "), "alice's second sandbox: {status}");
    let (status, bobs) = sdk_connect(&server, &tokens[1]);
    assert!(bobs.is_some(), "bob still gets his: {status}");
    // A line longer than the limit is answered with an error, and the connection goes on.
    let long = vec![b'x'; 17 << 20];
    first.write_all(&long).unwrap();
    first.write_all(b"\n").unwrap();
    let refused = read_line(&mut first);
    assert!(refused.contains("longer than"), "{refused}");
    first.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"list_contexts\"}\n").unwrap();
    let answer = read_line(&mut first);
    assert!(answer.contains("\"id\":1") && answer.contains("\"result\""), "{answer}");
}

/// Open file descriptors of process `pid`.
fn open_fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map(|entries| entries.count()).unwrap_or(0)
}

#[test]
fn a_client_that_never_reads_is_let_go() {
    let scene = Scene::new();
    let (server, tokens) = Serve::start(&scene, &["alice"], &[]);
    let before = open_fds(server.child.id());
    let (status, stream) = sdk_connect(&server, &tokens[0]);
    let mut stream = stream.unwrap_or_else(|| panic!("{status}"));
    let flood = "import sys\nfor _ in range(4000):\n    sys.stdout.write('x' * 65536)\n";
    let request = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "run_code", "params": {"code": flood}});
    stream.write_all(format!("{request}\n").as_bytes()).unwrap();
    // The server gives up on this reader once 64 MiB wait for it...
    let deadline = Instant::now() + common::PATIENCE * 2;
    let mut said = String::new();
    while !said.contains("unread") {
        said.push_str(&drain(&server.stderr));
        assert!(Instant::now() < deadline, "the server kept queueing for a client that never reads:\n{said}");
        std::thread::sleep(Duration::from_millis(50));
    }
    // ... and lets it go without its reading a byte more: the connection's socket, its kernel's
    // pipes and what waited for it are all gone from the server.
    let gone = common::eventually_blocking(common::PATIENCE, || open_fds(server.child.id()) <= before);
    assert!(gone, "the server still holds {} descriptors (it had {before})", open_fds(server.child.id()));
    let read = read_to_close(&mut stream).expect("the connection was closed");
    assert!(read.len() < 4000 * 65536, "everything was kept for it: {} bytes", read.len());
    let healthy = reqwest::blocking_get(&server);
    assert_eq!(healthy, 200);
}

mod reqwest {
    //! The one blocking GET these tests need.
    pub fn blocking_get(server: &super::Serve) -> u16 {
        let mut stream = std::net::TcpStream::connect(super::address(server)).unwrap();
        std::io::Write::write_all(
            &mut stream,
            b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
        )
        .unwrap();
        let mut answer = String::new();
        std::io::Read::read_to_string(&mut stream, &mut answer).unwrap();
        answer.split_whitespace().nth(1).and_then(|code| code.parse().ok()).unwrap_or(0)
    }

    pub use ::reqwest::get;
}

#[test]
fn foreign_host_names_are_refused_on_every_route() {
    let scene = Scene::new();
    let (server, tokens) = Serve::start(&scene, &["alice"], &[]);
    for path in ["/mcp", "/sdk", "/metrics", "/healthz", "/readyz", "/.well-known/oauth-protected-resource/mcp"] {
        let mut stream = TcpStream::connect(address(&server)).unwrap();
        let request = format!(
            "GET {path} HTTP/1.1\r\nHost: attacker.example\r\nAuthorization: Bearer {}\r\nConnection: close\r\n\r\n",
            tokens[0]
        );
        stream.write_all(request.as_bytes()).unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).unwrap();
        assert!(answer.starts_with("HTTP/1.1 403"), "{path}: {answer}");
        assert!(!answer.contains("attacker.example"), "{path}: the foreign name came back: {answer}");
    }
}

#[test]
fn names_keys_and_subjects_cannot_make_one_principal_another() {
    let scene = Scene::new();
    let tokens = scene.dir.path().join("tokens.json");
    for reserved in ["env", "local", "jwt-alice", "JWT-bob"] {
        let output = binary::bare(["serve", "token", "add", reserved]).arg("--tokens").arg(&tokens).output().unwrap();
        assert_eq!(output.status.code(), Some(2), "{reserved}");
        assert!(binary::text(&output.stderr).contains("reserved"), "{}", binary::text(&output.stderr));
    }
    serve::token_add(&tokens, "alice");
    let output = binary::bare(["serve", "token", "add", "ALICE"]).arg("--tokens").arg(&tokens).output().unwrap();
    assert_eq!(output.status.code(), Some(2), "a name that differs by case alone");
    // Keys fetched in the clear from another machine could be swapped on the way.
    let output = binary::bare(["serve", "--listen", "127.0.0.1:0", "--tokens"])
        .arg(&tokens)
        .args(["--jwt-issuer", "http://idp.example", "--jwt-audience", "cellbox"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(binary::text(&output.stderr).contains("https://"), "{}", binary::text(&output.stderr));
}

#[test]
fn several_principals_need_a_sandbox_that_holds() {
    let scene = Scene::new();
    let tokens = scene.dir.path().join("tokens.json");
    serve::token_add(&tokens, "alice");
    serve::token_add(&tokens, "bob");
    let mut command = binary::bare(["serve", "--listen", "127.0.0.1:0", "--tokens"]);
    command.arg(&tokens).arg("--root").arg(&scene.work);
    common::without_landlock(&mut command);
    let output = command.output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = binary::text(&output.stderr);
    assert!(stderr.contains("several principals without a sandbox") && stderr.contains("--sandbox off"), "{stderr}");
}
