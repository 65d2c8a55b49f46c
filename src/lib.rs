//! evalkit: run Python code cells for LLM agents and people, in long-lived
//! kernels driven over NDJSON pipes.
//!
//! - [`runtime`] finds the interpreter and builds the kernel's environment.
//! - [`kernel`] starts, drives, interrupts and stops one runner process.
//! - [`protocol`] defines the frames both sides exchange.

pub mod kernel;
pub mod protocol;
pub mod runtime;
