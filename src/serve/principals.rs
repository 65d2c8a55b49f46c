//! Who owns what on a shared server: one engine per principal.
//!
//! Each principal (a token's name) gets an engine of its own, with its own
//! kernels, named sessions, runs, artifact folder and working folder, and an
//! MCP endpoint whose `Mcp-Session-Id`s only it knows. Nothing a principal can
//! name — a session, a run id, an artifact id, an MCP session — is looked up
//! anywhere but in its own engine, so another principal's ids are "not found"
//! by construction, not by a check that could be forgotten.
//!
//! No principal takes more than its share: its MCP requests in progress, its
//! open SDK sandboxes and its live kernels (over its MCP engine and every
//! sandbox) each have a cap of their own, a token's limits or else a share of
//! the server's ([`Shares`]). A principal that has been idle a while (no
//! request, no sandbox, no kernel, no run) is forgotten when others arrive,
//! so a stream of new JWT subjects cannot fill the server's memory.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

use crate::bridge::BridgeConfig;
use crate::mcp::EvalServer;
use crate::mcp::sampling::SamplingBridge;
use crate::sandbox::PrivateRoot;
use crate::serve::tokens::Identity;
use crate::session::KernelBudget;
use crate::tool::{EngineConfig, EvalEngine, NetworkCounts};

/// The MCP endpoint of one principal.
pub type McpService = StreamableHttpService<EvalServer, LocalSessionManager>;

/// A principal with no request, sandbox, kernel or run for this long is
/// forgotten when another arrives (its engine stops; it gets a new one on its
/// next request).
pub const PRINCIPAL_IDLE: Duration = Duration::from_secs(10 * 60);
/// Principals known at once, at most; a new one beyond it is refused while none is idle.
pub const MAX_PRINCIPALS: usize = 4096;

/// What one principal may hold at most, unless its token says otherwise: a
/// share of each of the server's limits.
#[derive(Debug, Clone, Copy)]
pub struct Shares {
    pub calls: usize,
    pub sandboxes: usize,
    pub kernels: usize,
}

impl Shares {
    /// `percent` of each server-wide limit, at least 1.
    pub fn of(percent: u8, max_calls: usize, max_sandboxes: usize, max_kernels: usize) -> Shares {
        let share = |limit: usize| (limit * usize::from(percent.clamp(1, 100)) / 100).max(1);
        Shares { calls: share(max_calls), sandboxes: share(max_sandboxes), kernels: share(max_kernels) }
    }
}

/// One principal's engine, MCP endpoint and what it holds.
pub struct Principal {
    pub name: String,
    pub engine: Arc<EvalEngine>,
    pub mcp: McpService,
    /// Its caps: its token's limits, else its share of the server's.
    caps: Shares,
    /// Its MCP requests in progress.
    calls: Arc<AtomicUsize>,
    /// Its open SDK sandboxes.
    sandboxes: Arc<AtomicUsize>,
    /// Its live kernels, within the server's budget.
    budget: Arc<KernelBudget>,
    /// The connections its kernels' network proxies allowed and refused, over all its engines.
    pub network: Arc<NetworkCounts>,
    /// Its sandboxes' engines (the MCP engine is `engine`).
    sandbox_engines: Mutex<Vec<Weak<EvalEngine>>>,
    last_used: Mutex<Instant>,
}

/// A place among a principal's calls or sandboxes, freed when dropped.
pub struct Place(Arc<AtomicUsize>);

impl Drop for Place {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Why a principal cannot be served now.
#[derive(Debug, thiserror::Error)]
pub enum PrincipalError {
    #[error("cannot prepare your workspace: {0}")]
    Workspace(std::io::Error),
    #[error(
        "this server keeps one principal only, because its sandbox cannot be enforced here ({reason}); another \
         principal is using it"
    )]
    OnlyOne { reason: String },
    #[error("this server knows {MAX_PRINCIPALS} principals, none of them idle; retry in a moment")]
    Full,
}

impl Principal {
    /// A place for one more MCP request, or the principal's cap when it is reached.
    pub fn admit_call(&self) -> Result<Place, usize> {
        take(&self.calls, self.caps.calls)
    }

    /// A place for one more open SDK sandbox, or the principal's cap when it is reached.
    pub fn admit_sandbox(&self) -> Result<Place, usize> {
        take(&self.sandboxes, self.caps.sandboxes)
    }

    fn touch(&self) {
        *self.last_used.lock().unwrap() = Instant::now();
    }

    /// Whether the principal holds nothing and has done nothing for `idle_after`.
    fn is_idle(&self, idle_after: Duration) -> bool {
        let quiet = self.last_used.lock().unwrap().elapsed() >= idle_after;
        let load = self.engine.load();
        quiet
            && self.calls.load(Ordering::SeqCst) == 0
            && self.sandboxes.load(Ordering::SeqCst) == 0
            && load.kernels.busy + load.kernels.idle == 0
            && load.runs == 0
    }

    fn engines(&self) -> Vec<Arc<EvalEngine>> {
        let mut engines = vec![self.engine.clone()];
        engines.extend(self.sandbox_engines.lock().unwrap().iter().filter_map(Weak::upgrade));
        engines
    }
}

fn take(counter: &Arc<AtomicUsize>, limit: usize) -> Result<Place, usize> {
    if !crate::serve::metrics::take_place(counter, limit) {
        return Err(limit);
    }
    Ok(Place(counter.clone()))
}

/// The folder of `root` that holds sandboxes' own folders: no principal's
/// name starts with a dot, so it is nobody's working folder.
const SANDBOXES: &str = ".sandboxes";

/// The principals the server knows now.
pub struct Principals {
    base: EngineConfig,
    /// Where principals' working folders are made (`<root>/<name>`), and
    /// sandboxes' own (`<root>/.sandboxes/<name>/<id>`).
    root: PathBuf,
    http: StreamableHttpServerConfig,
    shares: Shares,
    /// Set when the sandbox cannot be enforced here: then only one principal may be served.
    only_one: Option<String>,
    /// How long a principal may do nothing before it is forgotten ([`PRINCIPAL_IDLE`]).
    idle_after: Duration,
    live: Mutex<HashMap<String, Arc<Principal>>>,
}

impl Principals {
    /// `base` is every principal's engine configuration before its own folders
    /// are put in; `http` configures each MCP endpoint (hosts, origins, body limit).
    pub fn new(base: EngineConfig, root: PathBuf, http: StreamableHttpServerConfig, shares: Shares) -> Self {
        let only_one = crate::sandbox::filesystem_unenforceable(&base.sandbox).map(|reason| reason.to_string());
        Principals { base, root, http, shares, only_one, idle_after: PRINCIPAL_IDLE, live: Mutex::new(HashMap::new()) }
    }

    /// The principal's engine and endpoint, made on its first request.
    pub fn get(&self, identity: &Identity) -> Result<Arc<Principal>, PrincipalError> {
        let name = identity.name.as_str();
        let mut live = self.live.lock().unwrap();
        if let Some(principal) = live.get(name) {
            principal.touch();
            return Ok(principal.clone());
        }
        // Where the sandbox cannot keep principals apart, the one served is served for good:
        // forgetting it would let the next one into its files.
        if self.only_one.is_none() {
            self.forget_idle(&mut live);
        }
        if let Some(reason) = &self.only_one
            && !live.is_empty()
        {
            return Err(PrincipalError::OnlyOne { reason: reason.clone() });
        }
        if live.len() >= MAX_PRINCIPALS {
            return Err(PrincipalError::Full);
        }
        let limits = &identity.limits;
        let caps = Shares {
            calls: limits.max_calls.unwrap_or(self.shares.calls),
            sandboxes: limits.max_sandboxes.unwrap_or(self.shares.sandboxes),
            kernels: limits.max_kernels.unwrap_or(self.shares.kernels),
        };
        let budget = match &self.base.kernel_budget {
            Some(server) => KernelBudget::within(caps.kernels, server),
            None => KernelBudget::new(caps.kernels),
        };
        // Cells' completion()/agent() are answered by the MCP client whose
        // call runs them (MCP sampling), as under `cellbox mcp`.
        let sampling = Arc::new(SamplingBridge::default());
        let network = Arc::new(NetworkCounts::default());
        let mut config = self.config_for(identity, &budget).map_err(PrincipalError::Workspace)?;
        config.network_counts = Some(network.clone());
        config.bridge = BridgeConfig::new(sampling.clone(), config.bridge.limits.clone());
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
        let principal = Arc::new(Principal {
            name: name.to_string(),
            engine,
            mcp,
            caps,
            calls: Arc::default(),
            sandboxes: Arc::default(),
            budget,
            network,
            sandbox_engines: Mutex::default(),
            last_used: Mutex::new(Instant::now()),
        });
        live.insert(name.to_string(), principal.clone());
        tracing::info!(principal = name, "first request: engine started");
        Ok(principal)
    }

    /// Forget the principals that are idle; their engines stop in the background.
    fn forget_idle(&self, live: &mut HashMap<String, Arc<Principal>>) {
        let idle: Vec<String> =
            live.iter().filter(|(_, p)| p.is_idle(self.idle_after)).map(|(name, _)| name.clone()).collect();
        for name in idle {
            if let Some(principal) = live.remove(&name) {
                tracing::info!(principal = name, "idle: engine stopped");
                tokio::spawn(async move {
                    for engine in principal.engines() {
                        if engine.keeps_sessions() {
                            engine.hibernate_all("its principal was idle").await;
                        }
                        engine.dispose_all().await;
                    }
                });
            }
        }
    }

    /// A new engine for one SDK connection of `principal` (a sandbox of its
    /// own, in the principal's folders, counted in its kernel budget).
    pub fn sandbox_engine(&self, principal: &Principal, identity: &Identity) -> std::io::Result<Arc<EvalEngine>> {
        self.sandbox_engine_in(principal, identity, |_| Ok(()))
    }

    /// A new engine for one sandbox of `principal`, its configuration changed
    /// by `adjust` (an E2B sandbox's own folder, variables and network).
    pub fn sandbox_engine_in(
        &self,
        principal: &Principal,
        identity: &Identity,
        adjust: impl FnOnce(&mut EngineConfig) -> std::io::Result<()>,
    ) -> std::io::Result<Arc<EvalEngine>> {
        let mut config = self.config_for(identity, &principal.budget)?;
        // A sandbox lives as long as its connection: its sessions hibernate in a folder of their own.
        config.state_dir = None;
        config.network_counts = Some(principal.network.clone());
        adjust(&mut config)?;
        let engine = Arc::new(EvalEngine::new(config));
        let mut engines = principal.sandbox_engines.lock().unwrap();
        engines.retain(|engine| engine.strong_count() > 0);
        engines.push(Arc::downgrade(&engine));
        Ok(engine)
    }

    /// Narrow `config` (one of `name`'s) to a folder of sandbox `id`'s own,
    /// `<root>/.sandboxes/<name>/<id>`, and give its path. It lies outside
    /// the principal's working folder, so no other kernel of the principal
    /// can read it or swap it for a link (which would move where the
    /// sandbox's next kernel may write); the sandbox's kernels reach none of
    /// the principal's other folders either, as E2B's sandboxes are apart.
    pub fn own_folder(&self, config: &mut EngineConfig, name: &str, id: &str) -> std::io::Result<PathBuf> {
        let sandboxes = self.root.join(SANDBOXES);
        let folder = sandboxes.join(name).join(id);
        crate::paths::private_dir_builder().create(&folder)?;
        let workspace_rule = PrivateRoot::new(&self.root, Some(name));
        config.sandbox.private_roots.retain(|rule| *rule != workspace_rule);
        config.sandbox.private_roots.extend([
            PrivateRoot::new(&self.root, Some(SANDBOXES)),
            PrivateRoot::new(&sandboxes, Some(name)),
            PrivateRoot::new(sandboxes.join(name), Some(id)),
        ]);
        config.default_cwd = folder.clone();
        Ok(folder)
    }

    /// The network `identity`'s kernels get: its token's, else the server's.
    pub fn network_of(
        &self,
        identity: &Identity,
    ) -> Result<crate::sandbox::NetworkSetting, crate::sandbox::PolicyError> {
        match &identity.limits.network {
            Some(network) => network.parse(),
            None => Ok(self.base.sandbox.network_setting()),
        }
    }

    /// How many principals the server knows now.
    pub fn count(&self) -> usize {
        self.live.lock().unwrap().len()
    }

    /// Each known principal's name and the connections its kernels' network
    /// proxies allowed and refused, by name.
    pub fn network_counts(&self) -> Vec<(String, u64, u64)> {
        let live = self.live.lock().unwrap();
        let mut counts: Vec<_> = live
            .values()
            .map(|principal| {
                let (allowed, refused) = principal.network.get();
                (principal.name.clone(), allowed, refused)
            })
            .collect();
        counts.sort();
        counts
    }

    /// Each known principal's name and own engine (not its SDK connections'), by name.
    pub fn main_engines(&self) -> Vec<(String, Arc<EvalEngine>)> {
        let live = self.live.lock().unwrap();
        let mut engines: Vec<_> = live.values().map(|p| (p.name.clone(), p.engine.clone())).collect();
        engines.sort_by(|a, b| a.0.cmp(&b.0));
        engines
    }

    /// Every engine still running: each principal's and each SDK connection's.
    pub fn engines(&self) -> Vec<Arc<EvalEngine>> {
        self.live.lock().unwrap().values().flat_map(|principal| principal.engines()).collect()
    }

    /// A principal's engine configuration: its own working and artifact
    /// folders, kernel files and kernel budget, and its token's limits within
    /// the server's.
    fn config_for(&self, identity: &Identity, budget: &Arc<KernelBudget>) -> std::io::Result<EngineConfig> {
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
        config.sandbox.private_shm = true;
        config.sandbox.private_roots.extend([
            PrivateRoot::new(&self.root, Some(name)),
            PrivateRoot::new(&artifacts, None),
            PrivateRoot::new(&kernel_files, Some(name)),
        ]);
        // Its hibernated sessions in a folder of its own, which no kernel reads (its own included).
        if let Some(state) = &self.base.state_dir {
            config.state_dir = Some(state.join("principals").join(name));
            config.sandbox.deny_read.push(state.clone());
        }
        config.kernel_budget = Some(budget.clone());
        let limits = &identity.limits;
        if let Some(max) = limits.max_kernels {
            config.pool.max_kernels = config.pool.max_kernels.min(max.max(1));
        }
        if let Some(bytes) = limits.memory_limit {
            config.sandbox.memory_limit = Some(config.sandbox.memory_limit.map_or(bytes, |server| server.min(bytes)));
        }
        // Checked when the token was made; a file edited by hand is checked here, and refused.
        if let Some(network) = &limits.network {
            let setting = network.parse::<crate::sandbox::NetworkSetting>().map_err(std::io::Error::other)?;
            config.sandbox.set_network(setting);
        }
        for secret in &limits.secrets {
            config.sandbox.secrets.push(secret.parse().map_err(std::io::Error::other)?);
        }
        config.sandbox.check_secrets().map_err(std::io::Error::other)?;
        Ok(config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn principals(dir: &std::path::Path, idle_after: Duration) -> Principals {
        let mut base = EngineConfig::new(dir);
        base.artifacts_dir = dir.join("artifacts");
        let shares = Shares::of(25, 64, 32, 64);
        let mut principals = Principals::new(base, dir.join("root"), StreamableHttpServerConfig::default(), shares);
        principals.idle_after = idle_after;
        principals
    }

    #[tokio::test]
    async fn idle_principals_are_forgotten_when_others_arrive_and_busy_ones_are_not() {
        let dir = tempfile::tempdir().unwrap();
        let forgetful = principals(dir.path(), Duration::ZERO);
        let alice = forgetful.get(&Identity::named("jwt-alice")).unwrap();
        let held = alice.admit_call().unwrap();
        forgetful.get(&Identity::named("jwt-bob")).unwrap();
        assert_eq!(forgetful.count(), 2, "a principal with a call in progress stays");
        drop(held);
        forgetful.get(&Identity::named("jwt-carol")).unwrap();
        assert_eq!(forgetful.count(), 1, "alice and bob, idle, were forgotten when carol came");
        let patient = principals(dir.path(), PRINCIPAL_IDLE);
        for name in ["jwt-a", "jwt-b", "jwt-c"] {
            patient.get(&Identity::named(name)).unwrap();
        }
        assert_eq!(patient.count(), 3);
    }

    #[test]
    fn shares_are_a_percentage_of_each_limit_and_at_least_one() {
        let shares = Shares::of(25, 64, 3, 64);
        assert_eq!((shares.calls, shares.sandboxes, shares.kernels), (16, 1, 16));
    }
}
