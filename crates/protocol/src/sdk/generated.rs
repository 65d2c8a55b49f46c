//! The files generated from the SDK's wire: its JSON Schemas and the Python SDK's `_wire.py`.

use serde_json::{Map, Value, json};

use super::*;

/// `schema/sdk.json`: every method's parameters and result, the
/// notifications and the error codes, as JSON Schemas (draft 2020-12).
pub fn schema() -> Value {
    let mut generator = schemars::generate::SchemaSettings::draft2020_12().into_generator();
    let mut methods = Map::new();
    for method in Method::ALL {
        let (params, result) = method.schemas(&mut generator);
        methods.insert(method.name().into(), json!({"description": method.doc(), "params": params, "result": result}));
    }
    let notification = generator.subschema_for::<Notification>();
    let error = generator.subschema_for::<Failure>();
    let codes: Map<String, Value> =
        ErrorCode::ALL.iter().map(|code| (code.name().into(), code.code().into())).collect();
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "cellbox SDK JSON-RPC",
        "description": "The Python SDK's JSON-RPC 2.0 methods (one JSON object per line), generated from \
                        crates/protocol/src/sdk/.",
        "methods": methods,
        "notification": notification,
        "error": error,
        "error_codes": codes,
        "$defs": generator.take_definitions(true),
    })
}

/// `python/cellbox/_wire.py`: the method names and error codes, for the SDK.
pub fn python_module() -> String {
    let mut text = String::from(
        "\"\"\"The SDK's JSON-RPC wire: method names and error codes.\n\n\
         Generated from crates/protocol/src/sdk/; do not edit. Regenerate with\n\
         `cargo run -p cellbox-protocol --example write-schema`.\n\"\"\"\n\n",
    );
    text.push_str("# Methods.\n");
    for method in Method::ALL {
        text.push_str(&format!("#: {}\n{} = {:?}\n", method.doc(), constant(method.name()), method.name()));
    }
    text.push_str("\n#: Every method the engine answers.\nMETHODS = frozenset([\n");
    for method in Method::ALL {
        text.push_str(&format!("    {},\n", constant(method.name())));
    }
    text.push_str("])\n\n# Notifications.\n");
    for name in Notification::NAMES {
        text.push_str(&format!("{} = {name:?}\n", constant(name)));
    }
    text.push_str("\n# Error codes.\n");
    for code in ErrorCode::ALL {
        text.push_str(&format!("{} = {}\n", code.name(), code.code()));
    }
    text.push_str("\n#: Each error code's name.\nERROR_NAMES = {\n");
    for code in ErrorCode::ALL {
        text.push_str(&format!("    {}: {:?},\n", code.name(), code.name()));
    }
    text.push_str("}\n");
    text
}

/// A wire name as a Python constant: `files.get_info` → `FILES_GET_INFO`.
fn constant(name: &str) -> String {
    name.replace('.', "_").to_uppercase()
}
