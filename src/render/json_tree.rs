//! JSON outputs as a compact, indented tree, capped in depth and lines.

use serde_json::Value;

/// Nesting shown before `{…}` / `[…]` stand in for deeper values.
pub const MAX_DEPTH: usize = 4;
/// Lines shown before the rest is counted.
pub const MAX_LINES: usize = 40;

/// The tree, one entry per line.
pub fn json_tree(value: &Value) -> Vec<String> {
    let mut lines = Vec::new();
    walk(None, value, 0, &mut lines);
    if lines.len() > MAX_LINES {
        let more = lines.len() - MAX_LINES;
        lines.truncate(MAX_LINES);
        lines.push(format!("… {more} more lines"));
    }
    lines
}

fn scalar(value: &Value) -> Option<String> {
    match value {
        Value::Object(map) if map.is_empty() => Some("{}".into()),
        Value::Array(items) if items.is_empty() => Some("[]".into()),
        Value::Object(_) | Value::Array(_) => None,
        other => Some(other.to_string()),
    }
}

fn walk(key: Option<String>, value: &Value, depth: usize, lines: &mut Vec<String>) {
    let indent = "  ".repeat(depth);
    let label = key.map(|k| format!("{k}: ")).unwrap_or_default();
    if let Some(text) = scalar(value) {
        lines.push(format!("{indent}{label}{text}"));
        return;
    }
    if depth >= MAX_DEPTH {
        let summary = match value {
            Value::Object(map) => format!("{{… {} keys}}", map.len()),
            Value::Array(items) => format!("[… {} items]", items.len()),
            _ => unreachable!(),
        };
        lines.push(format!("{indent}{label}{summary}"));
        return;
    }
    match value {
        Value::Object(map) => {
            if !label.is_empty() || depth > 0 {
                lines.push(format!("{indent}{label}{{{} keys}}", map.len()));
            }
            let child = if label.is_empty() && depth == 0 { 0 } else { depth + 1 };
            for (k, v) in map {
                walk(Some(k.clone()), v, child, lines);
            }
        }
        Value::Array(items) => {
            if !label.is_empty() || depth > 0 {
                lines.push(format!("{indent}{label}[{} items]", items.len()));
            }
            let child = if label.is_empty() && depth == 0 { 0 } else { depth + 1 };
            for (i, v) in items.iter().enumerate() {
                walk(Some(format!("[{i}]")), v, child, lines);
            }
        }
        _ => unreachable!(),
    }
}
