//! The integration tests of the `cellbox` package, in one binary: one module per subject (the
//! layers' own unit tests live in their crates). One binary links the workspace once, where a binary
//! per file linked it some fifty times.
//!
//! Tests here share a process, so none may change process-wide state (the environment, the working
//! folder) or measure the process itself: those live in `tests/alone/` (its tests run one at a
//! time) and `tests/gateway_emfile.rs`.
//!
//! Run one subject with a filter: `cargo test --test it -- faults::`.

mod common;

mod architecture;
mod bash_kernel;
mod bridge;
mod bridge_cli;
mod bulk_output;
mod channel;
mod cli;
mod cli_dist;
mod discovery;
mod display_libraries;
mod display_protocol;
mod doctor;
mod e2b;
mod eval_engine;
mod extension_modules;
mod faults;
mod fork;
mod gateway;
mod gateway_bridge;
mod gateway_local;
mod gateway_net;
mod hibernate;
mod home_view;
mod install;
mod js_kernel;
mod jupyter_cells;
mod jupyter_java;
mod jupyter_kernel;
mod kernel_execution;
mod kernel_lifecycle;
mod magic_pip;
mod magics;
mod magics_ipython;
mod mcp_runs;
mod mcp_sampling;
mod mcp_server;
mod mcp_tasks;
mod mcp_versions;
mod network;
mod network_secrets;
mod notebook;
mod notebook_semantics;
mod parity;
mod platforms;
mod precheck;
mod render;
mod render_starting;
mod repl;
mod runner_protocol;
mod runner_python;
mod runs;
mod sandbox;
mod sdk;
#[cfg(target_os = "linux")]
mod sdk_stdio;
mod security;
mod serve;
mod serve_runs;
mod serve_ui;
mod snapshot;
mod spare;
mod undo;
mod zygote;
