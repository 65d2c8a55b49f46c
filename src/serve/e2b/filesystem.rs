//! envd's `filesystem.Filesystem` Connect service (Stat, MakeDir, Move,
//! ListDir, Remove, the `WatchDir` stream and the polled watchers); `/files`
//! is [`super::files`].
//!
//! Every operation is the sandbox's SDK `files.*` call: the path is judged
//! with the kernel's rights (the sandbox policy decides what may be read or
//! written, never the server's own rights), and a symlink a kernel planted is
//! followed only where the kernel itself could go.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use axum::body::Bytes;
use axum::extract::Path;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use cellbox_sdk::wire::{self, Answer, Call, EntryInfo, EntryType, ErrorCode, Failure, FsEvent, FsEventType};
use serde_json::{Value, json};

use super::connect::{self, Code, Kind, RpcError};
use super::{Home, Routed, Sandbox, rfc3339};

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
    // A symlink is described by its target (its type too), as E2B's tests expect.
    if let Some(target) = &info.symlink_target {
        entry["symlinkTarget"] = home.to_virtual(target).into();
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
        Err(error) => return connect::refuse(&headers, error),
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
        Some((Ok(frame), watching))
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

#[cfg(test)]
mod tests {
    use super::*;

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
