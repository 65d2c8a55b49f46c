//! The macOS backend: the kernel starts through `sandbox-exec` with a
//! Seatbelt profile ([`super::seatbelt`]) made from the same file access and
//! network mode as on Linux. Everything the kernel starts inherits it.
//! A network filtered by name starts the kernel's proxies on the host's
//! loopback first: the profile lets the kernel reach their two ports only.
//! Memory and process limits have no backend here yet, and refuse to start.

use std::collections::BTreeMap;
use std::path::Path;

use super::seatbelt::{self, SANDBOX_EXEC};
use super::{NetworkMode, Prepared, SandboxError, SandboxMode, SandboxPolicy, Unenforceable, fail, network};
use crate::settings;

/// Whether this Mac has the program the profile is applied with.
pub fn check_sandbox_exec() -> Result<(), Unenforceable> {
    if Path::new(SANDBOX_EXEC).exists() { Ok(()) } else { Err(Unenforceable::NoSandboxExec { path: SANDBOX_EXEC }) }
}

/// Get everything ready, in the host, to start one kernel under `policy` in
/// `cwd` with environment `env`: the private temp dir and the command prefix
/// that applies the profile.
pub fn prepare(policy: &SandboxPolicy, cwd: &Path, env: &BTreeMap<String, String>) -> Result<Prepared, SandboxError> {
    let mut prepared = Prepared::default();
    if policy.is_off() {
        return Ok(prepared);
    }
    if policy.memory_limit.is_some() || policy.max_processes.is_some() {
        return Err(fail(Unenforceable::UnsupportedOs { os: std::env::consts::OS }));
    }
    let mode = super::enforceable_mode(policy.mode);
    let access = match mode {
        SandboxMode::Off => None,
        _ => Some(super::prepare_files(&mut prepared, policy, mode, cwd, env)?),
    };
    if access.is_some() || policy.network != NetworkMode::On {
        // An enforceable filesystem mode already found the program; the network alone has not.
        if access.is_none() {
            check_sandbox_exec().map_err(fail)?;
        }
        let proxies = match policy.network {
            NetworkMode::Filtered => Some(start_proxies(&mut prepared, policy)?),
            _ => None,
        };
        let profile = seatbelt::profile(mode, access.as_ref(), policy.network, proxies).map_err(fail)?;
        prepared.wrapper = vec![SANDBOX_EXEC.into(), "-p".into(), profile.into()];
    }
    prepared.env.push((settings::SANDBOX.name.into(), mode.to_string()));
    prepared.env.push((settings::NETWORK.name.into(), policy.network_setting().to_string()));
    Ok(prepared)
}

/// The kernel's proxies on the host's loopback, kept by its guard, and the
/// variables that send its tools there: the ports of the HTTP and SOCKS5 proxies.
fn start_proxies(prepared: &mut Prepared, policy: &SandboxPolicy) -> Result<[u16; 2], SandboxError> {
    if !policy.secrets.is_empty() {
        return Err(fail(Unenforceable::SecretsNeedPrivateProxy));
    }
    let setup = network::setup(policy)?;
    let (proxy, ports) = network::Proxy::on_loopback(setup)
        .map_err(|e| fail(Unenforceable::Proxy { source: std::sync::Arc::new(e) }))?;
    prepared.env.extend(network::proxy_env(ports));
    prepared.guard.proxy = Some(std::sync::Arc::new(proxy));
    Ok(ports)
}
