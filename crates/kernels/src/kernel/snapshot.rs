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

    /// Save the user namespace into `file`, which the host opened for
    /// writing in a folder the kernel cannot reach: the kernel receives the
    /// open file on its control socket, never a path (a hibernating session).
    /// `label` names the file in the kernel's messages. The report is
    /// [`Kernel::snapshot`]'s without `path`; the file is whole only once it
    /// came back without an error.
    #[cfg(unix)]
    pub async fn snapshot_into(&self, file: &std::fs::File, label: &str) -> Result<serde_json::Value, KernelError> {
        self.handed_request(false, file, label).await
    }

    /// Restore the snapshot in `file` (opened by the host for reading) into
    /// the user namespace, as [`Kernel::snapshot_into`] hands it over.
    #[cfg(unix)]
    pub async fn restore_from(&self, file: &std::fs::File, label: &str) -> Result<serde_json::Value, KernelError> {
        self.handed_request(true, file, label).await
    }

    #[cfg(unix)]
    async fn handed_request(
        &self,
        restore: bool,
        file: &std::fs::File,
        label: &str,
    ) -> Result<serde_json::Value, KernelError> {
        use std::os::fd::AsRawFd;
        let Some(control) = self.shared.control.as_ref() else {
            return Err(KernelError::Snapshot(
                "this kernel has no control socket (only Python kernels on Linux have one), so it cannot be \
                 hibernated"
                    .into(),
            ));
        };
        let handed = control.send_file(file.as_raw_fd())?;
        self.snapshot_request_with(restore, Path::new(label), Some(handed)).await
    }

    async fn snapshot_request(&self, restore: bool, path: &Path) -> Result<serde_json::Value, KernelError> {
        self.snapshot_request_with(restore, path, None).await
    }

    async fn snapshot_request_with(
        &self,
        restore: bool,
        path: &Path,
        file: Option<u64>,
    ) -> Result<serde_json::Value, KernelError> {
        let id = self.next_request_id('s');
        let request = SnapshotRequest {
            id: id.clone(),
            path: path.display().to_string(),
            version: env!("CARGO_PKG_VERSION").to_string(),
            file,
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
