//! Command-line interface: argument parsing and one module per subcommand.

mod artifact;
mod docs;
mod doctor;
mod gateway;
mod install;
mod interpreter;
mod mcp;
mod notebook;
mod repl;
mod repl_branches;
mod run;
mod run_args;
mod sdk_server;
mod serve;
mod setup;
mod signals;

use std::path::PathBuf;
use std::process::ExitCode;

use cellbox::sandbox::{NetworkMode, SandboxMode, SandboxPolicy, parse_size};
use cellbox::settings;
use clap::{Parser, Subcommand};

/// `--version`: the crate version and the git revision it was built from.
pub(crate) const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (", env!("CELLBOX_GIT_REVISION"), ")");

/// Run Python and JavaScript code cells in long-lived kernels.
#[derive(Debug, Parser)]
#[command(name = "cellbox", version = VERSION, about)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

impl Cli {
    /// The parsed command line; `--help` shows, beside each flag a variable
    /// also sets, that variable (`[env: CELLBOX_PYTHON]`), from [`settings::ENV_VARS`].
    pub fn parse_with_env_help() -> Cli {
        use clap::{CommandFactory, FromArgMatches};
        let matches = with_env_help(Cli::command()).get_matches();
        Cli::from_arg_matches(&matches).unwrap_or_else(|error| error.exit())
    }
}

/// `command` and its subcommands, each flag's help followed by the variable that sets the same thing.
fn with_env_help(command: clap::Command) -> clap::Command {
    let command = command.mut_subcommands(with_env_help);
    let flags: Vec<(String, &settings::EnvVar)> = command
        .get_arguments()
        .filter_map(|arg| {
            let long = format!("--{}", arg.get_long()?);
            settings::ENV_VARS
                .iter()
                .find(|var| var.flag() == Some(long.as_str()))
                .map(|var| (arg.get_id().to_string(), var))
        })
        .collect();
    flags.into_iter().fold(command, |command, (id, var)| {
        command.mut_arg(id, |arg| {
            let help = arg.get_help().map(ToString::to_string).unwrap_or_default();
            arg.help(format!("{help} [env: {}]", var.name))
        })
    })
}

/// The large argument sets are boxed: they differ in size by platform, and
/// the enum is as large as its largest variant.
#[derive(Debug, Subcommand)]
enum Command {
    /// Run code in a fresh kernel, streaming its output.
    Run(Box<run_args::RunArgs>),
    /// An interactive session on one kernel.
    Repl(Box<repl::ReplArgs>),
    /// Serve the eval tool to MCP clients over stdin/stdout.
    Mcp(Box<mcp::McpArgs>),
    /// Serve the eval tool to many MCP clients over HTTP, with bearer-token auth (`serve token add NAME`).
    Serve(Box<serve::ServeArgs>),
    /// The engine behind the Python SDK (`from cellbox import Sandbox`), over stdin/stdout.
    #[command(hide = true)]
    SdkServer(sdk_server::SdkServerArgs),
    /// Print the full output an earlier call saved (`artifact://<id>`).
    Artifact(artifact::ArtifactArgs),
    /// Show what cellbox will use on this machine and what is wrong, with fixes.
    Doctor(doctor::DoctorArgs),
    /// Register cellbox's MCP server with agents (Claude Code, Codex, Cursor, VS Code, Gemini CLI, …).
    Install(install::InstallArgs),
    /// Remove cellbox's MCP server from agents' configuration.
    Uninstall(install::UninstallArgs),
    /// Print a shell completion script (bash, zsh or fish).
    Completions(docs::CompletionsArgs),
    /// Print the man page (roff): `cellbox man > cellbox.1`.
    Man,
    /// Print reference tables generated from the code (the docs are made from them).
    Docs {
        #[command(subcommand)]
        what: docs::DocsCommand,
    },
    /// Show or stop the shared local Jupyter gateway (`--backend gateway`).
    Gateway {
        #[command(subcommand)]
        what: gateway::GatewayCommand,
    },
    /// Check or prepare what cellbox needs.
    Setup {
        #[command(subcommand)]
        what: setup::SetupCommand,
    },
}

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
        cellbox::kernel::validate_cwd(&cwd).map_err(|e| e.to_string())?;
        Ok(cwd)
    }

    /// An engine configuration for these options (cwd checked first).
    pub fn engine_config(&self) -> Result<cellbox::tool::EngineConfig, String> {
        cellbox::tool::CheckMode::validate_env().map_err(|e| e.to_string())?;
        let mut config = cellbox::tool::EngineConfig::new(self.cwd()?);
        config.python = self.explicit_python();
        config.node = self.node.clone();
        config.sandbox = self.sandbox_policy()?;
        config.backend = self.backend()?;
        if let Some(list) = &self.preload {
            config.preload = cellbox::tool::parse_preload(list);
        }
        Ok(config)
    }

    /// [`Self::engine_config`] with the CLI's host bridge (`CELLBOX_LLM_*`, `CELLBOX_AGENT_COMMAND`).
    pub fn engine_config_with_bridge(&self) -> Result<cellbox::tool::EngineConfig, String> {
        let mut config = self.engine_config()?;
        let limits = cellbox::bridge::BridgeLimits::from_env();
        let bridge = cellbox::bridge::cli::CliBridge::from_env(limits.depth).map_err(|e| e.to_string())?;
        config.bridge = cellbox::bridge::BridgeConfig {
            bridge: bridge.map(|b| std::sync::Arc::new(b) as std::sync::Arc<dyn cellbox::bridge::Bridge>),
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
    pub fn backend(&self) -> Result<cellbox::session::Backend, String> {
        use cellbox::gateway::GatewaySetting;
        let backend = self.backend.clone().or_else(|| settings::BACKEND.get());
        let (url, token) = (settings::GATEWAY_URL.get(), settings::GATEWAY_TOKEN.get());
        Ok(match GatewaySetting::choose(backend.as_deref(), url, token).map_err(|e| e.to_string())? {
            Some(setting) => cellbox::session::Backend::Gateway(setting),
            None => cellbox::session::Backend::Process,
        })
    }

    /// `--python`, else `$CELLBOX_PYTHON`.
    pub fn explicit_python(&self) -> Option<String> {
        self.python.clone().or_else(|| settings::PYTHON.get())
    }
}

/// Log to stderr. `CELLBOX_LOG` (or `RUST_LOG`) sets the filter;
/// `CELLBOX_PYTHON_IPC_TRACE=1` adds every protocol frame.
pub fn init_logging() {
    use tracing_subscriber::EnvFilter;
    let mut filter = settings::LOG.get().or_else(|| std::env::var("RUST_LOG").ok()).unwrap_or_else(|| "warn".into());
    if settings::PYTHON_IPC_TRACE.get().is_some_and(|v| v == "1") {
        filter.push_str(",cellbox::ipc=info");
    }
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(EnvFilter::try_new(&filter).unwrap_or_else(|_| EnvFilter::new("warn")))
        .try_init();
}

pub async fn dispatch(cli: Cli) -> ExitCode {
    match cli.command {
        Command::Run(args) => run::run(*args).await,
        Command::Setup { what } => setup::setup(what).await,
        Command::Gateway { what } => gateway::gateway(what).await,
        Command::Artifact(args) => artifact::artifact(args),
        Command::Doctor(args) => doctor::doctor(args).await,
        Command::Install(args) => install::install(args),
        Command::Completions(args) => docs::completions(args),
        Command::Man => docs::man(),
        Command::Docs { what } => docs::docs(what),
        Command::Uninstall(args) => install::uninstall(args),
        Command::Mcp(args) => mcp::mcp(*args).await,
        Command::Serve(args) => serve::serve(*args).await,
        Command::SdkServer(args) => sdk_server::sdk_server(args).await,
        Command::Repl(args) => repl::repl(*args).await,
    }
}
