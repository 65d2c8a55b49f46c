//! The structured side of every tool result, and the `outputSchema` each
//! tool declares, generated from these types.
//!
//! Some clients hand the model a result's `structuredContent` instead of its
//! `content` when both are present, so every structured result carries the
//! model-facing text itself (`text`: the same bounded head+tail text as the
//! content's text block, with its `artifact://` link) and points at the
//! content's image blocks (`images`) rather than leaving them out. Errors keep
//! `isError` and carry their message in `text` too: every type here needs
//! only `text`, so an error result validates against the tool's schema.
//!
//! Protocol versions before 2025-06-18 know neither `structuredContent` nor
//! `outputSchema`; [`for_version`] strips both for them.

use std::sync::Arc;

use rmcp::model::{CallToolResult, ContentBlock, JsonObject, ProtocolVersion, Tool};
use schemars::JsonSchema;
use serde::Serialize;

use crate::tool::{CellReport, EvalResult, JsonOutput, RunCell, RunReport, SessionKernel, StatusEvent};

/// An image of the result: its bytes are the content block at `content_index`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ImageRef {
    /// Position of the image block in the result's `content` (0 is the text).
    pub content_index: usize,
    /// The cell (0-based) that displayed it.
    pub cell: usize,
    pub mime_type: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub width: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub height: Option<u32>,
}

/// One cell's state: how a finished call reports it, or where a run stands.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum CellEntry {
    Finished(CellReport),
    Running(RunCell),
}

/// `eval`, `eval_wait` and `eval_cancel`: the output of a call or a run.
#[derive(Debug, Clone, Default, Serialize, JsonSchema)]
pub struct EvalOutput {
    /// What the model reads: outputs, results and errors in order, bounded to a head and a tail, with the
    /// `artifact://` link to the full output when part was left out (the same text as the text content).
    pub text: String,
    /// The images, each pointing at its image block in `content`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<ImageRef>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cells: Option<Vec<CellEntry>>,
    /// JSON values the cells displayed. (Not named `json`: some clients show a structured
    /// result's `json` member alone, as if it were the whole answer.)
    #[serde(skip_serializing_if = "Option::is_none")]
    pub json_values: Option<Vec<JsonOutput>>,
    /// Status events (`%cd`, `%pip`, timeouts…) as the cells emitted them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status_events: Option<Vec<StatusEvent>>,
    /// `artifact://<id>` holding the full output.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub artifact: Option<String>,
    /// True when `text` leaves part of the output out.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub truncated: Option<bool>,
    /// Notes also at the end of `text` (timeouts, restarts, skipped cells).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub notes: Option<Vec<String>>,
    /// `run://<id>`, for a call that outlived its `wait` and for reads of a run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
    /// True while the run's cells still run (continue with `eval_wait`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub running: Option<bool>,
    /// The run this one waits behind, while its session is busy.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queued_behind: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub elapsed_ms: Option<u64>,
}

/// One named session, as `eval_sessions` lists it.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SessionEntry {
    pub name: String,
    pub busy: bool,
    /// The run going on in it, if any.
    pub run: Option<String>,
    /// When this connection first used it (seconds since 1970).
    pub started_unix: Option<u64>,
    /// The languages whose kernels are running.
    pub languages: Vec<String>,
    pub kernels: Vec<SessionKernel>,
    pub resident_bytes: u64,
    /// The title or first line of the last cell it ran.
    pub last_cell: Option<String>,
}

/// `eval_sessions`: this connection's sessions.
#[derive(Debug, Clone, Default, Serialize, JsonSchema)]
pub struct SessionsOutput {
    /// One line per session, as the text content shows it.
    pub text: String,
    #[serde(default)]
    pub sessions: Vec<SessionEntry>,
}

/// `eval_reset`: what the reset did.
#[derive(Debug, Clone, Default, Serialize, JsonSchema)]
pub struct ResetOutput {
    pub text: String,
    /// Whether a kernel was running and got restarted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub restarted: Option<bool>,
}

/// `eval_fork`: the new session.
#[derive(Debug, Clone, Default, Serialize, JsonSchema)]
pub struct ForkOutput {
    pub text: String,
    /// The new session's name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// The session it is a copy of.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// How long the fork took, from the request to the copy being ready.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub milliseconds: Option<f64>,
    /// Threads the source's cells had started; the copy does not have them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lost_threads: Vec<String>,
}

/// `eval_undo`: how far back the session went.
#[derive(Debug, Clone, Default, Serialize, JsonSchema)]
pub struct UndoOutput {
    pub text: String,
    /// Calls undone.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub steps: Option<usize>,
    /// Checkpoints left: how many more calls can be undone.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub left: Option<usize>,
}

/// `eval_snapshot` and `eval_restore`: the file and the names.
#[derive(Debug, Clone, Default, Serialize, JsonSchema)]
pub struct SnapshotOutput {
    pub text: String,
    /// The snapshot file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Its size (`eval_snapshot`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    /// The names saved, or restored.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub names: Vec<String>,
    /// The names that could not be saved, or restored, with the reason (and
    /// the settings' magic lines that failed to replay).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub left_out: Vec<LeftOut>,
    /// `eval_restore`: the settings magics had made, replayed as these magic lines (`%precision 2`, …).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub settings: Vec<String>,
}

/// A name a snapshot left out, and why.
#[derive(Debug, Clone, Default, Serialize, JsonSchema)]
pub struct LeftOut {
    pub name: String,
    pub reason: String,
}

impl From<(String, String)> for LeftOut {
    fn from((name, reason): (String, String)) -> LeftOut {
        LeftOut { name, reason }
    }
}

/// `eval_export_notebook`: the notebook, or where it was written.
#[derive(Debug, Clone, Default, Serialize, JsonSchema)]
pub struct ExportOutput {
    /// The notebook's JSON (nbformat 4.5), or a line naming the file it was written to.
    pub text: String,
    /// The file written, when the call gave `path`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cells: Option<usize>,
}

/// The JSON Schema of `T`, as a tool's `outputSchema`.
pub fn schema_of<T: JsonSchema>() -> Arc<JsonObject> {
    let schema = schemars::generate::SchemaSettings::draft2020_12().into_generator().into_root_schema_for::<T>();
    let mut value = schema.to_value();
    drop_number_formats(&mut value);
    match value {
        serde_json::Value::Object(map) => Arc::new(map),
        _ => unreachable!("a struct's schema is an object"),
    }
}

/// schemars marks Rust's integer widths as `format`s (`uint`, `uint64`, …) that JSON Schema does
/// not define; validators warn about each unknown one, so they go (`minimum` keeps the sign).
fn drop_number_formats(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::Object(map) => {
            let numeric = map.get("format").and_then(|f| f.as_str()).is_some_and(|format| {
                format.starts_with("uint") || format.starts_with("int") || matches!(format, "float" | "double")
            });
            if numeric {
                map.remove("format");
            }
            map.values_mut().for_each(drop_number_formats);
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(drop_number_formats),
        _ => {}
    }
}

/// The output schema of each tool this server lists.
pub fn schema_for_tool(name: &str) -> Option<Arc<JsonObject>> {
    Some(match name {
        "eval" | "eval_wait" | "eval_cancel" => schema_of::<EvalOutput>(),
        "eval_sessions" => schema_of::<SessionsOutput>(),
        "eval_reset" => schema_of::<ResetOutput>(),
        "eval_export_notebook" => schema_of::<ExportOutput>(),
        "eval_fork" => schema_of::<ForkOutput>(),
        "eval_undo" => schema_of::<UndoOutput>(),
        "eval_snapshot" | "eval_restore" => schema_of::<SnapshotOutput>(),
        _ => return None,
    })
}

/// `tool` with its output schema.
pub fn with_output_schema(mut tool: Tool) -> Tool {
    tool.output_schema = schema_for_tool(&tool.name);
    tool
}

fn structured(value: &impl Serialize) -> JsonObject {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::Object(map)) => map,
        _ => unreachable!("an output type serialises to an object"),
    }
}

/// A result whose only content is `text`, with the same text structured as `output`.
pub fn text_result(text: String, output: &impl Serialize, is_error: bool) -> CallToolResult {
    let content = vec![ContentBlock::text(text)];
    let mut result = if is_error { CallToolResult::error(content) } else { CallToolResult::success(content) };
    result.structured_content = Some(structured(output).into());
    result
}

/// An error: `isError`, the message as text content and as `text`.
pub fn error_result(message: impl Into<String>) -> CallToolResult {
    let message = message.into();
    let output = EvalOutput { text: message.clone(), ..EvalOutput::default() };
    text_result(message, &output, true)
}

/// A finished call: text first, then images; the same text and the details as structured content.
pub fn eval_result(result: EvalResult) -> CallToolResult {
    let mut content = vec![ContentBlock::text(result.text.clone())];
    let mut images = Vec::new();
    for image in &result.images {
        images.push(ImageRef {
            content_index: content.len(),
            cell: image.cell,
            mime_type: image.image.mime.clone(),
            width: image.image.width,
            height: image.image.height,
        });
        content.push(ContentBlock::image(image.image.data.clone(), image.image.mime.clone()));
    }
    let output = EvalOutput {
        text: result.text,
        images,
        cells: Some(result.cells.into_iter().map(CellEntry::Finished).collect()),
        json_values: Some(result.json),
        status_events: Some(result.status_events),
        artifact: result.artifact,
        truncated: Some(result.truncated),
        notes: Some(result.notes),
        ..EvalOutput::default()
    };
    let mut tool_result =
        if result.is_error { CallToolResult::error(content) } else { CallToolResult::success(content) };
    tool_result.structured_content = Some(structured(&output).into());
    tool_result
}

/// A run still going: the output so far, each cell's state and the handle.
pub fn running_result(report: RunReport) -> CallToolResult {
    let output = EvalOutput {
        text: report.text.clone(),
        cells: Some(report.cells.into_iter().map(CellEntry::Running).collect()),
        artifact: report.artifact,
        truncated: Some(report.truncated),
        run: Some(report.run),
        running: Some(true),
        queued_behind: report.queued_behind,
        elapsed_ms: Some(report.elapsed_ms),
        ..EvalOutput::default()
    };
    text_result(report.text, &output, false)
}

/// Whether `version` has `structuredContent` and `outputSchema` (2025-06-18 on).
/// No version (a client that skipped `initialize`) counts as the newest.
pub fn has_structured_content(version: Option<&ProtocolVersion>) -> bool {
    version.is_none_or(|version| version.as_str() >= ProtocolVersion::V_2025_06_18.as_str())
}

/// `result` as `version` defines results: without `structuredContent` before 2025-06-18.
pub fn for_version(mut result: CallToolResult, version: Option<&ProtocolVersion>) -> CallToolResult {
    if !has_structured_content(version) {
        result.structured_content = None;
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_schema_is_an_object_that_requires_only_text() {
        for name in ["eval", "eval_wait", "eval_cancel", "eval_sessions", "eval_reset", "eval_export_notebook"] {
            let schema = schema_for_tool(name).unwrap();
            assert_eq!(schema["type"], "object", "{name}: {schema:?}");
            assert_eq!(schema["required"], serde_json::json!(["text"]), "{name}: {schema:?}");
        }
    }

    #[test]
    fn schemas_name_no_format_json_schema_lacks() {
        let text = serde_json::to_string(&*schema_for_tool("eval").unwrap()).unwrap();
        assert!(!text.contains("\"format\""), "{text}");
        assert!(text.contains("\"minimum\""), "{text}");
    }

    #[test]
    fn errors_carry_their_message_in_both_places() {
        let result = error_result("no such run");
        assert_eq!(result.is_error, Some(true));
        let value = serde_json::to_value(&result).unwrap();
        assert_eq!(value["content"][0]["text"], "no such run");
        assert_eq!(value["structuredContent"]["text"], "no such run");
    }

    #[test]
    fn old_protocols_get_no_structured_content() {
        let result = error_result("x");
        assert!(for_version(result.clone(), Some(&ProtocolVersion::V_2025_03_26)).structured_content.is_none());
        assert!(for_version(result.clone(), Some(&ProtocolVersion::V_2025_06_18)).structured_content.is_some());
        assert!(for_version(result, None).structured_content.is_some());
    }
}
