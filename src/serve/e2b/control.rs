//! E2B's control plane: create, connect, list, inspect, time and kill
//! sandboxes (E2B's OpenAPI paths, the token in `X-API-Key`). Each sandbox
//! belongs to the principal whose token made it; another principal's id is
//! "not found" on every route.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, SystemTime};

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{
    ApiError, Created, DEFAULT_TIMEOUT, ENVD_VERSION, Home, MAX_TIMEOUT, Sandbox, TEMPLATES, error, not_found,
    parse_body, random_hex, rfc3339,
};
use crate::sandbox::{NetworkMode, NetworkSetting};
use crate::serve::metrics::Work;
use crate::serve::tokens::Identity;
use crate::serve::{Refusal, ServerState};

/// `POST /sandboxes` and `/v2/sandboxes`'s body (E2B's `NewSandbox`).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct NewSandbox {
    #[serde(rename = "templateID")]
    template_id: String,
    /// Seconds.
    timeout: Option<u64>,
    #[serde(default)]
    metadata: BTreeMap<String, String>,
    #[serde(default)]
    env_vars: BTreeMap<String, String>,
    #[serde(rename = "allow_internet_access")]
    allow_internet_access: Option<bool>,
    network: Option<Value>,
    #[serde(default)]
    volume_mounts: Vec<Value>,
    mcp: Option<Value>,
}

/// The identity of a control-plane request, or E2B's 401.
async fn identify(state: &ServerState, headers: &HeaderMap) -> Result<Identity, ApiError> {
    state.principal_of_api_key(headers).await.map_err(|refusal| match refusal {
        Refusal::Unauthorized { message, .. } => error(StatusCode::UNAUTHORIZED, message),
        Refusal::Busy(message) => error(StatusCode::TOO_MANY_REQUESTS, message),
    })
}

fn lifetime(seconds: Option<u64>) -> Result<Duration, ApiError> {
    let Some(seconds) = seconds else { return Ok(DEFAULT_TIMEOUT) };
    let timeout = Duration::from_secs(seconds);
    if timeout > MAX_TIMEOUT {
        return Err(error(
            StatusCode::BAD_REQUEST,
            format!("timeout {seconds} s is longer than this server's limit of {} s", MAX_TIMEOUT.as_secs()),
        ));
    }
    Ok(timeout)
}

pub(crate) async fn create(
    State(state): State<Arc<ServerState>>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    let identity = identify(&state, &headers).await?;
    let request: NewSandbox = parse_body(&body)?;
    if !TEMPLATES.contains(&request.template_id.as_str()) {
        return Err(error(
            StatusCode::NOT_FOUND,
            format!(
                "template {:?} not found: this server runs cellbox sandboxes, named by any of {}; template builds \
                 are not supported (install what you need with pip or commands in the sandbox)",
                request.template_id,
                TEMPLATES.join(", ")
            ),
        ));
    }
    if !request.volume_mounts.is_empty() {
        return Err(error(
            StatusCode::BAD_REQUEST,
            "volumes are not supported by cellbox serve: create without volumeMounts",
        ));
    }
    if request.mcp.as_ref().is_some_and(|mcp| !mcp.is_null()) {
        return Err(error(StatusCode::BAD_REQUEST, "MCP gateways in sandboxes are not supported by cellbox serve"));
    }
    let egress = request
        .network
        .as_ref()
        .map(egress)
        .transpose()
        .map_err(|message| error(StatusCode::BAD_REQUEST, message))?
        .flatten();
    let principal_network =
        state.principals.network_of(&identity).map_err(|e| error(StatusCode::FORBIDDEN, e.to_string()))?;
    // A create request may narrow the network its token (or the server) gives, never widen it:
    // lists of its own apply only where that network is the host's whole one.
    if let Some(asked) = &egress
        && asked.mode != NetworkMode::Off
        && principal_network.mode != NetworkMode::On
    {
        return Err(error(
            StatusCode::BAD_REQUEST,
            format!(
                "network {asked}: this server gives your sandboxes --network {principal_network}, which a sandbox may \
                 narrow only to no network (denyOut [0.0.0.0/0]); ask its operator for another"
            ),
        ));
    }
    let timeout = lifetime(request.timeout)?;
    let name = identity.name.clone();
    let principal = match state.principals.get(&identity) {
        Ok(principal) => principal,
        Err(e) => return Err(error(StatusCode::FORBIDDEN, e.to_string())),
    };
    let own_place = match principal.admit_sandbox() {
        Ok(place) => place,
        Err(limit) => {
            state.metrics.refused_busy.fetch_add(1, Ordering::Relaxed);
            return Err(error(
                StatusCode::TOO_MANY_REQUESTS,
                format!("you have {limit} sandboxes open, your limit: kill one, or retry in a moment"),
            ));
        }
    };
    let ticket = match state.admit(Work::Sandbox) {
        Ok(ticket) => ticket,
        Err(_) => {
            return Err(error(
                StatusCode::TOO_MANY_REQUESTS,
                format!("the server is at its limit of {} open sandboxes; retry in a moment", state.max_sandboxes),
            ));
        }
    };
    let (id, access_token, traffic_token) = match (random_hex(10), random_hex(32), random_hex(32)) {
        (Ok(id), Ok(access), Ok(traffic)) => (id, access, traffic),
        _ => return Err(error(StatusCode::INTERNAL_SERVER_ERROR, "no random numbers from the OS")),
    };
    let internet = request.allow_internet_access.unwrap_or(true);
    let envs = request.env_vars.clone();
    let made = state.principals.sandbox_engine_in(&principal, &identity, |config| {
        state.principals.own_folder(config, &name, &id)?;
        // Code finds its folder where E2B's does, where this host allows it.
        config.sandbox.home_view = Some(std::path::PathBuf::from(super::home::VIRTUAL_HOME));
        config.extra_env.extend(envs);
        if let Some(setting) = egress {
            config.sandbox.set_network(setting);
        }
        if !internet {
            config.sandbox.network = NetworkMode::Off;
        }
        Ok(())
    });
    let engine = match made {
        Ok(engine) => engine,
        Err(e) => {
            return Err(error(StatusCode::INTERNAL_SERVER_ERROR, format!("cannot prepare the sandbox's folder: {e}")));
        }
    };
    let home = engine.config().default_cwd.clone();
    let link = cellbox_sdk::Link::open(engine.clone(), home.clone());
    // A sandbox that cannot run Python says so when it is made, not at its first cell.
    if let Err(failure) = link.call(cellbox_sdk::wire::Call::Initialize(cellbox_sdk::wire::NoParams)).await {
        link.close().await;
        return Err(error(StatusCode::INTERNAL_SERVER_ERROR, format!("the sandbox cannot start: {}", failure.message)));
    }
    let sandbox = Arc::new(Sandbox {
        id: id.clone(),
        principal: name.clone(),
        created: Created {
            template: request.template_id,
            metadata: request.metadata,
            envs: request.env_vars,
            internet,
        },
        started: SystemTime::now(),
        access_token,
        traffic_token,
        engine,
        link,
        home: Home::new(home),
        processes: Default::default(),
        state: std::sync::Mutex::new(super::Lifetime { end: SystemTime::now() + timeout, paused: false }),
        changed: tokio::sync::Notify::new(),
        ended: state.hard_stop.child_token(),
        _places: (ticket, own_place),
    });
    state.e2b.insert(sandbox.clone());
    tracing::info!(sandbox = id, principal = name, "e2b sandbox created");
    Ok((StatusCode::CREATED, axum::Json(created_body(&sandbox))).into_response())
}

/// The kernels' network a create request's `network` asks for (`None`: the
/// server's). E2B's `allowOut` are exceptions to `denyOut`: with `denyOut`
/// holding every address (`0.0.0.0/0`) they are an allowlist, else nothing;
/// `denyOut` alone is a denylist. `allowPublicTraffic: false` is no rule here
/// (a sandbox's routes always need its tokens), and `maskRequestHost` and
/// `httpsPorts` only shape E2B's edge. What cannot be kept is refused.
fn egress(network: &Value) -> Result<Option<NetworkSetting>, String> {
    let Some(rules) = network.as_object() else { return Ok(None) };
    let list = |names: [&str; 2]| -> Result<Vec<String>, String> {
        let Some(value) = names.iter().find_map(|name| rules.get(*name)).filter(|value| !value.is_null()) else {
            return Ok(Vec::new());
        };
        let entries = value.as_array().ok_or_else(|| format!("network {}: a list of hosts or addresses", names[0]))?;
        entries
            .iter()
            .map(|entry| entry.as_str().map(str::to_string).ok_or_else(|| format!("network {}: strings", names[0])))
            .collect()
    };
    let (allow, deny) = (list(["allowOut", "allow_out"])?, list(["denyOut", "deny_out"])?);
    let known = ["allowOut", "allow_out", "denyOut", "deny_out", "allowPublicTraffic", "allow_public_traffic"];
    let edge = ["maskRequestHost", "mask_request_host", "httpsPorts", "https_ports"];
    if let Some((name, _)) = rules.iter().find(|(name, value)| {
        let empty = value.is_null()
            || value.as_array().is_some_and(Vec::is_empty)
            || value.as_object().is_some_and(serde_json::Map::is_empty);
        !empty && !known.contains(&name.as_str()) && !edge.contains(&name.as_str())
    }) {
        return Err(format!("network rule {name:?} is not supported by cellbox serve: use allowOut and denyOut"));
    }
    let text = if deny.iter().any(|entry| entry == "0.0.0.0/0") {
        if allow.is_empty() { "off".to_string() } else { format!("allow:{}", allow.join(",")) }
    } else if deny.is_empty() {
        return Ok(None);
    } else if !allow.is_empty() {
        return Err("network allowOut with a denyOut of some addresses: cellbox cannot let addresses through a \
                    denylist; deny everything (0.0.0.0/0) and allow what is needed"
            .into());
    } else {
        format!("deny:{}", deny.join(","))
    };
    text.parse().map(Some).map_err(|e: crate::sandbox::PolicyError| format!("network: {e}"))
}

/// The `Sandbox` answer of create and connect.
fn created_body(sandbox: &Sandbox) -> Value {
    json!({
        "sandboxID": sandbox.id,
        "templateID": sandbox.created.template,
        "clientID": "cellbox",
        "envdVersion": ENVD_VERSION,
        "envdAccessToken": sandbox.access_token,
        "trafficAccessToken": sandbox.traffic_token,
        "domain": null,
        "alias": sandbox.created.template,
    })
}

/// A sandbox as listed (`ListedSandbox`) and, with more, inspected (`SandboxDetail`).
fn listed(sandbox: &Sandbox) -> Value {
    json!({
        "sandboxID": sandbox.id,
        "templateID": sandbox.created.template,
        "alias": sandbox.created.template,
        "clientID": "cellbox",
        "startedAt": rfc3339(sandbox.started),
        "endAt": rfc3339(sandbox.end()),
        "cpuCount": std::thread::available_parallelism().map_or(1, |n| n.get()),
        "memoryMB": memory_mb(sandbox),
        "diskSizeMB": 0,
        "state": if sandbox.paused() { "paused" } else { "running" },
        "envdVersion": ENVD_VERSION,
        "metadata": sandbox.created.metadata,
    })
}

/// The memory a sandbox's kernels may use, in MiB (the server's limit, else the machine's).
fn memory_mb(sandbox: &Sandbox) -> u64 {
    match sandbox.engine.config().sandbox.memory_limit {
        Some(bytes) => bytes >> 20,
        None => total_memory().unwrap_or(0) >> 20,
    }
}

fn total_memory() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = meminfo.lines().find(|line| line.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// The caller's sandbox `id`, or E2B's 404 (another principal's too).
async fn find(state: &ServerState, headers: &HeaderMap, id: &str) -> Result<Arc<Sandbox>, ApiError> {
    let identity = identify(state, headers).await?;
    state.e2b.of(&identity.name, id).ok_or_else(|| not_found(id))
}

pub(crate) async fn info(
    State(state): State<Arc<ServerState>>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    match find(&state, &headers, &id).await {
        Ok(sandbox) => {
            let mut body = listed(&sandbox);
            body["envdAccessToken"] = sandbox.access_token.clone().into();
            body["allowInternetAccess"] = sandbox.created.internet.into();
            body["domain"] = Value::Null;
            axum::Json(body).into_response()
        }
        Err(refusal) => refusal.into_response(),
    }
}

pub(crate) async fn kill(
    State(state): State<Arc<ServerState>>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    match find(&state, &headers, &id).await {
        Ok(sandbox) => {
            state.e2b.kill(&sandbox.id).await;
            StatusCode::NO_CONTENT.into_response()
        }
        Err(refusal) => refusal.into_response(),
    }
}

#[derive(Debug, Deserialize)]
struct TimeoutBody {
    timeout: Option<u64>,
}

/// `connect` (v1 and v2) and `resume`: a paused sandbox runs again; its time is at least `timeout` from now.
pub(crate) async fn connect(
    State(state): State<Arc<ServerState>>,
    headers: HeaderMap,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let sandbox = find(&state, &headers, &id).await?;
    let request: TimeoutBody = parse_body(&body)?;
    let timeout = lifetime(request.timeout)?;
    let was_paused = sandbox.paused();
    if was_paused || SystemTime::now() + timeout > sandbox.end() {
        sandbox.set_timeout(timeout);
    }
    sandbox.set_paused(false);
    let status = if was_paused { StatusCode::CREATED } else { StatusCode::OK };
    Ok((status, axum::Json(created_body(&sandbox))).into_response())
}

pub(crate) async fn set_timeout(
    State(state): State<Arc<ServerState>>,
    headers: HeaderMap,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let sandbox = find(&state, &headers, &id).await?;
    let request: TimeoutBody = parse_body(&body)?;
    let Some(seconds) = request.timeout else {
        return Err(error(StatusCode::BAD_REQUEST, "give the timeout in seconds: {\"timeout\": 60}"));
    };
    sandbox.set_timeout(lifetime(Some(seconds))?);
    Ok(StatusCode::NO_CONTENT.into_response())
}

#[derive(Debug, Deserialize)]
struct RefreshBody {
    duration: Option<u64>,
}

/// `refreshes`: keep the sandbox alive `duration` seconds more from now (never shorter than it was).
pub(crate) async fn refresh(
    State(state): State<Arc<ServerState>>,
    headers: HeaderMap,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let sandbox = find(&state, &headers, &id).await?;
    let request: RefreshBody = parse_body(&body)?;
    let duration = lifetime(request.duration)?;
    if SystemTime::now() + duration > sandbox.end() {
        sandbox.set_timeout(duration);
    }
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// `pause`: the sandbox stops timing out until `connect` or `resume`, and its
/// Python kernels hibernate (their variables go to disk and their memory is
/// freed; the next code run wakes each one, and says so). Other kernels and
/// processes keep running as they are.
pub(crate) async fn pause(
    State(state): State<Arc<ServerState>>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    match find(&state, &headers, &id).await {
        Ok(sandbox) if sandbox.paused() => {
            error(StatusCode::CONFLICT, format!("sandbox {id:?} is already paused")).into_response()
        }
        Ok(sandbox) => {
            sandbox.set_paused(true);
            sandbox.engine.hibernate_all("the sandbox was paused").await;
            StatusCode::NO_CONTENT.into_response()
        }
        Err(refusal) => refusal.into_response(),
    }
}

/// `GET /sandboxes/{id}/metrics`: one sample, now.
pub(crate) async fn metrics(
    State(state): State<Arc<ServerState>>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let sandbox = find(&state, &headers, &id).await?;
    let now = SystemTime::now();
    let unix = now.duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default().as_secs();
    let used = sandbox.engine.memory_used();
    let (disk_used, disk_total) = disk(sandbox.home.real());
    Ok(axum::Json(json!([{
        "timestamp": rfc3339(now),
        "timestampUnix": unix,
        "cpuCount": std::thread::available_parallelism().map_or(1, |n| n.get()),
        "cpuUsedPct": 0.0,
        "memUsed": used,
        "memTotal": memory_mb(&sandbox) << 20,
        "memCache": 0,
        "diskUsed": disk_used,
        "diskTotal": disk_total,
    }]))
    .into_response())
}

/// The used and total bytes of the filesystem `path` is on.
#[cfg(not(unix))]
fn disk(_path: &std::path::Path) -> (u64, u64) {
    (0, 0)
}

/// The used and total bytes of the filesystem `path` is on.
#[cfg(unix)]
#[allow(clippy::useless_conversion)] // the counts are u32 on some systems (macOS), u64 here
fn disk(path: &std::path::Path) -> (u64, u64) {
    match nix::sys::statvfs::statvfs(path) {
        Ok(stats) => {
            let block = u64::from(stats.fragment_size());
            let total = u64::from(stats.blocks()) * block;
            (total.saturating_sub(u64::from(stats.blocks_free()) * block), total)
        }
        Err(_) => (0, 0),
    }
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ListQuery {
    /// `key=value&key2=value2`, URL-encoded as one parameter.
    metadata: Option<String>,
    /// `running`, `paused`, or both comma-separated.
    state: Option<String>,
    next_token: Option<String>,
    limit: Option<usize>,
    /// Only sandboxes of this template.
    template: Option<String>,
    /// Only sandboxes started after this time (RFC 3339).
    started_after: Option<String>,
    /// `asc` (oldest first) or `desc` (newest first, the default).
    order: Option<String>,
}

/// `GET /v2/sandboxes`: the caller's sandboxes, filtered, a page at a time (`X-Next-Token`).
pub(crate) async fn list(
    State(state): State<Arc<ServerState>>,
    headers: HeaderMap,
    Query(query): Query<ListQuery>,
) -> Result<Response, ApiError> {
    let identity = identify(&state, &headers).await?;
    let wanted_states: Vec<String> = match &query.state {
        Some(states) => states.split(',').map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect(),
        None => vec!["running".into(), "paused".into()],
    };
    if let Some(bad) = wanted_states.iter().find(|s| !matches!(s.as_str(), "running" | "paused")) {
        return Err(error(StatusCode::BAD_REQUEST, format!("state {bad:?} is not running or paused")));
    }
    let filter: Vec<(String, String)> = match &query.metadata {
        Some(text) => match serde_urlencoded::from_str::<Vec<(String, String)>>(text) {
            Ok(pairs) => pairs,
            Err(e) => {
                return Err(error(
                    StatusCode::BAD_REQUEST,
                    format!("metadata filter {text:?} is not key=value&...: {e}"),
                ));
            }
        },
        None => Vec::new(),
    };
    let limit = query.limit.unwrap_or(100).clamp(1, 1000);
    let started_after = match query.started_after.as_deref() {
        Some(text) => match chrono::DateTime::parse_from_rfc3339(text) {
            Ok(time) => Some(SystemTime::from(time)),
            Err(e) => {
                return Err(error(
                    StatusCode::BAD_REQUEST,
                    format!("startedAfter {text:?} is not an RFC 3339 time: {e}"),
                ));
            }
        },
        None => None,
    };
    let newest_first = match query.order.as_deref() {
        None | Some("desc") => true,
        Some("asc") => false,
        Some(other) => {
            return Err(error(StatusCode::BAD_REQUEST, format!("order {other:?} is asc or desc")));
        }
    };
    let mut all: Vec<Arc<Sandbox>> = state
        .e2b
        .all_of(&identity.name)
        .into_iter()
        .filter(|sandbox| wanted_states.iter().any(|s| (s == "paused") == sandbox.paused()))
        .filter(|sandbox| filter.iter().all(|(k, v)| sandbox.created.metadata.get(k) == Some(v)))
        .filter(|sandbox| query.template.as_ref().is_none_or(|template| &sandbox.created.template == template))
        .filter(|sandbox| started_after.is_none_or(|after| sandbox.started > after))
        .collect();
    if newest_first {
        all.reverse();
    }
    // The next token is the id the next page starts after (a token whose sandbox is gone starts over).
    let start = match &query.next_token {
        Some(token) => all.iter().position(|sandbox| &sandbox.id == token).map_or(0, |index| index + 1),
        None => 0,
    };
    let page: Vec<&Arc<Sandbox>> = all.iter().skip(start).take(limit).collect();
    let body: Vec<Value> = page.iter().map(|sandbox| listed(sandbox)).collect();
    let mut response = axum::Json(body).into_response();
    if start + page.len() < all.len()
        && let Some(last) = page.last()
        && let Ok(value) = HeaderValue::from_str(&last.id)
    {
        response.headers_mut().insert("x-next-token", value);
    }
    Ok(response)
}

/// `GET /sandboxes` (v1): every running sandbox of the caller.
pub(crate) async fn list_v1(
    state: State<Arc<ServerState>>,
    headers: HeaderMap,
    query: Query<ListQuery>,
) -> Result<Response, ApiError> {
    let Query(mut query) = query;
    query.state = Some("running".into());
    query.limit = Some(1000);
    list(state, headers, Query(query)).await
}

/// `GET /templates`: the names a sandbox may be created from.
pub(crate) async fn templates(State(state): State<Arc<ServerState>>, headers: HeaderMap) -> Response {
    if let Err(refusal) = identify(&state, &headers).await {
        return refusal.into_response();
    }
    let body: Vec<Value> = TEMPLATES
        .iter()
        .map(|name| json!({"templateID": name, "aliases": [name], "public": true, "buildCount": 0}))
        .collect();
    axum::Json(body).into_response()
}

/// What E2B offers and a cellbox server does not: said plainly, in E2B's error shape.
pub(crate) async fn not_here(uri: axum::http::Uri) -> Response {
    let path = uri.path();
    let what = if path.contains("/fork") {
        "forking a whole sandbox is not supported by cellbox serve (cellbox forks a Python context instead: the \
         cellbox SDK's fork_context)"
    } else if path.contains("/snapshots") {
        "sandbox snapshots are not supported by cellbox serve (pause and connect keep a sandbox's state while the \
         server runs)"
    } else if path.contains("/network") {
        "changing a sandbox's network rules is not supported by cellbox serve yet"
    } else if path.contains("/volumes") {
        "volumes are not supported by cellbox serve"
    } else {
        "template builds are not supported by cellbox serve: every sandbox is a cellbox sandbox (templates base and \
         code-interpreter-v1)"
    };
    error(StatusCode::NOT_IMPLEMENTED, what).into_response()
}
