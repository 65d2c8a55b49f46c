//! nbformat 4 as types: read any 4.x notebook, write 4.5 the way Jupyter
//! writes it (sorted keys, one-space indent, multiline text as lists of
//! lines, a unique id on every cell).

use std::path::{Path, PathBuf};

use serde::de::Deserializer;
use serde::ser::Serializer;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The nbformat minor version cellbox writes (4.5: cells carry ids).
pub const WRITTEN_MINOR: u32 = 5;

/// A notebook that cannot be read, and what to do about it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum NotebookError {
    #[error("cannot read {path}: {message}")]
    Read { path: PathBuf, message: String },
    #[error("cannot write {path}: {message}")]
    Write { path: PathBuf, message: String },
    #[error("{what} is not valid JSON ({message}); is it a notebook saved by Jupyter?")]
    InvalidJson { what: String, message: String },
    #[error("{what} is not a Jupyter notebook: {reason}")]
    NotANotebook { what: String, reason: String },
    #[error(
        "{what} is an nbformat {major} notebook; cellbox reads nbformat 4. Convert it first: jupyter nbconvert --to \
         notebook --nbformat 4 FILE"
    )]
    UnsupportedVersion { what: String, major: u64 },
    #[error("{what} is not a valid nbformat 4 notebook: {message}")]
    Invalid { what: String, message: String },
}

/// One notebook document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Notebook {
    /// Kept as read (kernelspec, language_info, authors, tool settings, ...).
    #[serde(default)]
    pub metadata: Map<String, Value>,
    /// Always 4 here: other major versions are refused on reading.
    pub nbformat: u32,
    /// Read as given; written as at least [`WRITTEN_MINOR`].
    pub nbformat_minor: u32,
    pub cells: Vec<Cell>,
}

/// A cell of any kind.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "cell_type", rename_all = "lowercase")]
pub enum Cell {
    Code(CodeCell),
    Markdown(TextCell),
    Raw(TextCell),
}

/// A code cell: its source, and what it printed when last run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CodeCell {
    /// nbformat 4.5's cell id; filled in when the notebook is written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(default)]
    pub metadata: Map<String, Value>,
    pub source: MultilineString,
    #[serde(default)]
    pub outputs: Vec<Output>,
    /// `null` until the cell runs; always written.
    #[serde(default)]
    pub execution_count: Option<u64>,
}

/// A markdown or raw cell, kept as it was read.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TextCell {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(default)]
    pub metadata: Map<String, Value>,
    pub source: MultilineString,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attachments: Option<Map<String, Value>>,
}

/// One output of a code cell, as Jupyter records it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "output_type", rename_all = "snake_case")]
pub enum Output {
    /// Text written to stdout or stderr (`name`); consecutive writes to one stream are one output.
    Stream {
        name: String,
        text: MultilineString,
    },
    DisplayData {
        data: MimeData,
        #[serde(default)]
        metadata: Map<String, Value>,
    },
    /// The value of the cell's last expression.
    ExecuteResult {
        execution_count: Option<u64>,
        data: MimeData,
        #[serde(default)]
        metadata: Map<String, Value>,
    },
    Error {
        ename: String,
        evalue: String,
        traceback: Vec<String>,
    },
}

/// Text that nbformat stores either as one string or as a list of lines;
/// held joined, written as lines.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MultilineString(pub String);

impl Serialize for MultilineString {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        split_lines(&self.0).serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for MultilineString {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Form {
            One(String),
            Lines(Vec<String>),
        }
        Ok(MultilineString(match Form::deserialize(deserializer)? {
            Form::One(text) => text,
            Form::Lines(lines) => lines.concat(),
        }))
    }
}

impl From<&str> for MultilineString {
    fn from(text: &str) -> Self {
        MultilineString(text.to_string())
    }
}

/// A MIME bundle. Held with multiline strings joined; written as nbformat does:
/// `text/*`, `application/javascript` and `image/svg+xml` as lists of lines,
/// JSON types as JSON, everything else (base64 images) as one string.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MimeData(pub Map<String, Value>);

fn is_json_mime(mime: &str) -> bool {
    mime == "application/json" || (mime.starts_with("application/") && mime.ends_with("+json"))
}

fn is_split_mime(mime: &str) -> bool {
    mime.starts_with("text/") || mime == "application/javascript" || mime == "image/svg+xml"
}

impl Serialize for MimeData {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut out = Map::new();
        for (mime, value) in &self.0 {
            let value = match value {
                Value::String(text) if is_split_mime(mime) => {
                    Value::Array(split_lines(text).into_iter().map(Value::String).collect())
                }
                other => other.clone(),
            };
            out.insert(mime.clone(), value);
        }
        out.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for MimeData {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let mut data = Map::<String, Value>::deserialize(deserializer)?;
        for (mime, value) in data.iter_mut() {
            if is_json_mime(mime) {
                continue;
            }
            if let Value::Array(items) = value
                && items.iter().all(Value::is_string)
            {
                *value = Value::String(items.iter().filter_map(Value::as_str).collect());
            }
        }
        Ok(MimeData(data))
    }
}

/// Lines with their `\n` kept, as Python's `str.splitlines(True)` gives for `\n`-separated text.
pub fn split_lines(text: &str) -> Vec<String> {
    text.split_inclusive('\n').map(str::to_string).collect()
}

impl Cell {
    /// The cell's source text.
    pub fn source(&self) -> &str {
        match self {
            Cell::Code(cell) => &cell.source.0,
            Cell::Markdown(cell) | Cell::Raw(cell) => &cell.source.0,
        }
    }

    /// The cell's metadata (tags live here).
    pub fn metadata(&self) -> &Map<String, Value> {
        match self {
            Cell::Code(cell) => &cell.metadata,
            Cell::Markdown(cell) | Cell::Raw(cell) => &cell.metadata,
        }
    }

    fn id_mut(&mut self) -> &mut Option<String> {
        match self {
            Cell::Code(cell) => &mut cell.id,
            Cell::Markdown(cell) | Cell::Raw(cell) => &mut cell.id,
        }
    }

    /// Whether `metadata.tags` holds `tag` (papermill's `parameters`, nbclient's `raises-exception`).
    pub fn has_tag(&self, tag: &str) -> bool {
        self.metadata()
            .get("tags")
            .and_then(Value::as_array)
            .is_some_and(|tags| tags.iter().any(|t| t.as_str() == Some(tag)))
    }
}

impl CodeCell {
    /// A code cell that has not run yet.
    pub fn new(source: &str) -> Self {
        CodeCell { source: source.into(), ..Default::default() }
    }
}

impl Notebook {
    /// An empty nbformat 4.5 notebook for Python.
    pub fn new_python() -> Self {
        let mut notebook = Notebook { metadata: Map::new(), nbformat: 4, nbformat_minor: WRITTEN_MINOR, cells: vec![] };
        notebook.fill_python_metadata();
        notebook
    }

    /// Parse a notebook's JSON text; `what` names it in errors (a path, usually).
    pub fn from_json_str(text: &str, what: &str) -> Result<Self, NotebookError> {
        let value: Value = serde_json::from_str(text)
            .map_err(|e| NotebookError::InvalidJson { what: what.to_string(), message: e.to_string() })?;
        Self::from_value(value, what)
    }

    /// Check the version, then read the cells.
    pub fn from_value(value: Value, what: &str) -> Result<Self, NotebookError> {
        let not_a_notebook =
            |reason: &str| NotebookError::NotANotebook { what: what.to_string(), reason: reason.to_string() };
        let Value::Object(object) = &value else {
            return Err(not_a_notebook("its JSON is not an object"));
        };
        let Some(major) = object.get("nbformat") else {
            return Err(not_a_notebook("it has no \"nbformat\" field"));
        };
        let major = major.as_u64().ok_or_else(|| not_a_notebook("its \"nbformat\" field is not a number"))?;
        if major != 4 {
            return Err(NotebookError::UnsupportedVersion { what: what.to_string(), major });
        }
        serde_json::from_value(value)
            .map_err(|e| NotebookError::Invalid { what: what.to_string(), message: e.to_string() })
    }

    /// Read a notebook file.
    pub fn read(path: &Path) -> Result<Self, NotebookError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| NotebookError::Read { path: path.to_path_buf(), message: e.to_string() })?;
        Self::from_json_str(&text, &path.display().to_string())
    }

    /// Kernel and language information for Python, where the notebook has none.
    pub fn fill_python_metadata(&mut self) {
        self.metadata.entry("kernelspec").or_insert_with(
            || serde_json::json!({"display_name": "Python 3", "language": "python", "name": "python3"}),
        );
        self.metadata.entry("language_info").or_insert_with(|| serde_json::json!({"name": "python"}));
    }

    /// Make the notebook a valid 4.5 document: version, Python metadata where
    /// missing, and a unique, well-formed id on every cell.
    pub fn normalize(&mut self) {
        self.nbformat = 4;
        self.nbformat_minor = self.nbformat_minor.max(WRITTEN_MINOR);
        self.fill_python_metadata();
        let mut seen = std::collections::HashSet::new();
        for cell in &mut self.cells {
            let id = cell.id_mut();
            let usable = id.as_deref().is_some_and(valid_cell_id) && !seen.contains(id.as_deref().unwrap_or(""));
            if !usable {
                *id = Some(loop {
                    let fresh = new_cell_id();
                    if !seen.contains(&fresh) {
                        break fresh;
                    }
                });
            }
            seen.insert(id.clone().unwrap_or_default());
        }
    }

    /// The notebook as Jupyter writes it: normalized, keys sorted, one-space
    /// indent, non-ASCII kept, a final newline.
    pub fn to_json_string(&self) -> String {
        let mut notebook = self.clone();
        notebook.normalize();
        // serde_json's maps are sorted, so going through a Value sorts every key.
        let value = serde_json::to_value(&notebook).expect("notebooks serialize");
        let mut bytes = Vec::new();
        let formatter = serde_json::ser::PrettyFormatter::with_indent(b" ");
        let mut serializer = serde_json::Serializer::with_formatter(&mut bytes, formatter);
        value.serialize(&mut serializer).expect("JSON values serialize");
        let mut text = String::from_utf8(bytes).expect("serde_json writes UTF-8");
        text.push('\n');
        text
    }

    /// Write the notebook to `path` (through a temporary file, so a failed write leaves the old file).
    pub fn write(&self, path: &Path) -> Result<(), NotebookError> {
        let error = |e: std::io::Error| NotebookError::Write { path: path.to_path_buf(), message: e.to_string() };
        let dir = match path.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let mut file = tempfile::NamedTempFile::new_in(&dir).map_err(error)?;
        std::io::Write::write_all(&mut file, self.to_json_string().as_bytes()).map_err(error)?;
        // A temporary file is private; the notebook keeps the old file's mode, or gets the usual rw-r--r--.
        if let Some(mode) = crate::paths::replacement_permissions(path) {
            file.as_file().set_permissions(mode).map_err(error)?;
        }
        file.persist(path).map_err(|e| error(e.error))?;
        Ok(())
    }
}

/// nbformat's cell id rule: 1–64 of `[a-zA-Z0-9-_]`.
pub fn valid_cell_id(id: &str) -> bool {
    (1..=64).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// A random 8-hex-digit id, as Jupyter makes them.
fn new_cell_id() -> String {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    format!("{:08x}", hasher.finish() as u32)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_lists_and_strings_and_writes_lines() {
        let value = json!({
            "nbformat": 4, "nbformat_minor": 2, "metadata": {"custom": {"kept": true}},
            "cells": [
                {"cell_type": "markdown", "metadata": {}, "source": ["# Title\n", "text"]},
                {"cell_type": "code", "metadata": {"tags": ["parameters"]}, "source": "a = 1\nb = 2",
                 "outputs": [{"output_type": "display_data", "metadata": {},
                              "data": {"text/html": ["<b>\n", "x</b>"], "application/json": {"k": [1]},
                                       "image/png": "iVBOR"}}],
                 "execution_count": 3},
                {"cell_type": "raw", "metadata": {}, "source": ""}
            ]
        });
        let notebook = Notebook::from_value(value, "test").unwrap();
        assert_eq!(notebook.cells[0].source(), "# Title\ntext");
        assert!(notebook.cells[1].has_tag("parameters"));
        let Cell::Code(code) = &notebook.cells[1] else { panic!() };
        let Output::DisplayData { data, .. } = &code.outputs[0] else { panic!() };
        assert_eq!(data.0["text/html"], "<b>\nx</b>");
        let written: Value = serde_json::from_str(&notebook.to_json_string()).unwrap();
        assert_eq!(written["nbformat_minor"], 5);
        assert_eq!(written["metadata"]["custom"]["kept"], true);
        assert_eq!(written["metadata"]["kernelspec"]["name"], "python3");
        assert_eq!(written["cells"][1]["source"], json!(["a = 1\n", "b = 2"]));
        assert_eq!(written["cells"][1]["outputs"][0]["data"]["text/html"], json!(["<b>\n", "x</b>"]));
        assert_eq!(written["cells"][1]["outputs"][0]["data"]["application/json"], json!({"k": [1]}));
        assert_eq!(written["cells"][1]["outputs"][0]["data"]["image/png"], "iVBOR");
        assert_eq!(written["cells"][2]["source"], json!([]));
        assert!(written["cells"][2].get("outputs").is_none());
        let ids: std::collections::HashSet<_> = (0..3).map(|i| written["cells"][i]["id"].as_str().unwrap()).collect();
        assert_eq!(ids.len(), 3);
        assert!(ids.iter().all(|id| valid_cell_id(id)));
    }

    #[test]
    fn duplicate_and_bad_ids_are_replaced() {
        let value = json!({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
            {"id": "same", "cell_type": "raw", "metadata": {}, "source": ""},
            {"id": "same", "cell_type": "raw", "metadata": {}, "source": ""},
            {"id": "bad id!", "cell_type": "raw", "metadata": {}, "source": ""}
        ]});
        let mut notebook = Notebook::from_value(value, "t").unwrap();
        notebook.normalize();
        let ids: Vec<_> = notebook
            .cells
            .iter()
            .map(|c| if let Cell::Raw(c) = c { c.id.clone().unwrap() } else { panic!() })
            .collect();
        assert_eq!(ids[0], "same");
        assert_ne!(ids[1], "same");
        assert!(valid_cell_id(&ids[2]));
    }

    #[test]
    fn bad_inputs_are_explained() {
        let invalid = Notebook::from_json_str("{\"cells\": [", "x.ipynb").unwrap_err();
        assert!(invalid.to_string().contains("not valid JSON"), "{invalid}");
        let v3 = Notebook::from_json_str(r#"{"nbformat": 3, "nbformat_minor": 0, "worksheets": []}"#, "old.ipynb")
            .unwrap_err();
        assert!(v3.to_string().contains("nbformat 3") && v3.to_string().contains("nbconvert"), "{v3}");
        let other = Notebook::from_json_str(r#"{"name": "package"}"#, "package.json").unwrap_err();
        assert!(other.to_string().contains("not a Jupyter notebook"), "{other}");
        let list = Notebook::from_json_str("[1]", "l").unwrap_err();
        assert!(matches!(list, NotebookError::NotANotebook { .. }));
        let broken =
            Notebook::from_json_str(r#"{"nbformat": 4, "nbformat_minor": 4, "metadata": {}}"#, "b").unwrap_err();
        assert!(broken.to_string().contains("cells"), "{broken}");
    }
}
