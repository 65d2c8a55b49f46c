//! The engine in-process for Python, reduced to what the measurement needs:
//! `Engine(cwd, python).run_code(code)` returns the call's text, and
//! `library_ms(code, n)` times the same call made from Rust alone.

use std::sync::Arc;
use std::time::Instant;

use cellbox::tool::{CallContext, EngineConfig, EvalEngine, EvalParams, ignore_events};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use tokio_util::sync::CancellationToken;

#[pyclass]
struct Engine {
    runtime: tokio::runtime::Runtime,
    engine: Arc<EvalEngine>,
    context: CallContext,
}

impl Engine {
    fn eval(&self, code: &str) -> Result<String, String> {
        let params = EvalParams::code(code);
        self.runtime
            .block_on(self.engine.eval(&params, &self.context, &CancellationToken::new(), &ignore_events))
            .map(|result| result.text)
            .map_err(|error| error.to_string())
    }
}

#[pymethods]
impl Engine {
    #[new]
    fn new(cwd: String, python: String) -> PyResult<Self> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .map_err(|error| PyRuntimeError::new_err(error.to_string()))?;
        let mut config = EngineConfig::new(cwd);
        config.python = Some(python);
        config.spare = cellbox::session::SpareLimits::OFF;
        let engine = runtime.block_on(async { Arc::new(EvalEngine::new(config)) });
        Ok(Engine { runtime, engine, context: CallContext::new("inprocess") })
    }

    /// One call's text; the GIL is released while the cell runs.
    fn run_code(&self, py: Python<'_>, code: &str) -> PyResult<String> {
        py.detach(|| self.eval(code)).map_err(PyRuntimeError::new_err)
    }

    /// `n` calls made from Rust alone (no Python on the way), each in ms.
    fn library_ms(&self, py: Python<'_>, code: &str, n: usize) -> PyResult<Vec<f64>> {
        py.detach(|| {
            (0..n)
                .map(|_| {
                    let started = Instant::now();
                    self.eval(code).map(|_| started.elapsed().as_secs_f64() * 1000.0)
                })
                .collect::<Result<Vec<_>, _>>()
        })
        .map_err(PyRuntimeError::new_err)
    }

    fn close(&self) {
        self.runtime.block_on(self.engine.dispose_all());
    }
}

#[pymodule]
fn cellbox_inprocess(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<Engine>()
}
