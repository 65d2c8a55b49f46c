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
    /// A context id the server does not know (the SDK raises `NotFoundException`).
    pub const NOT_FOUND: i64 = -32001;
    /// The call could not run (no interpreter, a bad working folder...).
    pub const FAILED: i64 = -32002;
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
