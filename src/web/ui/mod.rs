//! `/ui`: a web page to watch a principal's sessions as they run, and to
//! interrupt, reset, fork or download them. `cellbox serve` serves it beside
//! `/mcp`; `cellbox mcp --ui` on a loopback port of its own ([`listen`]).
//! Who may sign in, and which engine each one sees, is the front end's
//! [`Host`].
//!
//! The page and its script and style are embedded in the binary and served
//! from this origin only, under a Content-Security-Policy that allows nothing
//! else: no inline script, no other origin. A cell's HTML output is shown in an
//! iframe with an empty `sandbox` attribute (no scripts, its own opaque origin),
//! which also inherits that policy; images are `data:` URLs. So what a cell
//! prints cannot read the page or call its API.
//!
//! Signing in: the page asks for a token of the server (the same tokens as
//! `/mcp`; for `cellbox mcp --ui`, the one-time code of the link it printed)
//! and trades it at `POST /ui/api/login` for a cookie that is
//! `HttpOnly` and `SameSite=Strict`, scoped to `/ui`, and names a sign-in kept
//! in memory for [`SIGN_IN_LIFETIME`]. With auth off (loopback only) every
//! request is the local principal and no sign-in is asked. Every API request
//! but the event stream (an `EventSource` cannot add headers; the stream
//! only reads) must carry the `X-Cellbox-UI` header, which a page of another
//! origin cannot add without a CORS preflight this server never grants; a
//! request whose `Origin` is not this server's, or that the browser marks as
//! from another site, is refused. Together they stop cross-site requests even
//! where no cookie is needed.

/// The value of a `Result` whose error is the answer refusing the request, or
/// that answer, returned from the handler at once.
macro_rules! or_refuse {
    ($result:expr) => {
        match $result {
            Ok(value) => value,
            Err(refusal) => return refusal,
        }
    };
}

mod actions;
mod alone;
mod api;
mod events;

pub use alone::{OneTimeLink, listen};

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::Request;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get, post};
use futures_util::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use super::json_error;
use crate::tool::EvalEngine;

/// Who signs in to the web view, and whose engine each one sees.
pub trait Host: Send + Sync + 'static {
    /// The account of every request when no sign-in is asked (auth off).
    fn open_account(&self) -> Option<Account>;
    /// The account `token` signs in, or the answer that refuses it.
    fn sign_in<'a>(&'a self, token: &'a str, headers: &'a HeaderMap) -> BoxFuture<'a, Result<Account, Response>>;
    /// Whether `token` still signs in `account` (not revoked, not expired,
    /// not given to another principal since): asked at every request of a
    /// sign-in made with it, so a revoked token's sign-ins end at once, as its
    /// `/mcp` requests do.
    fn still_valid<'a>(&'a self, token: &'a str, account: &'a Account) -> BoxFuture<'a, bool>;
    /// Whether sign-in is by a one-time link (`cellbox mcp --ui`) rather than a token.
    fn one_time_link(&self) -> bool {
        false
    }
    /// Every principal with an engine now, and that engine: what an admin's
    /// sign-in sees besides its own (a principal without one has no sessions).
    fn others(&self) -> Vec<(String, Arc<EvalEngine>)> {
        Vec::new()
    }
}

/// How an account reaches its engine (a principal's engine may be made again
/// after it idled), or the front end's answer refusing it now.
pub type EngineOf = Arc<dyn Fn() -> Result<Arc<EvalEngine>, Box<Response>> + Send + Sync>;

/// A signed-in principal.
#[derive(Clone)]
pub struct Account {
    pub name: String,
    /// Sees and acts on every principal's sessions ([`Host::others`]), not only its own.
    pub admin: bool,
    engine: EngineOf,
}

impl std::fmt::Debug for Account {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Account").field("name", &self.name).field("admin", &self.admin).finish_non_exhaustive()
    }
}

impl Account {
    pub fn new(name: impl Into<String>, engine: EngineOf) -> Account {
        Account { name: name.into(), admin: false, engine }
    }

    /// This account, seeing every principal's sessions when `admin`.
    pub fn admin(mut self, admin: bool) -> Account {
        self.admin = admin;
        self
    }

    #[allow(clippy::result_large_err)]
    fn engine(&self) -> Result<Arc<EvalEngine>, Response> {
        (self.engine)().map_err(|refusal| *refusal)
    }
}

/// The web view of one front end.
pub struct Ui {
    host: Box<dyn Host>,
    sign_ins: SignIns,
    /// Whether the page is served over HTTPS (its cookie is then `Secure`).
    https: bool,
    /// Ends the event streams (the server stops).
    stop: CancellationToken,
    /// Event streams open, by sign-in ([`events::MAX_STREAMS_EACH`] each).
    streams: Mutex<events::Streams>,
    /// Full outputs being read at once (each up to [`api::MAX_ARTIFACT_TEXT`]).
    artifact_reads: Arc<tokio::sync::Semaphore>,
}

impl Ui {
    pub fn new(host: Box<dyn Host>, https: bool, stop: CancellationToken) -> Arc<Ui> {
        let artifact_reads = Arc::new(tokio::sync::Semaphore::new(api::ARTIFACT_READS));
        Arc::new(Ui { host, sign_ins: SignIns::default(), https, stop, streams: Mutex::default(), artifact_reads })
    }

    /// The account of a request: the open one, or its sign-in while its token is still valid.
    async fn account(&self, headers: &HeaderMap) -> Option<Account> {
        if let Some(open) = self.host.open_account() {
            return Some(open);
        }
        let id = cookie_of(headers)?;
        let (account, token) = self.sign_ins.get(id)?;
        if self.host.still_valid(&token, &account).await {
            return Some(account);
        }
        self.sign_ins.remove(id);
        None
    }

    /// Whether the request's sign-in (if it needs one) still holds.
    async fn still_signed_in(&self, id: Option<&str>) -> bool {
        if self.host.open_account().is_some() {
            return true;
        }
        let Some((account, token)) = id.and_then(|id| self.sign_ins.get(id)) else { return false };
        self.host.still_valid(&token, &account).await
    }
}

/// How long a sign-in lasts.
pub const SIGN_IN_LIFETIME: Duration = Duration::from_secs(12 * 3600);

/// Sign-ins kept at most; past it a new one is refused.
const MAX_SIGN_INS: usize = 1024;

/// Sign-ins of one principal at most; its oldest is dropped for a new one past it.
const MAX_SIGN_INS_EACH: usize = 16;

/// The cookie that names a sign-in is `cellbox_ui_PORT`: browsers send a cookie to every port
/// of its host, so two servers on one machine (`cellbox serve`, each `cellbox mcp --ui`) would
/// otherwise overwrite each other's sign-ins.
const COOKIE_PREFIX: &str = "cellbox_ui_";

/// The header every API request carries (see the module's doc): the wire's
/// `REQUEST_HEADER`, as `HeaderMap` looks names up (lower case).
const UI_HEADER: &str = "x-cellbox-ui";

/// The page's policy: its own script and style, `data:` images, its own API.
/// HTML outputs are `srcdoc` frames, which inherit it: they may load nothing
/// (no image from this origin's routes, no frame of its pages).
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src data:; \
                   connect-src 'self'; frame-src 'none'; base-uri 'none'; form-action 'none'; \
                   frame-ancestors 'none'";

const INDEX_HTML: &str = include_str!("assets/index.html");
const APP_JS: &str = include_str!("assets/app.js");
const APP_CSS: &str = include_str!("assets/app.css");
const WIRE_JS: &str = include_str!("assets/wire.js");
const CELLS_JS: &str = include_str!("assets/cells.js");
const FOLLOW_JS: &str = include_str!("assets/follow.js");

/// The web view's sign-ins: each one's account, the token it was made with
/// (asked about again at every request) and when it was made.
#[derive(Default)]
pub(crate) struct SignIns {
    by_id: Mutex<HashMap<String, (Account, String, Instant)>>,
}

impl SignIns {
    /// A new sign-in for `account`, made with `token`: its cookie's value.
    fn add(&self, account: Account, token: &str) -> Result<String, String> {
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes).map_err(|e| format!("no random numbers from the OS: {e}"))?;
        let id: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        let mut by_id = self.by_id.lock().unwrap();
        by_id.retain(|_, (_, _, at)| at.elapsed() < SIGN_IN_LIFETIME);
        let theirs = by_id.iter().filter(|(_, (other, _, _))| other.name == account.name);
        if theirs.clone().count() >= MAX_SIGN_INS_EACH
            && let Some(oldest) = theirs.min_by_key(|(_, (_, _, at))| *at).map(|(id, _)| id.clone())
        {
            by_id.remove(&oldest);
        }
        if by_id.len() >= MAX_SIGN_INS {
            return Err("this server holds as many web sign-ins as it keeps; sign out elsewhere or retry later".into());
        }
        by_id.insert(id.clone(), (account, token.to_string(), Instant::now()));
        Ok(id)
    }

    fn get(&self, id: &str) -> Option<(Account, String)> {
        let by_id = self.by_id.lock().unwrap();
        let (account, token, at) = by_id.get(id)?;
        (at.elapsed() < SIGN_IN_LIFETIME).then(|| (account.clone(), token.clone()))
    }

    fn remove(&self, id: &str) {
        self.by_id.lock().unwrap().remove(id);
    }
}

/// The routes of `/ui`.
pub fn routes(ui: Arc<Ui>) -> Router {
    Router::new()
        .route("/ui", get(page))
        .route("/ui/", get(page))
        .route("/ui/app.js", get(|| async { asset("text/javascript; charset=utf-8", APP_JS) }))
        .route("/ui/app.css", get(|| async { asset("text/css; charset=utf-8", APP_CSS) }))
        .route("/ui/wire.js", get(|| async { asset("text/javascript; charset=utf-8", WIRE_JS) }))
        .route("/ui/cells.js", get(|| async { asset("text/javascript; charset=utf-8", CELLS_JS) }))
        .route("/ui/follow.js", get(|| async { asset("text/javascript; charset=utf-8", FOLLOW_JS) }))
        .route("/ui/api/login", post(api::login))
        .route("/ui/api/logout", post(api::logout))
        .route("/ui/api/me", get(api::me))
        .route("/ui/api/sessions", get(api::sessions))
        .route("/ui/api/session", get(api::session))
        .route("/ui/api/notebook", get(api::notebook))
        .route("/ui/api/artifact", get(api::artifact))
        .route("/ui/api/events", get(events::events))
        .route("/ui/api/interrupt", post(actions::interrupt))
        .route("/ui/api/reset", post(actions::reset))
        .route("/ui/api/fork", post(actions::fork))
        .route("/ui/api/undo", post(actions::undo))
        .route("/ui/api", any(api::no_route))
        .route("/ui/api/", any(api::no_route))
        .route("/ui/api/{*rest}", any(api::no_route))
        .layer(axum::middleware::from_fn(guard))
        .with_state(ui)
}

async fn page() -> Response {
    asset("text/html; charset=utf-8", INDEX_HTML)
}

fn asset(content_type: &'static str, body: &'static str) -> Response {
    ([(header::CONTENT_TYPE, content_type), (header::CACHE_CONTROL, "no-cache")], body).into_response()
}

/// Headers on every `/ui` answer, and the cross-site checks on its API.
async fn guard(request: Request, next: axum::middleware::Next) -> Response {
    let path = request.uri().path();
    // EventSource cannot add a header: the event stream (read only) is checked by its origin alone.
    let needs_header = path != "/ui/api/events";
    if path.starts_with("/ui/api/")
        && let Err(refusal) = same_site(request.headers(), needs_header)
    {
        return refusal;
    }
    let api = path.starts_with("/ui/api/");
    let mut response = next.run(request).await;
    if api {
        response = json_refusal(response).await;
    }
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert("cross-origin-opener-policy", HeaderValue::from_static("same-origin"));
    headers.insert("cross-origin-resource-policy", HeaderValue::from_static("same-origin"));
    response
}

/// A refusal of the API that is not JSON yet (a body or query that did not
/// parse, which axum answers as plain text; a method the route does not take,
/// answered with no body) in the wire's shape, `{"error": …}`, its headers kept.
async fn json_refusal(response: Response) -> Response {
    let status = response.status();
    let json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|kind| kind.as_bytes().starts_with(b"application/json"));
    if !(status.is_client_error() || status.is_server_error()) || json {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    // Axum's own refusals are a line or two; a longer one is named by its status alone.
    let body = axum::body::to_bytes(body, 64 << 10).await.unwrap_or_default();
    let text: String = String::from_utf8_lossy(&body).chars().take(300).collect();
    let message =
        if text.trim().is_empty() { status.canonical_reason().unwrap_or("refused").to_string() } else { text };
    let refusal = json_error(status, &message);
    parts.headers.remove(header::CONTENT_LENGTH);
    for (name, value) in refusal.headers() {
        parts.headers.insert(name.clone(), value.clone());
    }
    Response::from_parts(parts, refusal.into_body())
}

/// Refuse an API request another site's page could have made.
#[allow(clippy::result_large_err)]
fn same_site(headers: &HeaderMap, needs_header: bool) -> Result<(), Response> {
    if needs_header && !headers.contains_key(UI_HEADER) {
        return Err(json_error(
            StatusCode::FORBIDDEN,
            "the web view's API answers the web view only: send the X-Cellbox-UI header",
        ));
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let host = headers.get(header::HOST).and_then(|host| host.to_str().ok()).unwrap_or_default();
        let origin = origin.to_str().unwrap_or_default();
        let own = origin.strip_prefix("http://").or_else(|| origin.strip_prefix("https://"));
        if !own.is_some_and(|own| own.eq_ignore_ascii_case(host)) {
            return Err(json_error(StatusCode::FORBIDDEN, "a request from another origin is refused"));
        }
    }
    if headers.get("sec-fetch-site").is_some_and(|site| site != "same-origin" && site != "none") {
        return Err(json_error(StatusCode::FORBIDDEN, "a request from another site is refused"));
    }
    Ok(())
}

/// The sign-in cookie's name for the server a request names (its `Host`'s port).
fn cookie_name(headers: &HeaderMap) -> String {
    let host = headers.get(header::HOST).and_then(|host| host.to_str().ok()).unwrap_or_default();
    let port = host.rsplit_once(':').map(|(_, port)| port).filter(|port| port.bytes().all(|b| b.is_ascii_digit()));
    format!("{COOKIE_PREFIX}{}", port.filter(|port| !port.is_empty()).unwrap_or("default"))
}

/// The sign-in a request's cookie names.
fn cookie_of(headers: &HeaderMap) -> Option<&str> {
    let wanted = cookie_name(headers);
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == wanted)
        .map(|(_, value)| value)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for (name, value) in pairs {
            headers.append(*name, HeaderValue::from_str(value).unwrap());
        }
        headers
    }

    #[test]
    fn only_the_pages_own_requests_pass() {
        assert!(
            same_site(
                &headers(&[("x-cellbox-ui", "1"), ("host", "127.0.0.1:8"), ("origin", "http://127.0.0.1:8")]),
                true
            )
            .is_ok()
        );
        assert!(same_site(&headers(&[("x-cellbox-ui", "1"), ("host", "127.0.0.1:8")]), true).is_ok());
        assert!(same_site(&headers(&[("host", "127.0.0.1:8")]), true).is_err(), "no header");
        assert!(same_site(&headers(&[("host", "127.0.0.1:8")]), false).is_ok(), "the event stream");
        let stream = [("host", "127.0.0.1:8"), ("origin", "http://evil.example")];
        assert!(same_site(&headers(&stream), false).is_err(), "the event stream from another origin");
        let other = [("x-cellbox-ui", "1"), ("host", "127.0.0.1:8"), ("origin", "http://evil.example")];
        assert!(same_site(&headers(&other), true).is_err());
        let port = [("x-cellbox-ui", "1"), ("host", "127.0.0.1:8"), ("origin", "http://127.0.0.1:9")];
        assert!(same_site(&headers(&port), true).is_err());
        let site = [("x-cellbox-ui", "1"), ("host", "127.0.0.1:8"), ("sec-fetch-site", "cross-site")];
        assert!(same_site(&headers(&site), true).is_err());
    }

    /// The page reads every route and the header from `wire.js`: the server
    /// serves each route the wire names, and checks the header it names.
    #[test]
    fn the_routes_and_header_are_the_wires() {
        assert!(UI_HEADER.eq_ignore_ascii_case(cellbox_protocol::ui::REQUEST_HEADER));
        let source = include_str!("mod.rs");
        for (_, route) in cellbox_protocol::ui::ROUTES {
            let (method, path) = route.split_once(' ').unwrap();
            let served = format!(".route({path:?}, {}(", method.to_ascii_lowercase());
            assert!(source.contains(&served), "{route} is not served as the wire says");
        }
        let served =
            source.lines().filter(|line| line.contains(".route(\"/ui/api/") && !line.contains("no_route")).count();
        assert_eq!(served, cellbox_protocol::ui::ROUTES.len(), "a route of the API the wire does not declare");
    }

    /// The page names the wire only through `wire.js`, handles every event
    /// type it declares, and names no route or type it does not.
    #[test]
    fn the_page_speaks_the_wire_through_wire_js() {
        use cellbox_protocol::ui::{LiveKind, ROUTES};
        for script in [APP_JS, CELLS_JS, FOLLOW_JS] {
            assert!(
                !script.contains("\"/ui/api/") && !script.contains(".type === \""),
                "a literal route or event type"
            );
        }
        let used = |prefix: &str| -> std::collections::BTreeSet<String> {
            APP_JS
                .match_indices(prefix)
                .filter(|(at, _)| !APP_JS[..*at].ends_with(|c: char| c.is_alphanumeric() || c == '_'))
                .map(|(at, _)| {
                    let rest = &APP_JS[at + prefix.len()..];
                    rest.chars().take_while(|c| c.is_ascii_uppercase() || *c == '_').collect::<String>()
                })
                .filter(|name| !name.is_empty())
                .collect()
        };
        let events: std::collections::BTreeSet<String> =
            LiveKind::TYPES.iter().map(|name| name.to_ascii_uppercase()).collect();
        assert_eq!(used("E."), events, "the page handles exactly the wire's event types");
        let routes: std::collections::BTreeSet<String> = ROUTES.iter().map(|(name, _)| name.to_string()).collect();
        let named = used("R.");
        assert!(named.is_subset(&routes), "the page names routes the wire lacks: {:?}", named.difference(&routes));
        assert!(WIRE_JS == cellbox_protocol::ui::javascript_module(), "wire.js is stale: run the write-schema example");
    }

    #[test]
    fn the_cookie_of_this_port_is_found_among_others() {
        let h = headers(&[("host", "127.0.0.1:8740"), ("cookie", "a=1; cellbox_ui_9=x; cellbox_ui_8740=abc; b=2")]);
        assert_eq!(cookie_of(&h), Some("abc"));
        let other = headers(&[("host", "127.0.0.1:8741"), ("cookie", "cellbox_ui_8740=abc")]);
        assert_eq!(cookie_of(&other), None, "another server's sign-in on the same host");
        assert_eq!(cookie_name(&headers(&[("host", "[::1]:7")])), "cellbox_ui_7");
        assert_eq!(cookie_name(&headers(&[("host", "example.com")])), "cellbox_ui_default");
    }

    #[test]
    fn a_sign_in_is_found_until_removed_and_unknown_ids_are_not() {
        let sign_ins = SignIns::default();
        let engine: EngineOf = Arc::new(|| Err(Box::new(json_error(StatusCode::SERVICE_UNAVAILABLE, "none"))));
        let id = sign_ins.add(Account::new("ann", engine.clone()), "t").unwrap();
        assert_eq!(id.len(), 64);
        assert_eq!(sign_ins.get(&id).unwrap().0.name, "ann");
        assert!(sign_ins.get("0").is_none());
        sign_ins.remove(&id);
        assert!(sign_ins.get(&id).is_none());
        // One principal signing in again and again drops its own oldest, no one else's.
        let bob = sign_ins.add(Account::new("bob", engine.clone()), "b").unwrap();
        let first = sign_ins.add(Account::new("ann", engine.clone()), "t").unwrap();
        for _ in 0..MAX_SIGN_INS_EACH {
            sign_ins.add(Account::new("ann", engine.clone()), "t").unwrap();
        }
        assert!(sign_ins.get(&first).is_none() && sign_ins.get(&bob).is_some());
    }
}
