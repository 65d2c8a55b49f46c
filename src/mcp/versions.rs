//! The protocol versions this server speaks, and what it advertises in each.
//!
//! A client gets the version it asked for when it is one of [`SUPPORTED`]
//! (else the newest that has an `initialize` handshake, for it to accept or
//! leave), and only the features that version defines:
//!
//! | version | tools, resources | `structuredContent`, `outputSchema` | tasks extension | sampling |
//! |---|---|---|---|---|
//! | 2024-11-05, 2025-03-26 | yes | no | no | server → client request |
//! | 2025-06-18, 2025-11-25 | yes | yes | no | server → client request |
//! | 2026-07-28 (`server/discover`, no `initialize`) | yes | yes | yes | input-required rounds |
//!
//! The tasks extension (`io.modelcontextprotocol/tasks`) rides on the
//! extensions framework of 2026-07-28; 2025-11-25's experimental `tasks`
//! capability is a different, earlier design this server does not implement.

use rmcp::model::{ProtocolVersion, ServerCapabilities};

/// Every version this server answers in, oldest first.
pub const SUPPORTED: &[ProtocolVersion] = &[
    ProtocolVersion::V_2024_11_05,
    ProtocolVersion::V_2025_03_26,
    ProtocolVersion::V_2025_06_18,
    ProtocolVersion::V_2025_11_25,
    ProtocolVersion::V_2026_07_28,
];

/// Whether `version` has the extensions framework (and with it the tasks extension).
pub fn has_extensions(version: &ProtocolVersion) -> bool {
    version.as_str() >= ProtocolVersion::V_2026_07_28.as_str()
}

/// `full` (everything this server can do) narrowed to what `version` defines.
pub fn capabilities(mut full: ServerCapabilities, version: &ProtocolVersion) -> ServerCapabilities {
    if !has_extensions(version) {
        full.extensions = None;
    }
    full
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tasks_extension_is_advertised_from_2026_07_28_only() {
        let full = ServerCapabilities::builder().enable_tools().enable_resources().enable_tasks().build();
        for version in SUPPORTED {
            let narrowed = capabilities(full.clone(), version);
            assert_eq!(narrowed.supports_tasks(), version == &ProtocolVersion::V_2026_07_28, "{version}");
            assert!(narrowed.tools.is_some() && narrowed.resources.is_some(), "{version}");
        }
    }
}
