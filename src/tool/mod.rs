//! The eval tool: parameters, the engine that runs calls, and their results.

pub mod engine;
pub mod params;
pub mod result;
pub mod watchdog;

pub use engine::{CallContext, EngineConfig, EvalEngine, EvalError, ExportError, Exposure, KernelMode, ignore_events};
pub use params::{CellParams, EvalParams, Language};
pub use result::{CellReport, CellStatus, EvalEvent, EvalResult};
