//! Jupyter notebooks (`.ipynb`, nbformat 4): reading them, writing them as
//! Jupyter does, turning kernel events into the outputs Jupyter records, a
//! session's history as a notebook, and papermill-style parameters.
//!
//! Layering: this module sits beside [`crate::output`], below
//! [`crate::tool`]; it knows kernel events, not the eval tool.

pub mod format;
pub mod history;
pub mod outputs;
pub mod parameters;

pub use format::{Cell, CodeCell, MimeData, MultilineString, Notebook, NotebookError, Output, TextCell};
pub use history::{CellLanguage, CellRecorder, Histories, History, HistoryLimits, RecordedCell, RecordedOutputs};
pub use outputs::OutputBuilder;
pub use parameters::{INJECTED_TAG, PARAMETERS_TAG, ParamValue};
