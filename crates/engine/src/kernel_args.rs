//! The options every front end that starts a kernel takes (`--cwd`, `--python`,
//! `--sandbox`, `--preload`, …) and the engine configuration they make. The CLI's
//! commands flatten them into their own flags, and the Python SDK's in-process
//! engine parses the same flags its `cellbox sdk-server` child would get, so a
//! sandbox is configured one way whichever engine runs it.

use std::path::PathBuf;

use crate::sandbox::{NetworkMode, SandboxMode, SandboxPolicy, parse_size};
use crate::settings;

/// Options shared by every command that starts a kernel.
#[derive(Debug, Clone, clap::Args)]
pub struct KernelArgs {
    /// Working directory of the kernel [default: the current directory].
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// Python interpreter to use (skips discovery).
    #[arg(long, value_name = "PATH")]
    pub python: Option<String>,
    /// Node.js to run JavaScript cells with (skips the PATH lookup).
    #[arg(long, value_name = "PATH")]
    pub node: Option<String>,
    /// What kernels may read and write: workspace-write, read-only, or off (the user's full rights)
    /// [default: workspace-write].
    #[arg(long, value_name = "MODE")]
    pub sandbox: Option<SandboxMode>,
    /// Network for kernels: on, off or localhost (their own loopback only) [default: on].
    #[arg(long, value_name = "MODE")]
    pub network: Option<NetworkMode>,
    /// Another folder kernels may write in workspace-write mode (repeatable; the variable takes a `:`-separated list).
    #[arg(long = "allow-write", value_name = "PATH")]
    pub allow_write: Vec<PathBuf>,
    /// Another path kernels may not read, besides ~/.ssh, ~/.aws, … (repeatable).
    #[arg(long = "deny-read", value_name = "PATH")]
    pub deny_read: Vec<PathBuf>,
    /// Memory for each kernel and everything it starts, e.g. 4G.
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub memory_limit: Option<u64>,
    /// Processes and threads for each kernel and everything it starts.
    #[arg(long, value_name = "N")]
    pub max_processes: Option<u64>,
    /// Where Python kernels run: `process` (a runner process each) or `gateway` (a Jupyter gateway:
    /// CELLBOX_GATEWAY_URL if set, else the shared local one).
    #[arg(long, value_name = "process|gateway")]
    pub backend: Option<String>,
    /// Modules Python kernels start with already imported, e.g. numpy,pandas: imported once in a fork
    /// server, each kernel forked from it (Linux; process backend).
    #[arg(long, value_name = "MODULE,…")]
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

    /// An engine configuration for these options (cwd checked first).
    pub fn engine_config(&self) -> Result<crate::tool::EngineConfig, String> {
        crate::tool::CheckMode::validate_env().map_err(|e| e.to_string())?;
        let mut config = crate::tool::EngineConfig::new(self.cwd()?);
        config.python = self.explicit_python();
        config.node = self.node.clone();
        config.sandbox = self.sandbox_policy()?;
        config.backend = self.backend()?;
        if let Some(list) = &self.preload {
            config.preload = crate::tool::parse_preload(list);
        }
        Ok(config)
    }

    /// [`Self::engine_config`] with the CLI's host bridge (`CELLBOX_LLM_*`, `CELLBOX_AGENT_COMMAND`).
    pub fn engine_config_with_bridge(&self) -> Result<crate::tool::EngineConfig, String> {
        let mut config = self.engine_config()?;
        let limits = crate::bridge::BridgeLimits::from_env();
        let bridge = crate::bridge::cli::CliBridge::from_env(limits.depth).map_err(|e| e.to_string())?;
        config.bridge = crate::bridge::BridgeConfig {
            bridge: bridge.map(|b| std::sync::Arc::new(b) as std::sync::Arc<dyn crate::bridge::Bridge>),
            limits,
        };
        Ok(config)
    }

    /// The sandbox policy: the `CELLBOX_*` variables, overridden by the flags;
    /// relative paths are taken from the cwd.
    pub fn sandbox_policy(&self) -> Result<SandboxPolicy, String> {
        let mut policy = SandboxPolicy::from_env().map_err(|e| e.to_string())?;
        if let Some(mode) = self.sandbox {
            policy.mode = mode;
        }
        if let Some(network) = self.network {
            policy.network = network;
        }
        policy.allow_write.extend(self.allow_write.iter().cloned());
        policy.deny_read.extend(self.deny_read.iter().cloned());
        if self.memory_limit.is_some() {
            policy.memory_limit = self.memory_limit;
        }
        if let Some(n) = self.max_processes {
            if n < 8 {
                return Err(format!("--max-processes {n} is too low for a kernel; give at least 8"));
            }
            policy.max_processes = Some(n);
        }
        Ok(policy.resolved(&self.cwd()?))
    }

    /// `--backend`, else `$CELLBOX_BACKEND`, with `$CELLBOX_GATEWAY_URL` / `$CELLBOX_GATEWAY_TOKEN`.
    pub fn backend(&self) -> Result<crate::session::Backend, String> {
        use crate::gateway::GatewaySetting;
        let backend = self.backend.clone().or_else(|| settings::BACKEND.get());
        let (url, token) = (settings::GATEWAY_URL.get(), settings::GATEWAY_TOKEN.get());
        Ok(match GatewaySetting::choose(backend.as_deref(), url, token).map_err(|e| e.to_string())? {
            Some(setting) => crate::session::Backend::Gateway(setting),
            None => crate::session::Backend::Process,
        })
    }

    /// `--python`, else `$CELLBOX_PYTHON`.
    pub fn explicit_python(&self) -> Option<String> {
        self.python.clone().or_else(|| settings::PYTHON.get())
    }
}
