//! Input to a running process: `SendInput`'s one message, and `StreamInput`,
//! a client stream of them.

use axum::body::Bytes;
use axum::http::HeaderMap;
use axum::response::Response;
use base64::Engine as _;
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;

use super::super::connect::{self, Code, RpcError};
use super::{Process, Sandbox, selected};

/// Write a `ProcessInput` (`{stdin: b64}` or `{pty: b64}`) to the process.
pub(super) async fn write_input(process: &Process, input: Option<&Value>) -> Result<(), RpcError> {
    let data = input
        .and_then(|input| input.get("stdin").or_else(|| input.get("pty")))
        .and_then(Value::as_str)
        .ok_or_else(|| RpcError::invalid("input is {\"stdin\": base64} or {\"pty\": base64}"))?;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data)
        .map_err(|e| RpcError::invalid(format!("input is not base64: {e}")))?;
    let mut stdin = process.stdin.lock().await;
    let writer = stdin.as_mut().ok_or_else(|| {
        RpcError::new(Code::FailedPrecondition, "the process's stdin is closed (or it was started without one)")
    })?;
    writer
        .write_all(&bytes)
        .await
        .map_err(|e| RpcError::new(Code::FailedPrecondition, format!("cannot write to the process: {e}")))?;
    writer
        .flush()
        .await
        .map_err(|e| RpcError::new(Code::FailedPrecondition, format!("cannot write to the process: {e}")))
}

/// `StreamInput`, a client stream: `{start: {process}}`, then `{data: {input}}`s (and keepalives).
pub(super) async fn stream_input(sandbox: &Sandbox, headers: &HeaderMap, body: &Bytes) -> Response {
    let messages = match connect::read_stream_request(headers, body) {
        Ok(messages) => messages,
        Err(error) => return connect::stream_error(error),
    };
    let mut process = None;
    for message in &messages {
        if let Some(start) = message.get("start") {
            match selected(sandbox, start, "process") {
                Ok(found) => process = Some(found),
                Err(error) => return connect::stream_error(error),
            }
        } else if let Some(data) = message.get("data") {
            let Some(process) = &process else {
                return connect::stream_error(RpcError::invalid(
                    "StreamInput starts with {\"start\": {\"process\": ...}}",
                ));
            };
            if let Err(error) = write_input(process, data.get("input")).await {
                return connect::stream_error(error);
            }
        }
    }
    let mut frames = connect::message(&json!({})).to_vec();
    frames.extend_from_slice(&connect::end(None));
    connect::stream(futures_util::stream::iter([Ok(Bytes::from(frames))]))
}
