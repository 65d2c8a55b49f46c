//! What a kernel may do: the sandbox policy, its parsing and its wording.
//!
//! A [`SandboxPolicy`] is a plain value (Hash + Eq) so that anything that
//! keeps kernels around (a pool, a spare, a fork server) can make it part of
//! its cache key: two kernels started under different policies are never
//! interchangeable.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::network::{HostRules, Secret};
use crate::settings::{self, EnvVar};

/// Why a sandbox setting (a flag's or a `CELLBOX_*` variable's value) was refused, so the
/// front ends can tell a bad mode from a bad size; the text says what to write instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    #[error("unknown sandbox mode {0:?}; use off, workspace-write or read-only")]
    UnknownMode(String),
    #[error(
        "unknown network setting {0:?}; use on, off, localhost, or lists of hosts such as \
         allow:pypi,example.com,*.github.com;deny:gist.github.com"
    )]
    UnknownNetwork(String),
    #[error(
        "{0:?} is neither a preset (pypi, npm, github, huggingface, conda) nor a host name (a name with a dot, an \
         address, a range such as 10.0.0.0/8, or *.example.com)"
    )]
    UnknownPreset(String),
    #[error("{0:?} is not a host name, address, range (10.0.0.0/8) or *.domain")]
    BadHost(String),
    #[error("--secret {0}")]
    BadSecret(String),
    #[error(
        "--secret needs the kernels' network to go through cellbox's proxy, which puts it in: add \
         --network allow:{0} (or deny:…)"
    )]
    SecretWithoutProxy(String),
    #[error("--secret {name} goes to {host}, which --network does not let kernels reach: {why}")]
    SecretHostRefused { name: String, host: String, why: String },
    #[error("{0:?} is not a size; write e.g. 4G, 512M or 1073741824")]
    NotASize(String),
    #[error("{0:?} has an unknown unit; use K, M, G or T")]
    UnknownUnit(String),
    #[error("{0:?} is too small for a Python kernel; give at least 16M")]
    TooSmall(String),
    #[error("{0:?} is not a process count of at least 8")]
    NotACount(String),
    /// One of the above, in the value of the variable `name`.
    #[error("{name}: {source}")]
    Variable {
        name: &'static str,
        #[source]
        source: Box<PolicyError>,
    },
}

impl PolicyError {
    pub fn in_variable(self, var: &EnvVar) -> PolicyError {
        PolicyError::Variable { name: var.name, source: Box::new(self) }
    }
}

/// What the kernel may read and write. The default is `workspace-write`: cells
/// run code a model wrote, so a kernel gets the user's full rights only when
/// someone asks for it (`--sandbox off`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxMode {
    /// No filesystem restriction (the kernel has the user's full rights).
    Off,
    /// Read everywhere except secret locations; write only to the workspace,
    /// the `--allow-write` paths, the private temp dir and the interpreter's caches.
    #[default]
    WorkspaceWrite,
    /// Read everywhere except secret locations; write only to the private temp dir.
    ReadOnly,
}

/// Which network the kernel sees.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NetworkMode {
    /// The host's network, unchanged.
    #[default]
    On,
    /// No IP network at all: a network namespace whose loopback is down.
    Off,
    /// Only the kernel's own loopback (a network namespace with `lo` up); the
    /// host's loopback services are not reachable from it.
    Localhost,
    /// Hosts by name, through the kernel's proxies: the policy's `hosts`.
    Filtered,
}

/// A whole `--network` value: the mode, and the hosts of `allow:`/`deny:`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NetworkSetting {
    pub mode: NetworkMode,
    pub hosts: HostRules,
}

impl FromStr for NetworkSetting {
    type Err = PolicyError;
    fn from_str(text: &str) -> Result<Self, PolicyError> {
        let trimmed = text.trim();
        if trimmed.starts_with("allow:") || trimmed.starts_with("deny:") {
            return Ok(NetworkSetting { mode: NetworkMode::Filtered, hosts: HostRules::parse(trimmed)? });
        }
        match trimmed.parse::<NetworkMode>()? {
            NetworkMode::Filtered => Err(PolicyError::UnknownNetwork(text.to_string())),
            mode => Ok(NetworkSetting { mode, hosts: HostRules::default() }),
        }
    }
}

impl fmt::Display for NetworkSetting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.mode {
            NetworkMode::Filtered => self.hosts.fmt(f),
            mode => mode.fmt(f),
        }
    }
}

/// Everything the OS is asked to enforce around one kernel (and every
/// process it starts). The default is the workspace sandbox with the network
/// on and no limits; [`SandboxPolicy::off`] enforces nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SandboxPolicy {
    /// What the kernel may read and write.
    pub mode: SandboxMode,
    /// Which network it sees.
    pub network: NetworkMode,
    /// The hosts it reaches when `network` is [`NetworkMode::Filtered`].
    #[serde(default)]
    pub hosts: HostRules,
    /// A file in `/etc/hosts` form the proxy resolves names with before DNS
    /// (`CELLBOX_NETWORK_HOSTS`).
    #[serde(default)]
    pub network_hosts: Option<PathBuf>,
    /// Credentials the proxy puts into requests to their hosts; the kernel
    /// sees placeholders (`--secret`). Their values are never serialized.
    #[serde(default)]
    pub secrets: Vec<Secret>,
    /// A PEM file of roots the proxy trusts, besides the system's, when it
    /// opens TLS to a host that secrets go to (`CELLBOX_NETWORK_CA`).
    #[serde(default)]
    pub network_ca: Option<PathBuf>,
    /// Extra folders the kernel may write in `workspace-write` mode.
    pub allow_write: Vec<PathBuf>,
    /// Extra paths that are unreadable (on top of [`default_secret_paths`]).
    pub deny_read: Vec<PathBuf>,
    /// The folder kernels write in under `workspace-write` (with
    /// `allow_write`), and the one every path a tool call names must stay in.
    /// `None`: each kernel's own working folder. Set by the engine to its
    /// default working folder, so that a kernel's `cwd` (which a kernel can
    /// swap for a symlink) never decides what it may write.
    #[serde(default)]
    pub workspace: Option<PathBuf>,
    /// Folders whose entries have different owners (a server's principals,
    /// their artifacts, their caches): every entry but the one a
    /// [`PrivateRoot`] keeps is unreadable, those made later too.
    #[serde(default)]
    pub private_roots: Vec<PrivateRoot>,
    /// The folder of the kernels' own files outside the workspace: their
    /// private temp dirs (`tmp/`) and their caches (pip's, uv's, matplotlib's
    /// and `%store`'s), writable, with each tool's variable pointing into it,
    /// so that a kernel never writes a cache the user's own programs trust (a
    /// poisoned wheel in `~/.cache/pip`) nor one another principal reads. A
    /// server gives each principal its own. `None`: caches in
    /// [`default_kernel_files`], temp dirs in the system's temp dir.
    #[serde(default)]
    pub kernel_files: Option<PathBuf>,
    /// Give each kernel a `/dev/shm` of its own (POSIX shared memory and
    /// semaphores), so that kernels of different principals can neither read
    /// nor plant each other's; where the host cannot, `/dev/shm` is closed to
    /// kernels instead. A server sets it; one user's kernels may share theirs.
    #[serde(default)]
    pub private_shm: bool,
    /// Show the workspace to the kernel at this path too, as its home
    /// (`HOME`): bound there in a mount namespace of the kernel's own, and
    /// the path its working folder is given by (an E2B sandbox's
    /// `/home/user`). The host's own folders are never written for it. Where
    /// the host cannot (see [`crate::sandbox::home_view`]), kernels see the
    /// workspace by its real path, after a warning.
    #[serde(default)]
    pub home_view: Option<PathBuf>,
    /// Memory for the whole process tree, in bytes.
    pub memory_limit: Option<u64>,
    /// Processes and threads for the whole process tree.
    pub max_processes: Option<u64>,
}

/// A folder whose entries belong to different owners: a kernel may reach
/// only the entry named `keep` (none when `None`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct PrivateRoot {
    pub path: PathBuf,
    /// The name of the one entry of `path` the kernel may reach.
    pub keep: Option<String>,
}

impl PrivateRoot {
    pub fn new(path: impl Into<PathBuf>, keep: Option<&str>) -> PrivateRoot {
        PrivateRoot { path: path.into(), keep: keep.map(str::to_string) }
    }
}

/// Where kernels keep their caches when the policy names no folder: one
/// folder of cellbox's cache for everything run by this user, apart from the
/// user's own caches.
pub fn default_kernel_files() -> PathBuf {
    crate::paths::cache_root().join("kernels").join("local")
}

impl SandboxPolicy {
    /// Nothing enforced: the kernel has the user's full rights (`--sandbox off`).
    pub fn off() -> SandboxPolicy {
        SandboxPolicy { mode: SandboxMode::Off, ..SandboxPolicy::default() }
    }

    /// True when nothing at all is restricted: the kernel starts as before.
    pub fn is_off(&self) -> bool {
        self.mode == SandboxMode::Off
            && self.network == NetworkMode::On
            && self.memory_limit.is_none()
            && self.max_processes.is_none()
    }

    /// Whether every secret can be put in where it goes: the network goes
    /// through the proxy, and lets the kernels reach each secret's host.
    pub fn check_secrets(&self) -> Result<(), PolicyError> {
        let Some(first) = self.secrets.first() else { return Ok(()) };
        if self.network != NetworkMode::Filtered {
            return Err(PolicyError::SecretWithoutProxy(first.host.clone()));
        }
        for secret in &self.secrets {
            let probe =
                secret.host.strip_prefix("*.").map_or_else(|| secret.host.clone(), |domain| format!("a.{domain}"));
            if let Err(refusal) = self.hosts.check_name(&probe) {
                return Err(PolicyError::SecretHostRefused {
                    name: secret.name.clone(),
                    host: secret.host.clone(),
                    why: refusal.reason,
                });
            }
        }
        Ok(())
    }

    /// Take the mode and hosts of a `--network` value.
    pub fn set_network(&mut self, setting: NetworkSetting) {
        self.network = setting.mode;
        self.hosts = setting.hosts;
    }

    /// The `--network` value this policy stands for (`allow:…` when filtered).
    pub fn network_setting(&self) -> NetworkSetting {
        NetworkSetting { mode: self.network, hosts: self.hosts.clone() }
    }

    /// The folder of the kernels' caches (see [`SandboxPolicy::kernel_files`]).
    pub fn caches(&self) -> PathBuf {
        self.kernel_files.clone().unwrap_or_else(default_kernel_files)
    }

    /// The folder the kernels' private temp dirs are made in.
    pub fn temp_root(&self) -> PathBuf {
        self.kernel_files.as_ref().map_or_else(std::env::temp_dir, |folder| folder.join("tmp"))
    }

    /// The policy the `CELLBOX_*` variables describe (unset ones keep the default).
    pub fn from_env() -> Result<SandboxPolicy, PolicyError> {
        Self::from_lookup(EnvVar::get)
    }

    /// [`from_env`](Self::from_env) over any lookup of a variable's value (tests use a map).
    pub fn from_lookup(get: impl Fn(&EnvVar) -> Option<String>) -> Result<SandboxPolicy, PolicyError> {
        let mut policy = SandboxPolicy::default();
        if let Some(v) = get(&settings::SANDBOX) {
            policy.mode = v.parse().map_err(|e: PolicyError| e.in_variable(&settings::SANDBOX))?;
        }
        if let Some(v) = get(&settings::NETWORK) {
            policy.set_network(v.parse().map_err(|e: PolicyError| e.in_variable(&settings::NETWORK))?);
        }
        policy.network_hosts = get(&settings::NETWORK_HOSTS).filter(|v| !v.is_empty()).map(PathBuf::from);
        policy.network_ca = get(&settings::NETWORK_CA).filter(|v| !v.is_empty()).map(PathBuf::from);
        if let Some(v) = get(&settings::ALLOW_WRITE) {
            policy.allow_write = std::env::split_paths(&v).filter(|p| !p.as_os_str().is_empty()).collect();
        }
        if let Some(v) = get(&settings::DENY_READ) {
            policy.deny_read = std::env::split_paths(&v).filter(|p| !p.as_os_str().is_empty()).collect();
        }
        if let Some(v) = get(&settings::MEMORY_LIMIT) {
            policy.memory_limit = Some(parse_size(&v).map_err(|e| e.in_variable(&settings::MEMORY_LIMIT))?);
        }
        if let Some(v) = get(&settings::MAX_PROCESSES) {
            policy.max_processes = Some(parse_count(&v).map_err(|e| e.in_variable(&settings::MAX_PROCESSES))?);
        }
        Ok(policy)
    }

    /// Relative `allow_write` / `deny_read` paths are taken from `base` and `~`
    /// is expanded, so the policy means the same thing in every kernel.
    pub fn resolved(mut self, base: &Path) -> SandboxPolicy {
        let fix = |p: &PathBuf| absolute(base, p);
        self.allow_write = self.allow_write.iter().map(fix).collect();
        self.deny_read = self.deny_read.iter().map(fix).collect();
        self.workspace = self.workspace.as_ref().map(fix);
        self
    }

    /// One paragraph for a model: what it may write and whether it has network.
    pub fn describe_for_model(&self, workspace: &Path) -> String {
        let mut parts = Vec::new();
        match self.mode {
            SandboxMode::Off => parts.push("Code runs with the user's full file access.".to_string()),
            SandboxMode::WorkspaceWrite => {
                let mut places = vec![workspace.display().to_string()];
                places.extend(self.allow_write.iter().map(|p| p.display().to_string()));
                parts.push(format!(
                    "Code runs in an OS sandbox: it may write only under {} and the temp dir ($TMPDIR); \
                     secret locations such as ~/.ssh and ~/.aws are unreadable.",
                    places.join(", ")
                ));
            }
            SandboxMode::ReadOnly => parts.push(
                "Code runs in a read-only OS sandbox: it may write only to the temp dir ($TMPDIR); \
                 secret locations such as ~/.ssh and ~/.aws are unreadable."
                    .to_string(),
            ),
        }
        parts.push(
            match self.network {
                NetworkMode::On => "Network access is available.",
                NetworkMode::Off => "There is no network access (so `%pip install` cannot download).",
                NetworkMode::Localhost => {
                    "Only the kernel's own loopback network is available (no internet, and not the host's local services)."
                }
                NetworkMode::Filtered => "",
            }
            .to_string(),
        );
        if self.network == NetworkMode::Filtered {
            parts.pop();
            parts.push(format!(
                "Network access goes through a proxy that lets through only the hosts of this policy ({}); \
                 other hosts, literal addresses and the cloud metadata address are refused, and a refusal says \
                 which host to ask for.",
                self.hosts
            ));
        }
        if let Some(limit) = self.memory_limit {
            parts.push(format!("Memory is limited to {}.", format_size(limit)));
        }
        if let Some(limit) = self.max_processes {
            parts.push(format!("At most {limit} processes and threads."));
        }
        parts.join(" ")
    }
}

fn absolute(base: &Path, path: &Path) -> PathBuf {
    let text = path.to_string_lossy();
    if (text == "~" || text.starts_with("~/"))
        && let Some(home) = dirs::home_dir()
    {
        return home.join(text.trim_start_matches('~').trim_start_matches('/'));
    }
    if path.is_absolute() { path.to_path_buf() } else { base.join(path) }
}

/// The locations that hold credentials, relative to the home folder; they
/// are unreadable in every sandbox mode.
pub fn default_secret_paths(home: &Path) -> Vec<PathBuf> {
    [
        ".ssh",
        ".aws",
        ".azure",
        ".config/gcloud",
        ".config/gh",
        ".netrc",
        ".git-credentials",
        ".pypirc",
        ".docker/config.json",
        ".kube/config",
        ".gnupg",
        ".password-store",
        ".local/share/keyrings",
        ".mozilla",
        ".config/google-chrome",
        ".config/chromium",
        ".config/BraveSoftware",
        ".cellbox/credentials",
        ".cellbox/credentials.json",
    ]
    .iter()
    .map(|p| home.join(p))
    .collect()
}

impl FromStr for SandboxMode {
    type Err = PolicyError;
    fn from_str(s: &str) -> Result<Self, PolicyError> {
        match s.trim().to_ascii_lowercase().as_str() {
            "off" | "none" | "0" | "false" | "full-access" => Ok(SandboxMode::Off),
            "workspace-write" | "workspace" | "on" | "1" | "true" => Ok(SandboxMode::WorkspaceWrite),
            "read-only" | "readonly" => Ok(SandboxMode::ReadOnly),
            other => Err(PolicyError::UnknownMode(other.to_string())),
        }
    }
}

impl FromStr for NetworkMode {
    type Err = PolicyError;
    fn from_str(s: &str) -> Result<Self, PolicyError> {
        match s.trim().to_ascii_lowercase().as_str() {
            "on" | "1" | "true" => Ok(NetworkMode::On),
            "off" | "0" | "false" | "none" => Ok(NetworkMode::Off),
            "localhost" | "loopback" => Ok(NetworkMode::Localhost),
            other => Err(PolicyError::UnknownNetwork(other.to_string())),
        }
    }
}

impl fmt::Display for SandboxMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SandboxMode::Off => "off",
            SandboxMode::WorkspaceWrite => "workspace-write",
            SandboxMode::ReadOnly => "read-only",
        })
    }
}

impl fmt::Display for NetworkMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            NetworkMode::On => "on",
            NetworkMode::Off => "off",
            NetworkMode::Localhost => "localhost",
            NetworkMode::Filtered => "filtered",
        })
    }
}

/// `4G`, `4GiB`, `512M`, `1.5G`, `1048576`: binary units, as memory is counted (the settings'
/// one size parser, with the sandbox's errors).
pub fn parse_size(text: &str) -> Result<u64, PolicyError> {
    crate::settings::parse_size(text).map_err(|why| match why {
        crate::settings::SizeError::NotANumber => PolicyError::NotASize(text.to_string()),
        crate::settings::SizeError::UnknownUnit => PolicyError::UnknownUnit(text.to_string()),
        crate::settings::SizeError::TooSmall => PolicyError::TooSmall(text.to_string()),
    })
}

fn parse_count(text: &str) -> Result<u64, PolicyError> {
    match text.trim().parse::<u64>() {
        Ok(n) if n >= 8 => Ok(n),
        _ => Err(PolicyError::NotACount(text.to_string())),
    }
}

/// `4 GiB`, `512 MiB`: how limits are shown to people and models.
pub fn format_size(bytes: u64) -> String {
    const UNITS: [(&str, u64); 4] = [("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)];
    for (name, size) in UNITS {
        if bytes >= size {
            let value = bytes as f64 / size as f64;
            return if bytes.is_multiple_of(size) {
                format!("{} {name}", bytes / size)
            } else {
                format!("{value:.1} {name}")
            };
        }
    }
    format!("{bytes} B")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_in_binary_units() {
        assert_eq!(parse_size("4G").unwrap(), 4 << 30);
        assert_eq!(parse_size("4GiB").unwrap(), 4 << 30);
        assert_eq!(parse_size("512m").unwrap(), 512 << 20);
        assert!(matches!(parse_size("4X"), Err(PolicyError::UnknownUnit(_))));
        assert!(matches!(parse_size("1K"), Err(PolicyError::TooSmall(_))));
        assert!(matches!(parse_size("lots"), Err(PolicyError::NotASize(_))));
        assert_eq!(parse_size("4X").unwrap_err().to_string(), "\"4X\" has an unknown unit; use K, M, G or T");
        assert_eq!(format_size(4 << 30), "4 GiB");
        assert_eq!(format_size(1536 << 20), "1.5 GiB");
    }

    #[test]
    fn env_sets_every_field() {
        let vars = [
            (settings::SANDBOX.name, "workspace-write"),
            (settings::NETWORK.name, "localhost"),
            (settings::ALLOW_WRITE.name, "/a:/b"),
            (settings::MEMORY_LIMIT.name, "1G"),
            (settings::MAX_PROCESSES.name, "64"),
        ];
        let policy =
            SandboxPolicy::from_lookup(|k| vars.iter().find(|(n, _)| *n == k.name).map(|(_, v)| v.to_string()))
                .unwrap();
        assert_eq!(policy.mode, SandboxMode::WorkspaceWrite);
        assert_eq!(policy.network, NetworkMode::Localhost);
        assert_eq!(policy.allow_write, vec![PathBuf::from("/a"), PathBuf::from("/b")]);
        assert_eq!(policy.memory_limit, Some(1 << 30));
        assert_eq!(policy.max_processes, Some(64));
        let error =
            SandboxPolicy::from_lookup(|k| (k.name == settings::SANDBOX.name).then(|| "bogus".into())).unwrap_err();
        assert!(
            matches!(&error, PolicyError::Variable { name, source } if *name == settings::SANDBOX.name
                && matches!(**source, PolicyError::UnknownMode(_))),
            "{error:?}"
        );
        assert_eq!(
            error.to_string(),
            format!(
                "{}: unknown sandbox mode \"bogus\"; use off, workspace-write or read-only",
                settings::SANDBOX.name
            )
        );
    }
}
