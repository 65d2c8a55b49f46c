//! How each tool presents itself to clients beyond its schema: the MCP
//! annotations (hints a client uses to decide whether to ask before a call,
//! whether a retry is safe, whether the tool reaches outside the machine) and
//! the `_meta` size hint Claude Code reads.
//!
//! One table, [`annotations_for`], so that a new tool gets its hints in one
//! line. A tool missing from it is listed without annotations, and a unit
//! test below catches that for the tools this server lists.

use rmcp::model::{JsonObject, MetaObject, Tool, ToolAnnotations};
use serde_json::json;

/// The `_meta` key Claude Code reads from `tools/list` for the largest result
/// (in characters) it passes to the model inline instead of spilling it to a
/// file; its documented ceiling is 500 000.
pub const MAX_RESULT_SIZE_KEY: &str = "anthropic/maxResultSizeChars";
/// Claude Code's ceiling for [`MAX_RESULT_SIZE_KEY`].
const MAX_RESULT_SIZE_CEILING: usize = 500_000;

/// The hints of one tool: `(read_only, destructive, idempotent, open_world)`.
type Hints = (bool, bool, bool, bool);

/// The hints of every tool this server may list, as the tools truly behave.
///
/// - `eval` runs arbitrary code: it may change or delete files, and reach the
///   network (`%pip`, `requests`), and running the same cell twice is not the
///   same as once (state, side effects).
/// - `eval_reset` throws away every variable (destructive), but a second reset
///   changes nothing more (idempotent); it touches only this server's kernels.
/// - `eval_export_notebook` writes a file when given `path`, overwriting one
///   that exists (destructive); writing the same history again gives the same
///   file (idempotent).
pub fn annotations_for(name: &str) -> Option<Hints> {
    Some(match name {
        "eval" => (false, true, false, true),
        "eval_reset" => (false, true, true, false),
        "eval_export_notebook" => (false, true, true, false),
        // Reads move the run's read mark: not read-only, not idempotent.
        "eval_wait" => (false, false, false, false),
        // Interrupts the running cell and skips the rest; a second cancel finds the run over.
        "eval_cancel" => (false, true, true, false),
        "eval_sessions" => (true, false, true, false),
        // Adds a session and changes none; a second fork under the same name is refused.
        "eval_fork" => (false, false, false, false),
        // Throws away the state after the checkpoint; each undo goes one step further back.
        "eval_undo" => (false, true, false, false),
        // Writes (replaces) a file; the same state saved again gives the same names.
        "eval_snapshot" => (false, true, true, false),
        // Replaces names in the session; restoring the same file twice gives the same state.
        "eval_restore" => (false, true, true, false),
        _ => return None,
    })
}

/// `tool` with its annotations (the title repeated there, as older clients
/// read it from the annotations) and, for tools whose results can be large,
/// the size hint: `max_text_bytes` is the bound on a result's text.
pub fn dress(mut tool: Tool, max_text_bytes: usize) -> Tool {
    if let Some((read_only, destructive, idempotent, open_world)) = annotations_for(&tool.name) {
        let mut hints = ToolAnnotations::new()
            .read_only(read_only)
            .destructive(destructive)
            .idempotent(idempotent)
            .open_world(open_world);
        hints.title = tool.title.clone();
        tool.annotations = Some(hints);
    }
    if has_large_results(&tool.name) {
        // The bounded text plus the structured details and a margin for
        // escaping: what a result really weighs when the text is at its limit.
        let size = max_text_bytes.saturating_mul(2).clamp(50_000, MAX_RESULT_SIZE_CEILING);
        let mut meta: JsonObject = tool.meta.take().map(|meta| meta.0).unwrap_or_default();
        meta.insert(MAX_RESULT_SIZE_KEY.into(), json!(size));
        tool.meta = Some(MetaObject(meta));
    }
    tool
}

/// Tools whose results carry cell output (bounded, but often above a
/// client's default inline size): the returned notebook too.
fn has_large_results(name: &str) -> bool {
    matches!(name, "eval" | "eval_wait" | "eval_cancel" | "eval_export_notebook")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eval_is_open_world_and_not_idempotent_reset_is_idempotent() {
        assert_eq!(annotations_for("eval"), Some((false, true, false, true)));
        assert_eq!(annotations_for("eval_reset"), Some((false, true, true, false)));
        assert_eq!(annotations_for("no_such_tool"), None);
    }

    #[test]
    fn dressing_keeps_the_title_and_adds_the_size_hint() {
        let tool = Tool::new("eval", "runs code", JsonObject::new()).with_title("Run Python code");
        let tool = dress(tool, 50 * 1024);
        let hints = tool.annotations.clone().unwrap();
        assert_eq!(hints.title.as_deref(), Some("Run Python code"));
        assert_eq!(tool.title.as_deref(), Some("Run Python code"));
        assert_eq!(hints.read_only_hint, Some(false));
        assert_eq!(tool.meta.unwrap().0[MAX_RESULT_SIZE_KEY], json!(102_400));
        let reset = dress(Tool::new("eval_reset", "resets", JsonObject::new()), 50 * 1024);
        assert!(reset.meta.is_none());
        assert_eq!(reset.annotations.unwrap().idempotent_hint, Some(true));
    }
}
