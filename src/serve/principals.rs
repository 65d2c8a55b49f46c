//! Who owns what on a shared server: one engine per principal.
//!
//! Each principal (a token's name) gets an engine of its own, with its own
//! kernels, named sessions, runs, artifact folder and working folder, and an
//! MCP endpoint whose `Mcp-Session-Id`s only it knows. Nothing a principal can
//! name — a session, a run id, an artifact id, an MCP session — is looked up
//! anywhere but in its own engine, so another principal's ids are "not found"
//! by construction, not by a check that could be forgotten.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};

use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

use crate::bridge::BridgeConfig;
use crate::mcp::EvalServer;
use crate::mcp::sampling::SamplingBridge;
use crate::sandbox::PrivateRoot;
use crate::serve::tokens::{Identity, PrincipalLimits};
use crate::tool::{EngineConfig, EvalEngine};

/// The MCP endpoint of one principal.
pub type McpService = StreamableHttpService<EvalServer, LocalSessionManager>;

/// One principal's engine and MCP endpoint.
pub struct Principal {
    pub name: String,
    pub engine: Arc<EvalEngine>,
    pub mcp: McpService,
    /// Its token's limits when its engine was made (kernel limits hold from then on).
    limits: PrincipalLimits,
    /// Its MCP requests in progress.
    calls: Arc<AtomicUsize>,
}

/// A place among a principal's MCP requests in progress, freed when dropped.
pub struct CallPlace(Arc<AtomicUsize>);

impl Drop for CallPlace {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Principal {
    /// A place for one more MCP request under the token's `max_calls`
    /// (`None`: no limit of its own), or that limit when it is reached.
    pub fn admit_call(&self) -> Result<Option<CallPlace>, usize> {
        let Some(limit) = self.limits.max_calls else { return Ok(None) };
        if !crate::serve::metrics::take_place(&self.calls, limit) {
            return Err(limit);
        }
        Ok(Some(CallPlace(self.calls.clone())))
    }
}

/// The principals that have made a request since the server started.
pub struct Principals {
    base: EngineConfig,
    /// Where principals' working folders are made (`<root>/<name>`).
    root: PathBuf,
    http: StreamableHttpServerConfig,
    live: Mutex<HashMap<String, Arc<Principal>>>,
    /// The engines of SDK connections (one each, as a local `Sandbox()` has), to stop at shutdown.
    sandboxes: Mutex<Vec<Weak<EvalEngine>>>,
}

impl Principals {
    /// `base` is every principal's engine configuration before its own folders
    /// are put in; `http` configures each MCP endpoint (hosts, origins, body limit).
    pub fn new(base: EngineConfig, root: PathBuf, http: StreamableHttpServerConfig) -> Self {
        Principals { base, root, http, live: Mutex::new(HashMap::new()), sandboxes: Mutex::default() }
    }

    /// The principal's engine and endpoint, made on its first request.
    pub fn get(&self, identity: &Identity) -> std::io::Result<Arc<Principal>> {
        let name = identity.name.as_str();
        let mut live = self.live.lock().unwrap();
        if let Some(principal) = live.get(name) {
            return Ok(principal.clone());
        }
        // Cells' completion()/agent() are answered by the MCP client whose
        // call runs them (MCP sampling), as under `cellbox mcp`.
        let sampling = Arc::new(SamplingBridge::default());
        let mut config = self.config_for(identity)?;
        config.bridge = BridgeConfig::new(sampling.clone());
        let engine = Arc::new(EvalEngine::new(config));
        // Every MCP session of a principal starts in the same default session,
        // so state lasts across reconnects (and stateless requests) until the
        // kernel idles out; `session: "name"` picks others.
        let default_session = format!("http-{name}");
        let factory_engine = engine.clone();
        let mcp = StreamableHttpService::new(
            move || {
                let server = EvalServer::new(factory_engine.clone(), default_session.clone());
                Ok(server.with_sampling(Some(sampling.clone())))
            },
            Arc::new(LocalSessionManager::default()),
            self.http.clone(),
        );
        let principal =
            Arc::new(Principal { name: name.to_string(), engine, mcp, limits: identity.limits, calls: Arc::default() });
        live.insert(name.to_string(), principal.clone());
        tracing::info!(principal = name, "first request: engine started");
        Ok(principal)
    }

    /// A new engine for one SDK connection of principal `name` (a sandbox of
    /// its own, in the principal's folders), and the folder its files are rooted in.
    pub fn sandbox_engine(&self, identity: &Identity) -> std::io::Result<Arc<EvalEngine>> {
        let engine = Arc::new(EvalEngine::new(self.config_for(identity)?));
        let mut sandboxes = self.sandboxes.lock().unwrap();
        sandboxes.retain(|engine| engine.strong_count() > 0);
        sandboxes.push(Arc::downgrade(&engine));
        Ok(engine)
    }

    /// How many principals have made a request.
    pub fn count(&self) -> usize {
        self.live.lock().unwrap().len()
    }

    /// Every engine still running: each principal's and each SDK connection's.
    pub fn engines(&self) -> Vec<Arc<EvalEngine>> {
        let mut engines: Vec<_> = self.live.lock().unwrap().values().map(|p| p.engine.clone()).collect();
        engines.extend(self.sandboxes.lock().unwrap().iter().filter_map(Weak::upgrade));
        engines
    }

    /// A principal's engine configuration: its own working and artifact
    /// folders, and its token's limits within the server's.
    fn config_for(&self, identity: &Identity) -> std::io::Result<EngineConfig> {
        let name = identity.name.as_str();
        let workspace = self.root.join(name);
        crate::paths::private_dir_builder().create(&workspace)?;
        let mut config = self.base.clone();
        config.default_cwd = workspace;
        let artifacts = self.base.artifacts_dir.join("principals");
        config.artifacts_dir = artifacts.join(name);
        // Calls stay in the principal's folder, and its kernels cannot read
        // other principals' folders or artifacts, those made later too.
        config.cwd_inside_default = true;
        // Its kernels' temp dirs and caches (pip, uv, matplotlib, %store) are its own too.
        let kernel_files = crate::paths::cache_root().join("kernels").join("principals");
        config.sandbox.kernel_files = Some(kernel_files.join(name));
        config.sandbox.private_roots.extend([
            PrivateRoot::new(&self.root, Some(name)),
            PrivateRoot::new(&artifacts, None),
            PrivateRoot::new(&kernel_files, Some(name)),
        ]);
        let limits = identity.limits;
        if let Some(max) = limits.max_kernels {
            config.pool.max_kernels = config.pool.max_kernels.min(max.max(1));
        }
        if let Some(bytes) = limits.memory_limit {
            config.sandbox.memory_limit = Some(config.sandbox.memory_limit.map_or(bytes, |server| server.min(bytes)));
        }
        Ok(config)
    }
}
