//! The web view on a port of its own, for a front end that has no HTTP server
//! (`cellbox mcp --ui`): loopback only, one engine, and a one-time link.
//!
//! The link carries a code in its fragment (`/ui/#once=CODE`), which browsers
//! never send in a request or a `Referer`; the page trades it for a sign-in
//! cookie, and the code is spent. Anyone else on the machine who reaches the
//! port still has to sign in, and has nothing to sign in with.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use futures_util::future::BoxFuture;

use super::super::hosts::{AllowedHosts, check};
use super::{Account, Host, Ui, json_error};
use crate::tool::EvalEngine;

/// One engine, signed in once with the code of the printed link.
pub struct OneTimeLink {
    account: Account,
    code: Mutex<Option<String>>,
}

impl OneTimeLink {
    /// The host of `engine`, signed in as `name`, and its code.
    pub fn new(name: &str, engine: Arc<EvalEngine>) -> Result<(OneTimeLink, String), String> {
        let mut bytes = [0u8; 24];
        getrandom::fill(&mut bytes).map_err(|e| format!("no random numbers from the OS: {e}"))?;
        let code: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        let account = Account::new(name, Arc::new(move || Ok(engine.clone())));
        Ok((OneTimeLink { account, code: Mutex::new(Some(code.clone())) }, code))
    }
}

impl Host for OneTimeLink {
    fn open_account(&self) -> Option<Account> {
        None
    }

    fn sign_in<'a>(&'a self, token: &'a str, _: &'a HeaderMap) -> BoxFuture<'a, Result<Account, Response>> {
        let mut code = self.code.lock().unwrap();
        let matches = code.as_deref().is_some_and(|code| same(code.as_bytes(), token.as_bytes()));
        let answer = if matches {
            *code = None;
            Ok(self.account.clone())
        } else if code.is_none() {
            Err(json_error(
                StatusCode::UNAUTHORIZED,
                "the one-time link was used already: restart `cellbox mcp --ui` for a new one",
            ))
        } else {
            Err(json_error(StatusCode::UNAUTHORIZED, "not the code of the link `cellbox mcp --ui` printed"))
        };
        Box::pin(async move { answer })
    }

    /// The code's one sign-in is the browser's for its lifetime.
    fn still_valid<'a>(&'a self, _: &'a str, _: &'a Account) -> BoxFuture<'a, bool> {
        Box::pin(async { true })
    }

    fn one_time_link(&self) -> bool {
        true
    }
}

/// Equal, in a time that does not depend on where they differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |diff, (x, y)| diff | (x ^ y)) == 0
}

/// Serve `ui` on `address` (a loopback one) until its stop token is cancelled;
/// the address it listens on (the port chosen, for `:0`).
pub async fn listen(address: SocketAddr, ui: Arc<Ui>) -> Result<SocketAddr, String> {
    if !address.ip().is_loopback() {
        return Err(format!(
            "the web view listens on loopback only ({address} is not): it is plain HTTP. Use `cellbox serve`, \
             with tokens and TLS, to show sessions to other machines"
        ));
    }
    let listener =
        tokio::net::TcpListener::bind(address).await.map_err(|e| format!("cannot listen on {address}: {e}"))?;
    let bound = listener.local_addr().map_err(|e| e.to_string())?;
    let names = ["localhost".to_string(), "127.0.0.1".to_string(), "::1".to_string(), bound.ip().to_string()];
    let allowed = Arc::new(AllowedHosts::new(&names));
    let stop = ui.stop.clone();
    let app = super::routes(ui).layer(axum::middleware::from_fn_with_state(allowed, check));
    let listener = axum::serve::ListenerExt::tap_io(listener, |stream: &mut tokio::net::TcpStream| {
        let _ = stream.set_nodelay(true);
    });
    tokio::spawn(async move {
        let served = axum::serve(listener, app).with_graceful_shutdown(async move { stop.cancelled().await });
        if let Err(error) = served.await {
            tracing::warn!("the web view stopped: {error}");
        }
    });
    Ok(bound)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_code_signs_in_once_and_nothing_else_does() {
        let engine = Arc::new(EvalEngine::new(crate::tool::EngineConfig::new(std::env::temp_dir())));
        let (link, code) = OneTimeLink::new("local", engine).unwrap();
        assert_eq!(code.len(), 48);
        let headers = HeaderMap::new();
        assert!(link.sign_in("", &headers).await.is_err());
        assert!(link.sign_in(&code[..47], &headers).await.is_err());
        assert!(link.sign_in(&code, &headers).await.is_ok());
        let again = link.sign_in(&code, &headers).await.unwrap_err();
        assert_eq!(again.status(), StatusCode::UNAUTHORIZED);
    }

    #[tokio::test]
    async fn only_loopback_addresses_are_served() {
        let engine = Arc::new(EvalEngine::new(crate::tool::EngineConfig::new(std::env::temp_dir())));
        let (link, _) = OneTimeLink::new("local", engine).unwrap();
        let ui = Ui::new(Box::new(link), false, tokio_util::sync::CancellationToken::new());
        let error = listen("0.0.0.0:0".parse().unwrap(), ui).await.unwrap_err();
        assert!(error.contains("loopback only"), "{error}");
    }
}
