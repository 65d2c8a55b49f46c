//! The second auth mode of `cellbox serve`: access tokens (JWTs) from an
//! external authorization server, as the MCP authorization spec has clients
//! get them. A token is accepted when its signature checks against the
//! issuer's published keys (JWKS), its `iss` and `aud` are the configured
//! ones and it has not expired; its `sub` names the principal.
//!
//! The server also publishes the OAuth 2.0 Protected Resource Metadata
//! (RFC 9728) that standard clients read to find the authorization server.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use sha2::{Digest, Sha256};
use tokio::sync::Mutex;

use super::tokens::{JWT_PREFIX, is_principal_name};

/// Keys are fetched again after this long, or sooner for a key id not seen yet.
const KEYS_FRESH_FOR: Duration = Duration::from_secs(300);
/// An unknown key id fetches the keys at most this often (a flood of forged ids costs one fetch).
const REFETCH_AT_MOST_EVERY: Duration = Duration::from_secs(30);
/// How long a fetch of the keys may take, connecting included.
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);
/// The largest key set read (a JWKS is a few KiB).
const MAX_JWKS_BYTES: usize = 1 << 20;

/// Where the issuer's keys come from.
#[derive(Debug, Clone)]
pub enum KeySource {
    Url(String),
    File(PathBuf),
}

impl KeySource {
    /// `https://…` is fetched, and `http://…` to a loopback host (a key
    /// server on the same machine); anything else is a file. Keys fetched in
    /// the clear from another machine could be swapped on the way, and with
    /// them every principal: refused.
    pub fn parse(text: &str) -> Result<Self, String> {
        if text.starts_with("https://") {
            return Ok(KeySource::Url(text.to_string()));
        }
        if text.starts_with("http://") {
            // The host as the client that fetches will read it (a `\\` or an `@` can make a naive
            // split read another).
            let url = reqwest::Url::parse(text).ok();
            let host = url.as_ref().and_then(|url| url.host_str()).unwrap_or_default();
            let host = host.trim_start_matches('[').trim_end_matches(']');
            let loopback = host.eq_ignore_ascii_case("localhost")
                || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback());
            return if loopback {
                Ok(KeySource::Url(text.to_string()))
            } else {
                Err(format!(
                    "the JWKS {text} would be fetched over plain http from another machine, where anyone on the way \
                     could swap the keys; use its https:// URL (or a file)"
                ))
            };
        }
        Ok(KeySource::File(PathBuf::from(text)))
    }

    async fn load(&self) -> Result<JwkSet, String> {
        let body = match self {
            KeySource::File(path) => {
                std::fs::read(path).map_err(|e| format!("cannot read the JWKS file {}: {e}", path.display()))?
            }
            KeySource::Url(url) => {
                crate::tls::install_crypto();
                let fetch = async {
                    let client = reqwest::Client::builder()
                        .connect_timeout(FETCH_TIMEOUT)
                        .redirect(reqwest::redirect::Policy::none())
                        .build()
                        .map_err(|e| e.to_string())?;
                    let mut response = client.get(url).send().await.map_err(|e| e.to_string())?;
                    if !response.status().is_success() {
                        return Err(format!("it answered {}", response.status()));
                    }
                    let mut body = Vec::new();
                    while let Some(chunk) = response.chunk().await.map_err(|e| e.to_string())? {
                        body.extend_from_slice(&chunk);
                        if body.len() > MAX_JWKS_BYTES {
                            return Err(format!("it is larger than {MAX_JWKS_BYTES} bytes"));
                        }
                    }
                    Ok(body)
                };
                match tokio::time::timeout(FETCH_TIMEOUT, fetch).await {
                    Ok(Ok(body)) => body,
                    Ok(Err(why)) => return Err(format!("cannot fetch the JWKS {url}: {why}")),
                    Err(_) => return Err(format!("cannot fetch the JWKS {url}: no answer within {FETCH_TIMEOUT:?}")),
                }
            }
        };
        serde_json::from_slice(&body).map_err(|e| format!("the JWKS is not a JSON Web Key Set: {e}"))
    }
}

/// Checks access tokens of one issuer and audience.
pub struct JwtVerifier {
    pub issuer: String,
    audience: String,
    source: KeySource,
    /// The keys last read and when; held only to look or to swap, never across a fetch.
    keys: std::sync::Mutex<Keys>,
    /// Held by the one request that fetches the keys; the others go on with the keys they have.
    fetching: Mutex<()>,
}

#[derive(Default)]
struct Keys {
    set: Option<JwkSet>,
    /// When the keys were last fetched, or a fetch last failed.
    tried: Option<Instant>,
    /// When the keys were last fetched with success.
    fetched: Option<Instant>,
}

#[derive(serde::Deserialize)]
struct Claims {
    sub: String,
}

impl JwtVerifier {
    pub fn new(issuer: String, audience: String, source: KeySource) -> Self {
        JwtVerifier { issuer, audience, source, keys: Default::default(), fetching: Mutex::new(()) }
    }

    /// Load the keys once now: a server whose keys cannot be read must not start.
    pub async fn check_keys(&self) -> Result<usize, String> {
        let keys = self.source.load().await?;
        let count = keys.keys.len();
        let now = Instant::now();
        *self.keys.lock().unwrap() = Keys { set: Some(keys), tried: Some(now), fetched: Some(now) };
        Ok(count)
    }

    /// The principal a valid token names, or why the token is refused.
    pub async fn principal(&self, token: &str) -> Result<String, &'static str> {
        let header =
            jsonwebtoken::decode_header(token).map_err(|_| "the token is neither a cellbox token nor a JWT")?;
        if !is_asymmetric(header.alg) {
            return Err("the token's signature algorithm is not accepted (asymmetric keys only)");
        }
        let key = self.key_for(header.kid.as_deref()).await?;
        let mut validation = Validation::new(header.alg);
        validation.set_issuer(&[&self.issuer]);
        validation.set_audience(&[&self.audience]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        // A token is not valid before its `nbf` either.
        validation.validate_nbf = true;
        let data = jsonwebtoken::decode::<Claims>(token, &key, &validation)
            .map_err(|_| "the token is not valid here (signature, issuer, audience, expiry or not-before)")?;
        Ok(principal_name(&data.claims.sub))
    }

    async fn key_for(&self, kid: Option<&str>) -> Result<DecodingKey, &'static str> {
        let find = |set: &JwkSet| match kid {
            Some(kid) => set.find(kid).cloned(),
            None if set.keys.len() == 1 => set.keys.first().cloned(),
            None => None,
        };
        let (known, refetch) = {
            let keys = self.keys.lock().unwrap();
            let known = keys.set.as_ref().and_then(find);
            let stale = keys.fetched.is_none_or(|at| at.elapsed() > KEYS_FRESH_FOR);
            let may_retry = keys.tried.is_none_or(|at| at.elapsed() > REFETCH_AT_MOST_EVERY);
            (known.clone(), may_retry && (stale || known.is_none()))
        };
        // One request fetches (the others go on with the keys they have), with a
        // timeout, and no lock is held meanwhile that other requests need.
        let jwk = match (known, refetch) {
            (known, true) => match self.fetching.try_lock() {
                Ok(_fetching) => {
                    let loaded = self.source.load().await;
                    let mut keys = self.keys.lock().unwrap();
                    keys.tried = Some(Instant::now());
                    match loaded {
                        Ok(set) => {
                            keys.fetched = keys.tried;
                            keys.set = Some(set);
                        }
                        Err(error) => tracing::warn!("{error}; using the keys read before"),
                    }
                    keys.set.as_ref().and_then(find)
                }
                Err(_) => known,
            },
            (known, false) => known,
        };
        let jwk = jwk.ok_or("the token's signing key is not the issuer's")?;
        DecodingKey::from_jwk(&jwk).map_err(|_| "the issuer's key cannot be used")
    }

    /// RFC 9728's metadata for the MCP endpoint at `resource`.
    pub fn metadata(&self, resource: &str) -> serde_json::Value {
        serde_json::json!({
            "resource": resource,
            "authorization_servers": [self.issuer],
            "bearer_methods_supported": ["header"],
        })
    }
}

fn is_asymmetric(alg: Algorithm) -> bool {
    !matches!(alg, Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512)
}

/// `sub` as a principal name, always `jwt-…` so that no subject an
/// authorization server issues can be the same principal as a cellbox token:
/// `jwt-<sub>` when `sub` is lower-case letters, digits, `-` and `_` (not
/// first), else a stable hash of it behind `_` (`auth0|123` → `jwt-_3f…`),
/// which no plain subject can give. Folder names then never differ by case
/// alone (one folder on a case-insensitive file system).
pub fn principal_name(sub: &str) -> String {
    let plain = format!("{JWT_PREFIX}{sub}");
    let lower = sub.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_');
    if lower && !sub.starts_with('_') && is_principal_name(&plain) {
        return plain;
    }
    let hash: String = Sha256::digest(sub.as_bytes()).iter().take(8).map(|b| format!("{b:02x}")).collect();
    format!("{JWT_PREFIX}_{hash}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subjects_become_principal_names() {
        assert_eq!(principal_name("alice"), "jwt-alice");
        let hashed = principal_name("auth0|1234");
        assert!(hashed.starts_with("jwt-_") && is_principal_name(&hashed), "{hashed}");
        // No subject can take another's name: not by case, not by writing out a hash.
        assert_ne!(principal_name("Alice"), principal_name("alice"));
        assert_ne!(principal_name(&hashed["jwt-".len()..]), hashed);
        assert_eq!(hashed, principal_name("auth0|1234"), "stable");
        assert_ne!(hashed, principal_name("auth0|1235"));
        assert!(matches!(KeySource::parse("https://idp/jwks"), Ok(KeySource::Url(_))));
        assert!(matches!(KeySource::parse("keys.json"), Ok(KeySource::File(_))));
        for loopback in
            ["http://127.0.0.1:8080/jwks", "http://localhost/jwks", "http://[::1]:9/k", "http://u@127.0.0.1/"]
        {
            assert!(matches!(KeySource::parse(loopback), Ok(KeySource::Url(_))), "{loopback}");
        }
        for remote in [
            "http://idp.example.com/jwks",
            "http://127.0.0.1.evil.com/jwks",
            "http://10.0.0.1/k",
            "http://evil.example\\@127.0.0.1/jwks",
            "http://127.0.0.1@evil.example/jwks",
        ] {
            let error = KeySource::parse(remote).unwrap_err();
            assert!(error.contains("https://"), "{remote}: {error}");
        }
    }
}
