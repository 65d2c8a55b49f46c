//! Each method's parameters.

use std::borrow::Cow;
use std::collections::BTreeMap;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use super::*;

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
