//! The interpreter a command's kernel options resolve to, with the managed environment created
//! when none is found (`cellbox setup python`, `cellbox setup gateway`).

use std::process::ExitCode;

use cellbox_kernels::discovery::{self, DiscoveryInput, sources};

use super::KernelArgs;

/// The interpreter `kernel`'s options resolve to; unless `check`, the managed
/// environment is created first when none is found. `Err` is the exit code of
/// a bad cwd (already reported).
pub(super) async fn resolve_or_create(
    kernel: &KernelArgs,
    check: bool,
) -> Result<Result<discovery::ResolvedPython, discovery::DiscoveryError>, ExitCode> {
    let cwd = kernel.cwd().map_err(|message| {
        eprintln!("cellbox: {message}");
        ExitCode::from(2)
    })?;
    let input = DiscoveryInput::from_env(cwd, kernel.explicit_python());
    let skip = discovery::skip_check_from_env();
    let resolve = {
        let input = input.clone();
        move || discovery::resolve(&input, skip)
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

/// `python3 -m venv ~/.cellbox/python-env` with any python3 on PATH.
pub(super) async fn create_managed_env(input: &DiscoveryInput) -> Result<(), String> {
    let home = input.home.as_ref().ok_or("no home folder to create ~/.cellbox/python-env in")?;
    let root = sources::managed_env_root(home);
    let base = ["python3", "python"]
        .into_iter()
        .find_map(|name| sources::search_path(input.path.as_ref(), name))
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
