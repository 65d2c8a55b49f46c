//! [`KernelHandle`]: the kernel the engine and the session pool hold,
//! whichever backend carries its cells.
//!
//! A kernel is a runner process on NDJSON pipes ([`Kernel`]), a kernel
//! created on a Jupyter gateway and driven over its websocket
//! ([`crate::gateway::GatewayKernel`]), or an installed Jupyter kernel started
//! from its kernelspec and driven over ZeroMQ ([`JupyterKernel`]). All yield the same
//! [`Execution`]s of [`ExecEvent`]s, so everything above this module
//! (sessions, timeouts, limits, artifacts, rendering) never asks which one it
//! has. The backend is chosen once, by [`Backend`].

use std::sync::Arc;

use crate::gateway::{GatewayKernel, GatewaySetting};
use crate::jupyter::{JupyterKernel, KernelSpec};
use crate::kernel::{
    CheckReport, Completeness, ExecuteOptions, Execution, ExitInfo, Kernel, KernelError, KernelOptions, StartObserver,
};
use crate::runtime::Runtime;

/// How new kernels are reached: a local runner process, or a Jupyter gateway.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Backend {
    /// A runner process per kernel (every runtime).
    #[default]
    Process,
    /// Python kernels on a Jupyter gateway (Node kernels stay processes).
    Gateway(GatewaySetting),
}

impl Backend {
    /// The short name shown to people: `process` or `gateway`.
    pub fn name(&self) -> &'static str {
        match self {
            Backend::Process => "process",
            Backend::Gateway(_) => "gateway",
        }
    }
}

/// One running kernel, whatever carries it. Dropping it stops it.
#[derive(Debug)]
pub enum KernelHandle {
    /// A runner process.
    Process(Kernel),
    /// A kernel on a Jupyter gateway.
    Gateway(GatewayKernel),
    /// An installed Jupyter kernel, started from its kernelspec (boxed: it is
    /// the largest, and the rarest).
    Jupyter(Box<JupyterKernel>),
}

impl KernelHandle {
    /// Start a kernel of `options.runtime` over `backend` (gateways carry
    /// Python only: other runtimes always get a process).
    /// Python kernels then run the extension modules ([`crate::kernel::extensions`]).
    pub async fn start(options: KernelOptions, backend: &Backend) -> Result<KernelHandle, KernelError> {
        KernelHandle::start_observed(options, backend, &crate::kernel::progress::unobserved).await
    }

    /// [`KernelHandle::start`], telling `observer` each slow stage it enters
    /// (gateway kernels report theirs; a runner process starts too fast to).
    pub async fn start_observed(
        options: KernelOptions,
        backend: &Backend,
        observer: StartObserver<'_>,
    ) -> Result<KernelHandle, KernelError> {
        let extensions = match options.runtime {
            Runtime::Python => {
                let (cwd, policy) = (options.cwd.clone(), options.sandbox.clone());
                let home = crate::sandbox::kernel_home(&options.env);
                let found = tokio::task::spawn_blocking(move || crate::kernel::extensions::find(&cwd, &policy, &home));
                let failed = |reason: String| KernelError::StartupFailed {
                    runtime: options.runtime,
                    reason,
                    stderr_tail: String::new(),
                };
                match found.await {
                    Ok(found) => found.map_err(|error| failed(error.to_string()))?,
                    Err(error) => return Err(failed(format!("reading the extension modules failed: {error}"))),
                }
            }
            Runtime::Node | Runtime::Bash | Runtime::Jupyter => Vec::new(),
        };
        let runtime = options.runtime;
        let kernel = match backend {
            // A Jupyter interpreter's executable is its kernelspec's folder.
            _ if runtime == Runtime::Jupyter => {
                let spec = KernelSpec::load(&options.program).map_err(|error| KernelError::StartupFailed {
                    runtime,
                    reason: error.to_string(),
                    stderr_tail: String::new(),
                })?;
                KernelHandle::Jupyter(Box::new(JupyterKernel::start(options, spec).await?))
            }
            Backend::Gateway(setting) if runtime == Runtime::Python => {
                KernelHandle::Gateway(GatewayKernel::start(options, setting, observer).await?)
            }
            _ => KernelHandle::Process(Kernel::start(options).await?),
        };
        if let Some(code) = crate::kernel::extensions::load_code(&extensions)
            && let Err(error) = kernel.run_setup(&code).await
        {
            kernel.shutdown().await;
            return Err(error);
        }
        Ok(kernel)
    }

    /// Run host-side setup code; a Python error fails the start with its message.
    async fn run_setup(&self, code: &str) -> Result<(), KernelError> {
        let options = ExecuteOptions { silent: true, internal: true, ..Default::default() };
        let output = self.execute_with(code, options).await?.collect().await?;
        match output.errors().first() {
            None => Ok(()),
            Some(error) => Err(KernelError::StartupFailed {
                runtime: Runtime::Python,
                reason: format!(
                    "an extension module failed: {}: {}\n{}",
                    error.ename,
                    error.evalue,
                    error.traceback.concat().trim_end()
                ),
                stderr_tail: String::new(),
            }),
        }
    }

    /// Run a user cell.
    pub async fn execute(&self, code: &str) -> Result<Execution, KernelError> {
        self.execute_with(code, ExecuteOptions::default()).await
    }

    /// Send a request; its events arrive on the returned [`Execution`].
    pub async fn execute_with(&self, code: &str, options: ExecuteOptions) -> Result<Execution, KernelError> {
        match self {
            KernelHandle::Process(kernel) => kernel.execute_with(code, options).await,
            KernelHandle::Gateway(kernel) => kernel.execute_with(code, options).await,
            KernelHandle::Jupyter(kernel) => kernel.execute_with(code, options).await,
        }
    }

    /// Ask whether `code` is a whole cell yet.
    pub async fn check_complete(&self, code: &str) -> Result<Completeness, KernelError> {
        match self {
            KernelHandle::Process(kernel) => kernel.check_complete(code).await,
            KernelHandle::Gateway(kernel) => kernel.check_complete(code).await,
            KernelHandle::Jupyter(kernel) => kernel.check_complete(code).await,
        }
    }

    /// Check cells before running them (see [`Kernel::check`]). `None` on a
    /// gateway kernel, which is not asked: its kernel speaks Jupyter, not our runner.
    pub async fn check(
        &self,
        cells: Vec<crate::protocol::CheckCell>,
        lint: bool,
    ) -> Result<Option<CheckReport>, KernelError> {
        match self {
            KernelHandle::Process(kernel) => kernel.check(cells, lint).await.map(Some),
            KernelHandle::Gateway(_) | KernelHandle::Jupyter(_) => Ok(None),
        }
    }

    /// Interrupt the running cell (a process gets SIGINT; a gateway kernel is
    /// interrupted over REST once the cell has started, repeatedly until it ends).
    pub fn interrupt(&self) -> Result<(), KernelError> {
        match self {
            KernelHandle::Process(kernel) => kernel.interrupt(),
            KernelHandle::Gateway(kernel) => kernel.interrupt(),
            KernelHandle::Jupyter(kernel) => kernel.interrupt(),
        }
    }

    /// Whether the kernel can still run cells.
    pub fn is_alive(&self) -> bool {
        match self {
            KernelHandle::Process(kernel) => kernel.is_alive(),
            KernelHandle::Gateway(kernel) => kernel.is_alive(),
            KernelHandle::Jupyter(kernel) => kernel.is_alive(),
        }
    }

    /// Stop the kernel politely, then firmly. Idempotent.
    pub async fn shutdown(&self) -> Option<ExitInfo> {
        match self {
            KernelHandle::Process(kernel) => kernel.shutdown().await,
            KernelHandle::Jupyter(kernel) => kernel.shutdown().await,
            KernelHandle::Gateway(kernel) => {
                kernel.shutdown().await;
                None
            }
        }
    }

    /// Stop a kernel that ignored an interrupt, without waiting for it.
    pub async fn terminate_stuck(&self) -> Option<ExitInfo> {
        match self {
            KernelHandle::Process(kernel) => kernel.terminate_stuck().await,
            KernelHandle::Jupyter(kernel) => kernel.terminate_stuck().await,
            KernelHandle::Gateway(kernel) => {
                kernel.shutdown().await;
                None
            }
        }
    }

    /// The local process id, when the kernel is a local process we started
    /// (for memory limits and diagnostics); `None` on a gateway.
    pub fn pid(&self) -> Option<u32> {
        match self {
            KernelHandle::Process(kernel) => Some(kernel.pid()),
            KernelHandle::Jupyter(kernel) => Some(kernel.pid()),
            KernelHandle::Gateway(_) => None,
        }
    }

    /// What its network proxy decided since last asked: the hosts it refused
    /// (one each), and how many connections it allowed and refused (see
    /// [`crate::kernel::Kernel::network_decisions`]); nothing on a gateway.
    pub fn network_decisions(&self) -> (Vec<crate::sandbox::Refusal>, u64, u64) {
        match self {
            KernelHandle::Process(kernel) => kernel.network_decisions(),
            KernelHandle::Gateway(_) | KernelHandle::Jupyter(_) => (Vec::new(), 0, 0),
        }
    }

    /// How it ended, in words, once it has (for notes about dead kernels).
    pub fn exit_description(&self) -> Option<String> {
        match self {
            KernelHandle::Process(kernel) => kernel.exit_info().map(|exit| exit.to_string()),
            KernelHandle::Gateway(kernel) => kernel.death_reason(),
            KernelHandle::Jupyter(kernel) => kernel.death_reason(),
        }
    }

    /// The working directory the kernel started in.
    pub fn cwd(&self) -> &std::path::Path {
        match self {
            KernelHandle::Process(kernel) => kernel.cwd(),
            KernelHandle::Gateway(kernel) => kernel.cwd(),
            KernelHandle::Jupyter(kernel) => kernel.cwd(),
        }
    }

    /// Who answers the cells' bridge calls from now on (a process kernel's
    /// come on its frames pipe, a gateway kernel's on the stdin channel).
    pub fn set_bridge(&self, hook: crate::kernel::bridge_relay::BridgeHook) {
        match self {
            KernelHandle::Process(kernel) => kernel.set_bridge(hook),
            KernelHandle::Gateway(kernel) => kernel.set_bridge(hook),
            // Jupyter kernels have no host bridge (their languages have no cellbox module for it).
            KernelHandle::Jupyter(_) => {}
        }
    }

    /// A copy-on-write copy of the kernel after the requests already sent
    /// (see [`Kernel::fork`]); gateway kernels run elsewhere and cannot be copied.
    pub async fn fork(&self, wait: std::time::Duration) -> Result<KernelHandle, KernelError> {
        Ok(KernelHandle::Process(self.forkable()?.fork(wait).await?))
    }

    /// A copy for undo, under this kernel's own limits (see [`Kernel::checkpoint`]).
    pub async fn checkpoint(&self, wait: std::time::Duration) -> Result<KernelHandle, KernelError> {
        Ok(KernelHandle::Process(self.forkable()?.checkpoint(wait).await?))
    }

    fn forkable(&self) -> Result<&Kernel, KernelError> {
        match self {
            KernelHandle::Process(kernel) => Ok(kernel),
            KernelHandle::Gateway(_) => Err(KernelError::ForkUnsupported(
                "kernels on a Jupyter gateway cannot be forked: they run on the gateway's machine".into(),
            )),
            KernelHandle::Jupyter(kernel) => Err(KernelError::ForkUnsupported(format!(
                "{} kernels cannot be forked: cellbox can copy only its own Python kernels",
                kernel.spec().display_name
            ))),
        }
    }

    /// A Jupyter kernel's kernelspec (as a notebook names one) and its
    /// `language_info`; `None` for the other kinds.
    pub fn jupyter_metadata(&self) -> Option<(serde_json::Value, serde_json::Value)> {
        let KernelHandle::Jupyter(kernel) = self else { return None };
        let spec = kernel.spec();
        let kernelspec =
            serde_json::json!({"name": spec.name, "display_name": spec.display_name, "language": spec.language});
        Some((kernelspec, kernel.language_info().clone()))
    }

    /// The process kernel, when this is one.
    pub fn as_process(&self) -> Option<&Kernel> {
        match self {
            KernelHandle::Process(kernel) => Some(kernel),
            KernelHandle::Gateway(_) | KernelHandle::Jupyter(_) => None,
        }
    }
}

impl From<Kernel> for KernelHandle {
    fn from(kernel: Kernel) -> Self {
        KernelHandle::Process(kernel)
    }
}

/// A shared handle, as the pool keeps it.
pub type SharedKernel = Arc<KernelHandle>;

impl crate::kernel::lifecycle::Interruptible for KernelHandle {
    fn interrupt(&self) {
        let _ = KernelHandle::interrupt(self);
    }

    async fn terminate_stuck(&self) {
        KernelHandle::terminate_stuck(self).await;
    }
}
