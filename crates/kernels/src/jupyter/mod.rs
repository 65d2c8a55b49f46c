//! Jupyter kernels: the messaging both Jupyter-speaking kernel kinds share,
//! and the kind that needs no server.
//!
//! - [`route`]: the requests in flight and what each Jupyter message means
//!   for the request it answers (the [`crate::kernel::ExecEvent`]s a runner
//!   process yields); [`requests`]: making and sending requests, interrupts,
//!   failing what is pending once a kernel is lost; [`bridge_stdin`]: the
//!   host-bridge calls a gateway kernel makes on its stdin channel.
//! - [`spec`]: installed kernelspecs, found where Jupyter looks;
//!   [`wire`]: messages as signed ZeroMQ multipart messages;
//!   [`kernel`]: [`JupyterKernel`], a kernelspec's kernel started as a local
//!   process under the sandbox, on ZeroMQ sockets of its own: `sockets`
//!   (where they are, reached without following what the kernel planted),
//!   [`relay`] (what the kernel sends is bounded on the way), [`tcp`] (for
//!   kernels that speak only TCP, ports checked to be the kernel's), `channels`
//!   (the tasks that carry its messages and watch it).
//!
//! Kernels on a Jupyter gateway ([`crate::gateway`]) use the same routing
//! over the gateway's websocket instead.

pub mod bridge_stdin;
mod cell_env;
mod channels;
pub mod kernel;
mod process;
pub mod relay;
pub(crate) mod requests;
pub(crate) mod route;
mod sockets;
pub mod spec;
#[cfg(target_os = "linux")]
pub mod tcp;
pub mod wire;

pub use kernel::JupyterKernel;
pub use spec::{KernelSpec, SearchPath, SpecError};

use serde_json::Value;

/// What a kernel's client queues for its transport: messages stay JSON
/// values until the writer frames them for the socket (so no message is
/// serialized to text and parsed back on the way).
#[derive(Debug)]
pub enum Outgoing {
    /// A Jupyter message as the JSON framing has it (`channel` included).
    Message(Value),
    /// Close the connection: the kernel is being shut down.
    Close,
}
