//! The harness every fault case runs in: one engine, every kernel group it saw, and the four promises.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use cellbox_engine::tool::{CallContext, CellStatus, EngineConfig, EvalEngine, EvalError, EvalParams, EvalResult};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::common;
use crate::common::{PATIENCE, eventually, group_members};

/// How long past a cell's own timeout a call may take before the host counts as hung:
/// the interrupt window (5 s) and the kill (< 1 s) fit many times over, so a
/// loaded machine is never the reason a call misses it.
pub(crate) const HANG_SLACK: Duration = PATIENCE;

pub(crate) struct Harness {
    pub(crate) engine: Arc<EvalEngine>,
    pub(crate) dir: tempfile::TempDir,
    /// Every kernel process group this test has seen.
    groups: Mutex<BTreeSet<u32>>,
}

pub(crate) fn harness() -> Harness {
    harness_with(|_, _| {})
}

pub(crate) fn harness_with(tweak: impl FnOnce(&mut EngineConfig, &Path)) -> Harness {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let mut config = EngineConfig::new(&work);
    config.python = Some(common::python().display().to_string());
    config.artifacts_dir = dir.path().join("artifacts");
    config.runner_cache_dir = Some(dir.path().join("runner-cache"));
    config.artifact_retention = None;
    // CELLBOX_SANDBOX=workspace-write (and the other CELLBOX_* sandbox
    // variables) run the whole catalogue inside the sandbox.
    config.sandbox =
        cellbox_kernels::sandbox::SandboxPolicy::from_env().expect("the CELLBOX_* sandbox variables are valid");
    tweak(&mut config, dir.path());
    Harness { engine: Arc::new(EvalEngine::new(config)), dir, groups: Mutex::default() }
}

impl Harness {
    pub(crate) fn note_groups(&self) {
        self.groups.lock().unwrap().extend(self.engine.kernel_pids());
    }

    /// One cell with `timeout` seconds, under a deadline that fails the test on a hang.
    pub(crate) async fn run(&self, session: &str, code: &str, timeout: u64) -> EvalResult {
        let params = EvalParams::from_json(json!({"cells": [{"code": code, "timeout": timeout}]})).unwrap();
        self.call(&params, &CallContext::new(session), timeout).await.expect("the call is accepted")
    }

    pub(crate) async fn call(
        &self,
        params: &EvalParams,
        context: &CallContext,
        timeout: u64,
    ) -> Result<EvalResult, EvalError> {
        self.note_groups();
        let deadline = Duration::from_secs(timeout) + HANG_SLACK;
        let answer = tokio::time::timeout(
            deadline,
            self.engine.eval(params, context, &CancellationToken::new(), &cellbox_engine::tool::ignore_events),
        )
        .await
        .unwrap_or_else(|_| panic!("the host did not answer within {deadline:?}: {:?}", params));
        self.note_groups();
        answer
    }

    /// Start the session's kernel and return its pid (which is its group).
    pub(crate) async fn start(&self, session: &str) -> u32 {
        let result = self.run(session, "import os\nos.getpid()", 10).await;
        assert!(!result.is_error, "{}", result.text);
        result.text.lines().next().unwrap().parse().unwrap()
    }

    /// Promise 3: the session takes a new call, and prints arrive.
    pub(crate) async fn next_call_works(&self, session: &str) -> EvalResult {
        let result = self.next_call_answers(session).await;
        assert!(result.text.contains("still here\n42\n"), "prints do not arrive: {}", result.text);
        result
    }

    /// The session takes a new call and answers it (for cases where the user
    /// code itself sent its prints elsewhere).
    pub(crate) async fn next_call_answers(&self, session: &str) -> EvalResult {
        let result = self.run(session, "print('still', 'here')\n6 * 7", 10).await;
        assert!(!result.is_error, "the next call failed: {}", result.text);
        assert!(result.text.contains("42\n"), "{}", result.text);
        result
    }

    /// Promise 4: after disposal no process of any group seen is left.
    pub(crate) async fn finish(self) {
        self.note_groups();
        tokio::time::timeout(HANG_SLACK, self.engine.dispose_all()).await.expect("dispose_all answers");
        let groups: Vec<u32> = self.groups.lock().unwrap().iter().copied().collect();
        assert!(!groups.is_empty(), "the test saw a kernel");
        for group in groups {
            assert!(
                eventually(PATIENCE, || group_members(group).is_empty()).await,
                "process group {group} left behind: {:?}",
                group_members(group)
            );
        }
        assert!(self.engine.kernel_pids().is_empty());
    }
}

pub(crate) fn assert_has(result: &EvalResult, needle: &str) {
    assert!(result.text.contains(needle), "expected {needle:?} in:\n{}", result.text);
}

pub(crate) fn status(result: &EvalResult) -> CellStatus {
    result.cells[0].status
}
