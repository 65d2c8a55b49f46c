//! envd's `/files`: download a file, and upload files as multipart parts or
//! one raw body (gzip-compressed or not), a piece at a time in both
//! directions. A request names its sandbox by its headers and access token,
//! or is a signed URL (E2B's `download_url`/`upload_url`): the sandbox whose
//! token signs it is the one it is for.
//!
//! Like the Connect service ([`super::filesystem`]), every read and write is
//! the sandbox's SDK `files.*` call, with the kernel's rights.

use std::sync::Arc;
use std::time::SystemTime;

use axum::body::{Body, Bytes};
use axum::extract::{FromRequest, Multipart, Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use cellbox_sdk::wire::{self, Answer, Call, ErrorCode, Failure};
use serde::Deserialize;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::{ApiError, Home, Sandbox, error};
use crate::serve::ServerState;

/// Bytes of a file in one SDK call (a download's piece, an upload's chunk).
const CHUNK: usize = 4 << 20;

/// `/files`' query.
#[derive(Debug, Deserialize)]
pub(crate) struct FilesQuery {
    path: Option<String>,
    username: Option<String>,
    signature: Option<String>,
    signature_expiration: Option<u64>,
}

/// The signature of a signed `/files` URL: `v1_` and the unpadded base64 of
/// the SHA-256 of `path:operation:username:token[:expiration]`.
fn signature(path: &str, operation: &str, username: &str, token: &str, expiration: Option<u64>) -> String {
    let mut raw = format!("{path}:{operation}:{username}:{token}");
    if let Some(expiration) = expiration {
        raw.push_str(&format!(":{expiration}"));
    }
    let digest = Sha256::digest(raw.as_bytes());
    format!("v1_{}", base64::engine::general_purpose::STANDARD_NO_PAD.encode(digest))
}

/// The sandbox a `/files` request is for: named and proven by its headers,
/// or found by its URL's signature (a signed URL names no sandbox: the one
/// whose token signs it is the one).
fn files_sandbox(
    state: &ServerState,
    headers: &HeaderMap,
    query: &FilesQuery,
    operation: &str,
) -> Result<Arc<Sandbox>, ApiError> {
    let named = headers.get("e2b-sandbox-id").and_then(|value| value.to_str().ok());
    if let Some(id) = named
        && let Some(sandbox) = state.e2b.get(id)
        && sandbox.admits(headers)
    {
        return Ok(sandbox);
    }
    let Some(given) = &query.signature else {
        return Err(match named {
            Some(id) => super::not_running(id),
            None => error(StatusCode::UNAUTHORIZED, "send the sandbox's access token (X-Access-Token) or a signed URL"),
        });
    };
    if let Some(expiration) = query.signature_expiration {
        let now = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_secs());
        if expiration < now {
            return Err(error(StatusCode::UNAUTHORIZED, "signature is already expired"));
        }
    }
    let path = query.path.as_deref().unwrap_or("");
    let username = query.username.as_deref().unwrap_or("");
    let signs = |sandbox: &Sandbox| {
        let expected = signature(path, operation, username, &sandbox.access_token, query.signature_expiration);
        super::constant_time_eq(expected.as_bytes(), given.as_bytes())
    };
    let found = match named {
        Some(id) => state.e2b.get(id).filter(|sandbox| signs(sandbox)),
        None => state.e2b.find(signs),
    };
    found.ok_or_else(|| error(StatusCode::UNAUTHORIZED, "the URL's signature is not valid"))
}

/// The `/files` error an SDK failure is (`{code, message}`).
fn files_failure(home: &Home, failure: Failure) -> ApiError {
    let status = match failure.code {
        ErrorCode::NotFound => StatusCode::NOT_FOUND,
        ErrorCode::InvalidParams | ErrorCode::InvalidRequest | ErrorCode::ParseError => StatusCode::BAD_REQUEST,
        ErrorCode::Denied => StatusCode::FORBIDDEN,
        ErrorCode::MethodNotFound | ErrorCode::Failed => StatusCode::INTERNAL_SERVER_ERROR,
    };
    error(status, home.scrub(&failure.message))
}

/// `GET /files?path=`: the file's bytes, read a piece at a time as they are sent.
pub(crate) async fn download(
    State(state): State<Arc<ServerState>>,
    headers: HeaderMap,
    Query(query): Query<FilesQuery>,
) -> Response {
    let sandbox = match files_sandbox(&state, &headers, &query, "read") {
        Ok(sandbox) => sandbox,
        Err(refusal) => return refusal.into_response(),
    };
    let Some(path) = query.path.as_deref().filter(|path| !path.is_empty()) else {
        return error(StatusCode::BAD_REQUEST, "name the file: /files?path=...").into_response();
    };
    let real = sandbox.home.to_real(path);
    // The first piece is read before answering: a missing file is a 404, not a broken body.
    let first = match read_piece(&sandbox, &real, 0).await {
        Ok(piece) => piece,
        Err(failure) => return files_failure(&sandbox.home, failure).into_response(),
    };
    let name = std::path::Path::new(path).file_name().map(|name| name.to_string_lossy().into_owned());
    let reading = Reading { sandbox, path: real, offset: first.0.len() as u64, first: Some(first.0), eof: first.1 };
    let body = Body::from_stream(futures_util::stream::unfold(reading, |mut reading| async move {
        let piece = reading.next_piece().await?;
        Some((piece, reading))
    }));
    let mut response = Response::new(body);
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/octet-stream"));
    // A sandbox's bytes, served from the live view's origin: a browser must never read them as a
    // page of that origin (no sniffing into HTML; rendered anyway, a sandboxed document).
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static("sandbox; default-src 'none'"));
    if let Some(value) = name.and_then(|name| HeaderValue::from_str(&format!("inline; filename={name:?}")).ok()) {
        headers.insert(header::CONTENT_DISPOSITION, value);
    }
    response
}

/// One piece of a file from `offset`, and whether it is the last.
async fn read_piece(sandbox: &Sandbox, path: &str, offset: u64) -> Result<(Vec<u8>, bool), Failure> {
    let read = wire::FileRead { path: path.to_string(), offset, length: Some(CHUNK as u64) };
    match sandbox.link.call(Call::FilesRead(read)).await? {
        Answer::FilesRead(result) => {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(result.data)
                .map_err(|e| Failure::new(ErrorCode::Failed, format!("the file's content did not decode: {e}")))?;
            Ok((bytes, result.eof))
        }
        other => Err(Failure::new(ErrorCode::Failed, format!("{:?} answered out of turn", other.method().name()))),
    }
}

struct Reading {
    sandbox: Arc<Sandbox>,
    path: String,
    offset: u64,
    first: Option<Vec<u8>>,
    eof: bool,
}

impl Reading {
    async fn next_piece(&mut self) -> Option<Result<Bytes, std::io::Error>> {
        if let Some(first) = self.first.take() {
            return Some(Ok(Bytes::from(first)));
        }
        if self.eof {
            return None;
        }
        match read_piece(&self.sandbox, &self.path, self.offset).await {
            Ok((bytes, eof)) => {
                self.eof = eof || bytes.is_empty();
                self.offset += bytes.len() as u64;
                Some(Ok(Bytes::from(bytes)))
            }
            // The answer has begun: a failure now can only cut the body short.
            Err(failure) => {
                self.eof = true;
                Some(Err(std::io::Error::other(failure.message)))
            }
        }
    }
}

/// `POST /files`: one file as the raw body (`path` in the query), or files as
/// multipart parts named `file` (each part's file name its path, or the
/// query's `path` for a single part). Written a chunk at a time.
pub(crate) async fn upload(
    State(state): State<Arc<ServerState>>,
    Query(query): Query<FilesQuery>,
    request: Request,
) -> Response {
    let sandbox = match files_sandbox(&state, request.headers(), &query, "write") {
        Ok(sandbox) => sandbox,
        Err(refusal) => return refusal.into_response(),
    };
    if request.headers().keys().any(|name| name.as_str().starts_with("x-metadata-")) {
        return error(
            StatusCode::BAD_REQUEST,
            "file metadata (X-Metadata-* headers) is not supported by cellbox serve",
        )
        .into_response();
    }
    let content_type =
        request.headers().get(header::CONTENT_TYPE).and_then(|value| value.to_str().ok()).unwrap_or("").to_string();
    let written = if content_type.starts_with("multipart/form-data") {
        let multipart = match Multipart::from_request(request, &state).await {
            Ok(multipart) => multipart,
            Err(rejection) => {
                return error(StatusCode::BAD_REQUEST, format!("not a multipart body: {rejection}")).into_response();
            }
        };
        upload_parts(&sandbox, query.path.as_deref(), multipart).await
    } else {
        let Some(path) = query.path.as_deref().filter(|path| !path.is_empty()) else {
            return error(StatusCode::BAD_REQUEST, "name the file: /files?path=...").into_response();
        };
        let encoding =
            request.headers().get(header::CONTENT_ENCODING).map(|value| value.as_bytes().to_ascii_lowercase());
        let gzip = match encoding.as_deref() {
            None | Some(b"identity") => false,
            Some(b"gzip") => true,
            Some(other) => {
                let other = String::from_utf8_lossy(other);
                return error(
                    StatusCode::BAD_REQUEST,
                    format!("content encoding {other:?} is not supported: send gzip or none"),
                )
                .into_response();
            }
        };
        let stream = request.into_body().into_data_stream();
        upload_stream(&sandbox, path, stream, gzip).await.map(|info| vec![info])
    };
    match written {
        Ok(infos) => axum::Json(infos).into_response(),
        Err(refusal) => refusal.into_response(),
    }
}

async fn upload_parts(
    sandbox: &Sandbox,
    query_path: Option<&str>,
    mut multipart: Multipart,
) -> Result<Vec<Value>, ApiError> {
    let mut infos = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut parts = 0usize;
    loop {
        let field = match multipart.next_field().await {
            Ok(Some(field)) => field,
            Ok(None) => break,
            Err(e) => return Err(error(StatusCode::BAD_REQUEST, format!("the multipart body is broken: {e}"))),
        };
        if field.name() != Some("file") {
            continue;
        }
        parts += 1;
        let name = field.file_name().map(str::to_string);
        // One part takes the query's path; several take their own file names.
        let path = match (query_path.filter(|path| !path.is_empty()), name) {
            (Some(path), _) if parts == 1 => path.to_string(),
            (_, Some(name)) if !name.is_empty() => name,
            _ => return Err(error(StatusCode::BAD_REQUEST, "each file part needs a file name (its path)")),
        };
        if !seen.insert(path.clone()) {
            return Err(error(StatusCode::BAD_REQUEST, format!("{path} is written twice in one request")));
        }
        let stream = futures_util::stream::unfold(field, |mut field| async move {
            match field.chunk().await {
                Ok(Some(chunk)) => Some((Ok(chunk), field)),
                Ok(None) => None,
                Err(e) => Some((Err(axum::Error::new(e)), field)),
            }
        });
        infos.push(upload_stream(sandbox, &path, stream, false).await?);
    }
    if infos.is_empty() {
        return Err(error(StatusCode::BAD_REQUEST, "no file in the request: send parts named \"file\""));
    }
    Ok(infos)
}

/// Write one file from a stream of bytes (gzip-compressed when `gzip`, unpacked as it
/// comes): the first chunk replaces the file, the rest are appended.
async fn upload_stream<S, E>(sandbox: &Sandbox, path: &str, stream: S, gzip: bool) -> Result<Value, ApiError>
where
    S: futures_util::Stream<Item = Result<Bytes, E>>,
    E: std::fmt::Display,
{
    use futures_util::StreamExt as _;
    use std::io::Write as _;
    let real = sandbox.home.to_real(path);
    let mut stream = std::pin::pin!(stream);
    let mut pending = Vec::new();
    let mut unpacking = gzip.then(|| flate2::write::GzDecoder::new(Vec::new()));
    let bad_gzip = |e: std::io::Error| error(StatusCode::BAD_REQUEST, format!("the upload is not valid gzip: {e}"));
    let mut first = true;
    loop {
        let next = stream.next().await;
        let done = next.is_none();
        if let Some(chunk) = next {
            let chunk = chunk.map_err(|e| error(StatusCode::BAD_REQUEST, format!("the upload broke off: {e}")))?;
            match &mut unpacking {
                Some(decoder) => {
                    decoder.write_all(&chunk).map_err(bad_gzip)?;
                    pending.append(decoder.get_mut());
                }
                None => pending.extend_from_slice(&chunk),
            }
        }
        if done && let Some(decoder) = &mut unpacking {
            decoder.try_finish().map_err(bad_gzip)?;
            pending.append(decoder.get_mut());
        }
        while pending.len() >= CHUNK || (done && (first || !pending.is_empty())) {
            let take = pending.len().min(CHUNK);
            let piece: Vec<u8> = pending.drain(..take).collect();
            let data = base64::engine::general_purpose::STANDARD.encode(&piece);
            let file = wire::FileData { path: real.clone(), data, append: !first };
            first = false;
            match sandbox.link.call(Call::FilesWrite(wire::FileWrite { files: vec![file] })).await {
                Ok(_) => {}
                Err(failure) => return Err(files_failure(&sandbox.home, failure)),
            }
            if pending.is_empty() {
                break;
            }
        }
        if done {
            break;
        }
    }
    let name = std::path::Path::new(&real).file_name().map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    Ok(json!({"name": name, "type": "file", "path": sandbox.home.to_virtual(&real)}))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_are_v1_and_unpadded_base64_of_the_sha256() {
        // sha256("/home/user/a.txt:read::tok") in standard base64, without its padding.
        let digest = Sha256::digest(b"/home/user/a.txt:read::tok");
        let expected = format!("v1_{}", base64::engine::general_purpose::STANDARD.encode(digest).trim_end_matches('='));
        assert_eq!(signature("/home/user/a.txt", "read", "", "tok", None), expected);
        assert_ne!(signature("/home/user/a.txt", "read", "", "tok", Some(1)), expected);
        assert_ne!(signature("/home/user/a.txt", "write", "", "tok", None), expected);
    }
}
