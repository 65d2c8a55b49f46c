//! cellbox: run Python and JavaScript code cells for LLM agents and people,
//! in long-lived kernels driven over NDJSON pipes.
//!
//! - [`runtime`] names the runtimes (Python, Node) and how each is found and started.
//! - [`discovery`] finds the Python interpreter and builds the kernel's environment.
//! - [`kernel`] starts, drives, interrupts and stops one runner process.
//! - [`gateway`] runs Python kernels on a Jupyter gateway instead.
//! - [`protocol`] defines the frames both sides exchange.
//! - [`paths`] says where cellbox keeps its files (the cache root).
//! - [`platform`] lists the platforms cellbox is built for and what works on each.
//! - [`notice`] gives a process-wide warning once.
//! - [`tls`] sets up TLS for cellbox's own connections.
//! - [`session`] keeps kernels across calls, per session and owner.
//! - [`bridge`] answers cells' `completion()`/`agent()`/`tool()` calls back into the host.
//! - [`tool`] is the eval tool: [`tool::EvalEngine`] runs calls of cells.
//! - [`output`] bounds text, stores artifacts and splits displays.
//! - [`notebook`] reads and writes `.ipynb` files and records sessions as notebooks.

pub mod bridge;
pub mod discovery;
pub mod doctor;
pub mod gateway;
pub mod install;
pub mod kernel;
pub mod kernel_args;
pub mod mcp;
pub mod notebook;
pub mod notice;
pub mod output;
pub mod paths;
pub mod platform;
pub mod protocol;
pub mod render;
pub mod runtime;
pub mod sandbox;
pub mod sdk;
pub mod serve;
pub mod session;
pub mod settings;
pub mod stop_signals;
pub mod tls;
pub mod tool;
