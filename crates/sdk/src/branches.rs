//! The SDK's branch calls, cellbox's own beyond E2B's API: `fork_context`
//! (a copy of a context's Python kernel as a new context), `undo` (back to
//! the checkpoint before a `run_code(..., checkpoint=True)`), `snapshot` and
//! `restore` (a context's variables to a file and back).

use std::path::Path;

use super::Server;
use super::contexts::{Context, SdkLanguage};
use super::wire::{
    ErrorCode, Failure, Fork, ForkResult, LeftOut, RestoreResult, SnapshotFile, SnapshotResult, Undo, UndoResult,
};
use crate::tool::{BranchError, CallContext, ForkOptions};

impl Server {
    /// The context a branch call names, else the default Python one.
    fn python_context(&self, id: Option<&str>) -> Result<Context, Failure> {
        let context = match id {
            Some(id) => self.contexts.get(id)?,
            None => self.contexts.default_for(SdkLanguage::Python),
        };
        if context.language.cell_language().runtime() != crate::runtime::Runtime::Python {
            return Err(Failure::invalid_params(format!(
                "context {:?} runs {}: only Python contexts can be forked, undone or saved",
                context.id,
                context.language.name()
            )));
        }
        Ok(context)
    }

    pub(super) async fn fork_context(&self, params: Fork) -> Result<ForkResult, Failure> {
        let source = self.python_context(params.context_id.as_deref())?;
        let copy = self.contexts.create_new(&source, params.name.as_deref())?;
        let forked = self
            .engine
            .fork_session(
                &CallContext::new(source.session()),
                &CallContext::new(copy.session()),
                &copy.id,
                ForkOptions::default(),
            )
            .await;
        match forked {
            Ok(report) => Ok(ForkResult { context: copy.info(), lost_threads: report.lost_threads }),
            Err(error) => {
                let _ = self.contexts.remove(&copy.id);
                Err(failure(error))
            }
        }
    }

    pub(super) async fn undo(&self, params: Undo) -> Result<UndoResult, Failure> {
        let context = self.python_context(params.context_id.as_deref())?;
        let report = self.engine.undo(&CallContext::new(context.session()), params.steps).await.map_err(failure)?;
        Ok(UndoResult { steps: report.steps, left: report.left })
    }

    pub(super) async fn snapshot(&self, params: SnapshotFile) -> Result<SnapshotResult, Failure> {
        let (context, path) = self.snapshot_file(&params)?;
        let report =
            self.engine.snapshot_session(&CallContext::new(context.session()), &path).await.map_err(failure)?;
        Ok(SnapshotResult {
            path: report.path.display().to_string(),
            names: report.saved,
            left_out: left_out(report.skipped),
            bytes: report.bytes,
        })
    }

    pub(super) async fn restore(&self, params: SnapshotFile) -> Result<RestoreResult, Failure> {
        let (context, path) = self.snapshot_file(&params)?;
        let report = self.engine.restore_session(&CallContext::new(context.session()), &path).await.map_err(failure)?;
        Ok(RestoreResult {
            path: report.path.display().to_string(),
            names: report.restored,
            left_out: left_out(report.failed),
            settings: report.settings,
        })
    }

    /// The context a snapshot or restore names, and its file (relative to the context's folder).
    fn snapshot_file(&self, params: &SnapshotFile) -> Result<(Context, std::path::PathBuf), Failure> {
        let context = self.python_context(params.context_id.as_deref())?;
        let path = context.cwd.join(Path::new(&params.path));
        Ok((context, path))
    }
}

fn left_out(pairs: Vec<(String, String)>) -> Vec<LeftOut> {
    pairs.into_iter().map(|(name, reason)| LeftOut { name, reason }).collect()
}

/// A branch error as the SDK's failure: what is missing is "not found".
fn failure(error: BranchError) -> Failure {
    let kind = match error {
        BranchError::NoKernel(_) | BranchError::NoCheckpoint { .. } => ErrorCode::NotFound,
        BranchError::BadName(_) | BranchError::TargetExists(_) | BranchError::NotEnoughCheckpoints { .. } => {
            ErrorCode::InvalidParams
        }
        _ => ErrorCode::Failed,
    };
    Failure::new(kind, error.to_string())
}
