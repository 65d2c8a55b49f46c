//! [`GatewayKernel`]: one kernel on a Jupyter gateway, driven over its
//! `/api/kernels/{id}/channels` websocket (Jupyter's message format, in the
//! framing of [`super::wire`]).
//!
//! Every message is routed by `parent_header.msg_id` to the request that
//! caused it, and mapped onto the [`ExecEvent`]s a process kernel yields:
//! `stream` → `Stdout`/`Stderr`, `display_data`/`update_display_data` →
//! `Display`, `execute_result` → `Result`, `error` → `Error`, and `Done`
//! once both the `execute_reply` and the `idle` status arrived (they come
//! in either order). A kernel that crashes never replies: the gateway's
//! `restarting`/`dead` status ends every pending request with
//! [`KernelError::Died`]; a websocket that drops is reconnected (with the
//! same `session_id`), and only a kernel the gateway no longer has, or a gateway out
//! of reach, ends them so. An `input_request` gets an empty reply and fails
//! the cell with the stdin error of local kernels, unless it carries
//! host-bridge calls (see [`super::bridge_stdin`]).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Map, Value};
use tokio::sync::{Notify, mpsc};

use super::client::{Endpoint, GatewayClient, GatewayError};
use super::link::{Link, open_channels};
use super::{GatewaySetting, init, local, startup_error};
use crate::jupyter::Outgoing;
use crate::jupyter::bridge_stdin::GatewayBridge;
use crate::jupyter::requests::{Requests, new_session_id};
use crate::jupyter::route::{Routes, Shared};
use crate::kernel::{Completeness, ExecuteOptions, Execution, KernelError, KernelOptions, StartObserver, StartStage};
/// How many times a kernel deletion is tried (300 ms apart).
const DELETE_ATTEMPTS: usize = 15;

/// A kernel on a Jupyter gateway. Dropping it deletes the kernel (best effort).
pub struct GatewayKernel {
    client: GatewayClient,
    kernel_id: String,
    requests: Requests,
    bridge: Arc<GatewayBridge>,
    cwd: PathBuf,
    deleted: AtomicBool,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl std::fmt::Debug for GatewayKernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GatewayKernel")
            .field("gateway", &self.client.endpoint().url)
            .field("kernel_id", &self.kernel_id)
            .field("alive", &self.is_alive())
            .finish()
    }
}

/// The kernelspec to start (`CELLBOX_GATEWAY_KERNEL`, default `python3`).
fn kernel_name() -> String {
    crate::settings::GATEWAY_KERNEL.get().unwrap_or_else(|| "python3".into())
}

/// Why one attempt at starting a kernel failed.
enum StartFailure {
    /// The shared local gateway ran out of file descriptors (EMFILE): it
    /// cannot recover by itself, so it is replaced by a fresh one, once.
    GatewayOutOfFiles,
    Failed(KernelError),
}

impl From<KernelError> for StartFailure {
    fn from(error: KernelError) -> Self {
        StartFailure::Failed(error)
    }
}

/// How often the shared gateway's log is read for EMFILE while a kernel starts.
const OUT_OF_FILES_POLL: Duration = Duration::from_millis(200);

impl GatewayKernel {
    /// Find or start the gateway, create a kernel on it, connect its
    /// channels, and run the setup code and the prelude.
    /// `observer` hears each stage as the start enters it.
    pub async fn start(
        options: KernelOptions,
        setting: &GatewaySetting,
        observer: StartObserver<'_>,
    ) -> Result<GatewayKernel, KernelError> {
        crate::kernel::validate_cwd(&options.cwd)?;
        match Self::start_once(&options, setting, observer).await {
            Ok(kernel) => Ok(kernel),
            Err(StartFailure::Failed(error)) => Err(error),
            Err(StartFailure::GatewayOutOfFiles) => {
                tracing::warn!(target: "cellbox::gateway", "the shared gateway hit EMFILE; restarting it");
                local::restart(&options.program, &options.env).await.map_err(startup_error)?;
                match Self::start_once(&options, setting, observer).await {
                    Ok(kernel) => Ok(kernel),
                    Err(StartFailure::Failed(error)) => Err(error),
                    Err(StartFailure::GatewayOutOfFiles) => Err(startup_error(
                        "the shared Jupyter gateway ran out of file descriptors (EMFILE) again right after a \
                         restart; raise the open-file limit (ulimit -n) of the cellbox process",
                    )),
                }
            }
        }
    }

    /// One attempt; on the shared local gateway it gives up early once the
    /// gateway's log shows EMFILE (a gateway out of descriptors may not even
    /// accept the connection, so the start would only time out).
    async fn start_once(
        options: &KernelOptions,
        setting: &GatewaySetting,
        observer: StartObserver<'_>,
    ) -> Result<GatewayKernel, StartFailure> {
        let limit = super::startup_timeout(options.startup_timeout).map_err(startup_error)?;
        let endpoint = match setting {
            GatewaySetting::External { url, token } => Endpoint::new(url.clone(), token.clone()),
            GatewaySetting::SharedLocal => {
                observer(StartStage::Gateway);
                local::acquire(&options.program, &options.env).await.map_err(startup_error)?
            }
        };
        let client = GatewayClient::new(endpoint).map_err(startup_error)?;
        let local = setting.is_local();
        let attempt = Self::create_and_connect(options, client, local, limit, observer);
        if !local {
            return attempt.await;
        }
        let mark = local::log_mark();
        let watch = async {
            loop {
                tokio::time::sleep(OUT_OF_FILES_POLL).await;
                if local::out_of_files_since(mark) {
                    return;
                }
            }
        };
        tokio::select! {
            started = attempt => started,
            // The attempt is dropped; the kernel it may have made goes with the old gateway.
            _ = watch => Err(StartFailure::GatewayOutOfFiles),
        }
    }

    async fn create_and_connect(
        options: &KernelOptions,
        client: GatewayClient,
        local: bool,
        limit: Duration,
        observer: StartObserver<'_>,
    ) -> Result<GatewayKernel, StartFailure> {
        let env = init::env_for_kernel(&options.env, local);
        let start_env = init::start_env(&env, &init::username());
        observer(StartStage::Kernel);
        let kernel_id = match client.create_kernel(&kernel_name(), &start_env, limit).await {
            Err(GatewayError::TooManyOpenFiles { .. }) if local => return Err(StartFailure::GatewayOutOfFiles),
            Err(error @ GatewayError::Timeout { .. }) => {
                return Err(startup_error(format!(
                    "{error}; if the gateway needs longer to start a kernel, set {} to more seconds",
                    crate::settings::GATEWAY_STARTUP_TIMEOUT.name
                ))
                .into());
            }
            other => other.map_err(startup_error)?,
        };
        let started = tokio::time::timeout(limit, async {
            observer(StartStage::Connect);
            let kernel = GatewayKernel::connect(client.clone(), kernel_id.clone(), options.cwd.clone()).await?;
            observer(StartStage::Setup);
            kernel.run_internal(&init::setup_code(&options.cwd, &env, local)).await?;
            kernel.run_internal(&init::prelude_code()).await?;
            Ok::<_, KernelError>(kernel)
        })
        .await;
        match started {
            Ok(Ok(kernel)) => Ok(kernel),
            failed => {
                let _ = client.delete_kernel(&kernel_id).await;
                match failed {
                    Ok(Err(error)) => Err(error.into()),
                    _ => Err(startup_error(format!(
                        "the kernel on the gateway did not become ready within {}s; if it needs longer (a remote \
                         kernel can take minutes), set {} to more seconds",
                        limit.as_secs(),
                        crate::settings::GATEWAY_STARTUP_TIMEOUT.name
                    ))
                    .into()),
                }
            }
        }
    }

    async fn connect(client: GatewayClient, kernel_id: String, cwd: PathBuf) -> Result<GatewayKernel, KernelError> {
        let session_id = new_session_id();
        let socket = open_channels(client.endpoint(), &kernel_id, &session_id).await?;
        let (outgoing, queue) = mpsc::unbounded_channel::<Outgoing>();
        // The outgoing queue outlives reconnections: the bridge's replies go through it too.
        let shared = Arc::new_cyclic(|me: &std::sync::Weak<Shared>| {
            let me = me.clone();
            let cell_events = Box::new(move |cell: &str| {
                let shared = me.upgrade()?;
                let routes = shared.routes.lock().unwrap();
                routes.pending.get(cell).map(|pending| pending.sender.clone())
            });
            let bridge = GatewayBridge::new(outgoing.clone(), session_id.clone(), cell_events);
            Shared {
                routes: Mutex::new(Routes::default()),
                bridge: Some(Arc::new(bridge)),
                drop_for_test: Notify::new(),
                progress: Notify::new(),
            }
        });
        let link = Link {
            shared: shared.clone(),
            client: client.clone(),
            kernel_id: kernel_id.clone(),
            session_id: session_id.clone(),
            outgoing: outgoing.clone(),
        };
        let task = tokio::spawn(link.run(socket, queue));
        let bridge = shared.bridge.clone().expect("made above");
        Ok(GatewayKernel {
            client,
            kernel_id,
            requests: Requests::new(session_id, outgoing, shared),
            bridge,
            cwd,
            deleted: AtomicBool::new(false),
            tasks: vec![task],
        })
    }

    /// Close the client's end of the channels websocket at once, as a
    /// network failure would (tests of the reconnection use it).
    #[doc(hidden)]
    pub fn drop_connection_for_test(&self) {
        self.requests.shared.drop_for_test.notify_one();
    }

    /// Run host-internal code; an error fails startup.
    async fn run_internal(&self, code: &str) -> Result<(), KernelError> {
        let options = ExecuteOptions { silent: true, internal: true, ..Default::default() };
        let output = self.execute_with(code, options).await?.collect().await?;
        match output.errors().first() {
            None => Ok(()),
            Some(error) => Err(startup_error(format!("{}: {}", error.ename, error.evalue))),
        }
    }

    /// Send an `execute_request`; its events arrive on the returned [`Execution`].
    pub async fn execute_with(&self, code: &str, options: ExecuteOptions) -> Result<Execution, KernelError> {
        self.requests.execute_with(code, options)
    }

    /// Ask the kernel whether `code` is a whole cell yet (`is_complete_request`).
    pub async fn check_complete(&self, code: &str) -> Result<Completeness, KernelError> {
        self.requests.check_complete(code).await
    }

    /// Interrupt the running cell: once the kernel has taken it (an earlier
    /// interrupt is lost), `POST …/interrupt`, repeated every second until it ends.
    /// (The REST call, not an `interrupt_request` on the control channel: a
    /// kernel busy in Python answers the signal at once, while its control
    /// thread first waits for the GIL; measured, ~26 ms against ~42 ms to
    /// the cancelled reply.)
    pub fn interrupt(&self) -> Result<(), KernelError> {
        let (client, kernel_id) = (self.client.clone(), self.kernel_id.clone());
        self.requests.interrupt_with(move || {
            let (client, kernel_id) = (client.clone(), kernel_id.clone());
            async move {
                let _ = client.interrupt(&kernel_id).await;
            }
        })
    }

    /// Whether the kernel can still run cells.
    pub fn is_alive(&self) -> bool {
        self.requests.is_alive()
    }

    /// Who answers the cells' bridge calls from now on.
    pub fn set_bridge(&self, hook: crate::kernel::bridge_relay::BridgeHook) {
        self.bridge.set_hook(hook);
    }

    /// Why the kernel stopped, once it has.
    pub fn death_reason(&self) -> Option<String> {
        self.requests.death_reason()
    }

    /// Delete the kernel on the gateway and close the websocket. Idempotent.
    pub async fn shutdown(&self) {
        self.requests.close();
        if !self.deleted.swap(true, Ordering::SeqCst) {
            let _ = self.requests.outgoing.send(Outgoing::Close);
            // A kernel the gateway is restarting (after a crash) cannot be
            // deleted until the restart is over: try again for a few seconds.
            for attempt in 1..=DELETE_ATTEMPTS {
                match self.client.delete_kernel(&self.kernel_id).await {
                    Ok(()) | Err(GatewayError::Status { status: 404, .. }) => break,
                    Err(error @ (GatewayError::Unreachable { .. } | GatewayError::Unauthorized { .. })) => {
                        tracing::warn!(target: "cellbox::gateway", "kernel {} was not deleted: {error}", self.kernel_id);
                        break;
                    }
                    Err(error) if attempt == DELETE_ATTEMPTS => {
                        tracing::warn!(target: "cellbox::gateway", "kernel {} was not deleted: {error}", self.kernel_id);
                    }
                    Err(_) => tokio::time::sleep(Duration::from_millis(300)).await,
                }
            }
        }
        for task in &self.tasks {
            task.abort();
        }
    }

    /// The kernel's id on the gateway.
    pub fn kernel_id(&self) -> &str {
        &self.kernel_id
    }

    /// The gateway this kernel runs on.
    pub fn endpoint(&self) -> &Endpoint {
        self.client.endpoint()
    }

    /// The working directory the kernel was set up in.
    pub fn cwd(&self) -> &Path {
        &self.cwd
    }
}

impl Drop for GatewayKernel {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
        self.bridge.cancel_all("the kernel was shut down");
        if !self.deleted.swap(true, Ordering::SeqCst)
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            let (client, kernel_id) = (self.client.clone(), self.kernel_id.clone());
            runtime.spawn(async move {
                let _ = client.delete_kernel(&kernel_id).await;
            });
        }
    }
}

/// The bundle type a display carries, for tests that build messages by hand.
pub type Bundle = Map<String, Value>;
