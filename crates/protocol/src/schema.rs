//! The files generated from the wires' types, committed for the other languages and for people: the
//! JSON Schemas under `schema/` at the repository's root, the Python SDK's `_wire.py` (method
//! names and error codes) and the live view's `wire.js` (routes and event types). A test in this
//! crate fails while any of them is stale.
//!
//! Regenerate them all with `cargo run -p cellbox-protocol --example write-schema`.

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

/// `(path from the repository's root, its text)` for every file generated from this crate's wires.
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
    let to_value = |schema: Schema| serde_json::to_value(schema).expect("schemas serialize");
    let mut files: Vec<(&'static str, String)> = [
        ("schema/runner.json", to_value(runner)),
        ("schema/fork_server.json", to_value(fork_server)),
        ("schema/sdk.json", crate::sdk::schema()),
        ("schema/ui.json", crate::ui::schema()),
    ]
    .into_iter()
    .map(|(path, schema)| {
        let mut text = serde_json::to_string_pretty(&schema).expect("schemas serialize");
        text.push('\n');
        (path, text)
    })
    .collect();
    files.push(("python/cellbox/_wire.py", crate::sdk::python_module()));
    files.push(("src/web/ui/assets/wire.js", crate::ui::javascript_module()));
    files
}
