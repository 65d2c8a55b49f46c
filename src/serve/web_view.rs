//! `cellbox serve`'s side of the web view ([`crate::web::ui`]): its tokens
//! (and JWTs) sign in, and each principal sees its own engine, as on `/mcp`.

use std::sync::{Arc, Weak};

use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use futures_util::future::BoxFuture;

use super::tokens::Identity;
use super::{Auth, LOCAL_PRINCIPAL, ServerState, authenticate, principal_refusal};
use crate::tool::EvalEngine;
use crate::web::ui::{Account, Host};

/// The server, held weakly: the page must not keep a stopped server alive.
pub(super) struct ServeHost(pub(super) Weak<ServerState>);

impl ServeHost {
    fn account(&self, identity: Identity) -> Account {
        let state = self.0.clone();
        let name = identity.name.clone();
        let admin = identity.limits.admin;
        Account::new(
            name,
            Arc::new(move || {
                let state = state.upgrade().ok_or_else(|| Box::new(stopping()))?;
                let principal = state.principals.get(&identity);
                let refusal = |e| Box::new(principal_refusal(&identity.name, e));
                principal.map(|principal| principal.engine.clone()).map_err(refusal)
            }),
        )
        .admin(admin)
    }
}

fn stopping() -> Response {
    super::json_error(axum::http::StatusCode::SERVICE_UNAVAILABLE, "the server is stopping")
}

impl Host for ServeHost {
    fn open_account(&self) -> Option<Account> {
        let state = self.0.upgrade()?;
        matches!(state.auth, Auth::Off).then(|| self.account(Identity::named(LOCAL_PRINCIPAL)))
    }

    fn sign_in<'a>(&'a self, token: &'a str, headers: &'a HeaderMap) -> BoxFuture<'a, Result<Account, Response>> {
        Box::pin(async move {
            let Some(state) = self.0.upgrade() else { return Err(stopping()) };
            match authenticate(&state.auth, Some(token)).await {
                Ok(identity) => Ok(self.account(identity)),
                Err(message) => Err(state.unauthorized(headers, message).into_response()),
            }
        })
    }

    fn still_valid<'a>(&'a self, token: &'a str, account: &'a Account) -> BoxFuture<'a, bool> {
        Box::pin(async move {
            let Some(state) = self.0.upgrade() else { return false };
            authenticate(&state.auth, Some(token))
                .await
                .is_ok_and(|identity| identity.name == account.name && identity.limits.admin == account.admin)
        })
    }

    fn others(&self) -> Vec<(String, Arc<EvalEngine>)> {
        self.0.upgrade().map(|state| state.principals.main_engines()).unwrap_or_default()
    }
}
