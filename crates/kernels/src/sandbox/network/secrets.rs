//! Credentials the kernel never sees (`--secret NAME=VALUE@HOST`): the
//! kernel's variable `NAME` holds a placeholder, `cellbox-secret:NAME`, and
//! the proxy puts the value in its place in the head of each request to
//! `HOST` (and nowhere else). An HTTPS request to `HOST` is read by the proxy:
//! it answers the kernel's TLS with a certificate for `HOST` from a CA made
//! for this kernel alone (the kernel trusts it through the usual variables;
//! its key never leaves the host's memory), and opens its own TLS to the
//! real `HOST`. A cell that prints, writes or sends the placeholder
//! anywhere else has sent nothing.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::str::FromStr;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::HostPattern;
use crate::sandbox::policy::PolicyError;

/// What a kernel's variable holds in place of a secret's value.
pub fn placeholder(name: &str) -> String {
    format!("cellbox-secret:{name}")
}

/// One secret: its variable's name, the host its value goes to, the value.
/// The value is not serialized nor shown (`Debug` hides it).
#[derive(Clone, Serialize, Deserialize)]
pub struct Secret {
    pub name: String,
    pub host: String,
    #[serde(skip)]
    value: Arc<[u8]>,
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Secret").field("name", &self.name).field("host", &self.host).field("value", &"…").finish()
    }
}

impl PartialEq for Secret {
    fn eq(&self, other: &Secret) -> bool {
        self.name == other.name && self.host == other.host && self.value == other.value
    }
}

impl Eq for Secret {}

impl Hash for Secret {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.name.hash(state);
        self.host.hash(state);
        self.value.hash(state);
    }
}

impl FromStr for Secret {
    type Err = PolicyError;

    /// `NAME=VALUE@HOST`, `NAME=file:PATH@HOST` (the file's text, without its
    /// last line ending), or `NAME@HOST` (this process's variable `NAME`).
    fn from_str(text: &str) -> Result<Secret, PolicyError> {
        let bad = |why: &str| PolicyError::BadSecret(format!("{}: {why}", text.split('=').next().unwrap_or(text)));
        let (left, host) =
            text.rsplit_once('@').ok_or_else(|| bad("write NAME=VALUE@HOST, NAME=file:PATH@HOST or NAME@HOST"))?;
        let host = host.trim().trim_end_matches('.').to_ascii_lowercase();
        if !matches!(host.parse::<HostPattern>(), Ok(HostPattern::Name(_) | HostPattern::Below(_))) {
            return Err(bad("the host must be a name (example.com) or *.domain"));
        }
        let (name, value) = match left.split_once('=') {
            Some((name, spec)) => match spec.strip_prefix("file:") {
                Some(path) => {
                    let text = std::fs::read(path).map_err(|e| bad(&format!("cannot read {path}: {e}")))?;
                    let mut text = text.as_slice();
                    for ending in [&b"\n"[..], b"\r"] {
                        text = text.strip_suffix(ending).unwrap_or(text);
                    }
                    (name, text.to_vec())
                }
                None => (name, spec.as_bytes().to_vec()),
            },
            None => {
                let value = std::env::var_os(left).ok_or_else(|| bad(&format!("the variable {left} is not set")))?;
                (left, value.into_encoded_bytes())
            }
        };
        let name_ok = name.bytes().next().is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
            && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
        if !name_ok {
            return Err(bad("the name must be a variable's name (letters, digits, _)"));
        }
        if value.is_empty() || value.iter().any(|b| matches!(b, b'\r' | b'\n' | 0)) {
            return Err(bad("the value must be one non-empty line"));
        }
        Ok(Secret { name: name.to_string(), host, value: value.into() })
    }
}

impl Secret {
    /// Whether requests to `host` carry this secret's value.
    pub fn applies_to(&self, host: &str) -> bool {
        match self.host.strip_prefix("*.") {
            Some(domain) => host.strip_suffix(domain).is_some_and(|name| name.len() > 1 && name.ends_with('.')),
            None => self.host == host,
        }
    }

    /// `value` (one header's) with this secret's placeholder replaced by its
    /// value, where the placeholder is whole (`KEY` is not the start of `KEY2`).
    fn put_into(&self, value: &[u8]) -> Vec<u8> {
        let placeholder = placeholder(&self.name);
        let mut out = Vec::with_capacity(value.len());
        let mut rest = value;
        while let Some(at) = memchr::memmem::find(rest, placeholder.as_bytes()) {
            let end = at + placeholder.len();
            out.extend_from_slice(&rest[..at]);
            if rest.get(end).is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_') {
                out.extend_from_slice(&rest[at..end]);
            } else {
                out.extend_from_slice(&self.value);
            }
            rest = &rest[end..];
        }
        out.extend_from_slice(rest);
        out
    }
}

/// The CA of a kernel whose policy has secrets (its bundle in the policy's
/// folder of kernel temp dirs), or `None` without secrets.
#[cfg(feature = "tls")]
pub fn authority(policy: &crate::sandbox::SandboxPolicy) -> std::io::Result<Option<Arc<super::Authority>>> {
    if policy.secrets.is_empty() {
        return Ok(None);
    }
    super::Authority::new(&policy.temp_root(), policy.network_ca.as_deref()).map(|authority| Some(Arc::new(authority)))
}

/// The kernel's variables for its secrets: each one's placeholder, and, when
/// some request is read by the proxy, its CA's bundle for every tool that
/// reads one (OpenSSL's, requests', curl's, pip's, git's; Node adds it to its own).
pub fn kernel_env(setup: &super::Setup) -> Vec<(String, String)> {
    #[cfg_attr(not(feature = "tls"), allow(unused_mut))]
    let mut env: Vec<(String, String)> =
        setup.secrets.iter().map(|secret| (secret.name.clone(), placeholder(&secret.name))).collect();
    #[cfg(feature = "tls")]
    if let Some(authority) = &setup.authority {
        let bundle = authority.bundle().display().to_string();
        for name in [
            "SSL_CERT_FILE",
            "REQUESTS_CA_BUNDLE",
            "CURL_CA_BUNDLE",
            "PIP_CERT",
            "GIT_SSL_CAINFO",
            "NODE_EXTRA_CA_CERTS",
        ] {
            env.push((name.to_string(), bundle.clone()));
        }
    }
    env
}

/// Headers a server commonly sends back (in a redirect, an error page, a
/// CORS answer): a secret is never put into them, nor into the request line.
const ECHOED: &[&str] = &["host", "origin", "referer"];

/// A request's `head` (its request line, then `Name: value` lines) with the
/// placeholders of the secrets that go to `host` replaced by their values in
/// its header values only.
pub fn put_all(secrets: &[Secret], host: &str, head: &[u8]) -> Vec<u8> {
    let mine: Vec<&Secret> = secrets.iter().filter(|secret| secret.applies_to(host)).collect();
    if mine.is_empty() {
        return head.to_vec();
    }
    let mut out = Vec::with_capacity(head.len() + 64);
    for (index, line) in head.split_inclusive(|b| *b == b'\n').enumerate() {
        let colon = memchr::memchr(b':', line);
        let echoed = colon.is_some_and(|at| {
            let name = String::from_utf8_lossy(&line[..at]).trim().to_ascii_lowercase();
            ECHOED.contains(&name.as_str())
        });
        match colon {
            Some(at) if index > 0 && !echoed => {
                out.extend_from_slice(&line[..=at]);
                let value = mine.iter().fold(line[at + 1..].to_vec(), |value, secret| secret.put_into(&value));
                out.extend_from_slice(&value);
            }
            _ => out.extend_from_slice(line),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_written_three_ways_and_checked() {
        let literal: Secret = "API_KEY=s3cr@t@api.example.com".parse().unwrap();
        assert_eq!((literal.name.as_str(), literal.host.as_str()), ("API_KEY", "api.example.com"));
        assert_eq!(&*literal.value, b"s3cr@t");
        assert!(!format!("{literal:?}").contains("s3cr"), "Debug hides the value");
        assert!(!serde_json::to_string(&literal).unwrap().contains("s3cr"), "so does serde");
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("token");
        std::fs::write(&file, "from-a-file\n").unwrap();
        let from_file: Secret = format!("TOKEN=file:{}@*.example.com", file.display()).parse().unwrap();
        assert_eq!(&*from_file.value, b"from-a-file");
        for bad in [
            "NOHOST=x",
            "1BAD=x@a.com",
            "K=x@not a host",
            "K=@a.com",
            "K=a\nb@a.com",
            "K=x@10.0.0.1",
            "NO_SUCH_VARIABLE_FOR_A_SECRET@a.com",
        ] {
            assert!(bad.parse::<Secret>().is_err(), "{bad}");
        }
    }

    #[test]
    fn a_placeholder_becomes_the_value_only_for_its_host() {
        let secret: Secret = "KEY=v4lue@api.example.com".parse().unwrap();
        let wild: Secret = "OTHER=w1ld@*.example.org".parse().unwrap();
        let head: &[u8] = b"GET /?k=cellbox-secret:KEY HTTP/1.1\r\nAuthorization: Bearer cellbox-secret:KEY\r\n\
                            X: cellbox-secret:OTHER cellbox-secret:KEY2\r\nOrigin: cellbox-secret:KEY\r\n\r\n";
        let both = [secret.clone(), wild.clone()];
        let sent = put_all(&both, "api.example.com", head);
        assert_eq!(
            String::from_utf8(sent).unwrap(),
            "GET /?k=cellbox-secret:KEY HTTP/1.1\r\nAuthorization: Bearer v4lue\r\n\
             X: cellbox-secret:OTHER cellbox-secret:KEY2\r\nOrigin: cellbox-secret:KEY\r\n\r\n",
            "header values only: not the request line, another secret's name, nor a header servers echo"
        );
        assert_eq!(put_all(&both, "evil.example.com", head), head.to_vec());
        assert!(
            wild.applies_to("a.example.org") && !wild.applies_to("example.org") && !wild.applies_to("xexample.org")
        );
    }
}
