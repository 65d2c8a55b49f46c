//! Status events (`application/x-cellbox-status`) as one line each.

use serde_json::Value;

fn text(event: &Value, key: &str) -> String {
    match event.get(key) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

fn millis(value: Option<&Value>) -> String {
    let Some(ms) = value.and_then(Value::as_f64) else { return "?".into() };
    let (amount, unit) = if ms >= 1000.0 {
        (ms / 1000.0, "s")
    } else if ms >= 1.0 {
        (ms, "ms")
    } else if ms >= 0.001 {
        (ms * 1000.0, "µs")
    } else {
        (ms * 1_000_000.0, "ns")
    };
    // three significant digits, as IPython prints timings
    let decimals = if amount >= 100.0 {
        0
    } else if amount >= 10.0 {
        1
    } else {
        2
    };
    format!("{amount:.decimals$} {unit}")
}

/// Whether a reader is better off without this event: the budget's
/// pause/resume around bridge calls (the bridge call's own line says it all).
pub fn is_hidden(event: &Value) -> bool {
    event.get("op").and_then(Value::as_str) == Some(crate::kernel::bridge_relay::BUDGET_STATUS_OP)
}

/// One readable line for a status event.
pub fn status_line(event: &Value) -> String {
    let op = text(event, "op");
    match op.as_str() {
        "cd" => format!("cd → {}", text(event, "path")),
        "pip" => {
            let installed = event.get("installed").and_then(Value::as_array).map(|a| a.len()).unwrap_or(0);
            let mut line = format!("pip {} (exit {})", text(event, "args"), text(event, "exit_code"));
            if installed > 0 {
                let names: Vec<String> = event["installed"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter_map(|v| v.as_str().map(String::from))
                    .collect();
                line.push_str(&format!(" · installed {}", names.join(", ")));
            }
            line
        }
        "read" => format!("read {} chars from {}", text(event, "chars"), text(event, "path")),
        "write" => format!("wrote {} chars to {}", text(event, "chars"), text(event, "path")),
        "writefile" => format!("writefile {} ({} chars)", text(event, "path"), text(event, "chars")),
        "time" => format!("Wall time: {} (CPU {})", millis(event.get("wall_ms")), millis(event.get("cpu_ms"))),
        "timeit" => format!(
            "timeit: {} ± {} per loop ({} runs × {} loops)",
            millis(event.get("mean_ms")),
            millis(event.get("std_ms")),
            text(event, "runs"),
            text(event, "loops")
        ),
        "ls" => format!("ls {} ({} entries)", text(event, "path"), text(event, "count")),
        "env" => format!("env {} {}", text(event, "action"), text(event, "key")).trim_end().to_string(),
        "reset" => "namespace reset".to_string(),
        "load" => format!("load {} ({} lines)", text(event, "path"), text(event, "lines")),
        "run" => format!("run {}", text(event, "path")),
        "shell" => format!("{} exited with {}", text(event, "shell"), text(event, "exit_code")),
        "log" => format!("log: {}", text(event, "message")),
        "phase" => format!("▸ {}", text(event, "title")),
        "bridge" => {
            let mut parts = vec![text(event, "call")];
            let model = text(event, "model");
            if !model.is_empty() {
                parts.push(model);
            }
            parts.push(millis(event.get("ms")));
            parts.join(" · ")
        }
        _ => {
            let mut rest = event.clone();
            if let Some(map) = rest.as_object_mut() {
                map.remove("op");
            }
            if rest.as_object().is_some_and(|m| m.is_empty()) { op } else { format!("{op}: {rest}") }
        }
    }
}
