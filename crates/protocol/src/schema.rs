//! JSON Schemas of the wires, generated from the types (committed under
//! `schema/` at the repository's root, for the other languages and for
//! people; a test in this crate fails when they are stale).
//!
//! Regenerate with `cargo run -p cellbox-protocol --example write-schema`.

use schemars::{JsonSchema, Schema, SchemaGenerator, generate::SchemaSettings, json_schema};

use crate::{HostRequest, RunnerFrame, fork_server};

/// The command that rewrites the committed schemas.
pub const WRITE_COMMAND: &str = "cargo run -p cellbox-protocol --example write-schema";

fn pair<Up: JsonSchema, Down: JsonSchema>(title: &str, description: &str, up: &str, down: &str) -> Schema {
    let mut generator = SchemaGenerator::new(SchemaSettings::draft2020_12());
    let up_schema = generator.subschema_for::<Up>();
    let down_schema = generator.subschema_for::<Down>();
    let definitions = generator.take_definitions(true);
    json_schema!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": title,
        "description": description,
        "type": "object",
        "properties": {
            up: up_schema,
            down: down_schema,
        },
        "$defs": definitions,
    })
}

/// `(file name under schema/, its text)` for every wire this crate declares.
pub fn files() -> Vec<(&'static str, String)> {
    let runner = pair::<HostRequest, RunnerFrame>(
        "cellbox runner protocol",
        "One JSON object per line. `request`: host to runner, on the runner's stdin (a line without \
         `type` is taken as `execute`). `frame`: runner to host, on its frames pipe. Generated from \
         crates/protocol; see docs/kernels.md.",
        "request",
        "frame",
    );
    let fork_server = pair::<fork_server::Request, fork_server::Message>(
        "cellbox fork-server messages",
        "One JSON object per SOCK_SEQPACKET message. `request`: host to fork server or kernel control \
         socket (fds attached). `message`: back to the host. Generated from crates/protocol.",
        "request",
        "message",
    );
    [("runner.json", runner), ("fork_server.json", fork_server)]
        .into_iter()
        .map(|(name, schema)| {
            let mut text = serde_json::to_string_pretty(&schema).expect("schemas serialize");
            text.push('\n');
            (name, text)
        })
        .collect()
}
