//! Editing a client's JSON file in place: only the server's entry changes;
//! other keys, their order, comments and layout stay as they were.

use jsonc_parser::ParseOptions;
use jsonc_parser::cst::{CstInputValue, CstRootNode};
use serde_json::Value;

use super::{InstallError, Server};

fn options() -> ParseOptions {
    ParseOptions::default()
}

/// The entry's fields, in the order they are written.
fn fields(server: &Server, stdio_type: bool) -> Vec<(&'static str, Value)> {
    let mut fields = Vec::new();
    if stdio_type {
        fields.push(("type", Value::from("stdio")));
    }
    fields.push(("command", Value::from(server.command.clone())));
    fields.push(("args", Value::from(server.args.clone())));
    fields
}

fn input(value: &Value) -> CstInputValue {
    match value {
        Value::Null => CstInputValue::Null,
        Value::Bool(b) => CstInputValue::Bool(*b),
        Value::Number(n) => CstInputValue::Number(n.to_string()),
        Value::String(s) => CstInputValue::String(s.clone()),
        Value::Array(items) => CstInputValue::Array(items.iter().map(input).collect()),
        Value::Object(map) => CstInputValue::Object(map.iter().map(|(k, v)| (k.clone(), input(v))).collect()),
    }
}

/// What the file says, as a value (an empty file is an empty object).
fn parse(text: &str, what: &str) -> Result<Value, InstallError> {
    if text.trim().is_empty() {
        return Ok(Value::Object(Default::default()));
    }
    let value: Option<Value> = jsonc_parser::parse_to_serde_value(text, &options())
        .map_err(|source| InstallError::InvalidJson { what: what.to_string(), source })?;
    match value {
        Some(value @ Value::Object(_)) | Some(value @ Value::Null) => Ok(value),
        None => Ok(Value::Object(Default::default())),
        Some(_) => Err(InstallError::NotAnObject { what: what.to_string() }),
    }
}

/// `text` with `server` registered under `key` (fields cellbox does not
/// write, such as `env`, are kept); `None` when it already is.
pub fn install(
    text: &str,
    key: &str,
    stdio_type: bool,
    server: &Server,
    what: &str,
) -> Result<Option<String>, InstallError> {
    let current = parse(text, what)?;
    if let Some(servers) = current.get(key).filter(|v| !v.is_null() && !v.is_object()) {
        return Err(InstallError::ServersNotAnObject {
            what: what.to_string(),
            key: key.to_string(),
            found: servers.to_string(),
        });
    }
    let wanted = fields(server, stdio_type);
    let entry = current.get(key).and_then(|servers| servers.get(&server.name));
    if let Some(entry) = entry {
        if !entry.is_object() {
            return Err(InstallError::EntryNotAnObject { what: what.to_string(), name: server.name.clone() });
        }
        if wanted.iter().all(|(field, value)| entry.get(*field) == Some(value)) {
            return Ok(None);
        }
    }
    let root = CstRootNode::parse(text, &options())
        .map_err(|source| InstallError::JsonTree { what: what.to_string(), source })?;
    let servers = root.object_value_or_set().object_value_or_set(key);
    let entry = servers.object_value_or_set(&server.name);
    for (field, value) in &wanted {
        match entry.get(field) {
            Some(prop) => prop.set_value(input(value)),
            None => {
                entry.append(field, input(value));
            }
        }
    }
    let mut out = root.to_string();
    if !out.ends_with('\n') {
        out.push('\n');
    }
    Ok(Some(out))
}

/// `text` without the `name` entry under `key`; `None` when there is none.
pub fn uninstall(text: &str, key: &str, name: &str, what: &str) -> Result<Option<String>, InstallError> {
    let current = parse(text, what)?;
    if current.get(key).and_then(|servers| servers.get(name)).is_none() {
        return Ok(None);
    }
    let root = CstRootNode::parse(text, &options())
        .map_err(|source| InstallError::JsonTree { what: what.to_string(), source })?;
    let prop = root.object_value().and_then(|o| o.object_value(key)).and_then(|servers| servers.get(name));
    match prop {
        Some(prop) => prop.remove(),
        None => return Ok(None),
    }
    Ok(Some(root.to_string()))
}
