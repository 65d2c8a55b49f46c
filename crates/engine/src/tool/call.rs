//! What a call brings and what can stop it: the caller's [`CallContext`], the sink its events
//! stream through, and the errors of a call that could not start.

use super::params::ParamsError;
use super::result::EvalEvent;
use crate::kernel::KernelError;

/// Who is calling: the session whose kernels to use, and the owner that
/// keeps them alive (disposed with [`EvalEngine::dispose_owner`](super::EvalEngine::dispose_owner)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallContext {
    pub session: String,
    pub owner: String,
}

impl CallContext {
    /// A session that is its own owner.
    pub fn new(session: impl Into<String>) -> Self {
        let session = session.into();
        CallContext { owner: session.clone(), session }
    }
}

/// Whether `name` may name a session a user chose ("data", "scratch"): 1 to
/// 64 letters, digits, `-`, `_` and `.`, so it reads well in messages and
/// paths. Every front end that lets its user name sessions uses this rule.
pub fn is_session_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// A call that could not start. Everything else is reported in [`EvalResult`](super::EvalResult).
#[derive(Debug, Clone, thiserror::Error)]
pub enum EvalError {
    #[error(transparent)]
    Params(#[from] ParamsError),
    /// The cwd is missing or not a directory (the kernel layer's own error).
    #[error(transparent)]
    InvalidCwd(KernelError),
    /// A path a tool call names (its `cwd`, a notebook or snapshot file) leads out of
    /// the workspace (and the `--allow-write` folders).
    #[error(
        "{what} {path:?} leads outside the workspace {workspace}: cells and the files tool calls name stay inside \
         it (or an --allow-write folder); pass a path inside it (a relative one starts there), or start cellbox \
         with another --cwd"
    )]
    OutsideWorkspace { what: &'static str, path: String, workspace: std::path::PathBuf },
    #[error("{0}")]
    LanguageDisabled(String),
    #[error("the Python backend is not available: {0}")]
    PythonUnavailable(String),
    #[error("the JavaScript backend is not available: {0}")]
    NodeUnavailable(String),
    #[error("{0}")]
    Kernel(String),
}

/// Why a session cannot be exported as a notebook.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExportError {
    #[error("session {0:?} has not run any cell yet, so there is no notebook to save; run a cell first")]
    NoHistory(String),
}

/// Events are streamed through this while a call runs.
pub type EventSink<'a> = &'a (dyn Fn(EvalEvent) + Send + Sync);

/// A sink that drops every event.
pub fn ignore_events(_: EvalEvent) {}
