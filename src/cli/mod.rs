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

use std::process::ExitCode;

pub use cellbox_engine::kernel_args::KernelArgs;
use cellbox_settings as settings;
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
