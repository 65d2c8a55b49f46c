//! The adversarial suite: attacks on the host through what cellbox does for
//! kernels and principals, each of which must fail. Every attack is made the
//! way a hostile cell (a model's code) or a hostile principal of `cellbox
//! serve` would make it, through each front end that offers the way in: the
//! Python SDK (local and remote), MCP over stdio and MCP over HTTP. A marker
//! file outside the workspace must never appear; a canary (planted in a
//! secret and in the server's environment) must never come back.
//!
//! The path resolver's own property test and the race of a kernel swapping
//! links against the files API are unit tests of `sandbox::host_files`; the
//! sandbox's refusals of cells themselves are in tests/it/sandbox.rs.
#![cfg(target_os = "linux")]

use crate::common;

mod clients;
mod mcp;
mod probes;
mod scene;
mod sdk;
