//! The Python SDK's wire: JSON-RPC 2.0 between the SDK (`from cellbox import
//! Sandbox`) and its engine, one JSON object per line, the same in the SDK's
//! own process, on `cellbox sdk-server`'s stdin and stdout, and on a `cellbox
//! serve` connection.
//!
//! Every method is declared once, in [`sdk_methods!`]'s list below: its name,
//! the type of its parameters and the type of its result. From that list come
//! [`Method`] (name ↔ variant), [`Call`] (a method with its typed parameters),
//! [`Answer`] (a method's typed result), the JSON Schemas in `schema/sdk.json`
//! ([`schema`]) and the SDK's `python/cellbox/_wire.py` ([`python_module`]).
//! The errors a call can end with are [`ErrorCode`]s; the one notification is
//! `output` ([`Notification`]).
//!
//! Requests carry an `id`; while `run_code` or `commands.wait` runs, the
//! server sends `output` notifications naming that request (`call`), then the
//! response. A request without an `id` (`cancel`, as the SDK sends it) gets
//! no response.

use std::borrow::Cow;
use std::collections::BTreeMap;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value, json};

use crate::MimeBundle;

// ---------------------------------------------------------------------------
// Errors

/// The codes of a failed call: JSON-RPC's own, then ours from its
/// implementation-defined range.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    /// A line that is not a JSON-RPC request.
    ParseError,
    /// A request the server will not take (a line over the remote limit).
    InvalidRequest,
    /// A method the engine does not know: it is older than the SDK.
    MethodNotFound,
    /// Parameters missing, of the wrong type, or out of range.
    InvalidParams,
    /// A context, path, command or watcher that does not exist.
    NotFound,
    /// The call could not run (no interpreter, a bad working folder...).
    Failed,
    /// The sandbox policy refused the call: a read of a secret location, or a
    /// write outside the writable folders (the message says how to opt out).
    Denied,
}

impl ErrorCode {
    /// Every code, in the order the docs list them.
    pub const ALL: [ErrorCode; 7] = [
        ErrorCode::ParseError,
        ErrorCode::InvalidRequest,
        ErrorCode::MethodNotFound,
        ErrorCode::InvalidParams,
        ErrorCode::NotFound,
        ErrorCode::Failed,
        ErrorCode::Denied,
    ];

    /// The number on the wire.
    pub const fn code(self) -> i64 {
        match self {
            ErrorCode::ParseError => -32700,
            ErrorCode::InvalidRequest => -32600,
            ErrorCode::MethodNotFound => -32601,
            ErrorCode::InvalidParams => -32602,
            ErrorCode::NotFound => -32001,
            ErrorCode::Failed => -32002,
            ErrorCode::Denied => -32003,
        }
    }

    /// Its name as a constant (`INVALID_PARAMS`), as the Python SDK names it.
    pub const fn name(self) -> &'static str {
        match self {
            ErrorCode::ParseError => "PARSE_ERROR",
            ErrorCode::InvalidRequest => "INVALID_REQUEST",
            ErrorCode::MethodNotFound => "METHOD_NOT_FOUND",
            ErrorCode::InvalidParams => "INVALID_PARAMS",
            ErrorCode::NotFound => "NOT_FOUND",
            ErrorCode::Failed => "FAILED",
            ErrorCode::Denied => "DENIED",
        }
    }

    /// The code with number `code`, if it is one of ours.
    pub fn from_code(code: i64) -> Option<ErrorCode> {
        ErrorCode::ALL.into_iter().find(|known| known.code() == code)
    }
}

impl Serialize for ErrorCode {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_i64(self.code())
    }
}

impl<'de> Deserialize<'de> for ErrorCode {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let code = i64::deserialize(deserializer)?;
        ErrorCode::from_code(code).ok_or_else(|| serde::de::Error::custom(format!("unknown error code {code}")))
    }
}

impl JsonSchema for ErrorCode {
    fn schema_name() -> Cow<'static, str> {
        "ErrorCode".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        let codes: Vec<i64> = ErrorCode::ALL.iter().map(|code| code.code()).collect();
        let names: Vec<&str> = ErrorCode::ALL.iter().map(|code| code.name()).collect();
        json_schema!({
            "type": "integer",
            "enum": codes,
            "description": format!("One of (in this order): {}", names.join(", ")),
        })
    }
}

/// A failed call: a code and a message that says what to do (a response's `error`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Failure {
    pub code: ErrorCode,
    pub message: String,
}

impl Failure {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Failure { code, message: message.into() }
    }

    pub fn invalid_params(message: impl Into<String>) -> Self {
        Failure::new(ErrorCode::InvalidParams, message)
    }
}

// ---------------------------------------------------------------------------
// The methods

/// Declares the methods: `Variant = "name" (Params) -> Result`.
macro_rules! sdk_methods {
    ($($(#[doc = $doc:literal])* $variant:ident = $name:literal ($params:ty) -> $result:ty,)+) => {
        /// An SDK method, by name.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Method {
            $($(#[doc = $doc])* $variant,)+
        }

        impl Method {
            /// Every method, in the order they are declared.
            pub const ALL: &'static [Method] = &[$(Method::$variant,)+];

            /// Its name on the wire.
            pub const fn name(self) -> &'static str {
                match self {
                    $(Method::$variant => $name,)+
                }
            }

            /// The method called `name`.
            pub fn from_name(name: &str) -> Option<Method> {
                match name {
                    $($name => Some(Method::$variant),)+
                    _ => None,
                }
            }

            /// What the method does, from its declaration.
            pub fn doc(self) -> String {
                let lines: &[&str] = match self {
                    $(Method::$variant => &[$($doc),*],)+
                };
                lines.iter().map(|line| line.trim()).collect::<Vec<_>>().join(" ")
            }

            /// Its result, typed.
            pub fn parse_result(self, result: Value) -> Result<Answer, serde_json::Error> {
                match self {
                    $(Method::$variant => serde_json::from_value::<$result>(result).map(Answer::$variant),)+
                }
            }

            fn schemas(self, generator: &mut SchemaGenerator) -> (Schema, Schema) {
                match self {
                    $(Method::$variant => (generator.subschema_for::<$params>(), generator.subschema_for::<$result>()),)+
                }
            }
        }

        /// A call: a method and its typed parameters.
        #[derive(Debug, Clone, PartialEq)]
        pub enum Call {
            $($(#[doc = $doc])* $variant($params),)+
        }

        impl Call {
            pub fn method(&self) -> Method {
                match self {
                    $(Call::$variant(_) => Method::$variant,)+
                }
            }

            /// The call of `method` with `params` (none given: `{}`).
            pub fn parse(method: &str, params: Value) -> Result<Call, CallError> {
                let params = if params.is_null() { Value::Object(Map::new()) } else { params };
                let method = Method::from_name(method).ok_or_else(|| CallError::UnknownMethod(method.to_string()))?;
                let bad = |error: serde_json::Error| CallError::BadParams { method, error: error.to_string() };
                Ok(match method {
                    $(Method::$variant => Call::$variant(serde_json::from_value(params).map_err(bad)?),)+
                })
            }

            /// Its parameters as JSON.
            pub fn params(&self) -> Value {
                match self {
                    $(Call::$variant(params) => serde_json::to_value(params),)+
                }
                .expect("parameters serialize")
            }
        }

        /// A call's result, typed.
        #[derive(Debug, Clone, PartialEq)]
        pub enum Answer {
            $($variant($result),)+
        }

        impl Answer {
            pub fn method(&self) -> Method {
                match self {
                    $(Answer::$variant(_) => Method::$variant,)+
                }
            }

            /// The result as JSON.
            pub fn to_value(&self) -> Value {
                match self {
                    $(Answer::$variant(result) => serde_json::to_value(result),)+
                }
                .expect("results serialize")
            }
        }
    };
}

sdk_methods! {
    /// Start the sandbox: which languages it runs (fails when it cannot run Python).
    Initialize = "initialize" (NoParams) -> InitializeResult,
    /// Run one cell in a context, streaming `output` notifications.
    RunCode = "run_code" (RunCode) -> RunCodeResult,
    /// Stop a `run_code` or `commands.wait` whose caller stopped waiting.
    Cancel = "cancel" (Cancel) -> (),
    /// Make a code context (or find the named one again).
    CreateContext = "create_context" (CreateContext) -> ContextInfo,
    /// The code contexts.
    ListContexts = "list_contexts" (NoParams) -> Vec<ContextInfo>,
    /// Restart a context's kernel.
    RestartContext = "restart_context" (ContextRef) -> (),
    /// Remove a context and stop its kernel.
    RemoveContext = "remove_context" (ContextRef) -> (),
    /// The sandbox's idle lifetime.
    SetTimeout = "set_timeout" (SetTimeout) -> (),
    /// Stop the sandbox's kernels; the last call of a connection.
    Shutdown = "shutdown" (NoParams) -> (),
    /// A copy of a Python context's kernel as a new context.
    ForkContext = "fork_context" (Fork) -> ForkResult,
    /// Back to the checkpoint before a `run_code(..., checkpoint=True)`.
    Undo = "undo" (Undo) -> UndoResult,
    /// A Python context's variables to a file.
    Snapshot = "snapshot" (SnapshotFile) -> SnapshotResult,
    /// A Python context's variables from a snapshot file.
    Restore = "restore" (SnapshotFile) -> RestoreResult,
    /// A file's content (base64), or a range of it.
    FilesRead = "files.read" (FileRead) -> FileReadResult,
    /// Write (or append to) files; parent folders are made.
    FilesWrite = "files.write" (FileWrite) -> Vec<WriteInfo>,
    /// A folder's entries, to a depth.
    FilesList = "files.list" (FileList) -> Vec<EntryInfo>,
    /// Whether a path exists.
    FilesExists = "files.exists" (FilePath) -> bool,
    /// A path's entry.
    FilesGetInfo = "files.get_info" (FilePath) -> EntryInfo,
    /// Remove a file or folder (a missing path is no error).
    FilesRemove = "files.remove" (FilePath) -> (),
    /// Rename a file or folder.
    FilesRename = "files.rename" (FileRename) -> EntryInfo,
    /// Make a folder; false when it was there.
    FilesMakeDir = "files.make_dir" (FilePath) -> bool,
    /// Start watching a folder.
    FilesWatch = "files.watch" (FileWatch) -> WatchResult,
    /// A watcher's events since its last look.
    FilesWatchEvents = "files.watch_events" (WatchEvents) -> Vec<FsEvent>,
    /// Stop a watcher; false when there was none.
    FilesUnwatch = "files.unwatch" (WatcherRef) -> bool,
    /// Start a shell command; answers once it runs.
    CommandsStart = "commands.start" (CommandStart) -> CommandStarted,
    /// A command's output as `output` notifications, then its result.
    CommandsWait = "commands.wait" (CommandWait) -> CommandResult,
    /// Kill a running command; false when none runs by that id or pid.
    CommandsKill = "commands.kill" (CommandRef) -> bool,
    /// The running commands.
    CommandsList = "commands.list" (NoParams) -> Vec<ProcessInfo>,
}

/// Why a request is not a [`Call`].
#[derive(Debug, Clone, PartialEq)]
pub enum CallError {
    UnknownMethod(String),
    BadParams { method: Method, error: String },
}

impl CallError {
    /// The failure the request is answered with.
    pub fn failure(&self) -> Failure {
        match self {
            CallError::UnknownMethod(name) => Failure::new(ErrorCode::MethodNotFound, format!("no method {name:?}")),
            CallError::BadParams { method, error } => Failure::invalid_params(format!("{}: {error}", method.name())),
        }
    }
}

/// One request line: its id (none: a notification to the server, answered
/// with nothing) and its call.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    pub id: Option<Value>,
    pub call: Call,
}

/// A request line's envelope, before its call is typed.
#[derive(Debug, Deserialize)]
pub struct RawRequest {
    #[serde(default)]
    pub id: Option<Value>,
    pub method: String,
    #[serde(default)]
    pub params: Value,
}

impl RawRequest {
    pub fn call(&self) -> Result<Call, CallError> {
        Call::parse(&self.method, self.params.clone())
    }
}

impl Request {
    /// The request in a line's JSON.
    pub fn parse(message: Value) -> Result<Request, Failure> {
        let raw: RawRequest = serde_json::from_value(message)
            .map_err(|error| Failure::new(ErrorCode::ParseError, format!("not a JSON-RPC request: {error}")))?;
        let call = raw.call().map_err(|error| error.failure())?;
        Ok(Request { id: raw.id, call })
    }

    pub fn to_value(&self) -> Value {
        let mut message = json!({"jsonrpc": "2.0", "method": self.call.method().name(), "params": self.call.params()});
        if let Some(id) = &self.id {
            message["id"] = id.clone();
        }
        message
    }
}

/// The response line for request `id`.
pub fn response(id: &Value, outcome: Result<Value, Failure>) -> Value {
    match outcome {
        Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
        Err(failure) => json!({"jsonrpc": "2.0", "id": id, "error": failure}),
    }
}

/// A response, typed by the method of the request it answers.
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    pub id: Value,
    pub outcome: Result<Answer, Failure>,
}

impl Response {
    /// The response in a line's JSON to a call of `method`.
    pub fn parse(method: Method, message: Value) -> Result<Response, String> {
        let id = message.get("id").cloned().ok_or("a response has an id")?;
        let outcome = match (message.get("result"), message.get("error")) {
            (Some(result), None) => Ok(method.parse_result(result.clone()).map_err(|e| e.to_string())?),
            (None, Some(error)) => Err(serde_json::from_value(error.clone()).map_err(|e| e.to_string())?),
            _ => return Err("a response has a result or an error".into()),
        };
        Ok(Response { id, outcome })
    }

    pub fn to_value(&self) -> Value {
        response(&self.id, self.outcome.as_ref().map(Answer::to_value).map_err(Clone::clone))
    }
}

// ---------------------------------------------------------------------------
// Notifications

/// A notification the server sends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "method", content = "params")]
pub enum Notification {
    /// Output of the `run_code` or `commands.wait` call it names.
    #[serde(rename = "output")]
    Output(OutputParams),
}

impl Notification {
    /// Every notification's method name.
    pub const NAMES: &'static [&'static str] = &["output"];

    /// The notification line.
    pub fn to_value(&self) -> Value {
        let mut message = serde_json::to_value(self).expect("notifications serialize");
        message["jsonrpc"] = "2.0".into();
        message
    }

    /// The notification in a line's JSON.
    pub fn parse(mut message: Value) -> Result<Notification, String> {
        if let Some(object) = message.as_object_mut() {
            object.remove("jsonrpc");
        }
        serde_json::from_value(message).map_err(|e| e.to_string())
    }
}

/// An `output` notification's parameters: the request it belongs to (`call`) and the output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct OutputParams {
    pub call: Value,
    #[serde(flatten)]
    pub output: Output,
}

/// One piece of output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum Output {
    /// Text on stdout; a command's chunks are numbered (`chunk`).
    Stdout {
        text: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        chunk: Option<u64>,
    },
    /// Text on stderr.
    Stderr {
        text: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        chunk: Option<u64>,
    },
    /// A display, or the cell's value (`is_main_result`), as its MIME bundle.
    Result { bundle: MimeBundle, is_main_result: bool },
    /// The cell's error.
    Error { name: String, value: String, traceback: String },
}

// ---------------------------------------------------------------------------
// Parameters

/// The parameters of a method that takes none: whatever is given is ignored.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct NoParams;

impl Serialize for NoParams {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        Map::new().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for NoParams {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        serde::de::IgnoredAny::deserialize(deserializer)?;
        Ok(NoParams)
    }
}

impl JsonSchema for NoParams {
    fn schema_name() -> Cow<'static, str> {
        "NoParams".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "object", "description": "No parameters: `{}` (anything given is ignored)."})
    }
}

/// `run_code`'s parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunCode {
    pub code: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub language: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub envs: Option<BTreeMap<String, String>>,
    /// Seconds; none: [`DEFAULT_TIMEOUT_SECS`]; `0`: as long as a cell may run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<f64>,
    /// Take a checkpoint before the run, for `undo` (cellbox's own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<bool>,
}

/// A run's timeout when the SDK gives none, as E2B's SDK.
pub const DEFAULT_TIMEOUT_SECS: f64 = 300.0;

/// `create_context`'s parameters.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateContext {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub language: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// cellbox's own: the context's id, chosen by the caller (a named session).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// The parameters of the methods that name one context.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ContextRef {
    pub context_id: String,
}

/// `cancel`'s parameters: the id of the request to stop.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Cancel {
    pub call: Value,
}

/// `set_timeout`'s parameters: the sandbox ends after `seconds` without a
/// call in progress or a command running; 0 means never.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
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

/// `fork_context`'s parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Fork {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// `undo`'s parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Undo {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_id: Option<String>,
    #[serde(default = "one")]
    pub steps: usize,
}

fn one() -> usize {
    1
}

/// `snapshot`'s and `restore`'s parameters: `path` relative to the context's folder.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SnapshotFile {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_id: Option<String>,
    pub path: String,
}

/// `files.read`'s parameters: up to `length` bytes (all when absent) from `offset`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FileRead {
    pub path: String,
    #[serde(default)]
    pub offset: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub length: Option<u64>,
}

/// `files.write`'s parameters: every file in one call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FileWrite {
    pub files: Vec<FileData>,
}

/// One file of `files.write`: its content in base64; `append` adds to the
/// file instead of replacing it (the later chunks of a streamed upload).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FileData {
    pub path: String,
    pub data: String,
    #[serde(default)]
    pub append: bool,
}

/// `files.list`'s parameters; `depth` 1 (the default) lists the folder's own entries.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FileList {
    pub path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub depth: Option<i64>,
}

/// The parameters of the files methods that name one path.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FilePath {
    pub path: String,
}

/// `files.rename`'s parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FileRename {
    pub old_path: String,
    pub new_path: String,
}

/// `files.watch`'s parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WatchEvents {
    pub watcher_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait: Option<f64>,
}

/// The longest a `files.watch_events` call waits for an event.
pub const MAX_WATCH_WAIT_SECS: f64 = 10.0;

/// `files.unwatch`'s parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WatcherRef {
    pub watcher_id: String,
}

/// `commands.start`'s parameters. `timeout` in seconds: none gives
/// [`DEFAULT_COMMAND_TIMEOUT_SECS`], `0` as long as a cell may run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CommandStart {
    pub cmd: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub envs: Option<BTreeMap<String, String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<f64>,
}

/// A command's timeout when the SDK gives none, as E2B's SDK.
pub const DEFAULT_COMMAND_TIMEOUT_SECS: f64 = 60.0;

/// A command, by the id `commands.start` gave it or by its process id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CommandRef {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
}

/// `commands.wait`'s parameters: `from_chunk` is the index of the first
/// output chunk to send (`0`: all of it; absent: only what comes after the
/// call); `release` lets the server forget the command once it answered
/// with the result (the waiter keeps it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CommandWait {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_chunk: Option<u64>,
    #[serde(default)]
    pub release: bool,
}

// ---------------------------------------------------------------------------
// Results

/// `initialize`'s result: the engine's version and the languages it runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct InitializeResult {
    pub version: String,
    pub languages: Vec<String>,
}

/// `run_code`'s result: how the cell ended (`ok`, `error`, `cancelled`,
/// `timeout`, `killed`, `skipped`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunCodeResult {
    pub status: String,
    pub execution_count: Option<u64>,
    pub error: Option<RunError>,
    pub notes: Vec<String>,
    /// The full output, when the model-facing text was clamped (`cellbox artifact URI`).
    pub artifact: Option<String>,
}

/// The error a cell ended with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunError {
    pub name: String,
    pub value: String,
}

/// A context as the SDK sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ContextInfo {
    pub id: String,
    pub language: String,
    pub cwd: String,
}

/// `fork_context`'s result: the new context, and the threads it does not have.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ForkResult {
    pub context: ContextInfo,
    pub lost_threads: Vec<String>,
}

/// `undo`'s result: the calls undone and the checkpoints left.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct UndoResult {
    pub steps: usize,
    pub left: usize,
}

/// A name a snapshot or restore left out, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LeftOut {
    pub name: String,
    pub reason: String,
}

/// `snapshot`'s result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SnapshotResult {
    pub path: String,
    pub names: Vec<String>,
    pub left_out: Vec<LeftOut>,
    pub bytes: u64,
}

/// `restore`'s result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RestoreResult {
    pub path: String,
    pub names: Vec<String>,
    pub left_out: Vec<LeftOut>,
}

/// `files.read`'s result: base64 content, and whether the end was reached.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FileReadResult {
    pub data: String,
    pub eof: bool,
}

/// A file `files.write` wrote (E2B's `WriteInfo`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct WriteInfo {
    pub name: String,
    #[serde(rename = "type")]
    pub kind: EntryType,
    pub path: String,
}

/// What an entry is: a symlink whose target is missing is `symlink`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum EntryType {
    File,
    Dir,
    Symlink,
}

/// A file, folder or symlink, with E2B's `EntryInfo` fields;
/// `modified_time` is in seconds since the Unix epoch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct EntryInfo {
    pub name: String,
    #[serde(rename = "type")]
    pub kind: EntryType,
    pub path: String,
    pub size: u64,
    pub mode: u32,
    pub permissions: String,
    pub owner: String,
    pub group: String,
    pub modified_time: f64,
    pub symlink_target: Option<String>,
}

/// `files.watch`'s result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct WatchResult {
    pub watcher_id: String,
}

/// One change seen by a watcher: `name` is relative to the watched folder.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FsEvent {
    pub name: String,
    #[serde(rename = "type")]
    pub kind: FsEventType,
    pub entry: Option<EntryInfo>,
}

/// What happened to an entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum FsEventType {
    Create,
    Write,
    Remove,
    Rename,
    Chmod,
}

/// `commands.start`'s result: the command's id, and its shell's process id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CommandStarted {
    pub id: u64,
    pub pid: u32,
}

/// How a command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum CommandStatus {
    Ok,
    Killed,
    Timeout,
    Failed,
}

/// `commands.wait`'s result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CommandResult {
    pub exit_code: i64,
    pub error: Option<String>,
    pub status: CommandStatus,
}

/// A running command as `commands.list` gives it (E2B's `ProcessInfo`, and
/// the command's id and how many output chunks it wrote so far: where a
/// handle that connects to it starts).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ProcessInfo {
    pub id: u64,
    pub chunks: u64,
    pub pid: u32,
    pub tag: Option<String>,
    pub cmd: String,
    pub args: Vec<String>,
    pub envs: BTreeMap<String, String>,
    pub cwd: Option<String>,
}

// ---------------------------------------------------------------------------
// Generated files

/// `schema/sdk.json`: every method's parameters and result, the
/// notifications and the error codes, as JSON Schemas (draft 2020-12).
pub fn schema() -> Value {
    let mut generator = schemars::generate::SchemaSettings::draft2020_12().into_generator();
    let mut methods = Map::new();
    for method in Method::ALL {
        let (params, result) = method.schemas(&mut generator);
        methods.insert(method.name().into(), json!({"description": method.doc(), "params": params, "result": result}));
    }
    let notification = generator.subschema_for::<Notification>();
    let error = generator.subschema_for::<Failure>();
    let codes: Map<String, Value> =
        ErrorCode::ALL.iter().map(|code| (code.name().into(), code.code().into())).collect();
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "cellbox SDK JSON-RPC",
        "description": "The Python SDK's JSON-RPC 2.0 methods (one JSON object per line), generated from \
                        crates/protocol/src/sdk.rs.",
        "methods": methods,
        "notification": notification,
        "error": error,
        "error_codes": codes,
        "$defs": generator.take_definitions(true),
    })
}

/// `python/cellbox/_wire.py`: the method names and error codes, for the SDK.
pub fn python_module() -> String {
    let mut text = String::from(
        "\"\"\"The SDK's JSON-RPC wire: method names and error codes.\n\n\
         Generated from crates/protocol/src/sdk.rs; do not edit. Regenerate with\n\
         `cargo run -p cellbox-protocol --example write-schema`.\n\"\"\"\n\n",
    );
    text.push_str("# Methods.\n");
    for method in Method::ALL {
        text.push_str(&format!("#: {}\n{} = {:?}\n", method.doc(), constant(method.name()), method.name()));
    }
    text.push_str("\n#: Every method the engine answers.\nMETHODS = frozenset([\n");
    for method in Method::ALL {
        text.push_str(&format!("    {},\n", constant(method.name())));
    }
    text.push_str("])\n\n# Notifications.\n");
    for name in Notification::NAMES {
        text.push_str(&format!("{} = {name:?}\n", constant(name)));
    }
    text.push_str("\n# Error codes.\n");
    for code in ErrorCode::ALL {
        text.push_str(&format!("{} = {}\n", code.name(), code.code()));
    }
    text.push_str("\n#: Each error code's name.\nERROR_NAMES = {\n");
    for code in ErrorCode::ALL {
        text.push_str(&format!("    {}: {:?},\n", code.name(), code.name()));
    }
    text.push_str("}\n");
    text
}

/// A wire name as a Python constant: `files.get_info` → `FILES_GET_INFO`.
fn constant(name: &str) -> String {
    name.replace('.', "_").to_uppercase()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn names_and_codes_are_unique_and_found_again() {
        for method in Method::ALL {
            assert_eq!(Method::from_name(method.name()), Some(*method));
        }
        let mut names: Vec<_> = Method::ALL.iter().map(|m| m.name()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), Method::ALL.len());
        for code in ErrorCode::ALL {
            assert_eq!(ErrorCode::from_code(code.code()), Some(code));
        }
    }

    /// tests/protocol/sdk.jsonl, shared with the Python SDK's tests: each line
    /// parses into the typed wire and serializes back to the same JSON, and
    /// every method, the notification and every error code are in it.
    #[test]
    fn the_golden_corpus_round_trips() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/protocol/sdk.jsonl");
        let text = std::fs::read_to_string(&path).unwrap();
        let (mut requested, mut answered, mut codes, mut notified) = (Vec::new(), Vec::new(), Vec::new(), 0);
        for (number, line) in text.lines().enumerate().filter(|(_, line)| !line.trim().is_empty()) {
            let at = format!("tests/protocol/sdk.jsonl:{}", number + 1);
            let entry: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{at}: {e}"));
            let message = entry["message"].clone();
            let method = entry["method"].as_str().and_then(Method::from_name);
            let again = match entry["kind"].as_str() {
                Some("request") => {
                    let request = Request::parse(message.clone()).unwrap_or_else(|e| panic!("{at}: {e:?}"));
                    assert_eq!(Some(request.call.method()), method, "{at}");
                    requested.push(request.call.method());
                    request.to_value()
                }
                Some("response") => {
                    let method = method.unwrap_or_else(|| panic!("{at}: a response names its method"));
                    let response = Response::parse(method, message.clone()).unwrap_or_else(|e| panic!("{at}: {e}"));
                    assert!(response.outcome.is_ok(), "{at}");
                    answered.push(method);
                    response.to_value()
                }
                Some("error") => {
                    let failure: Failure =
                        serde_json::from_value(message["error"].clone()).unwrap_or_else(|e| panic!("{at}: {e}"));
                    codes.push(failure.code);
                    response(&message["id"], Err(failure))
                }
                Some("notification") => {
                    notified += 1;
                    Notification::parse(message.clone()).unwrap_or_else(|e| panic!("{at}: {e}")).to_value()
                }
                other => panic!("{at}: kind {other:?}"),
            };
            assert_eq!(again, message, "{at}: the typed wire gives back other JSON");
        }
        for method in Method::ALL {
            assert!(requested.contains(method), "tests/protocol/sdk.jsonl has no request of {}", method.name());
            assert!(answered.contains(method), "tests/protocol/sdk.jsonl has no response of {}", method.name());
        }
        for code in ErrorCode::ALL {
            assert!(codes.contains(&code), "tests/protocol/sdk.jsonl has no {} error", code.name());
        }
        assert!(notified > 0);
    }

    #[test]
    fn bad_requests_fail_with_their_codes_and_words() {
        let failure = Request::parse(json!({"id": 1, "method": "no_such"})).unwrap_err();
        assert_eq!(failure, Failure::new(ErrorCode::MethodNotFound, "no method \"no_such\""));
        let failure = Request::parse(json!({"id": 1, "method": "run_code", "params": {"cod": "1"}})).unwrap_err();
        assert_eq!(failure.code, ErrorCode::InvalidParams);
        assert!(failure.message.starts_with("run_code: unknown field `cod`"), "{}", failure.message);
        let failure = Request::parse(json!({"id": 1})).unwrap_err();
        assert_eq!(failure.code, ErrorCode::ParseError);
        // No params, or null: `{}`; a method without params ignores what it is given.
        let request = Request::parse(json!({"id": 2, "method": "list_contexts", "params": [1]})).unwrap();
        assert_eq!(request.call, Call::ListContexts(NoParams));
        let request = Request::parse(json!({"method": "files.list", "params": {"path": "."}})).unwrap();
        assert_eq!(request.call, Call::FilesList(FileList { path: ".".into(), depth: None }));
    }
}
