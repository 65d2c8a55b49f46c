//! Each method's result.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

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
    /// Names that could not be restored, and settings' magic lines that failed, each with the reason.
    pub left_out: Vec<LeftOut>,
    /// The settings magics had made, replayed as these magic lines (`%precision 2`, …).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub settings: Vec<String>,
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
