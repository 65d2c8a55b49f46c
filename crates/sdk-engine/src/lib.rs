//! `cellbox._engine`: the engine inside the Python process that uses the SDK.
//! Python hands it request lines and reads its message lines, as it would
//! with a `cellbox sdk-server` child (python/cellbox/_in_process.py); the GIL
//! is released whenever the engine may wait.

use std::collections::BTreeMap;
use std::time::Duration;

use cellbox_sdk::in_process::{InProcess, Progress};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// How often a caller waiting for its answer looks at Python's signals (Ctrl-C).
const SIGNAL_CHECKS: Duration = Duration::from_millis(50);

/// One engine, with its kernels; stopped by `close()` or when collected.
#[pyclass(frozen)]
struct Engine {
    inner: InProcess,
}

#[pymethods]
impl Engine {
    /// Start an engine with `cellbox sdk-server`'s `flags`; `env` is set in every kernel.
    /// A bad flag or working folder raises ValueError, with the reason.
    #[new]
    fn new(py: Python<'_>, flags: Vec<String>, env: BTreeMap<String, String>) -> PyResult<Self> {
        py.detach(|| InProcess::start(&flags, env)).map(|inner| Engine { inner }).map_err(PyValueError::new_err)
    }

    /// Hand the engine one request line; False once it no longer reads.
    fn send(&self, line: String) -> bool {
        self.inner.send(line)
    }

    /// Send the request `line` (whose id is `call`) and wait for its answer:
    /// `(lines, answered)`, its messages in order (outputs, then the answer
    /// when `answered`; False: the engine stopped first). Signals are handled
    /// while waiting: a KeyboardInterrupt leaves the call running, for the
    /// caller to cancel.
    fn call(&self, py: Python<'_>, line: String, call: i64) -> PyResult<(Vec<String>, bool)> {
        // Detached: a `run_code` line is parsed here, and its code may be long.
        let Some(mut waiter) = py.detach(|| self.inner.call(line, call)) else { return Ok((Vec::new(), false)) };
        let mut lines = Vec::new();
        loop {
            // The waiter goes to the GIL-free side and back (it is Send, not Sync).
            let progress;
            (waiter, lines, progress) = py.detach(move || {
                let progress = waiter.collect(&mut lines, SIGNAL_CHECKS);
                (waiter, lines, progress)
            });
            match progress {
                Progress::Answered => return Ok((lines, true)),
                Progress::Ended => return Ok((lines, false)),
                Progress::Pending => py.check_signals()?,
            }
        }
    }

    /// The engine's next message line (without its newline), waiting for it;
    /// None at the end of its output.
    fn receive(&self, py: Python<'_>) -> Option<String> {
        py.detach(|| self.inner.receive())
    }

    /// Why the engine stopped by itself (its idle timeout), once it has.
    fn stopped(&self) -> Option<String> {
        self.inner.stopped()
    }

    /// Stop the engine and its kernels, waiting for that.
    fn close(&self, py: Python<'_>) {
        py.detach(|| self.inner.close())
    }
}

#[pymodule]
fn _engine(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<Engine>()
}
