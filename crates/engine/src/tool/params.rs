//! The eval tool's parameters, in both their per-cell and older top-level forms, and
//! their JSON Schema (shared with the MCP server).

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Per-cell timeout when none is given, in seconds.
pub const DEFAULT_TIMEOUT_SECS: f64 = 30.0;
/// Timeouts are clamped to this range, in seconds.
pub const TIMEOUT_RANGE: (f64, f64) = (1.0, 3600.0);

/// Run one or more code cells in a persistent kernel.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EvalParams {
    /// Cells to run, in order, in the same kernel. If a cell fails, the later ones are skipped.
    pub cells: Vec<CellParams>,
    /// Default timeout in seconds for cells that give none (1..3600, default 30).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<f64>,
    /// Restart the kernel (clearing all state) before the first cell.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reset: Option<bool>,
    /// Working directory of the kernel; must exist. Default: the session's directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// Seconds to wait for the cells (0..3600). When it elapses with cells still running, the call
    /// returns the output so far, each cell's state and a `run://<id>` handle; the cells go on under
    /// their own timeouts (read more with `eval_wait`, stop with `eval_cancel`). Default: wait until
    /// the call ends. `0` starts the run and returns at once (failing if the session is busy).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait: Option<f64>,
    /// Check the cells before running any: "syntax" parses every cell first (Python after its
    /// magics, so `%time` and `!cmd` are fine; JavaScript/TypeScript as Node's runner does) and, if
    /// one does not parse, runs none and shows the error with its caret; "lint" does that and also
    /// runs `ruff check` on Python cells (when installed), adding its findings as notes without
    /// blocking the run; "off" checks nothing. Default: the server's setting (off unless started
    /// with `--check` or `CELLBOX_CHECK`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<CheckMode>,
    /// Fork the session's Python kernel into a checkpoint before this call, so `eval_undo` can bring
    /// back the state from before it (whatever the call does: change data, crash, time out). Default:
    /// the server's setting (off unless started with `--checkpoints`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<bool>,
}

/// Which checks run before a call's cells (see [`EvalParams::check`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum CheckMode {
    /// No check: the cells run as they are (no exchange with the kernel before them).
    #[default]
    Off,
    /// Parse every cell first; a syntax error stops the call before any cell runs.
    Syntax,
    /// `syntax`, plus `ruff check` findings as notes (never blocking).
    Lint,
}

impl CheckMode {
    pub fn as_str(self) -> &'static str {
        match self {
            CheckMode::Off => "off",
            CheckMode::Syntax => "syntax",
            CheckMode::Lint => "lint",
        }
    }
}

impl std::str::FromStr for CheckMode {
    type Err = ParamsError;

    /// `off`/`syntax`/`lint`; also `0`/`no`/`false`/`none` for off and `1`/`on`/`yes`/`true` for syntax.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text.trim().to_ascii_lowercase().as_str() {
            "" | "off" | "0" | "no" | "false" | "none" => Ok(CheckMode::Off),
            "syntax" | "1" | "on" | "yes" | "true" => Ok(CheckMode::Syntax),
            "lint" | "ruff" => Ok(CheckMode::Lint),
            other => Err(ParamsError::UnknownCheck(other.to_string())),
        }
    }
}

/// One cell.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CellParams {
    /// The source code. Python cells accept IPython-style magics (%pip, !cmd, %%bash, ...).
    pub code: String,
    /// Language of the cell: "py", "js", "ts" (TypeScript, run by the JavaScript kernel), "bash" (one
    /// shell per session: cwd, variables and functions persist; a non-zero exit status fails the cell)
    /// "r" or "java" (an installed Jupyter kernel for the language, such as IRkernel or JJava).
    /// Default: "py", or "js" where Python is not available.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub language: Option<Language>,
    /// Run the cell in this installed Jupyter kernel (a kernelspec name, as `jupyter kernelspec list`
    /// shows them: "ir", "julia-1.10", "deno"), one per session like every kernel.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<String>,
    /// A short label shown with the cell's output and status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Timeout for this cell in seconds (1..3600, default 30). On timeout the cell is interrupted;
    /// the kernel and its state survive unless it does not respond.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<f64>,
    /// Restart this language's kernel (clearing its state) right before this cell.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reset: Option<bool>,
    /// Environment variables for this cell only (`None` as a value unsets
    /// one); the kernel's own are back after it. Set by library callers such
    /// as the Python SDK; not part of the MCP tool's input.
    #[serde(skip)]
    #[schemars(skip)]
    pub env: Option<std::collections::BTreeMap<String, Option<String>>>,
    /// A list or dict value also comes as `application/json` (see
    /// [`crate::protocol::ExecuteRequest::json_results`]). Library callers only.
    #[serde(skip)]
    #[schemars(skip)]
    pub json_results: bool,
}

/// A cell's language.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum Language {
    #[default]
    #[serde(rename = "py", alias = "python")]
    Py,
    #[serde(rename = "js", alias = "javascript")]
    Js,
    /// TypeScript: types are stripped (by Node 22.13+, or by the runner's own amaro on an older Node)
    /// and the cell runs in the JavaScript kernel.
    #[serde(rename = "ts", alias = "typescript")]
    Ts,
    /// Bash: one long-lived shell per session (cwd, variables, functions and aliases persist).
    #[serde(rename = "bash", alias = "sh", alias = "shell")]
    Bash,
    /// R, in an installed Jupyter kernel for R (IRkernel's `ir` when there is one).
    #[serde(rename = "r")]
    R,
    /// Java, in an installed Jupyter kernel for Java (JJava's or IJava's `java` when there is one).
    #[serde(rename = "java")]
    Java,
    /// A cell for the Jupyter kernel its `kernel` names.
    #[serde(rename = "jupyter")]
    Jupyter,
}

impl Language {
    /// Every language, in the order the schema lists them.
    pub const ALL: [Language; 7] =
        [Language::Py, Language::Js, Language::Ts, Language::Bash, Language::R, Language::Java, Language::Jupyter];

    pub fn as_str(self) -> &'static str {
        match self {
            Language::Py => "py",
            Language::Js => "js",
            Language::Ts => "ts",
            Language::Bash => "bash",
            Language::R => "r",
            Language::Java => "java",
            Language::Jupyter => "jupyter",
        }
    }

    /// The runtime whose kernel runs cells of this language.
    pub fn runtime(self) -> crate::runtime::Runtime {
        match self {
            Language::Py => crate::runtime::Runtime::Python,
            Language::Js | Language::Ts => crate::runtime::Runtime::Node,
            Language::Bash => crate::runtime::Runtime::Bash,
            Language::R | Language::Java | Language::Jupyter => crate::runtime::Runtime::Jupyter,
        }
    }

    /// For a language cellbox runs on an installed Jupyter kernel: the
    /// kernelspec `language` it looks for, and the kernel it prefers among them.
    pub fn kernelspec_language(self) -> Option<(&'static str, &'static str)> {
        match self {
            Language::R => Some(("R", "ir")),
            Language::Java => Some(("java", "java")),
            _ => None,
        }
    }

    /// The language of a file, from its extension (`.py`, `.js`/`.mjs`/`.cjs`, `.ts`/`.mts`, `.sh`/`.bash`).
    pub fn from_extension(path: &std::path::Path) -> Option<Language> {
        match path.extension()?.to_str()? {
            "py" => Some(Language::Py),
            "js" | "mjs" | "cjs" => Some(Language::Js),
            "ts" | "mts" | "cts" => Some(Language::Ts),
            "sh" | "bash" => Some(Language::Bash),
            "r" | "R" => Some(Language::R),
            _ => None,
        }
    }
}

/// Parameters that cannot run.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ParamsError {
    #[error("invalid eval parameters: {0}")]
    Malformed(String),
    #[error("eval needs at least one cell: pass {{\"cells\": [{{\"code\": \"...\"}}]}}")]
    NoCells,
    #[error("cell {index}: timeout must be a number of seconds, got {value}")]
    BadTimeout { index: usize, value: f64 },
    #[error("wait must be a number of seconds from 0 to 3600, got {0}")]
    BadWait(f64),
    #[error("cell {index}: {reason}")]
    BadKernel { index: usize, reason: String },
    #[error("unknown check {0:?}; use off, syntax or lint")]
    UnknownCheck(String),
    /// The check setting `name` (`CELLBOX_CHECK`) holds a value that is not a check.
    #[error("{name}: {source}")]
    CheckSetting { name: &'static str, source: Box<ParamsError> },
}

impl EvalParams {
    /// Parse JSON parameters with a message that says what is wrong.
    pub fn from_json(value: serde_json::Value) -> Result<Self, ParamsError> {
        serde_json::from_value(value).map_err(|e| ParamsError::Malformed(e.to_string()))
    }

    /// One Python cell.
    pub fn code(code: impl Into<String>) -> Self {
        EvalParams { cells: vec![CellParams { code: code.into(), ..Default::default() }], ..Default::default() }
    }

    /// The JSON Schema of the parameters.
    pub fn json_schema() -> serde_json::Value {
        serde_json::to_value(schemars::schema_for!(EvalParams)).expect("schemas serialize")
    }

    /// How long a caller waits for the call before it gets a run handle
    /// (`None`: until the call ends); clamped to 0..3600 seconds.
    pub fn wait_duration(&self) -> Result<Option<Duration>, ParamsError> {
        match self.wait {
            None => Ok(None),
            Some(seconds) if seconds.is_finite() && seconds >= 0.0 => {
                Ok(Some(Duration::from_secs_f64(seconds.min(TIMEOUT_RANGE.1))))
            }
            Some(bad) => Err(ParamsError::BadWait(bad)),
        }
    }

    /// Validate and resolve defaults: one [`PlannedCell`] per cell.
    pub fn plan(&self) -> Result<Vec<PlannedCell>, ParamsError> {
        if self.cells.is_empty() {
            return Err(ParamsError::NoCells);
        }
        self.wait_duration()?;
        let default_timeout = self.timeout;
        self.cells
            .iter()
            .enumerate()
            .map(|(index, cell)| {
                let seconds = cell.timeout.or(default_timeout).unwrap_or(DEFAULT_TIMEOUT_SECS);
                if !seconds.is_finite() {
                    return Err(ParamsError::BadTimeout { index: index + 1, value: seconds });
                }
                let clamped = seconds.clamp(TIMEOUT_RANGE.0, TIMEOUT_RANGE.1);
                let language = match (&cell.kernel, cell.language) {
                    (None, Some(Language::Jupyter)) => {
                        return Err(ParamsError::BadKernel {
                            index: index + 1,
                            reason: "a \"jupyter\" cell names its kernel: add \"kernel\": \"<kernelspec name>\"".into(),
                        });
                    }
                    (None, language) => language,
                    (Some(name), language) => {
                        if !crate::jupyter::spec::valid_name(name) {
                            return Err(ParamsError::BadKernel {
                                index: index + 1,
                                reason: format!(
                                    "{name:?} is not a kernel name: kernelspec names are ASCII letters, digits, '.', \
                                     '_' and '-'"
                                ),
                            });
                        }
                        match language {
                            None | Some(Language::Jupyter) => Some(Language::Jupyter),
                            Some(language @ (Language::R | Language::Java)) => Some(language),
                            Some(other) => {
                                return Err(ParamsError::BadKernel {
                                    index: index + 1,
                                    reason: format!(
                                        "\"kernel\" names a Jupyter kernel, and \"{}\" cells run in cellbox's own \
                                         kernel: pass one or the other",
                                        other.as_str()
                                    ),
                                });
                            }
                        }
                    }
                };
                Ok(PlannedCell {
                    index,
                    code: cell.code.clone(),
                    title: cell.title.clone().filter(|t| !t.trim().is_empty()),
                    language: language.unwrap_or_default(),
                    language_given: language.is_some(),
                    kernel: cell.kernel.clone(),
                    timeout: Duration::from_secs_f64(clamped),
                    reset: cell.reset.unwrap_or(false) || (index == 0 && self.reset.unwrap_or(false)),
                    env: cell.env.clone(),
                    json_results: cell.json_results,
                })
            })
            .collect()
    }
}

impl PlannedCell {
    /// Whether this cell runs on `interpreter`'s kernels: its runtime's, and
    /// for a Jupyter cell the kernelspec it names (the interpreter's folder).
    pub fn runs_on(&self, interpreter: &crate::runtime::Interpreter) -> bool {
        self.language.runtime() == interpreter.runtime
            && (interpreter.runtime != crate::runtime::Runtime::Jupyter
                || interpreter.executable.file_name().and_then(|name| name.to_str()) == self.kernel.as_deref())
    }
}

/// A cell with its defaults resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedCell {
    /// 0-based position in the call.
    pub index: usize,
    pub code: String,
    pub title: Option<String>,
    pub language: Language,
    /// False when the cell named no language (the engine may then pick another default).
    pub language_given: bool,
    /// The Jupyter kernel (kernelspec name) of an `r` or `jupyter` cell: the
    /// one the cell named, else the one the engine chose for its language.
    pub kernel: Option<String>,
    pub timeout: Duration,
    /// Reset this cell's kernel before it runs (a top-level `reset` sets it on the first cell).
    pub reset: bool,
    /// Variables for this cell only (see [`CellParams::env`]).
    pub env: Option<std::collections::BTreeMap<String, Option<String>>>,
    /// See [`CellParams::json_results`].
    pub json_results: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn accepts_the_older_and_newer_forms() {
        let newest = json!({"cells": [{"language": "py", "code": "1", "title": "t", "timeout": 5, "reset": true}]});
        let older = json!({"cells": [{"code": "1", "title": "t"}], "timeout": 12, "reset": true, "cwd": "/tmp"});
        let newest = EvalParams::from_json(newest).unwrap().plan().unwrap();
        assert_eq!(newest[0].timeout, Duration::from_secs(5));
        assert!(newest[0].reset);
        let older = EvalParams::from_json(older).unwrap().plan().unwrap();
        assert_eq!(older[0].timeout, Duration::from_secs(12));
        assert!(older[0].reset, "top-level reset applies to the first cell");
    }

    #[test]
    fn timeouts_default_and_clamp() {
        let params = EvalParams::from_json(json!({"timeout": 9000, "cells": [
            {"code": "a"}, {"code": "b", "timeout": 0.01}, {"code": "c", "timeout": 7}
        ]}))
        .unwrap();
        let plan = params.plan().unwrap();
        assert_eq!(plan[0].timeout, Duration::from_secs(3600));
        assert_eq!(plan[1].timeout, Duration::from_secs(1));
        assert_eq!(plan[2].timeout, Duration::from_secs(7));
        assert!(!plan[1].reset);
        assert_eq!(EvalParams::code("x").plan().unwrap()[0].timeout, Duration::from_secs(30));
    }

    #[test]
    fn bad_input_is_explained() {
        assert!(matches!(EvalParams::from_json(json!({"cells": []})).unwrap().plan(), Err(ParamsError::NoCells)));
        let typo = EvalParams::from_json(json!({"cells": [{"code": "1", "timout": 3}]})).unwrap_err();
        assert!(typo.to_string().contains("timout"), "{typo}");
        let language = EvalParams::from_json(json!({"cells": [{"code": "1", "language": "ruby"}]})).unwrap_err();
        assert!(language.to_string().contains("ruby"), "{language}");
        assert_eq!(
            EvalParams::from_json(json!({"cells": [{"code": "1", "language": "python"}]})).unwrap().cells[0].language,
            Some(Language::Py)
        );
    }

    #[test]
    fn check_modes_parse() {
        let params = EvalParams::from_json(json!({"cells": [{"code": "1"}], "check": "lint"})).unwrap();
        assert_eq!(params.check, Some(CheckMode::Lint));
        assert_eq!(EvalParams::code("1").check, None);
        assert!(EvalParams::from_json(json!({"cells": [{"code": "1"}], "check": "pylint"})).is_err());
        assert_eq!("Syntax".parse::<CheckMode>(), Ok(CheckMode::Syntax));
        assert_eq!("".parse::<CheckMode>(), Ok(CheckMode::Off));
        let maybe = "maybe".parse::<CheckMode>().unwrap_err();
        assert_eq!(maybe, ParamsError::UnknownCheck("maybe".into()));
        assert_eq!(maybe.to_string(), "unknown check \"maybe\"; use off, syntax or lint");
        assert!(EvalParams::json_schema().to_string().contains("\"lint\""));
    }

    #[test]
    fn schema_describes_cells() {
        let schema = EvalParams::json_schema();
        let text = schema.to_string();
        assert!(text.contains("\"cells\""));
        assert!(text.contains("1..3600"));
        assert!(text.contains("\"js\""));
    }
}
