//! cellbox: run Python and JavaScript code cells for LLM agents and people,
//! in long-lived kernels driven over NDJSON pipes.
//!
//! This crate is the top layer: the front ends. The layers below are crates of their own
//! (docs/architecture.md): `cellbox-settings` and `cellbox-protocol`, `cellbox-kernels`,
//! `cellbox-engine` and `cellbox-sdk`.
//!
//! - [`mcp`] is the MCP server (`cellbox mcp`).
//! - [`serve`] is `cellbox serve`: MCP and the SDK over HTTP, with auth.
//! - [`web`] is what the HTTP front ends share: the `Host` check and the web view (`/ui`).
//! - [`render`] draws results for a terminal.
//! - [`doctor`] checks a machine; [`install`] registers cellbox with MCP clients.

use cellbox_engine::{bridge, output, session, tool};
use cellbox_kernels::{discovery, jupyter, kernel, paths, runtime, sandbox, stop_signals, tls};
use cellbox_sdk as sdk;
use cellbox_settings as settings;

pub mod doctor;
pub mod install;
pub mod mcp;
pub mod render;
pub mod serve;
pub mod web;
