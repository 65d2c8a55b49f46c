//! A session's executed cells, kept so the session can be saved as a notebook.
//!
//! Memory is bounded twice: each cell keeps at most
//! [`HistoryLimits::cell_output_bytes`] of output (a note then names the
//! call's artifact, which has the full text), and a session keeps at most
//! [`HistoryLimits::session_output_bytes`] in all: past it, the oldest cells
//! lose their outputs (their code and execution counts stay).

use super::format::{Cell, CodeCell, MultilineString, Notebook, Output};
use super::outputs::OutputBuilder;
use crate::kernel::ExecEvent;

/// How much output a session's history keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HistoryLimits {
    /// Output bytes kept per cell (default 4 MiB).
    pub cell_output_bytes: usize,
    /// Output bytes kept per session (default 64 MiB).
    pub session_output_bytes: usize,
}

impl Default for HistoryLimits {
    fn default() -> Self {
        HistoryLimits { cell_output_bytes: 4 << 20, session_output_bytes: 64 << 20 }
    }
}

/// One executed cell: its code, execution count and outputs.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedCell {
    /// The cell's source, as sent.
    pub code: String,
    /// The kernel's count; `None` when the kernel died or was killed during the cell.
    pub execution_count: Option<u64>,
    /// Jupyter-shaped outputs, bounded by [`HistoryLimits::cell_output_bytes`].
    pub outputs: Vec<Output>,
    /// Bytes of output data held, for the session bound.
    pub output_bytes: usize,
}

/// Records one running cell.
#[derive(Debug)]
pub struct CellRecorder {
    code: String,
    builder: OutputBuilder,
    started: bool,
}

impl CellRecorder {
    /// Start recording a cell whose source is `code`.
    pub fn new(code: impl Into<String>, limits: &HistoryLimits) -> Self {
        CellRecorder { code: code.into(), builder: OutputBuilder::new(limits.cell_output_bytes), started: false }
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
        let outputs = self.builder.finish(execution_count, note.as_deref());
        RecordedCell { code: self.code, execution_count, outputs, output_bytes }
    }
}

/// A session's executed cells, oldest first.
#[derive(Debug, Clone, Default)]
pub struct History {
    cells: Vec<RecordedCell>,
    bytes: usize,
}

impl History {
    /// Add a cell; the oldest cells lose their outputs while the session is over its bound.
    pub fn push(&mut self, cell: RecordedCell, limits: &HistoryLimits) {
        self.bytes += cell.output_bytes;
        self.cells.push(cell);
        let last = self.cells.len() - 1;
        for old in &mut self.cells[..last] {
            if self.bytes <= limits.session_output_bytes {
                break;
            }
            if old.output_bytes == 0 {
                continue;
            }
            self.bytes -= old.output_bytes;
            old.output_bytes = 0;
            old.outputs = vec![Output::Stream {
                name: "stderr".into(),
                text: MultilineString(format!(
                    "[cellbox: outputs dropped to keep this session's history under {} MiB]\n",
                    limits.session_output_bytes >> 20
                )),
            }];
        }
    }

    /// Forget the cells after the first `len` (an undo took the session back).
    pub fn truncate(&mut self, len: usize) {
        for cell in self.cells.drain(len.min(self.cells.len())..) {
            self.bytes = self.bytes.saturating_sub(cell.output_bytes);
        }
    }

    /// Cells recorded.
    pub fn len(&self) -> usize {
        self.cells.len()
    }

    /// No cell has run yet.
    pub fn is_empty(&self) -> bool {
        self.cells.is_empty()
    }

    /// The recorded cells, oldest first.
    pub fn cells(&self) -> &[RecordedCell] {
        &self.cells
    }

    /// The history as a Python notebook, one code cell per executed cell.
    pub fn to_notebook(&self) -> Notebook {
        let mut notebook = Notebook::new_python();
        notebook.cells = self
            .cells
            .iter()
            .map(|cell| {
                Cell::Code(CodeCell {
                    source: MultilineString(cell.code.clone()),
                    outputs: cell.outputs.clone(),
                    execution_count: cell.execution_count,
                    ..Default::default()
                })
            })
            .collect();
        notebook.normalize();
        notebook
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
        let limits = HistoryLimits { cell_output_bytes: 8, session_output_bytes: 12 };
        let cut = cell("0123456789\n", &limits);
        let text = serde_json::to_string(&cut.outputs).unwrap();
        assert!(text.contains("01234567") && text.contains("artifact://a-1-1"), "{text}");
        let mut history = History::default();
        history.push(cell("aaaa\n", &limits), &limits);
        history.push(cell("bbbb\n", &limits), &limits);
        assert_eq!(history.bytes, 10);
        history.push(cell("cccc\n", &limits), &limits);
        assert_eq!(history.bytes, 10);
        let first = serde_json::to_string(&history.cells()[0].outputs).unwrap();
        assert!(first.contains("outputs dropped"), "{first}");
        let notebook = history.to_notebook();
        assert_eq!(notebook.cells.len(), 3);
        assert_eq!(notebook.nbformat_minor, 5);
    }
}
