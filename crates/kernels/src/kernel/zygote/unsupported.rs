//! The preloading fork server on Windows: there is no `fork()`, so every
//! kernel is spawned and imports its preload modules itself. The same calls
//! as on Unix, answering "not here".

use std::path::Path;
use std::sync::Arc;

use tokio::sync::watch;

use super::KernelOptions;
use super::channel::ChildEnds;
use super::process::ExitInfo;
use crate::sandbox::SandboxGuard;

/// Never made on Windows; the type keeps the kernel's fields the same.
#[derive(Debug)]
pub struct Zygote {
    pub pid: u32,
}

/// Never made on Windows.
pub struct ForkedKernel {
    pub pid: u32,
    pub exit: watch::Receiver<Option<ExitInfo>>,
    pub zygote: Arc<Zygote>,
    pub guard: SandboxGuard,
}

/// What `cellbox setup python --check` says about preloading on this OS.
pub fn platform_note() -> &'static str {
    "--preload is not supported on Windows yet (no fork()): every kernel is spawned and imports the preload \
     modules itself"
}

/// Always `None`: the caller spawns. Says so once when preloading was asked for.
pub async fn fork(
    options: &KernelOptions,
    _runner: &Path,
    _argv: &[String],
    _ends: &ChildEnds,
    _stdin: &std::io::PipeReader,
    _control: Option<&crate::kernel::control::ControlEnd>,
    _started_page: Option<&std::fs::File>,
) -> Option<ForkedKernel> {
    if !options.preload.is_empty() {
        crate::notice::warn_once(&format!("not preloading {}: {}", options.preload.join(","), platform_note()));
    }
    None
}

/// Nothing fails where nothing is tried.
pub fn problems() -> Vec<String> {
    Vec::new()
}

/// Nothing to let go of.
pub fn release_all() {}

/// No fork servers run here.
pub fn pids() -> Vec<u32> {
    Vec::new()
}
