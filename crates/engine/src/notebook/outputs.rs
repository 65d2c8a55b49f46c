//! From kernel events to the outputs Jupyter records for a cell.
//!
//! stdout/stderr become `stream` outputs (consecutive writes to one stream
//! merged), displays `display_data`, the cell's value `execute_result` (with
//! the execution count, known when the cell is done), and exceptions `error`.
//! Status events (`application/x-cellbox-status`) are cellbox's own progress
//! signals, not outputs: they are left out, and the text a magic prints
//! (`%time`'s `Wall time: …`) is already in the streams.

use serde_json::{Map, Value};

use super::format::{MimeData, MultilineString, Output};
use crate::kernel::ExecEvent;
use crate::output::display::STATUS_MIME;

/// Builds one cell's outputs, keeping at most `limit` bytes of output data.
/// Past the limit, further outputs are dropped (errors are always kept) and
/// [`OutputBuilder::finish`] appends a note saying where the rest is.
#[derive(Debug)]
pub struct OutputBuilder {
    outputs: Vec<Output>,
    bytes: usize,
    limit: usize,
    cut: bool,
}

impl OutputBuilder {
    /// A builder keeping at most `limit` bytes of output data.
    pub fn new(limit: usize) -> Self {
        OutputBuilder { outputs: Vec::new(), bytes: 0, limit, cut: false }
    }

    /// Bytes of output data kept so far.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Whether something was left out for the limit.
    pub fn was_cut(&self) -> bool {
        self.cut
    }

    /// Take one kernel event.
    pub fn event(&mut self, event: &ExecEvent) {
        match event {
            ExecEvent::Stdout(text) => self.stream("stdout", text),
            ExecEvent::Stderr(text) => self.stream("stderr", text),
            ExecEvent::Display { bundle, metadata } => {
                if bundle.contains_key(STATUS_MIME) {
                    return;
                }
                let output = Output::DisplayData { data: MimeData(bundle.clone()), metadata: metadata.clone() };
                self.push_sized(output, bundle_size(bundle, metadata));
            }
            ExecEvent::Result { bundle, metadata } => {
                let output = Output::ExecuteResult {
                    execution_count: None,
                    data: MimeData(bundle.clone()),
                    metadata: metadata.clone(),
                };
                self.push_sized(output, bundle_size(bundle, metadata));
            }
            ExecEvent::Error(error) => {
                self.bytes += error.traceback.iter().map(String::len).sum::<usize>();
                self.outputs.push(Output::Error {
                    ename: error.ename.clone(),
                    evalue: error.evalue.clone(),
                    // Jupyter joins traceback entries with newlines, so each is stored without its own.
                    traceback: error
                        .traceback
                        .iter()
                        .map(|line| line.strip_suffix('\n').unwrap_or(line).to_string())
                        .collect(),
                });
            }
            ExecEvent::Started
            | ExecEvent::Done(_)
            | ExecEvent::Completeness(_)
            | ExecEvent::Checked(_)
            | ExecEvent::Snapshot(_)
            | ExecEvent::Budget(_)
            // The cell's part of a crash dump came as stderr.
            | ExecEvent::CrashDump(_) => {}
        }
    }

    fn stream(&mut self, name: &str, text: &str) {
        if self.cut || text.is_empty() {
            return;
        }
        let room = self.limit.saturating_sub(self.bytes);
        let kept = if text.len() <= room {
            text
        } else {
            self.cut = true;
            let mut end = room;
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            &text[..end]
        };
        if kept.is_empty() {
            return;
        }
        self.bytes += kept.len();
        self.append_stream(name, kept);
    }

    fn append_stream(&mut self, name: &str, text: &str) {
        if let Some(Output::Stream { name: last, text: existing }) = self.outputs.last_mut()
            && last == name
        {
            existing.0.push_str(text);
            return;
        }
        self.outputs.push(Output::Stream { name: name.to_string(), text: MultilineString(text.to_string()) });
    }

    fn push_sized(&mut self, output: Output, size: usize) {
        if self.cut || self.bytes + size > self.limit {
            self.cut = true;
            return;
        }
        self.bytes += size;
        self.outputs.push(output);
    }

    /// The cell's outputs: `execution_count` set on its result, and when
    /// something was cut, `note` as a last stderr line.
    pub fn finish(mut self, execution_count: Option<u64>, note: Option<&str>) -> Vec<Output> {
        for output in &mut self.outputs {
            if let Output::ExecuteResult { execution_count: count, .. } = output {
                *count = execution_count;
            }
        }
        if self.cut
            && let Some(note) = note
        {
            let ends_open = matches!(self.outputs.last(),
                Some(Output::Stream { name, text }) if name == "stderr" && !text.0.ends_with('\n'));
            let text = format!("{}{note}\n", if ends_open { "\n" } else { "" });
            self.append_stream("stderr", &text);
        }
        self.outputs
    }
}

/// Roughly what a bundle costs to keep: its strings' lengths, other values as JSON.
fn bundle_size(bundle: &Map<String, Value>, metadata: &Map<String, Value>) -> usize {
    let value_size = |value: &Value| match value {
        Value::String(text) => text.len(),
        other => other.to_string().len(),
    };
    bundle.values().map(value_size).sum::<usize>() + metadata.values().map(value_size).sum::<usize>()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::CellError;
    use serde_json::json;

    fn bundle(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap()
    }

    #[test]
    fn streams_merge_and_results_get_the_count() {
        let mut builder = OutputBuilder::new(1 << 20);
        builder.event(&ExecEvent::Stdout("a\n".into()));
        builder.event(&ExecEvent::Stdout("b".into()));
        builder.event(&ExecEvent::Stderr("warn\n".into()));
        builder.event(&ExecEvent::Stdout("c\n".into()));
        builder.event(&ExecEvent::Display {
            bundle: bundle(json!({STATUS_MIME: {"op": "cd"}, "text/plain": "[cd]"})),
            metadata: Map::new(),
        });
        builder.event(&ExecEvent::Result { bundle: bundle(json!({"text/plain": "42"})), metadata: Map::new() });
        builder.event(&ExecEvent::Error(CellError {
            ename: "ValueError".into(),
            evalue: "bad".into(),
            traceback: vec!["Traceback\n".into(), "ValueError: bad\n".into()],
        }));
        let outputs = builder.finish(Some(7), None);
        let value = serde_json::to_value(&outputs).unwrap();
        assert_eq!(
            value,
            json!([
                {"output_type": "stream", "name": "stdout", "text": ["a\n", "b"]},
                {"output_type": "stream", "name": "stderr", "text": ["warn\n"]},
                {"output_type": "stream", "name": "stdout", "text": ["c\n"]},
                {"output_type": "execute_result", "execution_count": 7, "data": {"text/plain": ["42"]}, "metadata": {}},
                {"output_type": "error", "ename": "ValueError", "evalue": "bad",
                 "traceback": ["Traceback", "ValueError: bad"]}
            ])
        );
    }

    #[test]
    fn output_past_the_limit_is_cut_with_a_note() {
        let mut builder = OutputBuilder::new(10);
        builder.event(&ExecEvent::Stdout("0123456789abcdef".into()));
        builder.event(&ExecEvent::Display { bundle: bundle(json!({"text/plain": "x"})), metadata: Map::new() });
        assert!(builder.was_cut());
        let outputs = builder.finish(None, Some("[cut; see artifact://x]"));
        let value = serde_json::to_value(&outputs).unwrap();
        assert_eq!(
            value,
            json!([{"output_type": "stream", "name": "stdout", "text": ["0123456789"]},
                                 {"output_type": "stream", "name": "stderr", "text": ["[cut; see artifact://x]\n"]}])
        );
    }
}
