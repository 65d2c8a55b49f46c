//! The eval tool: parameters, the engine that runs calls, and their results.

pub mod call;
pub mod config;
pub mod denials;
pub mod engine;
pub mod live;
pub mod params;
pub mod result;
pub mod run;
pub mod watchdog;

pub use call::{CallContext, EvalError, ExportError, ignore_events, is_session_name};
pub use config::{CheckpointLimits, EngineConfig, Exposure, KernelMode, NetworkCounts, parse_preload};
pub use engine::{
    BranchError, EngineLoad, EvalEngine, ForkOptions, ForkReport, RestoreReport, SnapshotReport, UndoReport,
};
pub use params::{CellParams, CheckMode, EvalParams, Language};
pub use result::{CellReport, CellStatus, ErrorSummary, EvalEvent, EvalResult, JsonOutput, StatusEvent};
pub use run::{CallOutcome, RUN_SCHEME, RunCell, RunError, RunReport, RunSummary, SessionKernel, WaitFor};
