//! Tests that need the test process to themselves: they measure it (its resident and peak memory)
//! or change it (the environment). Each holds `ALONE` for its whole run, so they run one at a
//! time. Everything else is in `tests/it/`.

#[path = "../it/common/mod.rs"]
mod common;

mod chaos;
mod gateway_emfile;
mod memory;
mod zygote_key;

/// Held by every test of this binary: one at a time.
static ALONE: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
