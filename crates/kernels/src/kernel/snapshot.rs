//! Saving a kernel's namespace to a file and restoring one into it
//! ([`Kernel::snapshot`], [`Kernel::restore`]). The runner does the work
//! (`runner/cellbox_kernel/snapshot.py`): cell-defined functions and classes
//! by value, modules by reference, what cannot be saved skipped and named.
//! The file is written and read by the kernel process, so the sandbox's
//! rules apply to its path as to any file a cell opens.

use std::path::Path;

use super::{ExecEvent, Kernel, KernelError};
use crate::protocol::{HostRequest, SnapshotRequest};

impl Kernel {
    /// Save the user namespace to `path` (written atomically); the runner's
    /// report: `saved` names, `skipped` ones with reasons, `bytes`, `path`.
    pub async fn snapshot(&self, path: &Path) -> Result<serde_json::Value, KernelError> {
        self.snapshot_request(false, path).await
    }

    /// Restore the snapshot at `path` into the user namespace; the runner's
    /// report: `restored` names, `failed` ones with reasons, the file's `header`.
    pub async fn restore(&self, path: &Path) -> Result<serde_json::Value, KernelError> {
        self.snapshot_request(true, path).await
    }

    async fn snapshot_request(&self, restore: bool, path: &Path) -> Result<serde_json::Value, KernelError> {
        let id = self.next_request_id('s');
        let request = SnapshotRequest {
            id: id.clone(),
            path: path.display().to_string(),
            version: env!("CARGO_PKG_VERSION").to_string(),
        };
        let request = if restore { HostRequest::Restore(request) } else { HostRequest::Snapshot(request) };
        let answer = self
            .ask(id, request, |event| match event {
                ExecEvent::Snapshot(answer) => Some(answer),
                _ => None,
            })
            .await?;
        answer.map_err(KernelError::Snapshot)
    }
}
