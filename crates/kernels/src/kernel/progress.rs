//! What a kernel start is busy with, for the people waiting on it.
//!
//! A runner process is ready in a fraction of a second, but a kernel on a
//! Jupyter gateway may take minutes (Enterprise Gateway schedules a pod or a
//! YARN container first). A start reports each [`StartStage`] it enters to a
//! [`StartObserver`], so the layers above can show what is going on instead
//! of a silent wait.

/// A step of a kernel start that can take long enough to be worth showing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartStage {
    /// Finding the shared local gateway, or starting it when none runs.
    Gateway,
    /// `POST /api/kernels`: the gateway starts the kernel.
    Kernel,
    /// Connecting to the kernel's channels websocket.
    Connect,
    /// Running the setup code, the prelude and the extension modules.
    Setup,
}

impl StartStage {
    /// The stage in a few words, as shown while waiting ("starting kernel on gateway").
    pub fn describe(self) -> &'static str {
        match self {
            StartStage::Gateway => "finding the shared gateway",
            StartStage::Kernel => "starting kernel on gateway",
            StartStage::Connect => "connecting to the kernel on gateway",
            StartStage::Setup => "setting up the kernel on gateway",
        }
    }
}

impl std::fmt::Display for StartStage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.describe())
    }
}

/// Told each stage as a start enters it (and nothing for starts too quick to report).
pub type StartObserver<'a> = &'a (dyn Fn(StartStage) + Send + Sync);

/// An observer for starts nobody watches (warm spares, benchmarks).
pub fn unobserved(_: StartStage) {}
