//! The options every front end that starts a kernel takes (`--cwd`, `--python`,
//! `--sandbox`, `--preload`, …) and the engine configuration they make. The CLI's
//! commands flatten them into their own flags, and the Python SDK's in-process
//! engine parses the same flags its `cellbox sdk-server` child would get, so a
//! sandbox is configured one way whichever engine runs it.
//!
//! A flag that a `CELLBOX_*` variable also sets is bound to it (clap's `env`, the link declared
//! by the variable's `flag` in `cellbox_settings`): the flag wins over the variable, the
//! variable over the default. The variables without a flag here come in as an [`Environment`],
//! read once by the front end.

use std::path::PathBuf;

use crate::sandbox::{NetworkSetting, SandboxMode, SandboxPolicy, parse_size};
use crate::settings::{self, Environment};

/// Options shared by every command that starts a kernel.
#[derive(Debug, Clone, clap::Args)]
pub struct KernelArgs {
    /// Working directory of the kernel [default: the current directory].
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// Python interpreter to use (skips discovery).
    #[arg(long, value_name = "PATH", env = settings::PYTHON.name, hide_env_values = true)]
    pub python: Option<String>,
    /// Node.js to run JavaScript cells with (skips the PATH lookup).
    #[arg(long, value_name = "PATH", env = settings::NODE.name, hide_env_values = true)]
    pub node: Option<String>,
    /// What kernels may read and write: workspace-write, read-only, or off (the user's full rights)
    /// [default: workspace-write].
    #[arg(long, value_name = "MODE", env = settings::SANDBOX.name, hide_env_values = true)]
    pub sandbox: Option<SandboxMode>,
    /// Network for kernels: on, off, localhost (their own loopback only), or hosts by name through a
    /// proxy: allow:HOST,… and/or deny:HOST,… (names, *.domain, addresses, ranges; presets pypi, npm,
    /// github, huggingface, conda), e.g. allow:pypi,*.github.com [default: on].
    #[arg(long, value_name = "MODE", env = settings::NETWORK.name, hide_env_values = true)]
    pub network: Option<NetworkSetting>,
    /// A credential kernels use without seeing it: NAME=VALUE@HOST, NAME=file:PATH@HOST, or NAME@HOST
    /// (cellbox's own variable NAME). Kernels see NAME=cellbox-secret:NAME; the network proxy puts the
    /// value in its place in requests to HOST only, reading HTTPS with a CA of the kernel's own
    /// (repeatable; needs --network allow:HOST).
    #[arg(long = "secret", value_name = "NAME=VALUE@HOST")]
    pub secrets: Vec<cellbox_kernels::sandbox::network::Secret>,
    /// Another folder kernels may write in workspace-write mode (repeatable; CELLBOX_ALLOW_WRITE's
    /// `:`-separated list is added).
    #[arg(long = "allow-write", value_name = "PATH")]
    pub allow_write: Vec<PathBuf>,
    /// Another path kernels may not read, besides ~/.ssh, ~/.aws, … (repeatable; CELLBOX_DENY_READ's
    /// `:`-separated list is added).
    #[arg(long = "deny-read", value_name = "PATH")]
    pub deny_read: Vec<PathBuf>,
    /// Memory for each kernel and everything it starts, e.g. 4G.
    #[arg(long, value_name = "SIZE", value_parser = parse_size, env = settings::MEMORY_LIMIT.name, hide_env_values = true)]
    pub memory_limit: Option<u64>,
    /// Processes and threads for each kernel and everything it starts.
    #[arg(long, value_name = "N", env = settings::MAX_PROCESSES.name, hide_env_values = true)]
    pub max_processes: Option<u64>,
    /// Where Python kernels run: `process` (a runner process each) or `gateway` (a Jupyter gateway:
    /// CELLBOX_GATEWAY_URL if set, else the shared local one).
    #[arg(long, value_name = "process|gateway", env = settings::BACKEND.name, hide_env_values = true)]
    pub backend: Option<String>,
    /// Modules Python kernels start with already imported, e.g. numpy,pandas: imported once in a fork
    /// server, each kernel forked from it (Linux; process backend).
    #[arg(long, value_name = "MODULE,…", env = settings::PRELOAD.name, hide_env_values = true)]
    pub preload: Option<String>,
}

impl KernelArgs {
    /// The working directory, made absolute.
    pub fn cwd(&self) -> Result<PathBuf, String> {
        let here = std::env::current_dir().map_err(|e| format!("cannot read the current directory: {e}"))?;
        let cwd = match &self.cwd {
            Some(dir) => here.join(dir),
            None => here,
        };
        crate::kernel::validate_cwd(&cwd).map_err(|e| e.to_string())?;
        Ok(cwd)
    }

    /// An engine configuration for these options and `env` (cwd checked first).
    pub fn engine_config(&self, env: &Environment) -> Result<crate::tool::EngineConfig, String> {
        let mut config = crate::tool::EngineConfig::from_environment(self.cwd()?, env)?;
        config.python = self.explicit_python();
        config.node = self.node.clone().filter(|node| !node.trim().is_empty());
        config.sandbox = self.sandbox_policy(env)?;
        config.backend = self.backend(env)?;
        if let Some(list) = &self.preload {
            config.preload = crate::tool::parse_preload(list);
        }
        Ok(config)
    }

    /// [`Self::engine_config`] with the CLI's host bridge (`CELLBOX_LLM_*`, `CELLBOX_AGENT_COMMAND`).
    pub fn engine_config_with_bridge(&self, env: &Environment) -> Result<crate::tool::EngineConfig, String> {
        let mut config = self.engine_config(env)?;
        let bridge = crate::bridge::cli::CliBridge::from_environment(env, config.bridge.limits.depth)
            .map_err(|e| e.to_string())?;
        config.bridge.bridge = bridge.map(|b| std::sync::Arc::new(b) as std::sync::Arc<dyn crate::bridge::Bridge>);
        Ok(config)
    }

    /// The sandbox policy: the flags (or the variables bound to them), with the folders of
    /// `CELLBOX_ALLOW_WRITE` and `CELLBOX_DENY_READ` added; relative paths are taken from the cwd.
    pub fn sandbox_policy(&self, env: &Environment) -> Result<SandboxPolicy, String> {
        let listed = |var: &settings::EnvVar| {
            [
                settings::ALLOW_WRITE.name,
                settings::DENY_READ.name,
                settings::NETWORK_HOSTS.name,
                settings::NETWORK_CA.name,
            ]
            .contains(&var.name)
        };
        let mut policy = SandboxPolicy::from_lookup(|var| env.get(var).filter(|_| listed(var)).map(str::to_string))
            .map_err(|e| e.to_string())?;
        if let Some(mode) = self.sandbox {
            policy.mode = mode;
        }
        if let Some(network) = &self.network {
            policy.set_network(network.clone());
        }
        policy.allow_write.extend(self.allow_write.iter().cloned());
        policy.deny_read.extend(self.deny_read.iter().cloned());
        policy.secrets.extend(self.secrets.iter().cloned());
        policy.check_secrets().map_err(|e| e.to_string())?;
        policy.memory_limit = self.memory_limit;
        if let Some(n) = self.max_processes {
            if n < 8 {
                return Err(format!(
                    "--max-processes {n} (or {}) is too low for a kernel; give at least 8",
                    settings::MAX_PROCESSES.name
                ));
            }
            policy.max_processes = Some(n);
        }
        Ok(policy.resolved(&self.cwd()?))
    }

    /// `--backend` (or `$CELLBOX_BACKEND`), with `$CELLBOX_GATEWAY_URL` / `$CELLBOX_GATEWAY_TOKEN`.
    pub fn backend(&self, env: &Environment) -> Result<crate::session::Backend, String> {
        use crate::gateway::GatewaySetting;
        let owned = |var| env.get(var).map(str::to_string);
        let (url, token) = (owned(&settings::GATEWAY_URL), owned(&settings::GATEWAY_TOKEN));
        Ok(match GatewaySetting::choose(self.backend.as_deref(), url, token).map_err(|e| e.to_string())? {
            Some(setting) => crate::session::Backend::Gateway(setting),
            None => crate::session::Backend::Process,
        })
    }

    /// `--python` (or `$CELLBOX_PYTHON`).
    pub fn explicit_python(&self) -> Option<String> {
        self.python.clone().filter(|python| !python.trim().is_empty())
    }
}

/// `arg` without its variable when that variable is set but blank: clap would take the empty text
/// as the flag's value, where every setting reads a blank variable as not set. For
/// `Command::mut_args` in a process that cannot take the variable out of its environment.
pub fn without_blank_env(arg: clap::Arg) -> clap::Arg {
    let blank = arg.get_env().and_then(std::env::var_os).is_some_and(|value| value.to_string_lossy().trim().is_empty());
    if blank { arg.env(None::<&str>) } else { arg }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, clap::Parser)]
    #[command(no_binary_name = true)]
    struct Flags {
        #[command(flatten)]
        kernel: KernelArgs,
    }

    #[test]
    fn a_blank_variable_is_no_value_for_its_flag() {
        let parse = |command: clap::Command| {
            command
                .try_get_matches_from(Vec::<String>::new())
                .map(|m| <Flags as clap::FromArgMatches>::from_arg_matches(&m).unwrap().kernel.sandbox)
        };
        // A made-up variable, so the test changes nothing another test reads.
        let name = "KERNEL_ARGS_TEST_BLANK_FLAG_VARIABLE";
        let with_env = |arg: clap::Arg| if arg.get_id() == "sandbox" { arg.env(name) } else { arg.env(None::<&str>) };
        let command = || <Flags as clap::CommandFactory>::command().mut_args(with_env);
        // SAFETY: the name is this test's own; nothing else reads or writes it.
        unsafe { std::env::set_var(name, "  ") };
        assert!(parse(command()).is_err(), "clap alone takes a blank value as the flag's value");
        assert_eq!(parse(command().mut_args(without_blank_env)).unwrap(), None);
        // SAFETY: as above.
        unsafe { std::env::set_var(name, "off") };
        assert!(parse(command().mut_args(without_blank_env)).unwrap().is_some());
        // SAFETY: as above.
        unsafe { std::env::remove_var(name) };
    }
}
