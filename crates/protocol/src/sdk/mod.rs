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

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value, json};

use crate::MimeBundle;

mod generated;
mod params;
mod results;
#[cfg(test)]
mod tests;

pub use generated::{python_module, schema};
pub use params::*;
pub use results::*;

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
