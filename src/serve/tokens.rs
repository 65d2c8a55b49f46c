//! Bearer tokens for `cellbox serve`: each token is a principal with a name
//! and, optionally, limits of its own.
//!
//! The tokens file keeps only each token's SHA-256, so reading the file does
//! not give anyone a token; the token itself is shown once, when it is made.
//! The server reads the file again whenever it changes, so `token revoke`
//! takes effect on the next request without a restart.

use std::collections::HashMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// What every token starts with, so a leaked one is recognisable in logs and scanners.
pub const TOKEN_PREFIX: &str = "cbx_";
/// What a token made for E2B's SDKs starts with: `e2b_` and hex, the shape
/// those SDKs expect of an `E2B_API_KEY`.
pub const E2B_TOKEN_PREFIX: &str = "e2b_";
/// The principal a token given in `CELLBOX_SERVE_TOKEN` stands for.
pub const ENV_PRINCIPAL: &str = "env";

/// Why a tokens file could not be read or changed.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    #[error("cannot read the tokens file {path}: {message}")]
    Read { path: PathBuf, message: String },
    #[error("cannot write the tokens file {path}: {message}")]
    Write { path: PathBuf, message: String },
    #[error(
        "{0:?} is not a principal name: use 1–64 letters, digits, `-` or `_` (it names the token's sessions and folder)"
    )]
    BadName(String),
    #[error(
        "{0:?} is reserved: `env` and `local` name the principals of CELLBOX_SERVE_TOKEN and of --no-auth, and \
         names starting with `jwt-` those of JWT subjects; choose another name"
    )]
    Reserved(String),
    #[error(
        "a token named {0:?} exists already (names are told apart regardless of case); revoke it first or choose another name"
    )]
    Exists(String),
    #[error("no token is named {0:?}; `cellbox serve token list` shows the names")]
    NotFound(String),
}

/// One principal as the file keeps it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TokenEntry {
    pub name: String,
    /// Hex SHA-256 of the whole token.
    pub sha256: String,
    /// Seconds since the Unix epoch.
    pub created: u64,
    #[serde(default, skip_serializing_if = "PrincipalLimits::is_none")]
    pub limits: PrincipalLimits,
}

/// What one principal may use, within the server's own limits; `None`: the server's.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct PrincipalLimits {
    /// Live kernels of this principal at most, over its sessions and sandboxes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_kernels: Option<usize>,
    /// MCP requests of this principal in progress at most; more are answered 429.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_calls: Option<usize>,
    /// Open SDK sandboxes of this principal at most; more are answered 429.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_sandboxes: Option<usize>,
    /// Memory for each of its kernels and what it starts, in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_limit: Option<u64>,
    /// Its kernels' network (a `--network` value), in place of the server's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<String>,
    /// Its kernels' secrets (`--secret` values: `NAME@HOST` takes the server's variable
    /// when the principal's engine starts; `NAME=VALUE@HOST` keeps the value in this file).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub secrets: Vec<String>,
    /// Sees and acts on every principal's sessions in the web view (`/ui`);
    /// its own calls, sessions and files stay its own.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub admin: bool,
}

impl PrincipalLimits {
    pub fn is_none(&self) -> bool {
        *self == PrincipalLimits::default()
    }
}

/// Who a request comes from: a principal's name and its limits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    pub name: String,
    pub limits: PrincipalLimits,
}

impl Identity {
    /// A principal with the server's limits (the environment's token, a JWT's subject).
    pub fn named(name: impl Into<String>) -> Self {
        Identity { name: name.into(), limits: PrincipalLimits::default() }
    }
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct TokenFileBody {
    tokens: Vec<TokenEntry>,
}

/// Whether `name` can name a principal: it becomes a folder name and part of session ids.
pub fn is_principal_name(name: &str) -> bool {
    (1..=64).contains(&name.len()) && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// What the names of principals that are not tokens of the file start with (JWT subjects).
pub const JWT_PREFIX: &str = "jwt-";

/// Whether `name` belongs to principals the server names itself, so that no
/// token of the file may take it (its folder, sessions and artifacts would be theirs).
pub fn is_reserved_name(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    lower == ENV_PRINCIPAL || lower == super::LOCAL_PRINCIPAL || lower.starts_with(JWT_PREFIX)
}

/// The tokens file's entries (none when the file does not exist).
pub fn list(path: &Path) -> Result<Vec<TokenEntry>, TokenError> {
    match std::fs::read(path) {
        Ok(bytes) => serde_json::from_slice::<TokenFileBody>(&bytes)
            .map(|body| body.tokens)
            .map_err(|e| TokenError::Read { path: path.to_path_buf(), message: e.to_string() }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(TokenError::Read { path: path.to_path_buf(), message: e.to_string() }),
    }
}

/// How a new token is spelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TokenShape {
    /// `cbx_` and URL-safe base64.
    #[default]
    Cellbox,
    /// `e2b_` and hex, for E2B's SDKs (`E2B_API_KEY`).
    E2b,
}

/// Whether `token` is spelled as this server's tokens are (never a JWT).
pub fn is_own_token(token: &str) -> bool {
    token.starts_with(TOKEN_PREFIX) || token.starts_with(E2B_TOKEN_PREFIX)
}

/// Make a token for a new principal `name` with `limits`; returns the token (it is not kept anywhere).
pub fn add(path: &Path, name: &str, limits: PrincipalLimits, shape: TokenShape) -> Result<String, TokenError> {
    if !is_principal_name(name) {
        return Err(TokenError::BadName(name.to_string()));
    }
    if is_reserved_name(name) {
        return Err(TokenError::Reserved(name.to_string()));
    }
    let mut tokens = list(path)?;
    // Principals' folders are named after them: two names that differ by case alone would share one
    // on a case-insensitive file system.
    if tokens.iter().any(|entry| entry.name.eq_ignore_ascii_case(name)) {
        return Err(TokenError::Exists(name.to_string()));
    }
    let token = new_token(shape).map_err(|message| TokenError::Write { path: path.to_path_buf(), message })?;
    let created = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    tokens.push(TokenEntry { name: name.to_string(), sha256: hash(&token), created, limits });
    save(path, tokens)?;
    Ok(token)
}

/// Remove principal `name`'s token; its requests are refused from the next one on.
pub fn revoke(path: &Path, name: &str) -> Result<(), TokenError> {
    let mut tokens = list(path)?;
    let before = tokens.len();
    tokens.retain(|entry| entry.name != name);
    if tokens.len() == before {
        return Err(TokenError::NotFound(name.to_string()));
    }
    save(path, tokens)
}

/// Write the file whole through a private temp file renamed over it, so a
/// server reading it never sees half a file.
fn save(path: &Path, tokens: Vec<TokenEntry>) -> Result<(), TokenError> {
    let error = |e: std::io::Error| TokenError::Write { path: path.to_path_buf(), message: e.to_string() };
    let dir = path.parent().filter(|dir| !dir.as_os_str().is_empty()).unwrap_or(Path::new("."));
    crate::paths::private_dir_builder().create(dir).map_err(error)?;
    let mut file = tempfile::Builder::new().prefix(".tokens-").tempfile_in(dir).map_err(error)?;
    let body = serde_json::to_vec_pretty(&TokenFileBody { tokens }).expect("tokens serialize");
    file.write_all(&body).and_then(|()| file.write_all(b"\n")).map_err(error)?;
    file.persist(path).map_err(|e| error(e.error))?;
    Ok(())
}

fn new_token(shape: TokenShape) -> Result<String, String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| format!("no random numbers from the OS: {e}"))?;
    Ok(match shape {
        TokenShape::Cellbox => {
            format!("{TOKEN_PREFIX}{}", base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes))
        }
        TokenShape::E2b => {
            let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
            format!("{E2B_TOKEN_PREFIX}{hex}")
        }
    })
}

fn hash(token: &str) -> String {
    Sha256::digest(token.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
}

/// The server's view of the tokens: the file, read again when it changes,
/// and at most one token from the environment.
pub struct TokenStore {
    path: Option<PathBuf>,
    env_hash: Option<String>,
    cache: Mutex<Cache>,
}

#[derive(Default)]
struct Cache {
    /// The file's modification time and length when it was last read.
    stamp: Option<(SystemTime, u64)>,
    by_hash: HashMap<String, Identity>,
}

impl TokenStore {
    /// Tokens from `path` (if given) and `env_token` (principal [`ENV_PRINCIPAL`]).
    /// Fails when the file exists but cannot be read: a server must not start
    /// with an auth configuration it cannot see.
    pub fn open(path: Option<PathBuf>, env_token: Option<String>) -> Result<Self, TokenError> {
        let store = TokenStore { path, env_hash: env_token.as_deref().map(hash), cache: Mutex::new(Cache::default()) };
        store.refresh()?;
        Ok(store)
    }

    /// How many principals can sign in now.
    pub fn count(&self) -> usize {
        let _ = self.refresh();
        self.cache.lock().unwrap().by_hash.len() + usize::from(self.env_hash.is_some())
    }

    /// The principal `token` stands for, if any. A file that became unreadable
    /// keeps what was last read (a half-written edit does not lock everyone out).
    pub fn principal(&self, token: &str) -> Option<Identity> {
        let token_hash = hash(token);
        if self.env_hash.as_deref() == Some(token_hash.as_str()) {
            return Some(Identity::named(ENV_PRINCIPAL));
        }
        if let Err(error) = self.refresh() {
            tracing::warn!("{error}; using the tokens read before");
        }
        self.cache.lock().unwrap().by_hash.get(&token_hash).cloned()
    }

    fn refresh(&self) -> Result<(), TokenError> {
        let Some(path) = &self.path else { return Ok(()) };
        let stamp = std::fs::metadata(path).ok().map(|meta| (meta.modified().unwrap_or(UNIX_EPOCH), meta.len()));
        let mut cache = self.cache.lock().unwrap();
        if stamp.is_some() && cache.stamp == stamp {
            return Ok(());
        }
        let entries = list(path)?;
        cache.by_hash = entries
            .into_iter()
            .filter(|entry| {
                // A file written by hand (or before names were reserved) cannot take a reserved name.
                let usable = is_principal_name(&entry.name) && !is_reserved_name(&entry.name);
                if !usable {
                    tracing::warn!(
                        "the token named {:?} in {} is not used: that name is reserved",
                        entry.name,
                        path.display()
                    );
                }
                usable
            })
            .map(|entry| (entry.sha256, Identity { name: entry.name, limits: entry.limits }))
            .collect();
        cache.stamp = stamp;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_for_e2b_are_e2b_and_hex_and_sign_in_like_any() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tokens.json");
        let e2b = add(&path, "agent", PrincipalLimits::default(), TokenShape::E2b).unwrap();
        assert!(e2b.starts_with(E2B_TOKEN_PREFIX) && e2b.len() == 4 + 64, "{e2b}");
        assert!(e2b[4..].bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()), "{e2b}");
        assert!(is_own_token(&e2b) && is_own_token("cbx_x") && !is_own_token("eyJhbGciOi"));
        let store = TokenStore::open(Some(path), None).unwrap();
        assert_eq!(store.principal(&e2b).map(|identity| identity.name), Some("agent".to_string()));
    }

    #[test]
    fn add_list_revoke_and_the_store_follows_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("conf").join("tokens.json");
        let ci = add(&path, "ci", PrincipalLimits::default(), TokenShape::Cellbox).unwrap();
        let limits = PrincipalLimits {
            max_kernels: Some(2),
            max_calls: None,
            max_sandboxes: Some(3),
            memory_limit: Some(1 << 30),
            network: Some("allow:pypi.org".into()),
            secrets: Vec::new(),
            admin: true,
        };
        let alice = add(&path, "alice", limits.clone(), TokenShape::Cellbox).unwrap();
        assert!(ci.starts_with(TOKEN_PREFIX) && ci.len() > 40, "{ci}");
        assert_ne!(ci, alice);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(!text.contains(&ci[TOKEN_PREFIX.len()..]), "the file keeps hashes only");
        assert!(matches!(add(&path, "ci", limits.clone(), TokenShape::Cellbox), Err(TokenError::Exists(_))));
        assert!(
            matches!(add(&path, "CI", limits.clone(), TokenShape::Cellbox), Err(TokenError::Exists(_))),
            "case alone is no other name"
        );
        assert!(matches!(add(&path, "../x", limits.clone(), TokenShape::Cellbox), Err(TokenError::BadName(_))));
        for reserved in ["env", "local", "jwt-alice", "JWT-bob", "Env"] {
            assert!(
                matches!(add(&path, reserved, limits.clone(), TokenShape::Cellbox), Err(TokenError::Reserved(_))),
                "{reserved}"
            );
        }

        let store = TokenStore::open(Some(path.clone()), Some("cbx_from-env".into())).unwrap();
        assert_eq!(store.principal(&ci), Some(Identity::named("ci")));
        assert_eq!(store.principal(&alice), Some(Identity { name: "alice".into(), limits }), "limits are kept");
        assert_eq!(store.principal("cbx_from-env"), Some(Identity::named(ENV_PRINCIPAL)));
        assert_eq!(store.principal("cbx_wrong"), None);
        assert_eq!(store.count(), 3);

        revoke(&path, "ci").unwrap();
        assert_eq!(store.principal(&ci), None, "a revoked token is refused without a restart");
        assert_eq!(store.principal(&alice).map(|i| i.name).as_deref(), Some("alice"));
        assert!(matches!(revoke(&path, "ci"), Err(TokenError::NotFound(_))));
        assert_eq!(list(&path).unwrap().iter().map(|e| e.name.as_str()).collect::<Vec<_>>(), ["alice"]);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        }
    }

    #[test]
    fn a_reserved_name_written_into_the_file_by_hand_signs_nobody_in() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tokens.json");
        let entry = |name: &str, token: &str| TokenEntry {
            name: name.into(),
            sha256: hash(token),
            created: 0,
            limits: PrincipalLimits::default(),
        };
        save(&path, vec![entry("jwt-alice", "cbx_a"), entry("env", "cbx_e"), entry("bob", "cbx_b")]).unwrap();
        let store = TokenStore::open(Some(path), None).unwrap();
        assert_eq!(store.principal("cbx_a"), None);
        assert_eq!(store.principal("cbx_e"), None);
        assert_eq!(store.principal("cbx_b"), Some(Identity::named("bob")));
    }

    #[test]
    fn a_corrupt_file_stops_the_start() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tokens.json");
        std::fs::write(&path, "{not json").unwrap();
        assert!(matches!(TokenStore::open(Some(path), None), Err(TokenError::Read { .. })));
    }
}
