//! The part of the Connect protocol envd's clients use: the JSON codec,
//! unary calls (`application/json` in and out) and server streams
//! (`application/connect+json`: each message in an envelope of a flags byte
//! and a big-endian length, the last an end-of-stream envelope carrying the
//! error, if any). Compression is not offered, so a compressed envelope is
//! refused.
//!
//! The messages are proto3 JSON built from `serde_json` values here: the Rust
//! Connect crates tie their codec to protobuf code generation, which this one
//! JSON dialect does not need.

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures_util::Stream;
use serde_json::{Value, json};

/// An envelope's flag: the message is compressed.
const COMPRESSED: u8 = 0x01;
/// An envelope's flag: the end of a stream.
const END_STREAM: u8 = 0x02;
/// The content type of a Connect stream in JSON.
pub const STREAM_JSON: &str = "application/connect+json";

/// A Connect error code (the protocol's names, in JSON).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    InvalidArgument,
    NotFound,
    AlreadyExists,
    PermissionDenied,
    #[cfg_attr(not(unix), allow(dead_code))] // used by the processes, which need Unix
    FailedPrecondition,
    Unimplemented,
    Internal,
    Unavailable,
    #[cfg_attr(not(unix), allow(dead_code))] // used by the processes, which need Unix
    ResourceExhausted,
    #[cfg_attr(not(unix), allow(dead_code))] // used by the processes, which need Unix
    DeadlineExceeded,
}

impl Code {
    pub fn name(self) -> &'static str {
        match self {
            Code::InvalidArgument => "invalid_argument",
            Code::NotFound => "not_found",
            Code::AlreadyExists => "already_exists",
            Code::PermissionDenied => "permission_denied",
            Code::FailedPrecondition => "failed_precondition",
            Code::Unimplemented => "unimplemented",
            Code::Internal => "internal",
            Code::Unavailable => "unavailable",
            Code::ResourceExhausted => "resource_exhausted",
            Code::DeadlineExceeded => "deadline_exceeded",
        }
    }

    /// The HTTP status of a unary call that fails with this code.
    fn status(self) -> StatusCode {
        match self {
            Code::InvalidArgument | Code::FailedPrecondition => StatusCode::BAD_REQUEST,
            Code::NotFound => StatusCode::NOT_FOUND,
            Code::AlreadyExists => StatusCode::CONFLICT,
            Code::PermissionDenied => StatusCode::FORBIDDEN,
            Code::Unimplemented => StatusCode::NOT_IMPLEMENTED,
            Code::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
            Code::ResourceExhausted => StatusCode::TOO_MANY_REQUESTS,
            Code::DeadlineExceeded => StatusCode::GATEWAY_TIMEOUT,
            Code::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}

/// A failed call: its code and what to tell the caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RpcError {
    pub code: Code,
    pub message: String,
}

impl RpcError {
    pub fn new(code: Code, message: impl Into<String>) -> RpcError {
        RpcError { code, message: message.into() }
    }

    pub fn invalid(message: impl Into<String>) -> RpcError {
        RpcError::new(Code::InvalidArgument, message)
    }

    fn to_json(&self) -> Value {
        json!({ "code": self.code.name(), "message": self.message })
    }
}

impl IntoResponse for RpcError {
    /// A unary call's error.
    fn into_response(self) -> Response {
        (self.code.status(), axum::Json(self.to_json())).into_response()
    }
}

/// How a call was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Unary,
    ServerStream,
}

/// A request's one message, and how it was sent.
pub fn read_request(headers: &HeaderMap, body: &Bytes) -> Result<(Kind, Value), RpcError> {
    let content_type = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
    let content_type = content_type.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
    let encoding = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or("identity").to_string();
    match content_type.as_str() {
        "application/json" => {
            if encoding("content-encoding") != "identity" {
                return Err(RpcError::new(Code::Unimplemented, "compressed requests are not supported"));
            }
            let body: &[u8] = if body.is_empty() { b"{}" } else { body };
            let message = serde_json::from_slice(body)
                .map_err(|e| RpcError::invalid(format!("the request is not a JSON message: {e}")))?;
            Ok((Kind::Unary, message))
        }
        STREAM_JSON => {
            if encoding("connect-content-encoding") != "identity" {
                return Err(RpcError::new(Code::Unimplemented, "compressed requests are not supported"));
            }
            let (flags, message) = unwrap_envelope(body)?;
            if flags & COMPRESSED != 0 {
                return Err(RpcError::new(Code::Unimplemented, "compressed messages are not supported"));
            }
            let message = serde_json::from_slice(message)
                .map_err(|e| RpcError::invalid(format!("the request is not a JSON message: {e}")))?;
            Ok((Kind::ServerStream, message))
        }
        other => Err(RpcError::new(
            Code::Unimplemented,
            format!("content type {other:?} is not served: use the JSON codec (application/json or {STREAM_JSON})"),
        )),
    }
}

/// Every message of a client stream's body (`application/connect+json`).
#[cfg_attr(not(unix), allow(dead_code))] // used by the processes, which need Unix
pub fn read_stream_request(headers: &HeaderMap, body: &Bytes) -> Result<Vec<Value>, RpcError> {
    let content_type = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
    if !content_type.starts_with(STREAM_JSON) {
        return Err(RpcError::new(Code::Unimplemented, format!("a client stream is sent as {STREAM_JSON}")));
    }
    let mut messages = Vec::new();
    let mut rest: &[u8] = body;
    while !rest.is_empty() {
        if rest.len() < 5 {
            return Err(RpcError::invalid("the request ends inside an envelope's header"));
        }
        let flags = rest[0];
        let length = u32::from_be_bytes([rest[1], rest[2], rest[3], rest[4]]) as usize;
        let Some(message) = rest.get(5..5 + length) else {
            return Err(RpcError::invalid(format!("an envelope says {length} bytes, but fewer follow it")));
        };
        if flags & COMPRESSED != 0 {
            return Err(RpcError::new(Code::Unimplemented, "compressed messages are not supported"));
        }
        if flags & END_STREAM == 0 {
            let message = serde_json::from_slice(message)
                .map_err(|e| RpcError::invalid(format!("a request message is not JSON: {e}")))?;
            messages.push(message);
        }
        rest = &rest[5 + length..];
    }
    Ok(messages)
}

/// The one envelope of a streaming request's body: its flags and message.
fn unwrap_envelope(body: &[u8]) -> Result<(u8, &[u8]), RpcError> {
    if body.len() < 5 {
        return Err(RpcError::invalid("a stream's request must be one enveloped message"));
    }
    let flags = body[0];
    let length = u32::from_be_bytes([body[1], body[2], body[3], body[4]]) as usize;
    if body.len() - 5 != length {
        return Err(RpcError::invalid(format!(
            "the request's envelope says {length} bytes, but {} follow it: send one message",
            body.len() - 5
        )));
    }
    Ok((flags, &body[5..]))
}

fn envelope(flags: u8, message: &Value) -> Bytes {
    let json = serde_json::to_vec(message).expect("JSON values serialize");
    let mut bytes = Vec::with_capacity(json.len() + 5);
    bytes.push(flags);
    bytes.extend_from_slice(&(json.len() as u32).to_be_bytes());
    bytes.extend_from_slice(&json);
    Bytes::from(bytes)
}

/// One message of a stream.
pub fn message(message: &Value) -> Bytes {
    envelope(0, message)
}

/// The last envelope of a stream: its error, if it failed.
pub fn end(error: Option<&RpcError>) -> Bytes {
    let body = match error {
        Some(error) => json!({ "error": error.to_json() }),
        None => json!({}),
    };
    envelope(END_STREAM, &body)
}

/// A unary call's answer.
pub fn unary(message: Value) -> Response {
    axum::Json(message).into_response()
}

/// A server stream's answer: the envelopes `frames` yields (ending with [`end`]);
/// an error cuts the answer off, as a sandbox that went away does.
pub fn stream(frames: impl Stream<Item = Result<Bytes, std::io::Error>> + Send + 'static) -> Response {
    let body = Body::from_stream(frames);
    let mut response = Response::new(body);
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(STREAM_JSON));
    response
}

/// How long the client gives the call (`Connect-Timeout-Ms`), if it says.
#[cfg_attr(not(unix), allow(dead_code))] // used by the processes, which need Unix
pub fn timeout(headers: &HeaderMap) -> Option<std::time::Duration> {
    let millis = headers.get("connect-timeout-ms")?.to_str().ok()?.trim().parse::<u64>().ok()?;
    Some(std::time::Duration::from_millis(millis))
}

/// A request refused before it was read: as a stream's end when it was sent as
/// a stream (`application/connect+json`), else as a unary call's error.
pub fn refuse(headers: &HeaderMap, error: RpcError) -> Response {
    let content_type = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
    if content_type.starts_with(STREAM_JSON) { stream_error(error) } else { error.into_response() }
}

/// A stream that fails before its first message: on a stream, errors travel in the end envelope.
pub fn stream_error(error: RpcError) -> Response {
    stream(futures_util::stream::iter([Ok(end(Some(&error)))]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stream_headers() -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(STREAM_JSON));
        headers
    }

    #[test]
    fn envelopes_round_trip_and_bad_ones_are_refused() {
        let framed = message(&json!({"path": "/home/user"}));
        assert_eq!(framed[0], 0);
        let (kind, value) = read_request(&stream_headers(), &framed).unwrap();
        assert_eq!((kind, value), (Kind::ServerStream, json!({"path": "/home/user"})));
        // A length that does not match, a short body, a compressed message, bad JSON.
        let mut long = framed.to_vec();
        long.push(b' ');
        for body in [long, vec![0, 0, 0], {
            let mut compressed = framed.to_vec();
            compressed[0] = COMPRESSED;
            compressed
        }] {
            assert!(read_request(&stream_headers(), &Bytes::from(body)).is_err());
        }
        let bad = envelope(0, &json!("x"));
        let mut broken = bad.to_vec();
        broken[5] = b'{';
        assert_eq!(read_request(&stream_headers(), &Bytes::from(broken)).unwrap_err().code, Code::InvalidArgument);
        let huge = [0u8, 0xff, 0xff, 0xff, 0xff];
        assert_eq!(
            read_request(&stream_headers(), &Bytes::copy_from_slice(&huge)).unwrap_err().code,
            Code::InvalidArgument
        );
    }

    #[test]
    fn the_end_envelope_carries_the_error() {
        let end = end(Some(&RpcError::new(Code::NotFound, "no such file")));
        assert_eq!(end[0], END_STREAM);
        let body: Value = serde_json::from_slice(&end[5..]).unwrap();
        assert_eq!(body, json!({"error": {"code": "not_found", "message": "no such file"}}));
    }

    #[test]
    fn unary_requests_are_plain_json_and_other_types_are_refused() {
        let mut headers = HeaderMap::new();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json; charset=utf-8"));
        assert_eq!(read_request(&headers, &Bytes::from_static(b"{\"a\":1}")).unwrap(), (Kind::Unary, json!({"a": 1})));
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/proto"));
        assert_eq!(read_request(&headers, &Bytes::new()).unwrap_err().code, Code::Unimplemented);
    }
}
