//! TLS for `cellbox serve --tls-cert FILE --tls-key FILE`, with rustls.
//!
//! Each handshake runs in a task of its own and only finished connections
//! reach the server, so a slow or silent client never holds up the accepts
//! of the others.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;

/// How long a client has to finish its handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Handshakes under way at most; the next connection waits in the listen queue.
const MAX_HANDSHAKES: usize = 256;

/// Why the certificate or key cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("cannot use the TLS {what} {path}: {message}")]
pub struct TlsError {
    what: &'static str,
    path: String,
    message: String,
}

/// A TLS server configuration from PEM files: the certificate chain, leaf first, and its private key.
pub fn acceptor(cert: &Path, key: &Path) -> Result<TlsAcceptor, TlsError> {
    crate::tls::install_crypto();
    let error = |what, path: &Path, message: String| TlsError { what, path: path.display().to_string(), message };
    let chain = CertificateDer::pem_file_iter(cert)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|e| error("certificate", cert, e.to_string()))?;
    if chain.is_empty() {
        return Err(error("certificate", cert, "it holds no PEM certificate".into()));
    }
    let private = PrivateKeyDer::from_pem_file(key).map_err(|e| error("key", key, e.to_string()))?;
    let config = rustls::ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(chain, private)
        .map_err(|e| error("key", key, format!("it does not fit the certificate: {e}")))?;
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// Accepted TLS connections, handshakes done.
pub struct TlsListener {
    local: SocketAddr,
    ready: mpsc::Receiver<(TlsStream<TcpStream>, SocketAddr)>,
    accepting: tokio::task::JoinHandle<()>,
}

impl TlsListener {
    pub fn new(tcp: TcpListener, acceptor: TlsAcceptor) -> std::io::Result<Self> {
        let local = tcp.local_addr()?;
        let (done, ready) = mpsc::channel(64);
        let handshakes = Arc::new(tokio::sync::Semaphore::new(MAX_HANDSHAKES));
        let accepting = tokio::spawn(async move {
            loop {
                let Ok(place) = handshakes.clone().acquire_owned().await else { return };
                let (stream, peer) = match tcp.accept().await {
                    Ok(accepted) => accepted,
                    Err(error) => {
                        // Out of file descriptors and the like: wait, as axum's own listener does.
                        tracing::warn!("accept failed: {error}");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        continue;
                    }
                };
                let _ = stream.set_nodelay(true);
                let (acceptor, done) = (acceptor.clone(), done.clone());
                tokio::spawn(async move {
                    let handshake = tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await;
                    drop(place);
                    match handshake {
                        Ok(Ok(stream)) => {
                            let _ = done.send((stream, peer)).await;
                        }
                        Ok(Err(error)) => tracing::debug!(%peer, "TLS handshake failed: {error}"),
                        Err(_) => tracing::debug!(%peer, "TLS handshake timed out"),
                    }
                });
            }
        });
        Ok(TlsListener { local, ready, accepting })
    }
}

impl Drop for TlsListener {
    fn drop(&mut self) {
        self.accepting.abort();
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.ready.recv().await {
            Some(accepted) => accepted,
            // The accepting task holds a sender for as long as it runs, and it runs until dropped.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        Ok(self.local)
    }
}
