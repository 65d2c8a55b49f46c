//! `cellbox gateway status|stop`: the shared local Jupyter gateway; and
//! `cellbox setup gateway [--check]`: what it needs installed.

use std::process::ExitCode;

use cellbox_kernels::gateway::local;
use clap::Subcommand;

use super::KernelArgs;

#[derive(Debug, Subcommand)]
pub enum GatewayCommand {
    /// Whether the shared gateway runs and answers, its URL, pid, kernels and interpreter.
    Status,
    /// Stop the shared gateway and the kernels it runs (the next gateway call starts a new one).
    Stop,
}

pub async fn gateway(command: GatewayCommand) -> ExitCode {
    match command {
        GatewayCommand::Status => {
            println!("{}", local::status().await);
            ExitCode::SUCCESS
        }
        GatewayCommand::Stop => match local::stop().await {
            Ok(true) => {
                println!("stopped the shared gateway");
                ExitCode::SUCCESS
            }
            Ok(false) => {
                println!("no shared gateway is recorded in {}", local::dir().display());
                ExitCode::SUCCESS
            }
            Err(message) => {
                eprintln!("cellbox: {message}");
                ExitCode::from(1)
            }
        },
    }
}

/// Check, or install, jupyter_kernel_gateway and ipykernel for the resolved interpreter.
pub async fn setup_gateway(check: bool, kernel: KernelArgs) -> ExitCode {
    let found = match super::interpreter::resolve_or_create(&kernel, check).await {
        Ok(found) => found,
        Err(code) => return code,
    };
    let python = match found {
        Ok(python) => python.executable,
        Err(error) => {
            eprintln!("cellbox: {error}");
            return ExitCode::from(1);
        }
    };
    match local::check_modules(&python).await {
        Ok(version) => {
            println!("jupyter_kernel_gateway {version} and ipykernel are installed in {}", python.display());
            return ExitCode::SUCCESS;
        }
        Err(message) if check => {
            eprintln!("cellbox: {message}");
            return ExitCode::from(1);
        }
        Err(_) => {}
    }
    eprintln!("cellbox: installing jupyter_kernel_gateway and ipykernel into {}", python.display());
    let packages = ["jupyter_kernel_gateway", "ipykernel"];
    let pip = tokio::process::Command::new(&python)
        .args(["-m", "pip", "install"])
        .args(packages)
        .stdin(std::process::Stdio::null())
        .status()
        .await;
    if !pip.is_ok_and(|status| status.success()) {
        // A venv made by uv has no pip: let uv install into it.
        let uv = tokio::process::Command::new("uv")
            .args(["pip", "install", "--python"])
            .arg(&python)
            .args(packages)
            .stdin(std::process::Stdio::null())
            .status()
            .await;
        if !uv.is_ok_and(|status| status.success()) {
            eprintln!(
                "cellbox: could not install them with pip or uv; run `{}` with {}",
                local::INSTALL_HINT,
                python.display()
            );
            return ExitCode::from(1);
        }
    }
    match local::check_modules(&python).await {
        Ok(version) => {
            println!("jupyter_kernel_gateway {version} and ipykernel are installed in {}", python.display());
            ExitCode::SUCCESS
        }
        Err(message) => {
            eprintln!("cellbox: {message}");
            ExitCode::from(1)
        }
    }
}
