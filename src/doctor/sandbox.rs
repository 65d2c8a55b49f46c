//! The sandbox section of the report: what this OS can enforce (from
//! [`crate::sandbox::support`]), the policy kernels get (the `CELLBOX_*`
//! variables, else the default) and whether it is enforced here.

use serde::Serialize;

use crate::sandbox::{LimitMethod, SandboxMode, SandboxPolicy, filesystem_unenforceable, support};
use crate::settings;

/// One isolation mechanism and whether this machine supports it.
#[derive(Debug, Clone, Serialize)]
pub struct SandboxEntry {
    /// The mechanism, e.g. `landlock`.
    pub name: String,
    /// `supported`, `unsupported` or `unknown`.
    pub status: String,
    pub detail: String,
}

fn entry(name: &str, supported: bool, detail: String) -> SandboxEntry {
    let status = if supported { "supported" } else { "unsupported" };
    SandboxEntry { name: name.into(), status: status.into(), detail }
}

fn limit(method: &LimitMethod) -> (bool, String) {
    match method {
        LimitMethod::CgroupV2 => (true, "enforced with a cgroup v2 per kernel".into()),
        LimitMethod::CgroupV1 => (true, "enforced with a cgroup v1 per kernel".into()),
        LimitMethod::Rlimit => (true, "enforced with an rlimit (weaker: see the Security section)".into()),
        LimitMethod::Unavailable => (false, "cannot be enforced here".into()),
    }
}

/// The mechanisms `--sandbox`, `--network`, `--memory-limit` and
/// `--max-processes` rely on, and the policy in force from the environment.
pub fn sandbox_entries() -> Vec<SandboxEntry> {
    let found = support();
    let (memory_ok, memory) = limit(&found.memory_limit);
    let (processes_ok, processes) = limit(&found.process_limit);
    let mut entries = vec![
        if cfg!(target_os = "macos") {
            entry(
                "filesystem (Seatbelt)",
                found.filesystem,
                if found.filesystem {
                    "a sandbox-exec profile per kernel".into()
                } else {
                    "no /usr/bin/sandbox-exec: workspace-write/read-only kernels start without their file rules".into()
                },
            )
        } else {
            entry(
                "filesystem (Landlock)",
                found.filesystem,
                match found.landlock_abi {
                    0 => "no Landlock: workspace-write/read-only kernels start without their file rules".into(),
                    abi if found.filesystem => format!("Landlock ABI {abi}"),
                    abi => format!("Landlock ABI {abi} is too old (3 or newer is needed)"),
                },
            )
        },
        entry(
            if cfg!(target_os = "macos") { "network (Seatbelt)" } else { "network namespace" },
            found.network,
            if found.network && cfg!(target_os = "macos") {
                "--network off works (localhost and allow:/deny: lists are Linux-only)".into()
            } else if found.network {
                "--network off/localhost and allow:/deny: lists (through a proxy in the kernel's namespace) work".into()
            } else {
                "--network off/localhost and allow:/deny: lists cannot start".into()
            },
        ),
        entry("seccomp", found.seccomp, "keeps a kernel from re-entering the host's network".into()),
        entry("memory limit", memory_ok, memory),
        entry("process limit", processes_ok, processes),
        // Forked kernels inherit the fork server's sandbox, so it belongs here.
        entry("fork server (--preload)", cfg!(target_os = "linux"), preload_detail()),
    ];
    entries.push(SandboxEntry {
        name: "gateway kernels".into(),
        status: "info".into(),
        detail: "kernels on a Jupyter gateway (--backend gateway) run outside cellbox's process tree: the sandbox \
                 does not apply to them; only their environment is filtered"
            .into(),
    });
    entries.push(SandboxEntry { name: "policy in force".into(), status: "info".into(), detail: policy_in_force() });
    entries
}

/// The policy kernels get from the `CELLBOX_*` variables (the default where
/// unset), and whether this host enforces its filesystem part.
fn policy_in_force() -> String {
    let policy = match SandboxPolicy::from_env() {
        Ok(policy) => policy,
        Err(error) => return format!("the CELLBOX_SANDBOX* settings are invalid: {error}"),
    };
    let source = if settings::SANDBOX.get().is_some() { settings::SANDBOX.name } else { "the default" };
    let enforced = if policy.mode == SandboxMode::Off {
        "kernels run with this user's full rights".to_string()
    } else {
        match filesystem_unenforceable(&policy) {
            None => "enforced".to_string(),
            Some(reason) => format!("NOT enforced here ({reason}): kernels start without it"),
        }
    };
    format!("sandbox {} ({source}), network {}: {enforced}", policy.mode, policy.network_setting())
}

/// Whether preloaded kernels are forked here, and what `CELLBOX_PRELOAD` asks for.
fn preload_detail() -> String {
    let modules = crate::settings::PRELOAD.get().map(|list| crate::tool::parse_preload(&list)).unwrap_or_default();
    let asked = if modules.is_empty() {
        format!("{} is not set", crate::settings::PRELOAD.name)
    } else {
        format!("{}={}", crate::settings::PRELOAD.name, modules.join(","))
    };
    format!("{}; {asked}", crate::kernel::zygote::platform_note())
}
