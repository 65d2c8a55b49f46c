//! Network by name (`--network allow:pypi,example.com`): on Linux the kernel
//! gets a network namespace of its own with only a loopback, and in it two
//! listeners the host made there before `exec` ([`handoff`]): an HTTP proxy
//! (CONNECT, and plain `http://` requests) and a SOCKS5 proxy. On macOS they
//! listen on the host's loopback and the kernel's Seatbelt profile lets it
//! reach those two ports and no other address ([`listen`]). The kernel's
//! tools find them through the usual variables ([`proxy_env`]). Every
//! connection is judged by name first, then by each address the name
//! resolves to ([`rules`]), and only an address that passed is connected to,
//! so a name cannot be re-pointed between the check and the connection.
//! A TLS connection must name in its ClientHello the host that was allowed
//! ([`sni`]). What was refused is kept for the engine to report, once per
//! host ([`NetworkLog`]).

// Linux and macOS filter by name: the rest is unused elsewhere.
#![cfg_attr(not(any(target_os = "linux", target_os = "macos")), allow(dead_code))]

mod carry;
#[cfg(target_os = "linux")]
pub(crate) mod handoff;
mod http;
#[cfg(feature = "tls")]
mod intercept;
mod listen;
mod open;
mod rules;
pub mod secrets;
mod sni;
mod socks;

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

#[cfg(feature = "tls")]
pub use intercept::Authority;
pub use rules::{HostPattern, HostRules, NameMatch, PRESETS, Refusal};
pub use secrets::Secret;

/// The network `cellbox serve` gives kernels when told none: the package
/// registries and model hubs, by their presets.
pub const SERVER_DEFAULT: &str = "allow:pypi,npm,github,huggingface,conda";

/// [`SERVER_DEFAULT`], parsed.
pub fn server_default() -> super::NetworkSetting {
    SERVER_DEFAULT.parse().expect("the presets parse")
}

/// Where the HTTP proxy listens in a kernel's own network namespace (no other
/// program listens there, so the port is always free); on macOS the ports are
/// the system's pick on the host's loopback.
pub const HTTP_PORT: u16 = 3128;
/// Where the SOCKS5 proxy listens there.
pub const SOCKS_PORT: u16 = 1080;

/// The variables that send a kernel's tools through its proxies, whose
/// ports are `ports` (HTTP, SOCKS5: [`HTTP_PORT`] and [`SOCKS_PORT`] in a
/// namespace of the kernel's own), in the forms pip, uv, requests, httpx,
/// urllib, curl, git and npm read (both cases), and Node's own `fetch`
/// (22.21+ and 24+, with `NODE_USE_ENV_PROXY`). `ALL_PROXY` names the HTTP
/// proxy too: httpx (under the OpenAI and Anthropic SDKs, among others)
/// refuses to start with a SOCKS proxy there unless its `socks` extra is
/// installed. `SOCKS_PROXY`, which those clients leave alone, names the
/// SOCKS5 one for a tool told to use it. Loopback stays direct: it is the
/// kernel's own.
pub fn proxy_env([http_port, socks_port]: [u16; 2]) -> Vec<(String, String)> {
    let http = format!("http://127.0.0.1:{http_port}");
    let socks = format!("socks5h://127.0.0.1:{socks_port}");
    let direct = "localhost,127.0.0.1,::1".to_string();
    let mut env = Vec::new();
    let names = [("HTTP_PROXY", &http), ("HTTPS_PROXY", &http), ("ALL_PROXY", &http), ("SOCKS_PROXY", &socks)];
    for (name, value) in names.into_iter().chain([("NO_PROXY", &direct)]) {
        env.push((name.to_string(), value.clone()));
        env.push((name.to_ascii_lowercase(), value.clone()));
    }
    env.push(("NODE_USE_ENV_PROXY".into(), "1".into()));
    env
}

/// Names mapped to addresses ahead of DNS, in `/etc/hosts` form, from the
/// file `CELLBOX_NETWORK_HOSTS` names: for a mirror on the LAN, or tests.
pub fn read_hosts(path: &Path) -> std::io::Result<BTreeMap<String, Vec<IpAddr>>> {
    let mut hosts: BTreeMap<String, Vec<IpAddr>> = BTreeMap::new();
    for line in std::fs::read_to_string(path)?.lines() {
        let line = line.split('#').next().unwrap_or_default();
        let mut words = line.split_whitespace();
        let Some(Ok(address)) = words.next().map(str::parse::<IpAddr>) else { continue };
        for name in words {
            hosts.entry(name.to_ascii_lowercase()).or_default().push(address);
        }
    }
    Ok(hosts)
}

/// What a kernel's proxies decided: counts, and the refusals the engine has
/// not reported yet.
#[derive(Debug, Default)]
pub struct NetworkLog {
    allowed: AtomicU64,
    refused: AtomicU64,
    unreported: Mutex<Vec<Refusal>>,
}

/// At most this many refusals wait to be reported; later ones are counted only.
const MAX_UNREPORTED: usize = 64;

impl NetworkLog {
    fn allowed(&self) {
        self.allowed.fetch_add(1, Ordering::Relaxed);
    }

    fn refused(&self, refusal: &Refusal) {
        self.refused.fetch_add(1, Ordering::Relaxed);
        // A host is the kernel's words: kept to a name's length, printable.
        let mut host: String = refusal.host.chars().filter(|c| !c.is_control()).take(253).collect();
        if host.len() < refusal.host.len() {
            host.push('…');
        }
        let refusal = &Refusal { host, reason: refusal.reason.clone() };
        tracing::info!(host = refusal.host, "network: refused ({})", refusal.reason);
        let mut unreported = self.unreported.lock().unwrap();
        if unreported.len() < MAX_UNREPORTED && !unreported.iter().any(|seen| seen.host == refusal.host) {
            unreported.push(refusal.clone());
        }
    }

    /// The refusals since the last call, one per host.
    pub fn take_refusals(&self) -> Vec<Refusal> {
        std::mem::take(&mut *self.unreported.lock().unwrap())
    }

    /// Connections allowed and refused since the last time this was asked.
    pub fn take_counts(&self) -> (u64, u64) {
        (self.allowed.swap(0, Ordering::Relaxed), self.refused.swap(0, Ordering::Relaxed))
    }
}

/// A kernel's proxies: they serve while this is held (by the kernel's
/// sandbox guard), and stop, closing their listeners, when it is dropped.
#[derive(Debug)]
pub struct Proxy {
    pub log: std::sync::Arc<NetworkLog>,
    /// The CA of a kernel with secrets (its bundle file goes with it).
    #[cfg(feature = "tls")]
    pub authority: Option<std::sync::Arc<Authority>>,
    _stop: tokio::sync::watch::Sender<()>,
}

/// What every connection of one kernel's proxies is judged by, and the
/// secrets they put into requests.
struct Judge {
    rules: HostRules,
    hosts: BTreeMap<String, Vec<IpAddr>>,
    log: std::sync::Arc<NetworkLog>,
    /// This machine's own addresses, judged as loopback is.
    local: Vec<IpAddr>,
    /// Name lookups in progress at once.
    resolving: tokio::sync::Semaphore,
    /// What the connections' buffers may grow by.
    carrying: carry::Budget,
    secrets: Vec<Secret>,
    #[cfg(feature = "tls")]
    authority: Option<std::sync::Arc<Authority>>,
}

/// What a kernel's proxies are started with.
pub struct Setup {
    pub rules: HostRules,
    pub hosts: BTreeMap<String, Vec<IpAddr>>,
    pub secrets: Vec<Secret>,
    #[cfg(feature = "tls")]
    pub authority: Option<std::sync::Arc<Authority>>,
}

/// What `policy`'s proxies start with: its rules, the names its hosts file
/// maps, its secrets and (for those) the kernel's CA.
pub(super) fn setup(policy: &super::SandboxPolicy) -> Result<Setup, super::SandboxError> {
    use super::{Unenforceable, fail};
    let hosts = match &policy.network_hosts {
        Some(path) => read_hosts(path)
            .map_err(|e| fail(Unenforceable::HostsFile { path: path.clone(), source: std::sync::Arc::new(e) }))?,
        None => Default::default(),
    };
    let proxy_error = |e| fail(Unenforceable::Proxy { source: std::sync::Arc::new(e) });
    #[cfg(not(feature = "tls"))]
    if !policy.secrets.is_empty() {
        return Err(proxy_error(std::io::Error::other("this build has no TLS, which --secret needs")));
    }
    Ok(Setup {
        rules: policy.hosts.clone(),
        hosts,
        secrets: policy.secrets.clone(),
        #[cfg(feature = "tls")]
        authority: secrets::authority(policy).map_err(proxy_error)?,
    })
}

/// This machine's own addresses (each interface's), for [`Judge::local`].
#[cfg(any(target_os = "linux", target_os = "macos"))]
fn local_addresses() -> Vec<IpAddr> {
    let Ok(interfaces) = nix::ifaddrs::getifaddrs() else { return Vec::new() };
    let mut found: Vec<IpAddr> = interfaces
        .filter_map(|interface| interface.address)
        .filter_map(|address| {
            if let Some(v4) = address.as_sockaddr_in() {
                Some(IpAddr::V4(v4.ip()))
            } else {
                address.as_sockaddr_in6().map(|v6| IpAddr::V6(v6.ip()))
            }
        })
        .collect();
    found.sort();
    found.dedup();
    found
}

/// No interface list where the proxies are not built.
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
fn local_addresses() -> Vec<IpAddr> {
    Vec::new()
}

/// Run `task` on the runtime of the caller, or on a thread of its own when
/// the caller has none (a probe started from plain code).
fn spawn<F: std::future::Future<Output = ()> + Send + 'static>(task: F) {
    match tokio::runtime::Handle::try_current() {
        Ok(handle) => {
            handle.spawn(task);
        }
        Err(_) => {
            let started = std::thread::Builder::new().name("cellbox-proxy".into()).spawn(move || {
                if let Ok(runtime) = tokio::runtime::Builder::new_current_thread().enable_all().build() {
                    runtime.block_on(task);
                }
            });
            if let Err(error) = started {
                tracing::warn!("could not start a kernel's network proxy: {error}");
            }
        }
    }
}
