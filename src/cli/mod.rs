//! Command-line interface: argument parsing and one module per subcommand.

mod artifact;
mod gateway;
mod mcp;
mod notebook;
mod repl;
mod run;
mod setup;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Run Python and JavaScript code cells in long-lived kernels.
#[derive(Debug, Parser)]
#[command(name = "evalkit", version, about)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run code in a fresh kernel, streaming its output.
    Run(run::RunArgs),
    /// An interactive session on one kernel.
    Repl(repl::ReplArgs),
    /// Serve the eval tool to MCP clients over stdin/stdout.
    Mcp(mcp::McpArgs),
    /// Print the full output an earlier call saved (`artifact://<id>`).
    Artifact(artifact::ArtifactArgs),
    /// Show or stop the shared local Jupyter gateway (`--backend gateway`).
    Gateway {
        #[command(subcommand)]
        what: gateway::GatewayCommand,
    },
    /// Check or prepare what evalkit needs.
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
    /// Python interpreter to use (skips discovery) [env: EVALKIT_PYTHON].
    #[arg(long, value_name = "PATH")]
    pub python: Option<String>,
    /// Node.js to run JavaScript cells with (skips the PATH lookup) [env: EVALKIT_NODE].
    #[arg(long, value_name = "PATH")]
    pub node: Option<String>,
    /// Where Python kernels run: `process` (a runner process each) or `gateway` (a Jupyter gateway:
    /// EVALKIT_GATEWAY_URL if set, else the shared local one) [env: EVALKIT_BACKEND].
    #[arg(long, value_name = "process|gateway")]
    pub backend: Option<String>,
}

impl KernelArgs {
    /// The working directory, made absolute.
    pub fn cwd(&self) -> Result<PathBuf, String> {
        let here = std::env::current_dir().map_err(|e| format!("cannot read the current directory: {e}"))?;
        let cwd = match &self.cwd {
            Some(dir) => here.join(dir),
            None => here,
        };
        evalkit::kernel::validate_cwd(&cwd).map_err(|e| e.to_string())?;
        Ok(cwd)
    }

    /// An engine configuration for these options (cwd checked first).
    pub fn engine_config(&self) -> Result<evalkit::tool::EngineConfig, String> {
        let mut config = evalkit::tool::EngineConfig::new(self.cwd()?);
        config.python = self.explicit_python();
        config.node = self.node.clone();
        config.transport = self.transport()?;
        Ok(config)
    }

    /// `--backend`, else `$EVALKIT_BACKEND`, with `$EVALKIT_GATEWAY_URL` / `$EVALKIT_GATEWAY_TOKEN`.
    pub fn transport(&self) -> Result<evalkit::kernel::Transport, String> {
        use evalkit::gateway::{self, GatewaySetting};
        let backend = self.backend.clone().or_else(|| std::env::var(gateway::BACKEND_VAR).ok());
        let url = std::env::var(gateway::URL_VAR).ok().filter(|url| !url.trim().is_empty());
        let token = std::env::var(gateway::TOKEN_VAR).ok().filter(|token| !token.trim().is_empty());
        Ok(match GatewaySetting::choose(backend.as_deref(), url, token)? {
            Some(setting) => evalkit::kernel::Transport::Gateway(setting),
            None => evalkit::kernel::Transport::Process,
        })
    }

    /// `--python`, else `$EVALKIT_PYTHON`.
    pub fn explicit_python(&self) -> Option<String> {
        self.python.clone().or_else(|| std::env::var("EVALKIT_PYTHON").ok().filter(|v| !v.trim().is_empty()))
    }
}

/// Log to stderr. `EVALKIT_LOG` (or `RUST_LOG`) sets the filter;
/// `EVALKIT_PYTHON_IPC_TRACE=1` adds every protocol frame.
pub fn init_logging() {
    use tracing_subscriber::EnvFilter;
    let mut filter =
        std::env::var("EVALKIT_LOG").or_else(|_| std::env::var("RUST_LOG")).unwrap_or_else(|_| "warn".into());
    if std::env::var(evalkit::kernel::IPC_TRACE_VAR).is_ok_and(|v| v == "1") {
        filter.push_str(",evalkit::ipc=info");
    }
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(EnvFilter::try_new(&filter).unwrap_or_else(|_| EnvFilter::new("warn")))
        .try_init();
}

pub async fn dispatch(cli: Cli) -> ExitCode {
    match cli.command {
        Command::Run(args) => run::run(args).await,
        Command::Setup { what } => setup::setup(what).await,
        Command::Gateway { what } => gateway::gateway(what).await,
        Command::Artifact(args) => artifact::artifact(args),
        Command::Mcp(args) => mcp::mcp(args).await,
        Command::Repl(args) => repl::repl(args).await,
    }
}
