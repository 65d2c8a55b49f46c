//! Requests that run no code and get one frame back: is a cell complete,
//! check cells before a call, and the helper the snapshot requests use too.

use std::sync::atomic::Ordering;

use super::{CheckReport, Completeness, ExecEvent, Kernel, KernelError};
use crate::protocol;

impl Kernel {
    /// A request id with `prefix` (`c` complete, `k` check, `s` snapshot…), unique in this kernel.
    pub(super) fn next_request_id(&self, prefix: char) -> String {
        format!("{prefix}{}", self.next_id.fetch_add(1, Ordering::Relaxed))
    }

    /// Send a request that runs no code and wait for the one frame that
    /// answers it, which `answer` picks out of the events.
    pub(super) async fn ask<T>(
        &self,
        id: String,
        request: protocol::HostRequest,
        answer: impl Fn(ExecEvent) -> Option<T>,
    ) -> Result<T, KernelError> {
        let line = request.encode();
        if self.shared.trace {
            tracing::info!(target: "cellbox::ipc", "host → runner {}", line.trim_end());
        }
        let mut execution = self.send(id, line, 4, false).await?;
        while let Some(item) = execution.next().await {
            if let Some(answer) = answer(item?) {
                return Ok(answer);
            }
        }
        Err(KernelError::Closed)
    }

    /// Ask whether `code` is a whole cell yet (codeop rules, magics understood).
    pub async fn check_complete(&self, code: &str) -> Result<Completeness, KernelError> {
        let id = self.next_request_id('c');
        let request = protocol::CompleteRequest { id: id.clone(), code: code.to_string() };
        self.ask(id, protocol::HostRequest::Complete(request), |event| match event {
            ExecEvent::Completeness(answer) => Some(answer),
            _ => None,
        })
        .await
    }

    /// Check `cells` without running anything: the Python runner compiles
    /// each after its magic transform (and with `lint` runs `ruff check` when
    /// it finds it); the Node runner parses each as it would run it. The
    /// kernel's state is untouched.
    pub async fn check(&self, cells: Vec<protocol::CheckCell>, lint: bool) -> Result<CheckReport, KernelError> {
        let id = self.next_request_id('k');
        let request = protocol::CheckRequest { id: id.clone(), cells, lint };
        self.ask(id, protocol::HostRequest::Check(request), |event| match event {
            ExecEvent::Checked(report) => Some(report),
            _ => None,
        })
        .await
    }
}
