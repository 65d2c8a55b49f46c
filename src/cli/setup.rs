//! `cellbox setup python [--check]`: show which interpreter cellbox would use,
//! or create the managed environment. `cellbox setup node [--check]`: show
//! which Node.js runs JavaScript cells, or why none was found.

use std::process::ExitCode;

use cellbox::runtime::{self, DiscoveryInput, discovery};
use clap::Subcommand;

use super::KernelArgs;

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

pub async fn setup(command: SetupCommand) -> ExitCode {
    let (check, kernel) = match command {
        SetupCommand::Python { check, kernel } => (check, kernel),
        SetupCommand::Node { check: _, kernel } => return setup_node(kernel).await,
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
                None => println!("Version:            not checked ({}=1)", runtime::SKIP_CHECK_VAR),
            }
            if check {
                print_sandbox(&kernel);
            }
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("cellbox: {error}");
            ExitCode::from(1)
        }
    }
}

/// The interpreter `kernel`'s options resolve to; unless `check`, the managed
/// environment is created first when none is found. `Err` is the exit code of
/// a bad cwd (already reported).
pub(super) async fn resolve_or_create(
    kernel: &KernelArgs,
    check: bool,
) -> Result<Result<runtime::ResolvedPython, runtime::DiscoveryError>, ExitCode> {
    let cwd = kernel.cwd().map_err(|message| {
        eprintln!("cellbox: {message}");
        ExitCode::from(2)
    })?;
    let input = DiscoveryInput::from_env(cwd, kernel.explicit_python());
    let skip = runtime::skip_check_from_env();
    let resolve = {
        let input = input.clone();
        move || runtime::resolve(&input, skip)
    };
    let mut result = tokio::task::spawn_blocking(resolve.clone()).await.expect("discovery does not panic");
    if result.is_err() && !check {
        if let Err(message) = create_managed_env(&input).await {
            eprintln!("cellbox: {message}");
        }
        result = tokio::task::spawn_blocking(resolve).await.expect("discovery does not panic");
    }
    Ok(result)
}

/// What this OS can enforce, and the policy these options ask for.
fn print_sandbox(kernel: &KernelArgs) {
    let support = cellbox::sandbox::support();
    println!("{}", support.to_text());
    match kernel.sandbox_policy() {
        Ok(policy) => println!(
            "sandbox policy:     {} (network {}{}{})",
            policy.mode,
            policy.network,
            policy.memory_limit.map(|m| format!(", memory {}", cellbox::sandbox::format_size(m))).unwrap_or_default(),
            policy.max_processes.map(|n| format!(", at most {n} processes")).unwrap_or_default()
        ),
        Err(message) => println!("sandbox policy:     invalid: {message}"),
    }
    println!("preload:            {}", cellbox::kernel::zygote::platform_note());
}

/// `python3 -m venv ~/.cellbox/python-env` with any python3 on PATH.
pub(super) async fn create_managed_env(input: &DiscoveryInput) -> Result<(), String> {
    let home = input.home.as_ref().ok_or("no home folder to create ~/.cellbox/python-env in")?;
    let root = discovery::managed_env_root(home);
    let base = ["python3", "python"]
        .into_iter()
        .find_map(|name| discovery::search_path(input.path.as_ref(), name))
        .ok_or("no python3 on PATH to create the managed environment with; install Python 3.8 or newer")?;
    eprintln!("cellbox: creating {} with {}", root.display(), base.display());
    let status = tokio::process::Command::new(&base)
        .args(["-m", "venv"])
        .arg(&root)
        .stdin(std::process::Stdio::null())
        .status()
        .await
        .map_err(|e| format!("could not run {}: {e}", base.display()))?;
    if !status.success() {
        return Err(format!("`{} -m venv {}` failed ({status})", base.display(), root.display()));
    }
    Ok(())
}

async fn setup_node(kernel: KernelArgs) -> ExitCode {
    let cwd = match kernel.cwd() {
        Ok(cwd) => cwd,
        Err(message) => {
            eprintln!("cellbox: {message}");
            return ExitCode::from(2);
        }
    };
    let explicit = kernel.node.clone();
    let found =
        tokio::task::spawn_blocking(move || cellbox::backend::node::resolve_from_env(explicit.as_deref(), &cwd))
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
