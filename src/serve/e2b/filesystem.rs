//! envd's files: the `filesystem.Filesystem` Connect service and `/files`
//! (download, and upload as multipart or a raw body).
//!
//! Every operation is the sandbox's SDK `files.*` call: the path is judged
//! with the kernel's rights (the sandbox policy decides what may be read or
//! written, never the server's own rights), and a symlink a kernel planted is
//! followed only where the kernel itself could go.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use axum::body::{Body, Bytes};
use axum::extract::{FromRequest, Multipart, Path, Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use cellbox_sdk::wire::{self, Answer, Call, EntryInfo, EntryType, ErrorCode, Failure, FsEvent, FsEventType};
use serde::Deserialize;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::connect::{self, Code, Kind, RpcError};
use super::{ApiError, Home, Routed, Sandbox, error, rfc3339};
use crate::serve::ServerState;

/// Bytes of a file in one SDK call (a download's piece, an upload's chunk).
const CHUNK: usize = 4 << 20;
/// How long a `WatchDir` stream waits for events before it sends a keepalive.
const WATCH_WAIT_SECS: f64 = 10.0;

/// The Connect error an SDK failure is, its paths shown as the sandbox sees them.
pub(crate) fn rpc_failure(home: &Home, failure: Failure) -> RpcError {
    let code = match failure.code {
        ErrorCode::NotFound => Code::NotFound,
        ErrorCode::InvalidParams | ErrorCode::InvalidRequest | ErrorCode::ParseError => Code::InvalidArgument,
        ErrorCode::Denied => Code::PermissionDenied,
        ErrorCode::MethodNotFound => Code::Unimplemented,
        ErrorCode::Failed => Code::Internal,
    };
    RpcError::new(code, home.scrub(&failure.message))
}

async fn call(sandbox: &Sandbox, call: Call) -> Result<Answer, RpcError> {
    sandbox.link.call(call).await.map_err(|failure| rpc_failure(&sandbox.home, failure))
}

/// An entry as envd's `EntryInfo` (proto3 JSON: int64 as a string, enums by name).
pub(crate) fn entry_json(home: &Home, info: &EntryInfo) -> Value {
    let kind = match info.kind {
        EntryType::File => "FILE_TYPE_FILE",
        EntryType::Dir => "FILE_TYPE_DIRECTORY",
        EntryType::Symlink => "FILE_TYPE_SYMLINK",
    };
    let modified = SystemTime::UNIX_EPOCH + Duration::from_secs_f64(info.modified_time.max(0.0));
    let mut entry = json!({
        "name": info.name,
        "type": kind,
        "path": home.to_virtual(&info.path),
        "size": info.size.to_string(),
        "mode": info.mode,
        "permissions": info.permissions,
        "owner": info.owner,
        "group": info.group,
        "modifiedTime": rfc3339(modified),
    });
    if let Some(target) = &info.symlink_target {
        entry["symlinkTarget"] = home.to_virtual(target).into();
        entry["isSymlink"] = true.into();
    }
    entry
}

fn event_json(home: &Home, event: &FsEvent) -> Value {
    let kind = match event.kind {
        FsEventType::Create => "EVENT_TYPE_CREATE",
        FsEventType::Write => "EVENT_TYPE_WRITE",
        FsEventType::Remove => "EVENT_TYPE_REMOVE",
        FsEventType::Rename => "EVENT_TYPE_RENAME",
        FsEventType::Chmod => "EVENT_TYPE_CHMOD",
    };
    let mut value = json!({"name": event.name, "type": kind});
    if let Some(entry) = &event.entry {
        value["entry"] = entry_json(home, entry);
    }
    value
}

/// A request's string field (`path`, ...), or `invalid_argument` naming it.
fn field<'a>(message: &'a Value, name: &str) -> Result<&'a str, RpcError> {
    match message.get(name) {
        Some(Value::String(text)) => Ok(text),
        None | Some(Value::Null) => Ok(""),
        Some(_) => Err(RpcError::invalid(format!("{name} must be a string"))),
    }
}

fn flag(message: &Value, name: &str) -> bool {
    message.get(name).and_then(Value::as_bool).unwrap_or(false)
}

pub(crate) async fn rpc(
    Routed(sandbox): Routed,
    Path(method): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let (kind, message) = match connect::read_request(&headers, &body) {
        Ok(request) => request,
        Err(error) => return error.into_response(),
    };
    if method == "WatchDir" {
        return match kind {
            Kind::ServerStream => watch_dir(sandbox, message).await,
            Kind::Unary => RpcError::invalid("WatchDir is a server stream: call it as one").into_response(),
        };
    }
    if kind != Kind::Unary {
        return connect::stream_error(RpcError::invalid(format!("{method} is unary: call it as one")));
    }
    match unary(&sandbox, &method, &message).await {
        Ok(answer) => connect::unary(answer),
        Err(error) => error.into_response(),
    }
}

async fn unary(sandbox: &Sandbox, method: &str, message: &Value) -> Result<Value, RpcError> {
    let home = &sandbox.home;
    let path = || field(message, "path").map(|path| home.to_real(path));
    match method {
        "Stat" => match call(sandbox, Call::FilesGetInfo(wire::FilePath { path: path()? })).await? {
            Answer::FilesGetInfo(info) => Ok(json!({"entry": entry_json(home, &info)})),
            other => Err(out_of_turn(&other)),
        },
        "MakeDir" => {
            let path = path()?;
            match call(sandbox, Call::FilesMakeDir(wire::FilePath { path: path.clone() })).await? {
                Answer::FilesMakeDir(true) => {}
                Answer::FilesMakeDir(false) => {
                    return Err(RpcError::new(
                        Code::AlreadyExists,
                        format!("{} already exists", home.to_virtual(&path)),
                    ));
                }
                other => return Err(out_of_turn(&other)),
            }
            match call(sandbox, Call::FilesGetInfo(wire::FilePath { path })).await? {
                Answer::FilesGetInfo(info) => Ok(json!({"entry": entry_json(home, &info)})),
                other => Err(out_of_turn(&other)),
            }
        }
        "Move" => {
            let old_path = home.to_real(field(message, "source")?);
            let new_path = home.to_real(field(message, "destination")?);
            match call(sandbox, Call::FilesRename(wire::FileRename { old_path, new_path })).await? {
                Answer::FilesRename(info) => Ok(json!({"entry": entry_json(home, &info)})),
                other => Err(out_of_turn(&other)),
            }
        }
        "ListDir" => {
            let depth = match message.get("depth") {
                None | Some(Value::Null) => 1,
                Some(depth) => depth
                    .as_i64()
                    .or_else(|| depth.as_str().and_then(|text| text.parse().ok()))
                    .ok_or_else(|| RpcError::invalid("depth must be a whole number"))?
                    .max(1),
            };
            match call(sandbox, Call::FilesList(wire::FileList { path: path()?, depth: Some(depth) })).await? {
                Answer::FilesList(entries) => {
                    let entries: Vec<Value> = entries.iter().map(|info| entry_json(home, info)).collect();
                    Ok(json!({"entries": entries}))
                }
                other => Err(out_of_turn(&other)),
            }
        }
        "Remove" => {
            call(sandbox, Call::FilesRemove(wire::FilePath { path: path()? })).await?;
            Ok(json!({}))
        }
        "CreateWatcher" => {
            let watch = wire::FileWatch {
                path: path()?,
                recursive: flag(message, "recursive"),
                include_entry: flag(message, "includeEntry"),
            };
            match call(sandbox, Call::FilesWatch(watch)).await? {
                Answer::FilesWatch(result) => Ok(json!({"watcherId": result.watcher_id})),
                other => Err(out_of_turn(&other)),
            }
        }
        "GetWatcherEvents" => {
            let watcher_id = field(message, "watcherId")?.to_string();
            match call(sandbox, Call::FilesWatchEvents(wire::WatchEvents { watcher_id, wait: None })).await? {
                Answer::FilesWatchEvents(events) => {
                    let events: Vec<Value> = events.iter().map(|event| event_json(home, event)).collect();
                    Ok(json!({"events": events}))
                }
                other => Err(out_of_turn(&other)),
            }
        }
        "RemoveWatcher" => {
            let watcher_id = field(message, "watcherId")?.to_string();
            call(sandbox, Call::FilesUnwatch(wire::WatcherRef { watcher_id })).await?;
            Ok(json!({}))
        }
        other => Err(RpcError::new(Code::Unimplemented, format!("filesystem.Filesystem has no method {other:?}"))),
    }
}

fn out_of_turn(answer: &Answer) -> RpcError {
    RpcError::new(Code::Internal, format!("the sandbox answered {:?} out of turn", answer.method().name()))
}

/// `WatchDir`: a `start` message, then the folder's events as they come
/// (keepalives between), until the client goes away or the sandbox ends.
async fn watch_dir(sandbox: Arc<Sandbox>, message: Value) -> Response {
    let home = sandbox.home.clone();
    let watch = match field(&message, "path") {
        Ok(path) => wire::FileWatch {
            path: home.to_real(path),
            recursive: flag(&message, "recursive"),
            include_entry: flag(&message, "includeEntry"),
        },
        Err(error) => return connect::stream_error(error),
    };
    let watcher_id = match call(&sandbox, Call::FilesWatch(watch)).await {
        Ok(Answer::FilesWatch(result)) => result.watcher_id,
        Ok(other) => return connect::stream_error(out_of_turn(&other)),
        Err(error) => return connect::stream_error(error),
    };
    let watching = Watching { sandbox, watcher_id, started: false, ended: false };
    connect::stream(futures_util::stream::unfold(watching, |mut watching| async move {
        let frame = watching.next_frame().await?;
        Some((frame, watching))
    }))
}

/// A `WatchDir` stream's state: its watcher is removed when the stream is dropped.
struct Watching {
    sandbox: Arc<Sandbox>,
    watcher_id: String,
    started: bool,
    ended: bool,
}

impl Watching {
    async fn next_frame(&mut self) -> Option<Bytes> {
        if self.ended {
            return None;
        }
        if !self.started {
            self.started = true;
            return Some(connect::message(&json!({"start": {}})));
        }
        let events = Call::FilesWatchEvents(wire::WatchEvents {
            watcher_id: self.watcher_id.clone(),
            wait: Some(WATCH_WAIT_SECS),
        });
        let answer = tokio::select! {
            answer = call(&self.sandbox, events) => answer,
            () = self.sandbox.ended.cancelled() => Err(RpcError::new(Code::Unavailable, "the sandbox was killed")),
        };
        match answer {
            Ok(Answer::FilesWatchEvents(events)) if events.is_empty() => {
                Some(connect::message(&json!({"keepalive": {}})))
            }
            Ok(Answer::FilesWatchEvents(events)) => {
                let mut frames = Vec::new();
                for event in &events {
                    frames.extend_from_slice(&connect::message(
                        &json!({"filesystem": event_json(&self.sandbox.home, event)}),
                    ));
                }
                Some(Bytes::from(frames))
            }
            Ok(other) => {
                self.ended = true;
                Some(connect::end(Some(&out_of_turn(&other))))
            }
            Err(error) => {
                self.ended = true;
                Some(connect::end(Some(&error)))
            }
        }
    }
}

impl Drop for Watching {
    fn drop(&mut self) {
        let (sandbox, watcher_id) = (self.sandbox.clone(), self.watcher_id.clone());
        tokio::spawn(async move {
            let _ = sandbox.link.call(Call::FilesUnwatch(wire::WatcherRef { watcher_id })).await;
        });
    }
}

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
        let gzip = request.headers().get(header::CONTENT_ENCODING).is_some_and(|value| value.as_bytes() == b"gzip");
        if gzip {
            return error(
                StatusCode::BAD_REQUEST,
                "gzip-encoded uploads are not supported by cellbox serve: upload without gzip",
            )
            .into_response();
        }
        let stream = request.into_body().into_data_stream();
        upload_stream(&sandbox, path, stream).await.map(|info| vec![info])
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
        infos.push(upload_stream(sandbox, &path, stream).await?);
    }
    if infos.is_empty() {
        return Err(error(StatusCode::BAD_REQUEST, "no file in the request: send parts named \"file\""));
    }
    Ok(infos)
}

/// Write one file from a stream of bytes: the first chunk replaces it, the rest are appended.
async fn upload_stream<S, E>(sandbox: &Sandbox, path: &str, stream: S) -> Result<Value, ApiError>
where
    S: futures_util::Stream<Item = Result<Bytes, E>>,
    E: std::fmt::Display,
{
    use futures_util::StreamExt as _;
    let real = sandbox.home.to_real(path);
    let mut stream = std::pin::pin!(stream);
    let mut pending = Vec::new();
    let mut first = true;
    loop {
        let next = stream.next().await;
        let done = next.is_none();
        if let Some(chunk) = next {
            let chunk = chunk.map_err(|e| error(StatusCode::BAD_REQUEST, format!("the upload broke off: {e}")))?;
            pending.extend_from_slice(&chunk);
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

    #[test]
    fn entries_are_proto3_json_with_the_sandbox_paths() {
        let home = Home::new("/srv/a/e2b/x".into());
        let info = EntryInfo {
            name: "f.txt".into(),
            kind: EntryType::File,
            path: "/srv/a/e2b/x/f.txt".into(),
            size: 12,
            mode: 0o644,
            permissions: "-rw-r--r--".into(),
            owner: "u".into(),
            group: "g".into(),
            modified_time: 1.5,
            symlink_target: None,
        };
        let entry = entry_json(&home, &info);
        assert_eq!(entry["path"], "/home/user/f.txt");
        assert_eq!(entry["size"], "12");
        assert_eq!(entry["type"], "FILE_TYPE_FILE");
        assert_eq!(entry["modifiedTime"], "1970-01-01T00:00:01.500Z");
        assert!(entry.get("symlinkTarget").is_none());
    }
}
