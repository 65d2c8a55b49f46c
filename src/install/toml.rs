//! Editing Codex's `config.toml` in place with toml_edit: only the
//! `[mcp_servers.<name>]` table changes; comments and layout stay.

use toml_edit::{Array, DocumentMut, Item, Table, value};

use super::{InstallError, Server};

fn parse(text: &str, what: &str) -> Result<DocumentMut, InstallError> {
    text.parse::<DocumentMut>().map_err(|source| InstallError::InvalidToml { what: what.to_string(), source })
}

/// `text` with `[mcp_servers.<name>]` set to the server's command and args
/// (other keys of that table, such as `env`, kept); `None` when it already is.
pub fn install(text: &str, server: &Server, what: &str) -> Result<Option<String>, InstallError> {
    let mut doc = parse(text, what)?;
    let servers = doc.entry("mcp_servers").or_insert_with(|| {
        let mut table = Table::new();
        table.set_implicit(true);
        Item::Table(table)
    });
    let Some(servers) = servers.as_table_like_mut() else {
        return Err(InstallError::ServersNotATable { what: what.to_string() });
    };
    let entry = servers.entry(&server.name).or_insert_with(|| Item::Table(Table::new()));
    let Some(entry) = entry.as_table_like_mut() else {
        return Err(InstallError::EntryNotATable { what: what.to_string(), name: server.name.clone() });
    };
    let command_same = entry.get("command").and_then(Item::as_str) == Some(server.command.as_str());
    let args_now: Option<Vec<&str>> =
        entry.get("args").and_then(Item::as_array).map(|a| a.iter().filter_map(|v| v.as_str()).collect());
    let args_same = args_now.is_some_and(|args| args == server.args.iter().map(String::as_str).collect::<Vec<_>>());
    if command_same && args_same {
        return Ok(None);
    }
    entry.insert("command", value(server.command.clone()));
    entry.insert("args", value(server.args.iter().collect::<Array>()));
    Ok(Some(doc.to_string()))
}

/// `text` without `[mcp_servers.<name>]`; `None` when it is not there.
pub fn uninstall(text: &str, name: &str, what: &str) -> Result<Option<String>, InstallError> {
    let mut doc = parse(text, what)?;
    let Some(servers) = doc.get_mut("mcp_servers").and_then(Item::as_table_like_mut) else {
        return Ok(None);
    };
    if servers.remove(name).is_none() {
        return Ok(None);
    }
    Ok(Some(doc.to_string()))
}
