//! The wires cellbox speaks, each declared once.
//!
//! - [`runner`] (re-exported at the crate root): the NDJSON protocol between
//!   the host and a runner (`runner/` for Python, `runner-js/` for Node): one
//!   JSON object per `\n`-terminated UTF-8 line, requests on the runner's
//!   stdin, frames back on its frames pipe.
//! - [`fork_server`]: the messages on the Unix socket of the preloading fork
//!   server (the "zygote") and of a forkable kernel's control socket.
//! - [`ui`]: the live view's API (`/ui/api/*`) and its event stream.
//! - The names several wires and languages share ([`STATUS_MIME`], ...).
//!
//! The Python and Node runners have one home each for the same names and
//! shapes (`runner/cellbox_kernel/wire.py`, `runner-js/lib/wire.js`). All
//! three round-trip the golden corpus in `tests/protocol/`, and the JSON
//! Schemas in `schema/` are generated from these types (see [`schema`]), so a
//! field renamed in one place fails a test instead of hanging a kernel.

pub mod fork_server;
pub mod runner;
pub mod schema;
pub mod sdk;
pub mod ui;

#[cfg(test)]
mod corpus_tests;

pub use runner::*;

/// Protocol version the runner announces in its `ready` frame; the host
/// refuses a runner that speaks another one.
pub const PROTOCOL_VERSION: u32 = 1;

/// On the runner's command line, with an fd: a memory file the host made,
/// into which the runner writes the id of each request it begins (then a
/// newline, at offset 0) instead of sending `started`. The host reads it only
/// when the kernel has died. Given to the Python runner on Linux.
pub const STARTED_FD_FLAG: &str = "--started-fd";

/// The MIME type of a status event: a `display` bundle entry whose value is
/// an object with an `op` (`cd`, `pip`, `phase`, `timeout`, ...) and fields of
/// its own. Front ends show it as a progress line, not as output.
pub const STATUS_MIME: &str = "application/x-cellbox-status";

/// The MIME type of a pandas DataFrame's columns (`{column: [values...]}`),
/// sent beside its HTML table.
pub const DATA_MIME: &str = "application/vnd.cellbox.data+json";

/// The MIME type of a matplotlib figure's chart data (elements and axes).
pub const CHART_MIME: &str = "application/vnd.cellbox.chart+json";
