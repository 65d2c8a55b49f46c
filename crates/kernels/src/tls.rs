//! TLS for what cellbox itself connects to (https/wss gateways, an
//! OpenAI-compatible bridge): rustls needs one crypto provider per process,
//! installed here once for every client.

/// Install ring as the process's rustls crypto provider, once; later calls do
/// nothing. A build without the `tls` feature (only cross-target type checks
/// turn it off: ring's C build needs the target's SDK) has no provider, and
/// its https connections fail with rustls's own error.
pub fn install_crypto() {
    #[cfg(feature = "tls")]
    {
        static ONCE: std::sync::Once = std::sync::Once::new();
        ONCE.call_once(|| {
            // Err only when a provider is already installed, which serves as well.
            let _ = rustls::crypto::ring::default_provider().install_default();
        });
    }
}
