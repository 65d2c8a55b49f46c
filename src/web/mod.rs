//! What the HTTP front ends share: the `Host` check that keeps web pages from
//! reaching a loopback server through a name they control ([`hosts`]), the
//! web view of sessions ([`ui`], on `cellbox serve` and `cellbox mcp --ui`),
//! and their JSON errors.

pub mod hosts;
pub mod ui;

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

/// `{"error": message}` with `status`.
pub fn json_error(status: StatusCode, message: &str) -> Response {
    (status, axum::Json(serde_json::json!({ "error": message }))).into_response()
}
