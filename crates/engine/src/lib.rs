//! The cellbox engine: what turns a call of cells into kernels' work and answers a model can read.
//!
//! - [`session`] keeps kernels across calls, per session and owner.
//! - [`bridge`] answers cells' `completion()`/`agent()`/`tool()` calls back into the host.
//! - [`tool`] is the eval tool: [`tool::EvalEngine`] runs calls of cells.
//! - [`output`] bounds text, stores artifacts and splits displays.
//! - [`notebook`] reads and writes `.ipynb` files and records sessions as notebooks.
//! - [`kernel_args`] are the kernel and sandbox flags every front end shares, and the engine
//!   settings they resolve to.
//!
//! The layers below are `cellbox-kernels`, `cellbox-protocol` and `cellbox-settings`; the imports
//! below keep their module names inside this crate.

use cellbox_kernels::{discovery, gateway, jupyter, kernel, paths, runtime, sandbox, tls};
use cellbox_protocol as protocol;
use cellbox_settings as settings;

pub mod bridge;
pub mod kernel_args;
pub mod notebook;
pub mod output;
pub mod session;
pub mod tool;

// The front door: what a front end (or a program using the library) starts from. The modules stay
// public for what needs more (the front ends' own options, the test suite).
pub use bridge::Bridge;
pub use session::Backend;
pub use tool::{CallContext, CallOutcome, EngineConfig, EvalEngine, EvalEvent, EvalParams, EvalResult, WaitFor};
