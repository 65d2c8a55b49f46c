//! The SDK's branch calls, cellbox's own beyond E2B's API: `fork_context`
//! (a copy of a context's Python kernel as a new context), `undo` (back to
//! the checkpoint before a `run_code(..., checkpoint=True)`), `snapshot` and
//! `restore` (a context's variables to a file and back).

use std::path::Path;

use serde::Deserialize;
use serde_json::{Value, json};

use super::contexts::{Context, SdkLanguage};
use super::wire::{Failure, code};
use super::{Server, parse};
use crate::tool::{BranchError, CallContext, ForkOptions};

/// `fork_context`'s parameters.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Fork {
    #[serde(default)]
    context_id: Option<String>,
    #[serde(default)]
    name: Option<String>,
}

/// `undo`'s parameters.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Undo {
    #[serde(default)]
    context_id: Option<String>,
    #[serde(default = "one")]
    steps: usize,
}

fn one() -> usize {
    1
}

/// `snapshot`'s and `restore`'s parameters: `path` relative to the sandbox's folder.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SnapshotFile {
    #[serde(default)]
    context_id: Option<String>,
    path: String,
}

impl Server {
    /// Serve a branch call; `None` when `method` is not one.
    pub(super) async fn branch_call(&self, method: &str, params: Value) -> Option<Result<Value, Failure>> {
        Some(match method {
            "fork_context" => match parse::<Fork>(method, params) {
                Ok(params) => self.fork_context(params).await,
                Err(failure) => Err(failure),
            },
            "undo" => match parse::<Undo>(method, params) {
                Ok(params) => self.undo(params).await,
                Err(failure) => Err(failure),
            },
            "snapshot" | "restore" => match parse::<SnapshotFile>(method, params) {
                Ok(params) => self.snapshot(params, method == "restore").await,
                Err(failure) => Err(failure),
            },
            _ => return None,
        })
    }

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

    async fn fork_context(&self, params: Fork) -> Result<Value, Failure> {
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
            Ok(report) => Ok(json!({"context": copy.info(), "lost_threads": report.lost_threads})),
            Err(error) => {
                let _ = self.contexts.remove(&copy.id);
                Err(failure(error))
            }
        }
    }

    async fn undo(&self, params: Undo) -> Result<Value, Failure> {
        let context = self.python_context(params.context_id.as_deref())?;
        let report = self.engine.undo(&CallContext::new(context.session()), params.steps).await.map_err(failure)?;
        Ok(json!({"steps": report.steps, "left": report.left}))
    }

    async fn snapshot(&self, params: SnapshotFile, restore: bool) -> Result<Value, Failure> {
        let context = self.python_context(params.context_id.as_deref())?;
        let session = CallContext::new(context.session());
        let path = context.cwd.join(Path::new(&params.path));
        let pairs = |pairs: Vec<(String, String)>| -> Vec<Value> {
            pairs.into_iter().map(|(name, reason)| json!({"name": name, "reason": reason})).collect()
        };
        if restore {
            let report = self.engine.restore_session(&session, &path).await.map_err(failure)?;
            Ok(json!({"path": report.path, "names": report.restored, "left_out": pairs(report.failed)}))
        } else {
            let report = self.engine.snapshot_session(&session, &path).await.map_err(failure)?;
            Ok(json!({
                "path": report.path,
                "names": report.saved,
                "left_out": pairs(report.skipped),
                "bytes": report.bytes,
            }))
        }
    }
}

/// A branch error as the SDK's failure: what is missing is "not found".
fn failure(error: BranchError) -> Failure {
    let kind = match error {
        BranchError::NoKernel(_) | BranchError::NoCheckpoint { .. } => code::NOT_FOUND,
        BranchError::BadName(_) | BranchError::TargetExists(_) | BranchError::NotEnoughCheckpoints { .. } => {
            code::INVALID_PARAMS
        }
        _ => code::FAILED,
    };
    Failure::new(kind, error.to_string())
}
