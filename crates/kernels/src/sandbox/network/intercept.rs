//! Requests to a host that secrets go to are read by the proxy, one per
//! connection: over TLS the proxy answers with a certificate for the host
//! from a CA made for this kernel ([`Authority`]) and opens its own TLS to
//! the real host; the request's head gets the secrets' values in place of
//! their placeholders, and `Connection: close`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair, KeyUsagePurpose};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

use super::open::{FIRST_BYTES_TIMEOUT, Rewind, one_request};
use super::{Judge, Refusal};

/// Certificates kept for the hosts a kernel's secrets went to.
const MAX_CACHED_SERVERS: usize = 64;

/// Where a system keeps its roots, the first found is copied into a kernel's bundle.
const SYSTEM_BUNDLES: &[&str] = &[
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/ssl/ca-bundle.pem",
    "/etc/ssl/cert.pem",
];

/// The CA a kernel with secrets trusts (its key stays in this process), the
/// bundle file the kernel's tools are pointed at, and the TLS the proxy
/// speaks to the real hosts.
pub struct Authority {
    issuer: CertifiedIssuer<'static, KeyPair>,
    bundle: tempfile::TempPath,
    servers: Mutex<HashMap<String, Arc<rustls::ServerConfig>>>,
    upstream: Arc<rustls::ClientConfig>,
}

impl std::fmt::Debug for Authority {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authority").field("bundle", &self.bundle).finish_non_exhaustive()
    }
}

fn other(error: impl std::fmt::Display) -> std::io::Error {
    std::io::Error::other(error.to_string())
}

impl Authority {
    /// A new CA, its bundle written in `folder` (the system's roots and this
    /// CA), and the proxy's own TLS to real hosts (the system's roots, and
    /// those of the PEM file `extra_roots`).
    pub fn new(folder: &Path, extra_roots: Option<&Path>) -> std::io::Result<Authority> {
        crate::tls::install_crypto();
        let key = KeyPair::generate().map_err(other)?;
        let mut params = CertificateParams::new(Vec::<String>::new()).map_err(other)?;
        params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
        params.distinguished_name.push(DnType::CommonName, "cellbox kernel secrets CA");
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::DigitalSignature];
        let issuer = CertifiedIssuer::self_signed(params, key).map_err(other)?;
        let mut bundle = SYSTEM_BUNDLES.iter().find_map(|path| std::fs::read_to_string(path).ok()).unwrap_or_default();
        bundle.push('\n');
        bundle.push_str(&issuer.pem());
        crate::paths::private_dir_builder().create(folder)?;
        let mut file = tempfile::Builder::new().prefix("secrets-ca-").suffix(".pem").tempfile_in(folder)?;
        std::io::Write::write_all(&mut file, bundle.as_bytes())?;
        let bundle = file.into_temp_path();
        let extra = match extra_roots {
            Some(path) => {
                use rustls::pki_types::pem::PemObject;
                rustls::pki_types::CertificateDer::pem_file_iter(path)
                    .map_err(other)?
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(other)?
            }
            None => Vec::new(),
        };
        let provider =
            rustls::crypto::CryptoProvider::get_default().cloned().ok_or_else(|| other("no TLS provider"))?;
        let verifier = rustls_platform_verifier::Verifier::new_with_extra_roots(extra, provider).map_err(other)?;
        let mut upstream = rustls::ClientConfig::builder()
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(verifier))
            .with_no_client_auth();
        upstream.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Authority { issuer, bundle, servers: Mutex::default(), upstream: Arc::new(upstream) })
    }

    /// The kernel's trust bundle.
    pub fn bundle(&self) -> PathBuf {
        self.bundle.to_path_buf()
    }

    /// What the proxy answers a kernel's TLS to `host` with.
    fn server(&self, host: &str) -> std::io::Result<Arc<rustls::ServerConfig>> {
        if let Some(config) = self.servers.lock().unwrap().get(host) {
            return Ok(config.clone());
        }
        let key = KeyPair::generate().map_err(other)?;
        let mut params = CertificateParams::new(vec![host.to_string()]).map_err(other)?;
        params.distinguished_name.push(DnType::CommonName, host);
        let leaf = params.signed_by(&key, &self.issuer).map_err(other)?;
        let chain = vec![leaf.der().clone(), self.issuer.der().clone()];
        let private = rustls::pki_types::PrivateKeyDer::try_from(key.serialize_der()).map_err(other)?;
        let mut config =
            rustls::ServerConfig::builder().with_no_client_auth().with_single_cert(chain, private).map_err(other)?;
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        let config = Arc::new(config);
        let mut servers = self.servers.lock().unwrap();
        // A `*.domain` secret could name endless hosts: the cache keeps a bounded few.
        if servers.len() >= MAX_CACHED_SERVERS {
            servers.clear();
        }
        servers.insert(host.to_string(), config.clone());
        Ok(config)
    }
}

/// Carry one request from `client` to `upstream` (a connection to `host`,
/// whose requests carry secrets), with the secrets put in; `early` is what
/// the client sent before. Only over TLS: the proxy's own to the kernel, and
/// its checked TLS to `host`; anything else is carried as any tunnel is, the
/// secrets left out.
pub async fn relay(judge: &Judge, client: TcpStream, upstream: TcpStream, host: &str, early: Vec<u8>) {
    let authority = super::open::authority(&upstream, host);
    let client = Rewind { prefix: early, inner: client };
    let accepted = tokio::time::timeout(FIRST_BYTES_TIMEOUT, accept(judge, client, host)).await;
    let Ok(Some(client)) = accepted else { return };
    let Ok(name) = rustls::pki_types::ServerName::try_from(host.to_string()) else { return };
    let Some(authority_of_tls) = &judge.authority else { return };
    let connect = tokio_rustls::TlsConnector::from(authority_of_tls.upstream.clone()).connect(name, upstream);
    match tokio::time::timeout(FIRST_BYTES_TIMEOUT, connect).await {
        Ok(Ok(upstream)) => {
            let secrets = &judge.secrets;
            one_request(client, upstream, &authority, &judge.carrying, |head| {
                super::secrets::put_all(secrets, host, &head)
            })
            .await
        }
        failed => {
            let why = match failed {
                Ok(Err(error)) => error.to_string(),
                _ => "no answer".into(),
            };
            let mut client = client;
            let body = format!("cellbox: could not open TLS to {host}: {why}\n");
            let head = format!(
                "HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\n\
                 Connection: close\r\n\r\n",
                body.len()
            );
            let _ = client.write_all(head.as_bytes()).await;
            let _ = client.write_all(body.as_bytes()).await;
            let _ = client.shutdown().await;
        }
    }
}

/// The kernel's TLS to `host`, answered with the kernel's CA's certificate for
/// it, when its first bytes are a ClientHello naming `host`.
async fn accept(judge: &Judge, client: Rewind, host: &str) -> Option<tokio_rustls::server::TlsStream<Rewind>> {
    if client.prefix.is_empty() {
        let mut first = [0u8; 1];
        if client.inner.peek(&mut first).await.ok()? != 1 {
            return None;
        }
        if first[0] != 0x16 {
            return None;
        }
    } else if client.prefix[0] != 0x16 {
        return None;
    }
    let server = judge.authority.as_ref()?.server(host).ok()?;
    let client = tokio_rustls::TlsAcceptor::from(server).accept(client).await.ok()?;
    let named = client.get_ref().1.server_name().map(str::to_ascii_lowercase);
    if named.as_deref() != Some(host) {
        let named = named.unwrap_or_else(|| "no server name".into());
        let reason =
            format!("a TLS connection opened for {host} asked for {named} (a name the tunnel was not allowed for)");
        judge.log.refused(&Refusal { host: named, reason });
        return None;
    }
    Some(client)
}
