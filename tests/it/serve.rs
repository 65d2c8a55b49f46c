//! `cellbox serve`: MCP over streamable HTTP, driven by the official Python MCP
//! client and by raw HTTP for what a client library hides (status codes,
//! headers, another principal's session id).

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::binary;
use common::serve::{INITIALIZE, Server, bearer, follow_stderr, get, post};
use serde_json::{Value, json};

#[test]
fn principals_keep_state_across_connections_and_never_see_each_other() {
    let (server, tokens) = Server::start(&["alice", "bob"], &[]);
    let (alice, bob) = (&tokens[0], &tokens[1]);
    let defined = server.client(alice, "define", "");
    // A new connection of the same principal finds its default and named sessions.
    server.client(alice, "persisted", "");
    let isolated = server.client(bob, "isolated", "");
    assert!(isolated["cwd"].as_str().unwrap().ends_with("/root/bob"), "{isolated}");
    // Another principal's artifact id is "does not exist", never its content.
    let stolen = server.client(bob, "read", &defined.to_string());
    let error = stolen["error"].as_str().unwrap_or_default();
    assert!(error.contains("does not exist") && stolen.get("read").is_none(), "{stolen}");
    let own = server.client(alice, "read", &defined.to_string());
    assert!(own["read"].as_str().unwrap().starts_with("0\n1\n2\n"), "{own}");
}

/// Linux: Landlock closes folders made after a kernel starts; Seatbelt only those named at its start.
#[cfg(target_os = "linux")]
#[test]
fn a_principals_kernels_cannot_read_or_enter_another_principals_folders() {
    let (server, tokens) = Server::start(&["alice", "bob", "carol"], &[]);
    let (alice, bob, carol) = (&tokens[0], &tokens[1], &tokens[2]);
    let run = |token: &str, request: serde_json::Value| server.client(token, "run", &request.to_string());
    let wrote = run(alice, json!({"code": "open('notes.txt', 'w').write('alice only')\nimport os; os.getcwd()"}));
    let alice_dir = wrote["text"].as_str().unwrap().trim().trim_matches('\'').to_string();
    assert!(alice_dir.ends_with("/root/alice"), "{wrote}");
    let notes = format!("{alice_dir}/notes.txt");
    // Bob's kernel is running before carol's folder exists.
    let started = run(bob, json!({"code": "open('mine.txt', 'w').write('bob'); open('mine.txt').read()"}));
    assert_eq!(started["text"], "'bob'\n", "a principal reads its own folder: {started}");
    let read = run(bob, json!({"code": format!("open({notes:?}).read()")}));
    assert!(read["is_error"] == true && read["text"].as_str().unwrap().contains("PermissionError"), "{read}");
    let listed = run(bob, json!({"code": format!("import os; os.listdir({:?})", format!("{alice_dir}/.."))}));
    assert!(listed["text"].as_str().unwrap().contains("PermissionError"), "the principals are not listed: {listed}");
    let entered = run(bob, json!({"code": "1", "cwd": "../alice"}));
    let text = entered["text"].as_str().unwrap();
    assert!(entered["is_error"] == true && text.contains("outside the workspace"), "{entered}");
    let carol_wrote = run(carol, json!({"code": "open('c.txt', 'w').write('carol'); import os; os.getcwd()"}));
    let carol_dir = carol_wrote["text"].as_str().unwrap().trim().trim_matches('\'').to_string();
    let late = run(bob, json!({"code": format!("open({:?}).read()", format!("{carol_dir}/c.txt"))}));
    assert!(late["text"].as_str().unwrap().contains("PermissionError"), "a folder made later is closed too: {late}");
}

#[tokio::test]
async fn another_principals_mcp_session_id_is_not_found() {
    let (server, tokens) = Server::start(&["alice", "bob"], &[]);
    let (status, headers, _) = post(&server.url, INITIALIZE, &[("authorization", &bearer(&tokens[0]))]).await;
    assert_eq!(status, 200);
    let session = headers["mcp-session-id"].to_str().unwrap().to_string();
    let list = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;
    let as_bob = [("authorization", bearer(&tokens[1])), ("mcp-session-id", session.clone())];
    let as_bob: Vec<(&str, &str)> = as_bob.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let (status, _, body) = post(&server.url, list, &as_bob).await;
    assert_eq!(status, 404, "bob must not reach alice's MCP session: {body}");
}

#[tokio::test]
async fn requests_need_a_valid_token_and_a_revoked_one_stops_at_once() {
    let (server, tokens) = Server::start(&["alice", "bob"], &[]);
    let (status, headers, body) = post(&server.url, INITIALIZE, &[]).await;
    assert_eq!(status, 401, "{body}");
    assert!(headers["www-authenticate"].to_str().unwrap().starts_with("Bearer"));
    assert!(body.contains("cellbox serve token add"), "the refusal says what to do: {body}");
    let (status, _, _) = post(&server.url, INITIALIZE, &[("authorization", "Bearer cbx_not-a-token")]).await;
    assert_eq!(status, 401);
    let (status, _, _) = post(&server.url, INITIALIZE, &[("authorization", &bearer(&tokens[1]))]).await;
    assert_eq!(status, 200);

    let output =
        binary::bare(["serve", "token", "revoke", "bob"]).arg("--tokens").arg(&server.tokens).output().unwrap();
    assert!(output.status.success(), "{}", binary::text(&output.stderr));
    let (status, _, _) = post(&server.url, INITIALIZE, &[("authorization", &bearer(&tokens[1]))]).await;
    assert_eq!(status, 401, "a revoked token is refused without a restart");
    let (status, _, _) = post(&server.url, INITIALIZE, &[("authorization", &bearer(&tokens[0]))]).await;
    assert_eq!(status, 200, "the other principals go on");

    // Health and readiness answer without a token (load balancers have none).
    cellbox_kernels::tls::install_crypto();
    let health = reqwest::get(format!("{}/healthz", server.base())).await.unwrap();
    assert_eq!(health.status().as_u16(), 200);
    let ready = reqwest::get(format!("{}/readyz", server.base())).await.unwrap();
    assert_eq!(ready.status().as_u16(), 200);
}

#[tokio::test]
async fn browser_origins_and_foreign_host_names_are_refused() {
    let (server, tokens) = Server::start(&["alice"], &[]);
    let auth = bearer(&tokens[0]);
    // A web page the user visits cannot drive the server (DNS rebinding, cross-site requests).
    let (status, _, body) =
        post(&server.url, INITIALIZE, &[("authorization", &auth), ("origin", "http://evil.example")]).await;
    assert_eq!(status, 403, "{body}");
    let (status, _, body) = post(&server.url, INITIALIZE, &[("authorization", &auth), ("host", "evil.example")]).await;
    assert_eq!(status, 403, "{body}");
    // What an operator allows passes.
    let (allowed, allowed_tokens) = Server::start(&["alice"], &["--allowed-origin", "https://app.example:443"]);
    let auth = bearer(&allowed_tokens[0]);
    let (status, _, body) =
        post(&allowed.url, INITIALIZE, &[("authorization", &auth), ("origin", "https://app.example")]).await;
    assert_eq!(status, 200, "{body}");
}

#[test]
fn unsafe_or_unusable_configurations_are_refused_with_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens.json");
    let output = binary::bare(["serve", "--no-auth", "--listen", "0.0.0.0:0"]).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = binary::text(&output.stderr);
    assert!(stderr.contains("without auth") && stderr.contains("token add"), "{stderr}");

    let output = binary::bare(["serve", "--listen", "127.0.0.1:0"]).arg("--tokens").arg(&tokens).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(binary::text(&output.stderr).contains("no tokens are configured"), "{}", binary::text(&output.stderr));

    let output = binary::bare(["serve", "token", "add", "../etc"]).arg("--tokens").arg(&tokens).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(binary::text(&output.stderr).contains("not a principal name"));
    let output = binary::bare(["serve", "token", "revoke", "nobody"]).arg("--tokens").arg(&tokens).output().unwrap();
    assert_eq!(output.status.code(), Some(2));

    // An authorization server whose keys cannot be read: no start, rather than refusing everyone later.
    let missing = dir.path().join("no-jwks.json");
    let output = binary::bare(["serve", "--listen", "127.0.0.1:0", "--jwt-issuer", "https://idp.example"])
        .args(["--jwt-audience", "cellbox", "--jwks"])
        .arg(&missing)
        .arg("--tokens")
        .arg(&tokens)
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(binary::text(&output.stderr).contains("cannot read the JWKS file"), "{}", binary::text(&output.stderr));
}

#[cfg(unix)]
#[test]
fn sigterm_stops_the_server_and_its_kernels() {
    let (mut server, tokens) = Server::start(&["alice"], &["--shutdown-grace", "5"]);
    let defined = server.client(&tokens[0], "define", "");
    let kernel = defined["kernel_pid"].as_u64().unwrap() as u32;
    assert!(!common::reaped(kernel));
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(server.child.id() as i32), nix::sys::signal::Signal::SIGTERM)
        .unwrap();
    let status = server.child.wait().unwrap();
    assert!(status.success(), "{status:?}");
    let said: Vec<String> = server.stderr.try_iter().collect();
    assert!(said.iter().any(|line| line.contains("stopping")), "{said:?}");
    assert!(common::reaped(kernel), "the kernel {kernel} outlived the server");
}

#[tokio::test]
async fn a_full_server_answers_429_and_metrics_count_it() {
    let (server, tokens) = Server::start(&["alice"], &["--max-calls", "1"]);
    let auth = bearer(&tokens[0]);
    let (status, headers, _) = post(&server.url, INITIALIZE, &[("authorization", &auth)]).await;
    assert_eq!(status, 200);
    let session = headers["mcp-session-id"].to_str().unwrap().to_string();
    let with_session = [("authorization", auth.as_str()), ("mcp-session-id", session.as_str())];
    let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    assert_eq!(post(&server.url, initialized, &with_session).await.0, 202);

    // One call held open by a cell that waits for a file: the server's only place.
    let gate = tempfile::tempdir().unwrap();
    let open = gate.path().join("open");
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                      "params": {"name": "eval", "arguments": {"cells": [{"code": common::gate(&open)}]}}});
    let (url, held) = (server.url.clone(), with_session.map(|(k, v)| (k.to_string(), v.to_string())));
    let running = tokio::spawn(async move {
        let headers: Vec<(&str, &str)> = held.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        post(&url, &call.to_string(), &headers).await
    });
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !get(&server, "/metrics").await.1.contains("cellbox_calls_in_flight 1\n") {
        assert!(std::time::Instant::now() < deadline, "the call never got in flight");
        tokio::task::yield_now().await;
    }
    let list = r#"{"jsonrpc":"2.0","id":3,"method":"tools/list"}"#;
    let (status, headers, body) = post(&server.url, list, &with_session).await;
    assert_eq!(status, 429, "{body}");
    assert_eq!(headers["retry-after"], "1");
    assert!(body.contains("retry"), "{body}");

    std::fs::write(&open, "").unwrap();
    let (status, _, body) = running.await.unwrap();
    assert!(status == 200 && body.contains("\"isError\":false"), "{status} {body}");
    assert_eq!(post(&server.url, list, &with_session).await.0, 200, "the place is free again");
    let (status, metrics) = get(&server, "/metrics").await;
    assert_eq!(status, 200);
    for line in ["cellbox_refused_busy_total 1\n", "cellbox_principals 1\n", "cellbox_kernels 1\n"] {
        assert!(metrics.contains(line), "{line:?} not in\n{metrics}");
    }
}

#[tokio::test]
async fn after_a_restart_an_old_session_id_is_not_found_and_a_new_session_works() {
    let (mut server, tokens) = Server::start(&["alice"], &[]);
    let auth = bearer(&tokens[0]);
    let (_, headers, _) = post(&server.url, INITIALIZE, &[("authorization", &auth)]).await;
    let old = headers["mcp-session-id"].to_str().unwrap().to_string();
    // The same address again, with the same tokens: what a supervisor's restart does.
    let address = server.url.trim_start_matches("http://").trim_end_matches("/mcp").to_string();
    server.child.kill().unwrap();
    server.child.wait().unwrap();
    server.child = binary::cellbox(["serve", "--listen", &address, "--spares", "0"])
        .arg("--tokens")
        .arg(&server.tokens)
        .arg("--root")
        .arg(server.dir.path().join("root"))
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (stderr, url) = follow_stderr(&mut server.child);
    assert_eq!(url, server.url, "the restarted server listens where the first did");
    server.stderr = stderr;
    let list = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;
    let (status, _, body) = post(&server.url, list, &[("authorization", &auth), ("mcp-session-id", &old)]).await;
    assert_eq!(status, 404, "an unknown session is a clear error at once, not a hang: {body}");
    let (status, headers, _) = post(&server.url, INITIALIZE, &[("authorization", &auth)]).await;
    assert_eq!(status, 200);
    assert_ne!(headers["mcp-session-id"].to_str().unwrap(), old);
}

/// A test CA and a certificate it signed for 127.0.0.1 and localhost, made by
/// the openssl CLI: (CA certificate, server certificate, server key).
fn test_certificates(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let path = |name: &str| dir.join(name);
    let openssl = |args: &[&str]| {
        let status = Command::new("openssl").current_dir(dir).args(args).stderr(Stdio::null()).status();
        assert!(status.expect("the openssl CLI makes the test certificates").success(), "openssl {args:?}");
    };
    let key = ["-newkey", "rsa:2048", "-nodes"];
    openssl(
        &[
            &["req", "-x509", "-days", "2", "-subj", "/CN=cellbox test CA"][..],
            &key,
            &["-keyout", "ca.key", "-out", "ca.pem"],
        ]
        .concat(),
    );
    openssl(&[&["req", "-subj", "/CN=localhost"][..], &key, &["-keyout", "key.pem", "-out", "leaf.csr"]].concat());
    std::fs::write(path("leaf.ext"), "subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\n").unwrap();
    openssl(&[
        "x509",
        "-req",
        "-in",
        "leaf.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-days",
        "2",
        "-out",
        "cert.pem",
        "-extfile",
        "leaf.ext",
    ]);
    (path("ca.pem"), path("cert.pem"), path("key.pem"))
}

#[tokio::test]
async fn tls_serves_mcp_and_remote_sandboxes_over_https() {
    let certs = tempfile::tempdir().unwrap();
    let (ca, cert, key) = test_certificates(certs.path());
    let flags = ["--tls-cert", cert.to_str().unwrap(), "--tls-key", key.to_str().unwrap()];
    let (server, tokens) = Server::start(&["alice"], &flags);
    assert!(server.url.starts_with("https://127.0.0.1:"), "{}", server.url);

    cellbox_kernels::tls::install_crypto();
    let root = reqwest::Certificate::from_pem(&std::fs::read(&ca).unwrap()).unwrap();
    let client = reqwest::Client::builder().tls_certs_only([root]).build().unwrap();
    let response = client
        .post(&server.url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("authorization", bearer(&tokens[0]))
        .body(INITIALIZE)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    // Plain HTTP to the TLS port gets no answer a client could take for one.
    let plain = server.url.replacen("https://", "http://", 1);
    assert!(reqwest::Client::new().post(&plain).body(INITIALIZE).send().await.is_err());

    // The SDK's remote sandbox, trusting the certificate through the standard SSL_CERT_FILE; its
    // kernels can read neither the server's TLS key nor its tokens file.
    let secrets = [key.display().to_string(), server.tokens.display().to_string()];
    let script = format!(
        "import sys; sys.path.insert(0, {python:?})\nfrom cellbox import Sandbox\n\
         with Sandbox(api_url={url:?}, api_key={token:?}) as box:\n    print(box.run_code('6*7').text)\n\
         \x20   for path in {secrets:?}:\n        print(box.run_code('open(%r).read()' % path).error.name)\n",
        python = Path::new(env!("CARGO_MANIFEST_DIR")).join("python").display().to_string(),
        url = server.base(),
        token = tokens[0],
    );
    let output = Command::new(common::python()).arg("-c").arg(script).env("SSL_CERT_FILE", &ca).output().unwrap();
    assert!(output.status.success(), "{}", binary::text(&output.stderr));
    assert_eq!(binary::text(&output.stdout).trim(), "42\nPermissionError\nPermissionError");
}

#[test]
fn a_bad_certificate_stops_the_start_with_the_file_named() {
    let dir = tempfile::tempdir().unwrap();
    let (bogus_cert, bogus_key) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
    std::fs::write(&bogus_cert, "not a certificate\n").unwrap();
    std::fs::write(&bogus_key, "not a key\n").unwrap();
    let output = binary::bare(["serve", "--no-auth", "--listen", "127.0.0.1:0", "--tls-cert"])
        .arg(&bogus_cert)
        .arg("--tls-key")
        .arg(&bogus_key)
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = binary::text(&output.stderr);
    assert!(stderr.contains("cert.pem") && stderr.contains("TLS certificate"), "{stderr}");
}

/// An RSA signing key made by the openssl CLI, and its public half as a JWKS file with key id `test-key`.
fn jwt_keys(dir: &Path) -> (jsonwebtoken::EncodingKey, PathBuf) {
    let pem = dir.join("jwt.key");
    let status = Command::new("openssl")
        .args(["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out"])
        .arg(&pem)
        .stderr(Stdio::null())
        .status()
        .expect("the openssl CLI makes the test key");
    assert!(status.success());
    let key = jsonwebtoken::EncodingKey::from_rsa_pem(&std::fs::read(&pem).unwrap()).unwrap();
    let mut jwk = jsonwebtoken::jwk::Jwk::from_encoding_key(&key, jsonwebtoken::Algorithm::RS256).unwrap();
    jwk.common.key_id = Some("test-key".into());
    let jwks = dir.join("jwks.json");
    std::fs::write(&jwks, serde_json::to_vec(&jsonwebtoken::jwk::JwkSet { keys: vec![jwk] }).unwrap()).unwrap();
    (key, jwks)
}

fn jwt(key: &jsonwebtoken::EncodingKey, claims: Value) -> String {
    let header = jsonwebtoken::Header {
        kid: Some("test-key".into()),
        ..jsonwebtoken::Header::new(jsonwebtoken::Algorithm::RS256)
    };
    jsonwebtoken::encode(&header, &claims, key).unwrap()
}

#[tokio::test]
async fn jwts_of_the_configured_issuer_and_audience_sign_in_and_others_do_not() {
    let keys = tempfile::tempdir().unwrap();
    let (key, jwks) = jwt_keys(keys.path());
    let issuer = "https://idp.example";
    let flags = ["--jwt-issuer", issuer, "--jwt-audience", "cellbox-test", "--jwks", jwks.to_str().unwrap()];
    let (server, _) = Server::start(&[], &flags);
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let claims = |sub: &str, iss: &str, aud: &str, exp: u64| json!({"sub": sub, "iss": iss, "aud": aud, "exp": exp});

    let good = jwt(&key, claims("bob", issuer, "cellbox-test", now + 600));
    let (status, _, body) = post(&server.url, INITIALIZE, &[("authorization", &bearer(&good))]).await;
    assert_eq!(status, 200, "{body}");
    let isolated = server.client(&good, "isolated", "");
    assert!(
        isolated["cwd"].as_str().unwrap().ends_with("/root/jwt-bob"),
        "the subject names the principal: {isolated}"
    );

    let refused = [
        ("another audience", jwt(&key, claims("bob", issuer, "someone-else", now + 600))),
        ("another issuer", jwt(&key, claims("bob", "https://evil.example", "cellbox-test", now + 600))),
        ("expired", jwt(&key, claims("bob", issuer, "cellbox-test", now - 600))),
        ("not valid yet", {
            let mut early = claims("bob", issuer, "cellbox-test", now + 1200);
            early["nbf"] = json!(now + 600);
            jwt(&key, early)
        }),
        ("not a JWT", "cbx_not-a-token".to_string()),
    ];
    for (why, token) in refused {
        let (status, headers, body) = post(&server.url, INITIALIZE, &[("authorization", &bearer(&token))]).await;
        assert_eq!(status, 401, "{why}: {body}");
        let challenge = headers["www-authenticate"].to_str().unwrap();
        assert!(challenge.contains("resource_metadata=\"http://127.0.0.1:"), "{why}: {challenge}");
    }

    // RFC 9728: where clients learn which authorization server to ask.
    let (status, metadata) = get(&server, "/.well-known/oauth-protected-resource/mcp").await;
    assert_eq!(status, 200);
    let metadata: Value = serde_json::from_str(&metadata).unwrap();
    assert_eq!(metadata["authorization_servers"], json!([issuer]));
    assert_eq!(metadata["resource"], json!(server.url));
}

/// A server whose stderr nobody reads any more (its supervisor's log reader died) still answers
/// and stops on SIGTERM: what it says or logs must not end the task that said it.
#[cfg(unix)]
#[test]
fn sigterm_stops_a_server_whose_stderr_is_gone() {
    use std::io::{BufRead, Write};

    let root = tempfile::tempdir().unwrap();
    let mut child =
        common::binary::cellbox(["serve", "--no-auth", "--listen", "127.0.0.1:0", "--shutdown-grace", "1", "--root"])
            .arg(root.path())
            .env("CELLBOX_ARTIFACTS_DIR", root.path().join("artifacts"))
            .env("CELLBOX_LOG", "info") // a log line for every request, each written to the closed pipe
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
    let pid = child.id() as i32;
    let kill = || nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
    // Read on a thread until the server says where it listens, then hand the pipe back to be closed.
    let (read, listening) = std::sync::mpsc::channel();
    let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    std::thread::spawn(move || {
        let mut line = String::new();
        while !line.contains("MCP on") {
            line.clear();
            if stderr.read_line(&mut line).unwrap_or(0) == 0 {
                return; // ended before it listened: the receiver hears nothing
            }
        }
        let _ = read.send((stderr, line));
    });
    // Hang guards, not measures: a server that never listens, or ignores the signal, is killed.
    let Ok((stderr, said)) = listening.recv_timeout(std::time::Duration::from_secs(120)) else {
        let _ = kill();
        panic!("cellbox serve did not say where it listens");
    };
    drop(stderr);
    // It still answers, though each answer's log line cannot be written.
    let address = said.split("http://").nth(1).and_then(|rest| rest.split('/').next()).unwrap().to_string();
    let mut connection = std::net::TcpStream::connect(&address).unwrap();
    write!(connection, "GET /healthz HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n").unwrap();
    let mut answer = String::new();
    let _ = std::io::Read::read_to_string(&mut connection, &mut answer);
    assert!(answer.starts_with("HTTP/1.1 200") && answer.ends_with("ok\n"), "{answer:?}");
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGTERM).unwrap();
    let (done, exited) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = done.send(child.wait().unwrap());
    });
    let Ok(status) = exited.recv_timeout(std::time::Duration::from_secs(120)) else {
        let _ = kill();
        panic!("cellbox serve did not stop on SIGTERM with its stderr closed");
    };
    assert!(status.success(), "{status:?}");
}
