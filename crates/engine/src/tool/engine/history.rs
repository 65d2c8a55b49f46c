//! A session's history of cells: the notebook it exports, and the marks the
//! web view reads beside it (which call ran each cell, and its full output).

use cellbox_protocol::ui::CellMark;

use super::EvalEngine;
use crate::notebook::{History, Notebook, RecordedCell};
use crate::tool::call::ExportError;

impl EvalEngine {
    /// The cells `session` has run, as an nbformat 4.5 notebook: one code cell
    /// per executed cell, in order, with its outputs and execution count (see
    /// [`crate::notebook::History::to_notebook`] for cells in other languages than Python). The history outlives [`EvalEngine::reset_session`] (as a Jupyter
    /// restart keeps the notebook; execution counts start again at 1).
    pub fn export_notebook(&self, session: &str) -> Result<Notebook, ExportError> {
        match self.history_copy(session) {
            Some(history) => Ok(history.to_notebook()),
            None => Err(ExportError::NoHistory(session.to_string())),
        }
    }

    /// A copy of `session`'s history, if it has cells. Its outputs are read back
    /// (parsed) from the copy, so that every call's end, which records its cells
    /// under the same lock, does not wait for an export.
    fn history_copy(&self, session: &str) -> Option<History> {
        self.histories.lock().unwrap().get(session).filter(|history| !history.is_empty()).cloned()
    }

    /// `session`'s notebook and, for each of its code cells in order, the call
    /// that ran it and that call's full output, read together (`None`: no history).
    pub fn notebook_with_marks(&self, session: &str) -> Option<(Notebook, Vec<CellMark>)> {
        let history = self.history_copy(session)?;
        let marks = history.cells().iter().map(|cell| CellMark { call: cell.call, artifact: cell.artifact.clone() });
        Some((history.to_notebook(), marks.collect()))
    }

    /// How many cells `session`'s history holds.
    pub fn history_len(&self, session: &str) -> usize {
        self.histories.lock().unwrap().get(session).map_or(0, History::len)
    }

    /// Forget `session`'s history (its kernels are untouched).
    pub fn forget_history(&self, session: &str) {
        self.histories.lock().unwrap().remove(session);
    }

    /// Keep `call`'s `cells` in `session`'s history, each marked with the
    /// call and its full output (`artifact`).
    pub(super) fn remember(&self, session: &str, mut cells: Vec<RecordedCell>, call: u64, artifact: Option<&str>) {
        if cells.is_empty() {
            return;
        }
        for cell in &mut cells {
            cell.call = Some(call);
            cell.artifact = artifact.map(str::to_string);
        }
        self.histories.lock().unwrap().record(session, cells, &self.config.history);
    }
}
