//! The messages between the Python SDK and `cellbox sdk-server`: JSON-RPC 2.0,
//! one JSON object per line. Requests carry an `id`; while `run_code` runs,
//! the server sends `output` notifications naming that request (`call`), then
//! the response.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// JSON-RPC's error codes, plus ours from the implementation-defined range.
pub mod code {
    pub const PARSE_ERROR: i64 = -32700;
    pub const INVALID_REQUEST: i64 = -32600;
    pub const METHOD_NOT_FOUND: i64 = -32601;
    pub const INVALID_PARAMS: i64 = -32602;
    /// A context, path, command or watcher that does not exist (the SDK raises
    /// `NotFoundException`, or `FileNotFoundException` for a path).
    pub const NOT_FOUND: i64 = -32001;
    /// The call could not run (no interpreter, a bad working folder...).
    pub const FAILED: i64 = -32002;
    /// The sandbox policy refused a files call: a read of a secret location,
    /// or a write outside the writable folders (the message says how to opt out).
    pub const DENIED: i64 = -32003;
}

/// One line from the SDK.
#[derive(Debug, Deserialize)]
pub struct Request {
    #[serde(default)]
    pub id: Option<Value>,
    pub method: String,
    #[serde(default)]
    pub params: Value,
}

/// A failed request: a code and a message that says what to do.
#[derive(Debug, Clone, PartialEq)]
pub struct Failure {
    pub code: i64,
    pub message: String,
}

impl Failure {
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        Failure { code, message: message.into() }
    }

    pub fn invalid_params(message: impl Into<String>) -> Self {
        Failure::new(code::INVALID_PARAMS, message)
    }
}

/// The response line for request `id`.
pub fn response(id: &Value, outcome: Result<Value, Failure>) -> Value {
    match outcome {
        Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
        Err(failure) => {
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": failure.code, "message": failure.message}})
        }
    }
}

/// An `output` notification of the `run_code` request `call`.
pub fn output(call: &Value, fields: Value) -> Value {
    let mut params = fields;
    params["call"] = call.clone();
    json!({"jsonrpc": "2.0", "method": "output", "params": params})
}

/// `run_code`'s parameters.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunCode {
    pub code: String,
    #[serde(default)]
    pub language: Option<String>,
    #[serde(default)]
    pub context_id: Option<String>,
    #[serde(default)]
    pub envs: Option<std::collections::BTreeMap<String, String>>,
    /// Seconds; `None`: [`DEFAULT_TIMEOUT_SECS`]; `0`: as long as a cell may run.
    #[serde(default)]
    pub timeout: Option<f64>,
    /// Take a checkpoint before the run, for `undo` (cellbox's own).
    #[serde(default)]
    pub checkpoint: Option<bool>,
}

/// A run's timeout when the SDK gives none, as E2B's SDK.
pub const DEFAULT_TIMEOUT_SECS: f64 = 300.0;

/// `create_context`'s parameters.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateContext {
    #[serde(default)]
    pub language: Option<String>,
    #[serde(default)]
    pub cwd: Option<String>,
    /// cellbox's own: the context's id, chosen by the caller (a named session).
    #[serde(default)]
    pub name: Option<String>,
}

/// The parameters of the methods that name one context.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContextRef {
    pub context_id: String,
}

/// `cancel`'s parameters: the id of the `run_code` request to stop.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cancel {
    pub call: Value,
}

/// A context as the SDK sees it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ContextInfo {
    pub id: String,
    pub language: String,
    pub cwd: String,
}

/// `set_timeout`'s parameters: the sandbox ends after `seconds` without a
/// call in progress or a command running; 0 means never.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SetTimeout {
    pub seconds: f64,
}

impl SetTimeout {
    /// The limit, `None` for none; a negative or non-finite number is refused.
    pub fn limit(&self) -> Result<Option<std::time::Duration>, Failure> {
        match self.seconds {
            0.0 => Ok(None),
            // A timeout too long to count is no limit at all.
            seconds if seconds.is_finite() && seconds > 0.0 => Ok(std::time::Duration::try_from_secs_f64(seconds).ok()),
            bad => {
                Err(Failure::invalid_params(format!("set_timeout: seconds must be 0 (no limit) or more, not {bad}")))
            }
        }
    }
}

/// `files.read`'s parameters: up to `length` bytes (all when absent) from `offset`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileRead {
    pub path: String,
    #[serde(default)]
    pub offset: u64,
    #[serde(default)]
    pub length: Option<u64>,
}

/// `files.write`'s parameters: every file in one call.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileWrite {
    pub files: Vec<FileData>,
}

/// One file of `files.write`: its content in base64; `append` adds to the
/// file instead of replacing it (the later chunks of a streamed upload).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileData {
    pub path: String,
    pub data: String,
    #[serde(default)]
    pub append: bool,
}

/// `files.list`'s parameters; `depth` 1 (the default) lists the folder's own entries.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileList {
    pub path: String,
    #[serde(default)]
    pub depth: Option<i64>,
}

/// The parameters of the files methods that name one path.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FilePath {
    pub path: String,
}

/// `files.rename`'s parameters.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileRename {
    pub old_path: String,
    pub new_path: String,
}

/// `files.watch`'s parameters.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileWatch {
    pub path: String,
    #[serde(default)]
    pub recursive: bool,
    #[serde(default)]
    pub include_entry: bool,
}

/// `files.watch_events`' parameters: `wait` seconds (at most
/// [`MAX_WATCH_WAIT_SECS`]) for a first event when there is none yet.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WatchEvents {
    pub watcher_id: String,
    #[serde(default)]
    pub wait: Option<f64>,
}

/// The longest a `files.watch_events` call waits for an event.
pub const MAX_WATCH_WAIT_SECS: f64 = 10.0;

/// `files.unwatch`'s parameters.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WatcherRef {
    pub watcher_id: String,
}

/// A file, folder or symlink, with E2B's `EntryInfo` fields; `type` is
/// `file`, `dir` or `symlink` (a link whose target is missing), and
/// `modified_time` is in seconds since the Unix epoch.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EntryInfo {
    pub name: String,
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub path: String,
    pub size: u64,
    pub mode: u32,
    pub permissions: String,
    pub owner: String,
    pub group: String,
    pub modified_time: f64,
    pub symlink_target: Option<String>,
}

/// One change seen by a watcher: `name` is relative to the watched folder,
/// `type` one of `create`, `write`, `remove`, `rename` and `chmod`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FsEvent {
    pub name: String,
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub entry: Option<EntryInfo>,
}

/// `commands.start`'s parameters. `timeout` in seconds: `None` gives
/// [`DEFAULT_COMMAND_TIMEOUT_SECS`], `0` as long as a cell may run.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommandStart {
    pub cmd: String,
    #[serde(default)]
    pub envs: Option<std::collections::BTreeMap<String, String>>,
    #[serde(default)]
    pub cwd: Option<String>,
    #[serde(default)]
    pub timeout: Option<f64>,
}

/// A command's timeout when the SDK gives none, as E2B's SDK.
pub const DEFAULT_COMMAND_TIMEOUT_SECS: f64 = 60.0;

/// A command, by the id `commands.start` gave it or by its process id.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommandRef {
    #[serde(default)]
    pub id: Option<u64>,
    #[serde(default)]
    pub pid: Option<u32>,
}

/// `commands.wait`'s parameters: `from_chunk` is the index of the first
/// output chunk to send (`0`: all of it; absent: only what comes after the
/// call); `release` lets the server forget the command once it answered
/// with the result (the waiter keeps it).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommandWait {
    #[serde(default)]
    pub id: Option<u64>,
    #[serde(default)]
    pub pid: Option<u32>,
    #[serde(default)]
    pub from_chunk: Option<u64>,
    #[serde(default)]
    pub release: bool,
}

/// A running command as `commands.list` gives it (E2B's `ProcessInfo`, and
/// the command's id and how many output chunks it wrote so far: where a
/// handle that connects to it starts).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProcessInfo {
    pub id: u64,
    pub chunks: u64,
    pub pid: u32,
    pub tag: Option<String>,
    pub cmd: String,
    pub args: Vec<String>,
    pub envs: std::collections::BTreeMap<String, String>,
    pub cwd: Option<String>,
}
