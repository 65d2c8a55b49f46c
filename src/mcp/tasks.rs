//! `eval` as an MCP task (the `io.modelcontextprotocol/tasks` extension):
//! the protocol's own answer to calls longer than a client waits.
//!
//! When the client declares the extension and an `eval` call gives no
//! `wait`, the call returns a task at once; `tasks/get` shows its status with
//! the latest output line as the status message and, once it is over, the
//! ordinary eval result; `tasks/cancel` interrupts the running cell (the
//! interrupt → kill ladder applies) and skips the rest. Clients without the
//! extension use `wait` and `eval_wait` instead.

use std::time::Duration;

use rmcp::RoleServer;
use rmcp::model::{CallToolResponse, CreateTaskResult};
use rmcp::service::RequestContext;
use rmcp::task_manager::{TaskExit, TaskOptions};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::{EvalServer, output, progress_message, runs};
use crate::tool::{EvalEvent, EvalParams};

/// How long a finished task stays readable beyond the longest time its cells may take.
const TASK_RETENTION_MARGIN: Duration = Duration::from_secs(10 * 60);

impl EvalServer {
    /// Whether this `eval` call should run as a task: the client declared the
    /// extension and the call did not ask for the `wait` model instead.
    /// The extension exists from protocol 2026-07-28 on: a client that declares it on an older
    /// version (where `extensions` is not defined) gets plain results, as it expects.
    pub(super) fn runs_as_task(arguments: &Value, context: &RequestContext<RoleServer>) -> bool {
        let version = context.protocol_version();
        let defined = version.as_ref().is_some_and(super::versions::has_extensions);
        let declared = context.client_capabilities().is_some_and(|caps| caps.supports_tasks());
        defined && declared && arguments.get("wait").is_none_or(Value::is_null)
    }

    /// Start `eval` as a task and return its seed state at once.
    pub(super) fn call_eval_task(&self, mut arguments: Value) -> CallToolResponse {
        let name = match runs::take_session(&mut arguments) {
            Ok(name) => name,
            Err(error) => return output::error_result(error.to_string()).into(),
        };
        let session = self.session_context(&name);
        let params = match EvalParams::from_json(arguments).and_then(|params| params.plan().map(|plan| (params, plan)))
        {
            Ok(found) => found,
            Err(error) => return output::error_result(error.to_string()).into(),
        };
        let (params, plan) = params;
        // The task must stay readable for as long as its cells may run (a
        // queued call waits up to its first cell's timeout too).
        let longest = plan.iter().map(|cell| cell.timeout).sum::<Duration>() + plan[0].timeout;
        let ttl = (longest + TASK_RETENTION_MARGIN).as_millis() as u64;
        let engine = self.engine.clone();
        let options = TaskOptions::new().with_ttl_ms(ttl).with_status_message("starting");
        let task = self.tasks.spawn(options, move |task| {
            Box::pin(async move {
                let cancel = CancellationToken::new();
                let status = task.clone();
                let on_event = move |event: EvalEvent| {
                    if let Some(message) = progress_message(&event) {
                        status.set_status_message(message);
                    }
                };
                let eval = engine.eval(&params, &session, &cancel, &on_event);
                tokio::pin!(eval);
                let outcome = tokio::select! {
                    outcome = &mut eval => outcome,
                    _ = task.cancelled() => {
                        cancel.cancel();
                        eval.await
                    }
                };
                if task.is_cancel_requested() {
                    return Err(TaskExit::Cancelled);
                }
                Ok(match outcome {
                    Ok(result) => output::eval_result(result),
                    Err(error) => output::error_result(error.to_string()),
                })
            })
        });
        CallToolResponse::Task(CreateTaskResult::new(task))
    }
}
