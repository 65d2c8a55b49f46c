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
    if settings::PYTHON_IPC_TRACE.is_on() {
        filter.push_str(",cellbox::ipc=info");
    }
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(EnvFilter::try_new(&filter).unwrap_or_else(|_| EnvFilter::new("warn")))
        // A failed write would be reported with eprintln!, which panics when stderr is a pipe
        // nobody reads: a log line would then end whatever logged it (a shutdown, a hibernation).
        .log_internal_errors(false)
        .try_init();
}

/// Run the command. `env` is the environment, read and checked once before the command line
/// was parsed; the commands hand its values down rather than read variables themselves.
pub async fn dispatch(cli: Cli, env: &settings::Environment) -> ExitCode {
    match cli.command {
        Command::Run(args) => run::run(*args, env).await,
        Command::Setup { what } => setup::setup(what, env).await,
        Command::Gateway { what } => gateway::gateway(what).await,
        Command::Artifact(args) => artifact::artifact(args),
        Command::Doctor(args) => doctor::doctor(args, env).await,
        Command::Install(args) => install::install(args),
        Command::Completions(args) => docs::completions(args),
        Command::Man => docs::man(),
        Command::Docs { what } => docs::docs(what),
        Command::Uninstall(args) => install::uninstall(args),
        Command::Mcp(args) => mcp::mcp(*args, env).await,
        Command::Serve(args) => serve::serve(*args, env).await,
        Command::SdkServer(args) => sdk_server::sdk_server(args, env).await,
        Command::Repl(args) => repl::repl(*args, env).await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every flag bound to a variable in the command tree.
    fn bound(command: &clap::Command, out: &mut Vec<(String, String)>) {
        for arg in command.get_arguments() {
            if let (Some(long), Some(env)) = (arg.get_long(), arg.get_env()) {
                out.push((format!("--{long}"), env.to_string_lossy().into_owned()));
            }
        }
        command.get_subcommands().for_each(|sub| bound(sub, out));
    }

    /// The registry's `flag` of a variable and the flags bound to it (clap's `env`) are the same
    /// links: each declared flag is bound to its variable wherever it appears, and no flag is
    /// bound to a variable that does not declare it. The two path lists add to their flags
    /// instead (their help says so).
    #[test]
    fn the_declared_flags_are_the_bound_flags() {
        use clap::CommandFactory;
        let mut links = Vec::new();
        bound(&Cli::command(), &mut links);
        for (flag, name) in &links {
            let var = settings::env_var(name).unwrap_or_else(|| panic!("{flag} is bound to undeclared {name}"));
            assert_eq!(var.flag, Some(flag.as_str()), "{name} should declare flag {flag}");
        }
        let additive = [settings::ALLOW_WRITE.name, settings::DENY_READ.name];
        for var in settings::ENV_VARS.iter().filter(|var| !additive.contains(&var.name)) {
            if let Some(flag) = var.flag {
                assert!(links.iter().any(|(f, n)| f == flag && n == var.name), "{flag} is not bound to {}", var.name);
            }
        }
    }
}
