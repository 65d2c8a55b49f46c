//! cellbox's kernels: what starts, drives, confines and stops the processes that run cells.
//!
//! - [`runtime`] names the runtimes (Python, Node, Bash, Jupyter) and how each is found and started.
//! - [`discovery`] finds the Python interpreter and builds the kernel's environment.
//! - [`sandbox`] confines kernels (and everything the host does on their files) to one policy.
//! - [`kernel`] starts, drives, interrupts and stops one runner process.
//! - [`gateway`] runs Python kernels on a Jupyter gateway instead.
//! - [`jupyter`] starts any installed Jupyter kernel from its kernelspec and speaks its protocol.
//! - [`paths`] says where cellbox keeps its files (the cache root).
//! - [`platform`] lists the platforms cellbox is built for and what works on each.
//! - `notice` gives a process-wide warning once (this crate's own).
//! - [`tls`] sets up TLS for cellbox's own connections.
//! - [`stop_signals`] turns the signals that stop a process into one future.
//!
//! The layer below is `cellbox-settings` and `cellbox-protocol`; the imports below keep their
//! names (`crate::settings`, `crate::protocol`) inside this crate.

use cellbox_protocol as protocol;
use cellbox_settings as settings;

pub mod discovery;
pub mod gateway;
pub mod jupyter;
pub mod kernel;
mod notice;
pub mod paths;
pub mod platform;
pub mod runtime;
pub mod sandbox;
pub mod stop_signals;
pub mod tls;

// The front door: what the layers above start from. The modules stay public for what needs more
// (the engine's sessions, the test suite).
pub use gateway::GatewaySetting;
pub use kernel::{Kernel, KernelOptions};
pub use runtime::{Interpreter, Runtime};
pub use sandbox::{NetworkMode, SandboxMode, SandboxPolicy};
