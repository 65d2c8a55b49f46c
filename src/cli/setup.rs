//! `cellbox setup python [--check]`: show which interpreter cellbox would use,
//! or create the managed environment. `cellbox setup node [--check]`: show
//! which Node.js runs JavaScript cells, or why none was found.

use std::process::ExitCode;

use clap::Subcommand;

use super::KernelArgs;
use super::interpreter::resolve_or_create;

#[derive(Debug, Subcommand)]
pub enum SetupCommand {
    /// Resolve the Python interpreter; without --check, first create the
    /// managed environment ~/.cellbox/python-env if no interpreter is found.
    Python {
        /// Only report: the interpreter, where it came from, its version, or why none was found.
        #[arg(long)]
        check: bool,
        #[command(flatten)]
        kernel: KernelArgs,
    },
    /// Resolve the Node.js that runs JavaScript cells (18 or newer): --node /
    /// CELLBOX_NODE, else `node` on PATH. Nothing is installed.
    Node {
        /// Only report (the same as without it: cellbox does not install Node).
        #[arg(long)]
        check: bool,
        #[command(flatten)]
        kernel: KernelArgs,
    },
    /// Install what the shared local Jupyter gateway needs (jupyter_kernel_gateway, ipykernel)
    /// into the interpreter cellbox resolves (creating ~/.cellbox/python-env first if none is found).
    Gateway {
        /// Only report whether they are installed.
        #[arg(long)]
        check: bool,
        #[command(flatten)]
        kernel: KernelArgs,
    },
}

pub async fn setup(command: SetupCommand, env: &cellbox_settings::Environment) -> ExitCode {
    let (check, kernel) = match command {
        SetupCommand::Python { check, kernel } => (check, kernel),
        SetupCommand::Node { check: _, kernel } => return setup_node(kernel, env).await,
        SetupCommand::Gateway { check, kernel } => return super::gateway::setup_gateway(check, kernel).await,
    };
    let result = match resolve_or_create(&kernel, check).await {
        Ok(result) => result,
        Err(code) => return code,
    };
    match result {
        Ok(python) => {
            println!("Python interpreter: {}", python.interpreter.display());
            println!("Found through:      {}", python.source);
            println!("Runs as:            {}", python.executable.display());
            match &python.version {
                Some(version) => println!("Version:            {version}"),
                None => println!("Version:            not checked ({}=1)", cellbox_settings::PYTHON_SKIP_CHECK.name),
            }
            if check {
                print_sandbox(&kernel, env);
            }
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("cellbox: {error}");
            ExitCode::from(1)
        }
    }
}

/// What this OS can enforce, the policy these options ask for, and whether it is enforced here.
fn print_sandbox(kernel: &KernelArgs, env: &cellbox_settings::Environment) {
    let support = cellbox_kernels::sandbox::support();
    println!("{}", support.to_text());
    match kernel.sandbox_policy(env) {
        Ok(policy) => {
            println!(
                "sandbox policy:     {} (network {}{}{})",
                policy.mode,
                policy.network_setting(),
                policy
                    .memory_limit
                    .map(|m| format!(", memory {}", cellbox_kernels::sandbox::format_size(m)))
                    .unwrap_or_default(),
                policy.max_processes.map(|n| format!(", at most {n} processes")).unwrap_or_default()
            );
            if let Some(reason) = cellbox_kernels::sandbox::filesystem_unenforceable(&policy) {
                println!("                    not enforced here ({reason}): kernels start without the file rules");
            }
        }
        Err(message) => println!("sandbox policy:     invalid: {message}"),
    }
    println!("preload:            {}", cellbox_kernels::kernel::zygote::platform_note());
}

async fn setup_node(kernel: KernelArgs, env: &cellbox_settings::Environment) -> ExitCode {
    let cwd = match kernel.cwd() {
        Ok(cwd) => cwd,
        Err(message) => {
            eprintln!("cellbox: {message}");
            return ExitCode::from(2);
        }
    };
    let explicit = kernel.node.clone();
    let policy = kernel.sandbox_policy(env).unwrap_or_default();
    let found = tokio::task::spawn_blocking(move || {
        cellbox_kernels::runtime::node::resolve_from_env(explicit.as_deref(), &cwd, &policy)
    })
    .await
    .expect("discovery does not panic");
    match found {
        Ok(node) => {
            println!("Node.js:            {}", node.executable.display());
            println!("Version:            {}", node.version.as_deref().unwrap_or("unknown"));
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("cellbox: {error}");
            ExitCode::from(1)
        }
    }
}
