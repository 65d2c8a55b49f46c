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

use super::tokens::is_principal_name;

/// Keys are fetched again after this long, or sooner for a key id not seen yet.
const KEYS_FRESH_FOR: Duration = Duration::from_secs(300);
/// An unknown key id fetches the keys at most this often (a flood of forged ids costs one fetch).
const REFETCH_AT_MOST_EVERY: Duration = Duration::from_secs(30);

/// Where the issuer's keys come from.
#[derive(Debug, Clone)]
pub enum KeySource {
    Url(String),
    File(PathBuf),
}

impl KeySource {
    /// `https://…`/`http://…` is fetched; anything else is a file.
    pub fn parse(text: &str) -> Self {
        if text.starts_with("https://") || text.starts_with("http://") {
            KeySource::Url(text.to_string())
        } else {
            KeySource::File(PathBuf::from(text))
        }
    }

    async fn load(&self) -> Result<JwkSet, String> {
        let body = match self {
            KeySource::File(path) => {
                std::fs::read(path).map_err(|e| format!("cannot read the JWKS file {}: {e}", path.display()))?
            }
            KeySource::Url(url) => {
                crate::tls::install_crypto();
                let response = reqwest::get(url).await.map_err(|e| format!("cannot fetch the JWKS {url}: {e}"))?;
                if !response.status().is_success() {
                    return Err(format!("the JWKS {url} answered {}", response.status()));
                }
                response.bytes().await.map_err(|e| format!("cannot fetch the JWKS {url}: {e}"))?.to_vec()
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
    keys: Mutex<Option<(Instant, JwkSet)>>,
}

#[derive(serde::Deserialize)]
struct Claims {
    sub: String,
}

impl JwtVerifier {
    pub fn new(issuer: String, audience: String, source: KeySource) -> Self {
        JwtVerifier { issuer, audience, source, keys: Mutex::new(None) }
    }

    /// Load the keys once now: a server whose keys cannot be read must not start.
    pub async fn check_keys(&self) -> Result<usize, String> {
        let keys = self.source.load().await?;
        let count = keys.keys.len();
        *self.keys.lock().await = Some((Instant::now(), keys));
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
        let data = jsonwebtoken::decode::<Claims>(token, &key, &validation)
            .map_err(|_| "the token is not valid here (signature, issuer, audience or expiry)")?;
        Ok(principal_name(&data.claims.sub))
    }

    async fn key_for(&self, kid: Option<&str>) -> Result<DecodingKey, &'static str> {
        let mut keys = self.keys.lock().await;
        let find = |set: &JwkSet| match kid {
            Some(kid) => set.find(kid).cloned(),
            None if set.keys.len() == 1 => set.keys.first().cloned(),
            None => None,
        };
        let stale = keys.as_ref().is_none_or(|(at, _)| at.elapsed() > KEYS_FRESH_FOR);
        let unknown =
            keys.as_ref().is_some_and(|(at, set)| find(set).is_none() && at.elapsed() > REFETCH_AT_MOST_EVERY);
        if stale || unknown {
            match self.source.load().await {
                Ok(set) => *keys = Some((Instant::now(), set)),
                Err(error) => tracing::warn!("{error}; using the keys read before"),
            }
        }
        let jwk = keys.as_ref().and_then(|(_, set)| find(set)).ok_or("the token's signing key is not the issuer's")?;
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
/// `jwt-<sub>` when that can name a folder, else a stable hash of it
/// (`auth0|123` → `jwt-3f…`).
pub fn principal_name(sub: &str) -> String {
    let plain = format!("jwt-{sub}");
    if is_principal_name(&plain) {
        return plain;
    }
    let hash: String = Sha256::digest(sub.as_bytes()).iter().take(8).map(|b| format!("{b:02x}")).collect();
    format!("jwt-{hash}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subjects_become_principal_names() {
        assert_eq!(principal_name("alice"), "jwt-alice");
        let hashed = principal_name("auth0|1234");
        assert!(hashed.starts_with("jwt-") && is_principal_name(&hashed), "{hashed}");
        assert_eq!(hashed, principal_name("auth0|1234"), "stable");
        assert_ne!(hashed, principal_name("auth0|1235"));
        assert!(matches!(KeySource::parse("https://idp/jwks"), KeySource::Url(_)));
        assert!(matches!(KeySource::parse("keys.json"), KeySource::File(_)));
    }
}
