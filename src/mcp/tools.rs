//! What the server lists: the instructions a model reads, each tool's
//! description, and the tools with their input schemas (only the languages
//! this server offers). Output schemas come from [`super::output`], hints
//! from [`super::manners`].

use std::sync::Arc;

use rmcp::model::Tool;
use serde_json::{Value, json};

use super::{EvalServer, manners, output};
use crate::runtime::Runtime;
use crate::tool::{EvalParams, Language};

/// What a model is told about using the server.
pub const INSTRUCTIONS: &str = "\
cellbox runs Python code for you in a persistent kernel (like a Jupyter notebook without Jupyter).
- Use the `eval` tool with one or more cells. Variables, imports and functions persist across calls.
- The last expression of a cell is shown; print() output and errors (with tracebacks) come back too;
  display(obj) and matplotlib figures come back as images, tables or JSON.
- Output is bounded (50 KB / 3000 lines); the full output is kept as an artifact://<id> resource.
- Each cell has a timeout (default 30 s, up to 3600); a timed-out cell is interrupted and the state is
  kept. If the state looks broken, call `eval_reset` or pass reset: true. There is no input().
- Anything that may take over a minute: pass `wait` (seconds) to eval. If cells still run when it
  elapses you get the output so far and a run://<id> handle; then call `eval_wait` (it blocks on the
  server; never poll with sleep cells) or `eval_cancel`. A call on a busy session queues behind its run.
- `session: \"name\"` gives independent kernels (e.g. to keep working during a long run); see `eval_sessions`.";

/// The `eval` tool's description, written for models.
pub const EVAL_DESCRIPTION: &str = "\
Run Python code cells in a persistent kernel and return their output.

State (variables, imports, functions, open files) persists across calls until reset. Cells run in order
in the same kernel; if one fails, the following cells are skipped and the error says which one failed.
The value of a cell's last expression is shown (end the line with `;` to hide it). Top-level `await` works.
IPython-style magics work in cells: `%pip install pkg`, `!shell command`, `files = !ls`, `%%bash`, `%cd`,
`%time`, `%timeit`, `%env`, `%%writefile`.
Rich output: display(obj), matplotlib plots (returned as images), pandas DataFrames, JSON.
Limits: text output is capped at 50 KB / 3000 lines; longer output keeps its head and tail and the full
output is saved as artifact://<id> (readable as a resource). Per-cell `timeout` in seconds (default 30,
max 3600): on timeout the cell is interrupted (KeyboardInterrupt) and the kernel keeps its state; a kernel
that does not respond is restarted. `reset: true` (top-level or per cell) restarts the kernel first.
For long work pass `wait` (seconds): when it elapses with cells still running, the call returns the output
so far and a run://<id> handle while the cells go on; continue with eval_wait, stop with eval_cancel.
`session` names an independent kernel set (default \"default\").
`check: \"syntax\"` parses every cell before any runs (a syntax error runs none and shows the
caret); `check: \"lint\"` also returns `ruff check` findings as notes, never blocking.
input() is not supported.";

/// What a model is told about JavaScript cells, when they are offered.
pub const JS_INSTRUCTIONS: &str = "\
- JavaScript cells (\"language\": \"js\") run in a persistent Node.js kernel of their own: top-level
  const/let/function/class persist across calls, top-level await works, require() and import() load
  packages from the project's node_modules, and display(value, mime?) shows images, HTML or JSON.";

/// The `eval` tool's description of JavaScript cells, when they are offered.
pub const JS_DESCRIPTION: &str = "\
JavaScript cells (\"language\": \"js\"; \"ts\" for TypeScript, types stripped) run in a separate
persistent Node.js kernel: declarations persist, top-level await works, the last expression's value is
shown, require()/import() resolve from the working directory, display(value, mime?) shows rich output.";

impl EvalServer {
    /// What the model is told: the Python text, the JavaScript text, or both,
    /// then what the sandbox lets its code write and whether it has network.
    pub(super) fn instructions(&self) -> String {
        let config = self.engine.config();
        let mut sandbox =
            format!("\n- Sandbox: {}", crate::sandbox::describe_enforced(&config.sandbox, &config.default_cwd));
        if matches!(config.backend, crate::session::Backend::Gateway(_)) && self.offers(Runtime::Python) {
            sandbox.push_str(
                " Python cells run on a Jupyter gateway, outside this sandbox: only their environment is filtered.",
            );
        }
        let base = match (self.offers(Runtime::Python), self.offers(Runtime::Node)) {
            (true, true) => format!("{INSTRUCTIONS}\n{JS_INSTRUCTIONS}"),
            (false, true) => format!(
                "cellbox runs JavaScript code for you in a persistent Node.js kernel (Python is not available \
                 here).\n{JS_INSTRUCTIONS}\n- Output is bounded; the full output is kept as an artifact://<id> \
                 resource. Cells have timeouts (default 30 s); there is no interactive input."
            ),
            _ => INSTRUCTIONS.to_string(),
        };
        base + &sandbox
    }

    pub(super) fn eval_tool(&self) -> Tool {
        let mut schema = EvalParams::json_schema();
        let offered: Vec<&str> = self.languages.iter().map(|language| language.as_str()).collect();
        restrict_languages(&mut schema, &offered);
        let mut schema = schema.as_object().cloned().unwrap_or_default();
        Self::add_session_property(&mut schema);
        let (description, title) = match (self.offers(Runtime::Python), self.offers(Runtime::Node)) {
            (true, true) => (format!("{EVAL_DESCRIPTION}\n{JS_DESCRIPTION}"), "Run Python or JavaScript code"),
            (false, true) => (
                format!(
                    "Run JavaScript code cells in a persistent Node.js kernel and return their output (Python is \
                     not available here; cells without a language run as JavaScript).\n{JS_DESCRIPTION}"
                ),
                "Run JavaScript code",
            ),
            _ => (EVAL_DESCRIPTION.to_string(), "Run Python code"),
        };
        Tool::new("eval", description, Arc::new(schema)).with_title(title)
    }

    /// Every tool offered, each with its annotations and size hint ([`manners`]).
    pub(super) fn tools(&self) -> Vec<Tool> {
        let max_text_bytes = self.engine.config().text_limits.max_bytes;
        [
            self.eval_tool(),
            self.reset_tool(),
            Self::export_tool(),
            Self::wait_tool(),
            Self::cancel_tool(),
            Self::sessions_tool(),
            Self::fork_tool(),
            Self::undo_tool(),
            Self::snapshot_tool(),
            Self::restore_tool(),
        ]
        .into_iter()
        .map(|tool| output::with_output_schema(manners::dress(tool, max_text_bytes)))
        .collect()
    }

    fn reset_tool(&self) -> Tool {
        let schema = json!({"type": "object", "properties": {"session": {
            "type": "string", "description": "The named session to reset (default \"default\")."
        }}, "additionalProperties": false});
        Tool::new(
            "eval_reset",
            "Restart this session's kernels (every language): every variable, import and function is cleared.",
            Arc::new(schema.as_object().cloned().unwrap_or_default()),
        )
        .with_title("Reset the kernels")
    }

    fn export_tool() -> Tool {
        let schema = json!({
            "type": "object",
            "properties": {
                "path": {
                    "type": "string",
                    "description": "Write the notebook to this file (.ipynb), relative to the workspace (the \
                                    server's working directory); it must stay inside the folders cells may write. \
                                    Without it, the notebook's JSON is returned as text."
                }
            },
            "additionalProperties": false
        });
        Tool::new(
            "eval_export_notebook",
            "Save the cells this session has run, with their outputs and execution counts, as a Jupyter notebook \
             (nbformat 4.5). The history survives eval_reset.",
            Arc::new(schema.as_object().cloned().unwrap_or_default()),
        )
        .with_title("Export the session as a notebook")
    }
}

/// Keep only `offered` among the language values anywhere in the schema
/// (`enum` lists and `oneOf` alternatives naming a language).
pub(super) fn restrict_languages(schema: &mut Value, offered: &[&str]) {
    let is_language = |value: &Value| {
        value.as_str().is_some_and(|text| Language::ALL.iter().any(|language| language.as_str() == text))
    };
    let allowed = |value: &Value| value.as_str().is_some_and(|text| offered.contains(&text));
    match schema {
        Value::Object(map) => {
            for value in map.values_mut() {
                restrict_languages(value, offered);
            }
            if let Some(Value::Array(values)) = map.get_mut("enum")
                && !values.is_empty()
                && values.iter().all(is_language)
            {
                values.retain(allowed);
            }
            if let Some(Value::Array(alternatives)) = map.get_mut("oneOf") {
                alternatives.retain(|alternative| {
                    let named_ok = alternative.get("const").is_none_or(|value| !is_language(value) || allowed(value));
                    let enum_left = alternative.get("enum").and_then(Value::as_array).is_none_or(|e| !e.is_empty());
                    named_ok && enum_left
                });
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|item| restrict_languages(item, offered)),
        _ => {}
    }
}
