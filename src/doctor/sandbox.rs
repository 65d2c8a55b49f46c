//! The sandbox section of the report. Sandbox support is probed by the
//! sandbox module; until it is connected here, each mechanism is reported
//! as `unknown` so the report's shape (and `--json`'s) stays the same.

use serde::Serialize;

/// One isolation mechanism and whether this machine supports it.
#[derive(Debug, Clone, Serialize)]
pub struct SandboxEntry {
    /// The mechanism, e.g. `landlock`.
    pub name: String,
    /// `supported`, `unsupported` or `unknown`.
    pub status: String,
    pub detail: String,
}

/// What this build knows about sandbox support: the seam a support probe fills in.
pub fn sandbox_entries() -> Vec<SandboxEntry> {
    vec![SandboxEntry {
        name: "sandbox".into(),
        status: "unknown".into(),
        detail: "this build does not probe sandbox support".into(),
    }]
}
