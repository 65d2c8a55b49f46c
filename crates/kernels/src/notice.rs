//! Warnings a process gives once: a setting that holds for every kernel (the
//! sandbox is off, a fork server cannot be had) is worth one line on stderr,
//! not one per kernel.

use std::sync::Mutex;

/// Log `message` as a warning (the front ends print warnings on stderr) the
/// first time it is given in this process; later calls with the same text say nothing.
pub fn warn_once(message: &str) {
    static TOLD: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let mut told = TOLD.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if !told.iter().any(|m| m == message) {
        told.push(message.to_string());
        tracing::warn!("{message}");
    }
}
