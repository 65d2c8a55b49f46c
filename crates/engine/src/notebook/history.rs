//! A session's executed cells, kept so the session can be saved as a notebook.
//!
//! Memory is bounded twice: each cell keeps at most
//! [`HistoryLimits::cell_output_bytes`] of output (a note then names the
//! call's artifact, which has the full text), and a session keeps at most
//! [`HistoryLimits::session_output_bytes`] in all: past it, the oldest cells
//! lose their outputs (their code and execution counts stay). And all the
//! sessions of one engine ([`Histories`]) keep at most
//! [`HistoryLimits::total_bytes`] of code and output together, so that many
//! sessions cannot hold what one may not: past it the least recently used
//! sessions lose their outputs, then their histories.

use super::format::{Cell, CodeCell, MultilineString, Notebook, Output, TextCell};
use super::outputs::OutputBuilder;
use crate::kernel::ExecEvent;

/// How much output a session's history keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HistoryLimits {
    /// Output bytes kept per cell (default 4 MiB).
    pub cell_output_bytes: usize,
    /// Output bytes kept per session (default 64 MiB).
    pub session_output_bytes: usize,
    /// Code and output bytes kept over all of an engine's sessions (default 256 MiB).
    pub total_bytes: usize,
}

impl Default for HistoryLimits {
    fn default() -> Self {
        HistoryLimits { cell_output_bytes: 4 << 20, session_output_bytes: 64 << 20, total_bytes: 256 << 20 }
    }
}

/// What ran a cell that was not Python: kept so the notebook says so.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CellLanguage {
    /// The cell's language as cells name it (`js`, `ts`, `bash`, `r`, `jupyter`).
    pub language: String,
    /// The Jupyter kernel that ran it, as a notebook's `kernelspec` names one
    /// (`name`, `display_name`, `language`), when it was one.
    pub kernelspec: Option<serde_json::Value>,
    /// That kernel's `language_info` (from its `kernel_info_reply`).
    pub language_info: Option<serde_json::Value>,
}

/// One executed cell: its code, execution count and outputs.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedCell {
    /// The cell's source, as sent.
    pub code: String,
    /// What ran it, when it was not Python.
    pub language: Option<CellLanguage>,
    /// The kernel's count; `None` when the kernel died or was killed during the cell.
    pub execution_count: Option<u64>,
    /// Jupyter-shaped outputs, bounded by [`HistoryLimits::cell_output_bytes`].
    pub outputs: RecordedOutputs,
    /// Bytes of output data held, for the session bound.
    pub output_bytes: usize,
    /// The engine's number of the call that ran it (the live feed's).
    pub call: Option<u64>,
    /// `artifact://…` with that call's full output.
    pub artifact: Option<String>,
}

/// A recorded cell's outputs, kept as their notebook JSON and read back when
/// the history is exported. Kept as [`Output`] values, each bundle held a
/// map's node (about 600 bytes for the one result of a `1+1`): an engine's
/// histories took five times the memory their bound counted. Read back, a
/// bundle's multiline text is what nbformat makes of it (a list of strings
/// under a type that is not JSON is one text).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RecordedOutputs(Box<str>);

impl RecordedOutputs {
    pub fn new(outputs: &[Output]) -> RecordedOutputs {
        if outputs.is_empty() {
            return RecordedOutputs::default(); // no allocation for the many cells that print nothing
        }
        let json = serde_json::to_string(outputs).expect("outputs serialize");
        // Copied at its size: shrinking the working buffer in place left a hole per cell.
        RecordedOutputs(Box::from(json.as_str()))
    }

    /// The outputs (a note on stderr if they cannot be read back, which only a bug would cause).
    pub fn to_vec(&self) -> Vec<Output> {
        if self.0.is_empty() {
            return Vec::new();
        }
        // No depth limit: values were as deep when the kernel's frames were parsed, one level or
        // two above this list.
        let mut reader = serde_json::Deserializer::from_str(&self.0);
        reader.disable_recursion_limit();
        serde::Deserialize::deserialize(&mut reader).unwrap_or_else(|error| {
            tracing::warn!("a recorded cell's outputs could not be read back: {error}");
            let text = format!("[cellbox: this cell's recorded outputs could not be read back: {error}]\n");
            vec![Output::Stream { name: "stderr".into(), text: MultilineString(text) }]
        })
    }

    /// Bytes of JSON held.
    pub fn json_len(&self) -> usize {
        self.0.len()
    }

    /// Their JSON text.
    pub fn json(&self) -> &str {
        if self.0.is_empty() { "[]" } else { &self.0 }
    }
}

/// Records one running cell.
#[derive(Debug)]
pub struct CellRecorder {
    code: String,
    language: Option<CellLanguage>,
    builder: OutputBuilder,
    started: bool,
}

impl CellRecorder {
    /// Start recording a cell whose source is `code`.
    pub fn new(code: impl Into<String>, limits: &HistoryLimits) -> Self {
        CellRecorder {
            code: code.into(),
            language: None,
            builder: OutputBuilder::new(limits.cell_output_bytes),
            started: false,
        }
    }

    /// The cell is in `language` (not Python).
    pub fn with_language(mut self, language: Option<CellLanguage>) -> Self {
        self.language = language;
        self
    }

    /// The Jupyter kernel that runs the cell: its kernelspec and `language_info`.
    pub fn ran_on(&mut self, kernelspec: serde_json::Value, language_info: serde_json::Value) {
        let language = self.language.get_or_insert_with(Default::default);
        language.kernelspec = Some(kernelspec);
        language.language_info = Some(language_info);
    }

    /// Take one of the cell's kernel events.
    pub fn event(&mut self, event: &ExecEvent) {
        self.started = true;
        self.builder.event(event);
    }

    /// Whether the kernel took the cell (any event arrived); a cell that never reached one is not history.
    pub fn started(&self) -> bool {
        self.started
    }

    /// The finished cell; `artifact` (the call's full output) is named when output was cut.
    pub fn finish(self, execution_count: Option<u64>, artifact: Option<&str>) -> RecordedCell {
        let output_bytes = self.builder.bytes();
        let note = self.builder.was_cut().then(|| {
            let mib = output_bytes.div_ceil(1 << 20).max(1);
            match artifact {
                Some(uri) => format!("[cellbox: output past {mib} MiB was not kept here; the full text is in {uri}]"),
                None => format!("[cellbox: output past {mib} MiB was not kept here]"),
            }
        });
        let outputs = RecordedOutputs::new(&self.builder.finish(execution_count, note.as_deref()));
        RecordedCell {
            code: self.code,
            language: self.language,
            execution_count,
            // What is held is the JSON: escapes (`\u0000`, a colour code's `\u001b`), a string per
            // line and each output's frame make it longer than the text, by far for many tiny outputs.
            output_bytes: output_bytes.max(outputs.json_len()),
            outputs,
            call: None,
            artifact: None,
        }
    }
}

/// What one kept cell costs beyond its code and output (its structs, a note
/// in place of dropped outputs), and one history beyond its cells: counted
/// so that many tiny cells or sessions are held to the bound too. Measured
/// (an engine's resident memory over 5000 calls): a cell `x=1` took about 330
/// bytes, a `1+1` with its result about 490, its place in the history's list
/// included.
const CELL_OVERHEAD: usize = 512;
const HISTORY_OVERHEAD: usize = 256;

/// A session's executed cells, oldest first.
#[derive(Debug, Clone, Default)]
pub struct History {
    cells: Vec<RecordedCell>,
    /// Output bytes held.
    bytes: usize,
    /// Code bytes held.
    code_bytes: usize,
    /// The oldest cells no longer kept (the bound over all sessions took them):
    /// positions ([`History::len`], [`History::truncate`]) still count them.
    dropped: usize,
    /// When it was last added to, by [`Histories`]' clock.
    used: u64,
}

impl History {
    /// Add a cell; the oldest cells lose their outputs while the session is over its bound.
    pub fn push(&mut self, cell: RecordedCell, limits: &HistoryLimits) {
        self.bytes += cell.output_bytes;
        self.code_bytes += cell.code.len();
        self.cells.push(cell);
        let why = format!("this session's history under {} MiB", limits.session_output_bytes >> 20);
        self.shed(limits.session_output_bytes, true, &why);
    }

    /// Drop the oldest cells' outputs until at most `keep` output bytes are
    /// held (the newest cell's are kept when `spare_newest`); `why`
    /// completes the note left in their place. Returns the bytes dropped.
    fn shed(&mut self, keep: usize, spare_newest: bool, why: &str) -> usize {
        let before = self.bytes;
        let end = if spare_newest { self.cells.len().saturating_sub(1) } else { self.cells.len() };
        for old in &mut self.cells[..end] {
            if self.bytes <= keep {
                break;
            }
            if old.output_bytes == 0 {
                continue;
            }
            self.bytes -= old.output_bytes;
            old.output_bytes = 0;
            old.outputs = RecordedOutputs::new(&[Output::Stream {
                name: "stderr".into(),
                text: MultilineString(format!("[cellbox: outputs dropped to keep {why}]\n")),
            }]);
        }
        before - self.bytes
    }

    /// Bytes held: code, output and what the cells cost beyond them.
    pub fn held_bytes(&self) -> usize {
        self.bytes + self.code_bytes + self.cells.len() * CELL_OVERHEAD + HISTORY_OVERHEAD
    }

    /// Drop the oldest cells whole until at most `keep` bytes are held (the
    /// newest cell stays when `spare_newest`). Returns the bytes dropped.
    fn drop_oldest(&mut self, keep: usize, spare_newest: bool) -> usize {
        let before = self.held_bytes();
        let mut count = 0;
        let most = if spare_newest { self.cells.len().saturating_sub(1) } else { self.cells.len() };
        let mut held = before;
        while count < most && held > keep {
            let cell = &self.cells[count];
            held -= cell.output_bytes + cell.code.len() + CELL_OVERHEAD;
            count += 1;
        }
        for cell in self.cells.drain(..count) {
            self.bytes -= cell.output_bytes;
            self.code_bytes -= cell.code.len();
        }
        self.dropped += count;
        before - self.held_bytes()
    }

    /// Forget the cells after the first `len` recorded (an undo took the session back).
    pub fn truncate(&mut self, len: usize) {
        let keep = len.saturating_sub(self.dropped).min(self.cells.len());
        for cell in self.cells.drain(keep..) {
            self.bytes = self.bytes.saturating_sub(cell.output_bytes);
            self.code_bytes = self.code_bytes.saturating_sub(cell.code.len());
        }
    }

    /// Cells recorded, those no longer kept included.
    pub fn len(&self) -> usize {
        self.dropped + self.cells.len()
    }

    /// No cell has run yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The recorded cells, oldest first.
    pub fn cells(&self) -> &[RecordedCell] {
        &self.cells
    }

    /// The history as a notebook, one code cell per executed cell. A history
    /// whose cells all ran on one Jupyter kernel is that kernel's notebook
    /// (its `kernelspec` and `language_info`); any other is a Python notebook
    /// whose cells in other languages say theirs in `metadata.cellbox`
    /// (`language`, and `kernel` for a Jupyter kernel's).
    pub fn to_notebook(&self) -> Notebook {
        let mut notebook = Notebook::new_python();
        let kernel_of = |cell: &RecordedCell| {
            cell.language.as_ref()?.kernelspec.as_ref()?.get("name")?.as_str().map(str::to_string)
        };
        let one_kernel = match self.cells.first().map(kernel_of) {
            Some(Some(name)) if self.cells.iter().all(|cell| kernel_of(cell).as_deref() == Some(name.as_str())) => {
                self.cells.last().and_then(|cell| cell.language.clone())
            }
            _ => None,
        };
        if let Some(language) = &one_kernel {
            if let Some(kernelspec) = &language.kernelspec {
                notebook.metadata.insert("kernelspec".into(), kernelspec.clone());
            }
            // nbformat wants `language_info.name`: the kernelspec's language stands in when the kernel gave none.
            let info = match language
                .language_info
                .as_ref()
                .filter(|info| info.get("name").is_some_and(serde_json::Value::is_string))
            {
                Some(info) => info.clone(),
                None => serde_json::json!({
                    "name": language.kernelspec.as_ref().and_then(|spec| spec.get("language")).cloned().unwrap_or_default()
                }),
            };
            notebook.metadata.insert("language_info".into(), info);
        }
        let dropped = (self.dropped > 0).then(|| {
            Cell::Markdown(TextCell {
                source: MultilineString(format!(
                    "*cellbox: the {} earliest cells of this session were not kept, to hold the histories of all \
                     sessions to their bound.*",
                    self.dropped
                )),
                ..Default::default()
            })
        });
        notebook.cells = dropped
            .into_iter()
            .chain(self.cells.iter().map(|cell| {
                let mut metadata = serde_json::Map::new();
                if let Some(language) = cell.language.as_ref().filter(|_| one_kernel.is_none()) {
                    let mut tag = serde_json::json!({ "language": language.language });
                    if let Some(name) = kernel_of(cell) {
                        tag["kernel"] = name.into();
                    }
                    metadata.insert("cellbox".into(), tag);
                }
                Cell::Code(CodeCell {
                    source: MultilineString(cell.code.clone()),
                    metadata,
                    outputs: cell.outputs.to_vec(),
                    execution_count: cell.execution_count,
                    ..Default::default()
                })
            }))
            .collect();
        notebook.normalize();
        notebook
    }
}

/// The histories of one engine's sessions, by session name, held to
/// [`HistoryLimits::total_bytes`] together.
#[derive(Debug, Default)]
pub struct Histories {
    sessions: std::collections::HashMap<String, History>,
    clock: u64,
}

impl Histories {
    pub fn get(&self, session: &str) -> Option<&History> {
        self.sessions.get(session)
    }

    pub fn get_mut(&mut self, session: &str) -> Option<&mut History> {
        self.sessions.get_mut(session)
    }

    pub fn remove(&mut self, session: &str) -> Option<History> {
        self.sessions.remove(session)
    }

    /// The sessions that have a history.
    pub fn names(&self) -> impl Iterator<Item = &String> {
        self.sessions.keys()
    }

    /// Add `cells` to `session`'s history, then hold the whole to its bound.
    pub fn record(&mut self, session: &str, cells: Vec<RecordedCell>, limits: &HistoryLimits) {
        let history = self.sessions.entry(session.to_string()).or_default();
        for cell in cells {
            history.push(cell, limits);
        }
        self.bound(session, limits);
    }

    /// Give `session` the history `history` (a fork's copy), then hold the whole to its bound.
    pub fn insert(&mut self, session: &str, history: History, limits: &HistoryLimits) {
        self.sessions.insert(session.to_string(), history);
        self.bound(session, limits);
    }

    /// Past the total bound, the least recently used sessions lose their
    /// outputs (oldest cells first; `current`, just added to, last and its
    /// newest cell never), then their oldest cells whole, then other sessions
    /// that have no cells left are forgotten.
    fn bound(&mut self, current: &str, limits: &HistoryLimits) {
        self.clock += 1;
        if let Some(history) = self.sessions.get_mut(current) {
            history.used = self.clock;
        }
        let mut total: usize = self.sessions.values().map(History::held_bytes).sum();
        if total <= limits.total_bytes {
            return;
        }
        let mut order: Vec<(u64, String)> = self.sessions.iter().map(|(name, h)| (h.used, name.clone())).collect();
        order.sort();
        let why = format!("the histories of all sessions under {} MiB", limits.total_bytes >> 20);
        for (_, name) in &order {
            let Some(history) = self.sessions.get_mut(name) else { continue };
            let over = total - limits.total_bytes;
            total -= history.shed(history.bytes.saturating_sub(over), name == current, &why);
            if total <= limits.total_bytes {
                return;
            }
        }
        for (_, name) in &order {
            let Some(history) = self.sessions.get_mut(name) else { continue };
            let over = total - limits.total_bytes;
            total -= history.drop_oldest(history.held_bytes().saturating_sub(over), name == current);
            if total <= limits.total_bytes {
                return;
            }
        }
        for (_, name) in order.iter().filter(|(_, name)| name != current) {
            if let Some(history) = self.sessions.remove(name) {
                total -= history.held_bytes();
            }
            if total <= limits.total_bytes {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(text: &str, limits: &HistoryLimits) -> RecordedCell {
        let mut recorder = CellRecorder::new("print(...)", limits);
        recorder.event(&ExecEvent::Stdout(text.into()));
        recorder.finish(Some(1), Some("artifact://a-1-1"))
    }

    #[test]
    fn cells_and_sessions_are_bounded() {
        let limits = HistoryLimits { cell_output_bytes: 8, session_output_bytes: 12, total_bytes: usize::MAX };
        let cut = cell("0123456789\n", &limits);
        let text = cut.outputs.json().to_string();
        assert!(text.contains("01234567") && text.contains("artifact://a-1-1"), "{text}");
        // Each cell's output counts as the JSON held; two fit in a session, not three.
        let held = cell("aaaa\n", &limits).output_bytes;
        assert_eq!(held, cell("aaaa\n", &limits).outputs.json().len());
        let limits = HistoryLimits { session_output_bytes: 2 * held + 2, ..limits };
        let mut history = History::default();
        history.push(cell("aaaa\n", &limits), &limits);
        history.push(cell("bbbb\n", &limits), &limits);
        assert_eq!(history.bytes, 2 * held);
        history.push(cell("cccc\n", &limits), &limits);
        assert_eq!(history.bytes, 2 * held);
        let first = history.cells()[0].outputs.json().to_string();
        assert!(first.contains("outputs dropped"), "{first}");
        let notebook = history.to_notebook();
        assert_eq!(notebook.cells.len(), 3);
        assert_eq!(notebook.nbformat_minor, 5);
    }

    #[test]
    fn recorded_outputs_read_back_as_they_were() {
        let bundle = |pairs: serde_json::Value| super::super::format::MimeData(pairs.as_object().unwrap().clone());
        let outputs = vec![
            Output::Stream { name: "stdout".into(), text: MultilineString("a\nb\n\nc".into()) },
            Output::DisplayData {
                data: bundle(serde_json::json!({
                    "text/plain": "line 1\nline 2",
                    "image/png": "iVBORw0KGgo=",
                    "application/json": {"a": [1, "two", null], "b": ["x", "y"]},
                    "application/vnd.cellbox.chart+json": ["p", "q"],
                })),
                metadata: serde_json::json!({"image/png": {"width": 640}}).as_object().unwrap().clone(),
            },
            Output::ExecuteResult {
                execution_count: Some(7),
                data: bundle(serde_json::json!({"text/plain": "2", "text/html": "<b>é</b>\n"})),
                metadata: serde_json::Map::new(),
            },
            Output::Error {
                ename: "E".into(),
                evalue: "bad\nworse".into(),
                traceback: vec!["t1".into(), "\u{1b}[31mt2".into()],
            },
        ];
        let mut outputs = outputs;
        // Floats to their last digit, values as deep as a kernel's frame may carry, control characters.
        let mut deep = serde_json::json!(0.1 + 0.2);
        for _ in 0..126 {
            deep = serde_json::json!([deep]);
        }
        outputs.push(Output::DisplayData {
            data: bundle(serde_json::json!({
                "application/json": {"floats": [0.1 + 0.2, 1.0 / 3.0, 1.1362275116276523e-8, 2.2201838057111728e-13]},
                "application/vnd.custom+json": deep,
                "text/plain": "nul \u{0} bell \u{7}\r\n",
            })),
            metadata: serde_json::Map::new(),
        });
        let recorded = RecordedOutputs::new(&outputs);
        assert_eq!(recorded.to_vec(), outputs);
        assert_eq!(RecordedOutputs::new(&[]).to_vec(), vec![]);
    }

    #[test]
    fn all_sessions_together_are_bounded_least_recently_used_first() {
        // One session holding one cell with no output.
        let base = HISTORY_OVERHEAD + CELL_OVERHEAD + "print(...)".len();
        let limits = HistoryLimits { cell_output_bytes: 100, session_output_bytes: 1000, total_bytes: usize::MAX };
        let held = cell(&format!("{}\n", "a".repeat(19)), &limits).output_bytes;
        let limits = HistoryLimits { total_bytes: 3 * base + 2 * held, ..limits };
        let total = |all: &Histories| all.sessions.values().map(History::held_bytes).sum::<usize>();
        let mut all = Histories::default();
        for (session, text) in [("a", "a".repeat(19)), ("b", "b".repeat(19))] {
            all.record(session, vec![cell(&format!("{text}\n"), &limits)], &limits);
        }
        assert_eq!(all.get("a").unwrap().held_bytes(), base + held);
        // A third session tips the whole over: the least recently used one ("a") loses its outputs first.
        all.record("c", vec![cell(&format!("{}\n", "c".repeat(9)), &limits)], &limits);
        let a = all.get("a").unwrap().cells()[0].outputs.json().to_string();
        assert!(a.contains("the histories of all sessions under"), "{a}");
        assert_eq!(all.get("b").unwrap().bytes, held);
        assert!(total(&all) <= limits.total_bytes, "{}", total(&all));
        // Many cells in one session: the oldest go whole; positions still count them, and the
        // export says what is missing.
        for _ in 0..50 {
            all.record("c", vec![cell("x\n", &limits)], &limits);
        }
        assert!(total(&all) <= limits.total_bytes, "{}", total(&all));
        let c = all.get("c").unwrap();
        assert_eq!(c.len(), 51);
        assert!(c.dropped > 0 && !c.cells().is_empty());
        let Cell::Markdown(note) = &c.to_notebook().cells[0] else { panic!("no note first") };
        assert!(note.source.0.contains("earliest cells of this session were not kept"), "{}", note.source.0);
        // An undo to an earlier position cuts what was recorded after it, counting the dropped.
        let mut undone = c.clone();
        undone.truncate(50);
        assert_eq!(undone.len(), 50);
        // Many sessions: the least recently used are forgotten, never the one just added to.
        for round in 0..10 {
            all.record(&format!("s{round}"), vec![cell("x\n", &limits)], &limits);
        }
        assert!(total(&all) <= limits.total_bytes, "{}", total(&all));
        assert!(all.get("s9").is_some() && all.get("a").is_none());
    }
}
