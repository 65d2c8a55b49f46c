//! The messages of the fork server (the "zygote", `runner/cellbox_kernel/zygote.py`)
//! and of a forkable kernel's control socket (`runner/cellbox_kernel/fork.py`).
//!
//! Both are Unix SOCK_SEQPACKET sockets: one JSON object per message, no
//! newline. The host sends [`Request`]s with the new kernel's pipe ends
//! attached (SCM_RIGHTS); the other side answers with [`Message`]s. The
//! fork server says `ready` (or `failed`) once, then `forked` or
//! `fork_failed` per request and `exit` per kernel it forked; a kernel's
//! control socket carries only `forked`, `fork_failed` and `exit`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Host → fork server or kernel.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Request {
    /// Fork a kernel. Five fds come with it: the request pipe, stdout,
    /// stderr, the frames pipe and the diagnostics pipe, and on Linux a sixth,
    /// the new kernel's control socket, and to the fork server a seventh, its
    /// started page (each goes to the runner's fd of its place, 0 to 6). To a
    /// kernel's control socket it is sent just before the `fork` request line
    /// with the same id, and carries no `cwd`, `env` or `argv` (the copy keeps
    /// the kernel's).
    Fork(Fork),
    /// A kernel's control socket only: one open file comes with it, for the
    /// `snapshot` or `restore` request line whose `file` is this `id` (sent
    /// just before that line). The host opened the file in a folder the
    /// kernel cannot reach; the kernel gets this one file and nothing else.
    File(FileHandoff),
}

/// See [`Request::File`].
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, JsonSchema)]
pub struct FileHandoff {
    /// Unique per socket (shared with fork ids); the request line names it.
    pub id: u64,
}

/// See [`Request::Fork`].
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, JsonSchema)]
pub struct Fork {
    /// Unique per socket; the answer names it.
    pub id: u64,
    /// Fork server only: the kernel's working directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<PathBuf>,
    /// Fork server only: the kernel's whole environment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env: Option<BTreeMap<String, String>>,
    /// Fork server only: the kernel's `sys.argv` (as a spawned runner's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub argv: Option<Vec<String>>,
}

impl Request {
    /// The message's bytes (no newline: the socket keeps message boundaries).
    pub fn encode(&self) -> Result<Vec<u8>, serde_json::Error> {
        serde_json::to_vec(self)
    }
}

/// Fork server or kernel → host.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Message {
    /// The fork server imported its preload modules and serves requests.
    Ready {
        pid: u32,
        /// Its Python version.
        python: String,
    },
    /// The fork server could not get ready (a preload module failed, a thread
    /// was left running); it exits.
    Failed { message: String },
    /// Request `id` forked kernel `pid`.
    Forked {
        id: u64,
        pid: u32,
        /// From a kernel: its cells' threads, which the copy lacks.
        #[serde(default, rename = "lostThreads", skip_serializing_if = "Option::is_none")]
        lost_threads: Option<Vec<String>>,
    },
    /// Request `id` could not be served (`id` null when it could not be read).
    ForkFailed { id: Option<u64>, message: String },
    /// Forked kernel `pid` ended: its exit code, or the signal that ended it
    /// (both null when the status was lost).
    Exit { pid: u32, code: Option<i32>, signal: Option<i32> },
}

/// The names of the types of [`Request`] and [`Message`], as on the wire.
pub const MESSAGE_TYPES: &[&str] = &["fork", "file", "ready", "failed", "forked", "fork_failed", "exit"];

/// Parse one message.
pub fn parse_message(bytes: &[u8]) -> Result<Message, serde_json::Error> {
    serde_json::from_slice(bytes)
}
