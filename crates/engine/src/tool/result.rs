//! What one eval call returns, and the collector that builds it while the
//! cells stream.

use serde::Serialize;
use serde_json::Value;

use super::params::Language;
use crate::kernel::{CellError, ExecEvent};
use crate::notebook::{CellLanguage, CellRecorder, HistoryLimits, RecordedCell};
use crate::output::artifacts::ArtifactWriter;
use crate::output::display::{DisplayPart, split_bundle};
use crate::output::images::{MAX_DECODED_PIXELS, PreparedImage, TooLarge, prepare};
use crate::output::limiter::{TextLimiter, TextLimits};

/// Images kept per call; more are counted in a note.
pub const MAX_IMAGES_PER_CALL: usize = 16;

/// Heads a crashed kernel's whole dump in the full output (the result's text
/// has the cell's part of it).
pub const CRASH_DUMP_LABEL: &str = "[cellbox: the kernel's whole crash dump, its own threads and frames included]\n";

/// How a cell ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum CellStatus {
    Ok,
    Error,
    /// Interrupted because the caller cancelled.
    Cancelled,
    /// Interrupted because its timeout passed.
    Timeout,
    /// The kernel did not answer the interrupt and was killed.
    Killed,
    /// Not run because an earlier cell failed.
    Skipped,
}

impl CellStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            CellStatus::Ok => "ok",
            CellStatus::Error => "error",
            CellStatus::Cancelled => "cancelled",
            CellStatus::Timeout => "timeout",
            CellStatus::Killed => "killed",
            CellStatus::Skipped => "skipped",
        }
    }
}

/// Per-cell details.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct CellReport {
    /// 0-based position in the call.
    pub index: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    pub language: Language,
    pub status: CellStatus,
    pub duration_ms: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub execution_count: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorSummary>,
}

/// The exception a cell raised.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct ErrorSummary {
    pub ename: String,
    pub evalue: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ImageOutput {
    pub cell: usize,
    #[serde(flatten)]
    pub image: PreparedImage,
}

#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct JsonOutput {
    pub cell: usize,
    pub value: Value,
}

#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct StatusEvent {
    pub cell: usize,
    pub event: Value,
}

/// The result of one call, as a model and a program read it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EvalResult {
    /// Bounded text: outputs, results and errors in order, then notes.
    pub text: String,
    pub is_error: bool,
    pub cells: Vec<CellReport>,
    pub images: Vec<ImageOutput>,
    pub json: Vec<JsonOutput>,
    pub status_events: Vec<StatusEvent>,
    /// `artifact://<id>` holding the full output, when there was any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub artifact: Option<String>,
    /// True when `text` leaves part of the output out.
    pub truncated: bool,
    /// Notes also appended to `text` (timeouts, restarts, skipped cells).
    pub notes: Vec<String>,
}

/// Something a caller can stream while a call runs.
#[derive(Debug, Clone, PartialEq)]
pub enum EvalEvent {
    CellStarted {
        index: usize,
        title: Option<String>,
    },
    Stdout {
        cell: usize,
        text: String,
    },
    Stderr {
        cell: usize,
        text: String,
    },
    /// A display or the cell's result, split into text/image/JSON parts.
    Display {
        cell: usize,
        parts: Vec<DisplayPart>,
        is_result: bool,
        /// The whole MIME bundle as the kernel sent it, for embedders that
        /// need every format (the Python SDK's results); `parts` is what a
        /// model is shown.
        bundle: std::sync::Arc<crate::protocol::MimeBundle>,
    },
    Status {
        cell: usize,
        event: Value,
    },
    Error {
        cell: usize,
        error: CellError,
    },
    CellFinished {
        index: usize,
        status: CellStatus,
        duration_ms: u64,
    },
    /// A note about the call (restart, timeout, ...).
    Note {
        text: String,
    },
    /// The cell waits for its kernel to start (a gateway kernel can take
    /// minutes): `waiting` says what for ("starting kernel on gateway"),
    /// repeated every second with the time waited so far, and `None` once the
    /// kernel is ready. Shown while it lasts, not kept in the result.
    KernelStarting {
        cell: usize,
        waiting: Option<String>,
        elapsed_ms: u64,
    },
}

impl EvalEvent {
    /// `starting kernel on gateway… (12 s)` for a [`EvalEvent::KernelStarting`] still waiting.
    pub fn waiting_line(&self) -> Option<String> {
        match self {
            EvalEvent::KernelStarting { waiting: Some(waiting), elapsed_ms, .. } => {
                Some(format!("{waiting}… ({} s)", elapsed_ms / 1000))
            }
            _ => None,
        }
    }
}

/// Builds an [`EvalResult`] from events.
pub struct Collector {
    limiter: TextLimiter,
    artifact: ArtifactWriter,
    cells: Vec<CellReport>,
    images: Vec<ImageOutput>,
    dropped_images: usize,
    json: Vec<JsonOutput>,
    status_events: Vec<StatusEvent>,
    notes: Vec<String>,
    multi_cell: bool,
    at_line_start: bool,
    recording: Option<Recording>,
    mirror: Option<TextMirror>,
    /// Errors and stderr lines that may be the sandbox's refusals.
    evidence: super::denials::Evidence,
}

/// Receives every piece of model-facing text as the collector writes it (a
/// run's reader keeps its own bounded view of the output since its last read).
pub type TextMirror = std::sync::Arc<dyn Fn(&str) + Send + Sync>;

/// The call's cells as notebook cells, for the session's history.
struct Recording {
    /// Each cell's code, and its language when it is not Python.
    codes: Vec<(String, Option<CellLanguage>)>,
    limits: HistoryLimits,
    current: Option<(usize, CellRecorder)>,
    done: Vec<RecordedCell>,
}

impl Collector {
    pub fn new(limits: TextLimits, artifact: ArtifactWriter, multi_cell: bool) -> Self {
        Collector {
            limiter: TextLimiter::new(limits),
            artifact,
            cells: Vec::new(),
            images: Vec::new(),
            dropped_images: 0,
            json: Vec::new(),
            status_events: Vec::new(),
            notes: Vec::new(),
            multi_cell,
            at_line_start: true,
            recording: None,
            mirror: None,
            evidence: Default::default(),
        }
    }

    /// What the cells said that may be the sandbox's refusals.
    pub fn evidence(&self) -> &super::denials::Evidence {
        &self.evidence
    }

    /// Also hand every piece of text to `mirror` as it is written.
    pub fn mirror_text(&mut self, mirror: TextMirror) {
        self.mirror = Some(mirror);
    }

    /// The URI the full output is (or will be) saved under.
    pub fn artifact_uri(&self) -> String {
        self.artifact.uri()
    }

    /// Also record each cell that runs (its code, outputs and execution
    /// count) for [`Collector::take_recorded`]; `codes` are the call's cells
    /// (with their languages when not Python).
    pub fn record_cells(&mut self, codes: Vec<(String, Option<CellLanguage>)>, limits: HistoryLimits) {
        self.recording = Some(Recording { codes, limits, current: None, done: Vec::new() });
    }

    /// The cells recorded so far, oldest first.
    pub fn take_recorded(&mut self) -> Vec<RecordedCell> {
        self.recording.as_mut().map(|r| std::mem::take(&mut r.done)).unwrap_or_default()
    }

    fn text(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        self.limiter.push(text);
        self.artifact.write(text);
        if let Some(mirror) = &self.mirror {
            mirror(text);
        }
        self.at_line_start = text.ends_with('\n');
    }

    /// Text for the full output (the artifact) alone, under `label`, on lines of its own.
    fn record_only(&mut self, label: &str, text: &str) {
        let mut record = String::new();
        if !self.at_line_start {
            record.push('\n');
        }
        record.push_str(label);
        record.push_str(text);
        if !text.ends_with('\n') {
            record.push('\n');
        }
        self.artifact.write(&record);
    }

    fn line(&mut self, text: &str) {
        if !self.at_line_start {
            self.text("\n");
        }
        self.text(text);
        if !text.ends_with('\n') {
            self.text("\n");
        }
    }

    /// A header before each cell's output when the call has several cells.
    pub fn begin_cell(&mut self, index: usize, title: Option<&str>) {
        if let Some(recording) = &mut self.recording {
            let (code, language) = recording.codes.get(index).cloned().unwrap_or_default();
            recording.current = Some((index, CellRecorder::new(code, &recording.limits).with_language(language)));
        }
        if self.multi_cell {
            let label = match title {
                Some(title) => format!("── cell {} · {title} ──", index + 1),
                None => format!("── cell {} ──", index + 1),
            };
            self.line(&label);
        }
    }

    /// The running cell's Jupyter kernel (its kernelspec and `language_info`), for its notebook cell.
    pub fn ran_on(&mut self, kernelspec: Value, language_info: Value) {
        if let Some((_, recorder)) = self.recording.as_mut().and_then(|r| r.current.as_mut()) {
            recorder.ran_on(kernelspec, language_info);
        }
    }

    /// Take one kernel event; returns what to stream to the caller.
    pub fn event(&mut self, cell: usize, event: ExecEvent) -> Option<EvalEvent> {
        if let Some((_, recorder)) = self.recording.as_mut().and_then(|r| r.current.as_mut()) {
            recorder.event(&event);
        }
        match event {
            ExecEvent::Started
            | ExecEvent::Done(_)
            | ExecEvent::Completeness(_)
            | ExecEvent::Checked(_)
            | ExecEvent::Snapshot(_) => None,
            // Streamed for embedders that follow the budget; not part of the result.
            ExecEvent::Budget(control) => {
                Some(EvalEvent::Status { cell, event: Value::Object(control.status_fields()) })
            }
            ExecEvent::Stdout(text) => {
                self.text(&text);
                Some(EvalEvent::Stdout { cell, text })
            }
            ExecEvent::Stderr(text) => {
                self.text(&text);
                self.evidence.look_at_stream(&text);
                Some(EvalEvent::Stderr { cell, text })
            }
            // The cell's part of it was stderr; the whole is for the full output only.
            ExecEvent::CrashDump(dump) => {
                self.record_only(CRASH_DUMP_LABEL, &dump);
                None
            }
            ExecEvent::Display { bundle, .. } => self.display(cell, bundle, false),
            ExecEvent::Result { bundle, .. } => self.display(cell, bundle, true),
            ExecEvent::Error(error) => {
                self.evidence.look_at(&format!("{}: {}", error.ename, error.evalue));
                let traceback = error.traceback.concat();
                if traceback.trim().is_empty() {
                    self.line(&format!("{}: {}", error.ename, error.evalue));
                } else {
                    self.line(&traceback);
                }
                Some(EvalEvent::Error { cell, error })
            }
        }
    }

    fn display(&mut self, cell: usize, bundle: crate::protocol::MimeBundle, is_result: bool) -> Option<EvalEvent> {
        let mut streamed = Vec::new();
        for part in split_bundle(&bundle) {
            match part {
                DisplayPart::Status(event) => {
                    self.status_events.push(StatusEvent { cell, event: event.clone() });
                    return Some(EvalEvent::Status { cell, event });
                }
                DisplayPart::Text(text) => {
                    self.line(&text);
                    streamed.push(DisplayPart::Text(text));
                }
                DisplayPart::Image { mime, data } => {
                    if self.images.len() >= MAX_IMAGES_PER_CALL {
                        self.dropped_images += 1;
                        continue;
                    }
                    let image = match prepare(&mime, &data) {
                        Ok(image) => image,
                        Err(TooLarge { width, height }) => {
                            self.line(&format!(
                                "[image: {mime} {width}×{height} not shown: more than the {} megapixels cellbox \
                                 downscales for a model; make it smaller, e.g. a lower dpi]",
                                MAX_DECODED_PIXELS / 1_000_000
                            ));
                            continue;
                        }
                    };
                    let size = match (image.width, image.height) {
                        (Some(w), Some(h)) => format!(" {w}×{h}"),
                        _ => String::new(),
                    };
                    self.line(&format!("[image {}: {mime}{size}]", self.images.len() + 1));
                    streamed.push(DisplayPart::Image { mime: image.mime.clone(), data: image.data.clone() });
                    self.images.push(ImageOutput { cell, image });
                }
                DisplayPart::Json(value) => {
                    self.json.push(JsonOutput { cell, value: value.clone() });
                    streamed.push(DisplayPart::Json(value));
                }
            }
        }
        Some(EvalEvent::Display { cell, parts: streamed, is_result, bundle: std::sync::Arc::new(bundle) })
    }

    pub fn finish_cell(&mut self, report: CellReport) {
        if let Some(recording) = &mut self.recording
            && let Some((index, recorder)) = recording.current.take()
        {
            let ran = recorder.started() || report.execution_count.is_some();
            if index == report.index && ran {
                let uri = self.artifact.uri();
                recording.done.push(recorder.finish(report.execution_count, Some(&uri)));
            }
        }
        self.cells.push(report);
    }

    pub fn note(&mut self, note: impl Into<String>) {
        self.notes.push(note.into());
    }

    pub fn cells(&self) -> &[CellReport] {
        &self.cells
    }

    /// Close the artifact and assemble the result.
    pub fn finish(mut self) -> EvalResult {
        if self.dropped_images > 0 {
            self.notes.push(format!(
                "{} more image(s) were not included (at most {MAX_IMAGES_PER_CALL} per call).",
                self.dropped_images
            ));
        }
        self.artifact.finish();
        let artifact = self.artifact.exists().then(|| self.artifact.uri());
        if let Some(problem) = self.artifact.failure() {
            self.notes.push(format!("The full output could not be saved: {problem}."));
        }
        self.notes.extend(self.artifact.take_earlier_failures());
        if self.artifact.was_capped() {
            self.notes.push("The saved full output reached its size cap; its end was not kept.".to_string());
        }
        let limited = std::mem::replace(&mut self.limiter, TextLimiter::new(TextLimits::default())).finish();
        let truncated = limited.is_truncated();
        let mut text = limited.render(artifact.as_deref());
        for note in &self.notes {
            if !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(note);
            text.push('\n');
        }
        let is_error = self.cells.iter().any(|c| c.status != CellStatus::Ok);
        if text.is_empty() && !is_error {
            text = "(no output)\n".to_string();
        }
        EvalResult {
            text,
            is_error,
            cells: self.cells,
            images: self.images,
            json: self.json,
            status_events: self.status_events,
            artifact,
            truncated,
            notes: self.notes,
        }
    }
}
