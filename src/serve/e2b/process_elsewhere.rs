//! envd's processes where there is no Unix: none are served (cellbox's
//! processes rely on sessions, process groups and pseudo-terminals).

use axum::extract::Path;
use axum::response::{IntoResponse, Response};

use super::Routed;
use super::connect::{Code, RpcError};

/// No processes run here.
#[derive(Default)]
pub(crate) struct Processes;

impl Processes {
    pub fn kill_all(&self) {}
}

pub(crate) async fn rpc(Routed(_sandbox): Routed, Path(method): Path<String>) -> Response {
    RpcError::new(Code::Unimplemented, format!("process.Process/{method} needs a Unix host")).into_response()
}
