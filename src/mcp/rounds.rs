//! Sampling on protocol versions that forbid server-to-client requests
//! (2026-07-28 and later): the `eval` call answers `InputRequiredResult`
//! carrying the cell's `sampling/createMessage` request, the running cell
//! stays parked on the server, and the client's retry (its answer in
//! `inputResponses`, the echoed `requestState`) resumes it. The state never
//! leaves the server: `requestState` is only the key of the parked call.

// rmcp marks sampling deprecated (SEP-2577); these rounds are how the
// current protocol carries it.
#![allow(deprecated)]

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;

use rmcp::RoleServer;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CreateMessageRequest, CreateMessageResult, InputRequest,
    InputRequiredResult, ProtocolVersion,
};
use rmcp::service::RequestContext;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::sampling::{Asked, SamplingError};
use super::{EvalServer, output, runs};
use crate::tool::{CallOutcome, EvalParams};

/// The key of the one sampling request each round asks.
const ASK_KEY: &str = "sample";

/// An `eval` call waiting for the client's next round.
pub(super) struct Parked {
    task: tokio::task::JoinHandle<CallToolResult>,
    asks: mpsc::UnboundedReceiver<Asked>,
    answer: oneshot::Sender<Result<CreateMessageResult, SamplingError>>,
    session: String,
}

impl EvalServer {
    /// Whether this call answers sampling in rounds: the server samples and
    /// the call's protocol forbids server-to-client requests.
    pub(super) fn uses_rounds(&self, context: &RequestContext<RoleServer>) -> bool {
        self.sampling.is_some() && context.protocol_version().is_some_and(|v| v >= ProtocolVersion::V_2026_07_28)
    }

    /// `eval` in rounds: a first call starts the cells, a retry with
    /// `requestState` hands the client's answer to the parked cell.
    pub(super) async fn call_eval_rounds(
        &self,
        request: CallToolRequestParams,
        mut arguments: Value,
        context: &RequestContext<RoleServer>,
    ) -> CallToolResponse {
        let Some(sampling) = self.sampling.clone() else {
            return output::error_result("sampling is not set up on this server").into();
        };
        if let Some(state) = request.request_state {
            let Some(parked) = sampling.parked.lock().unwrap().remove(&state) else {
                return output::error_result(format!(
                    "requestState {state:?} names no waiting eval call (it was answered already, or the server \
                     restarted); run the cells again"
                ))
                .into();
            };
            let answer = match request.input_responses.and_then(|mut responses| responses.remove(ASK_KEY)) {
                Some(value) => serde_json::from_value::<CreateMessageResult>(value.clone())
                    .map_err(|_| SamplingError::NotAMessage { value }),
                None => Err(SamplingError::NoAnswer),
            };
            let _ = parked.answer.send(answer);
            return self.drive(parked.task, parked.asks, parked.session).await;
        }
        let name = match runs::take_session(&mut arguments) {
            Ok(name) => name,
            Err(error) => return output::error_result(error.to_string()).into(),
        };
        let session = self.session_context(&name);
        // Listed by eval_sessions; a call spanning rounds is not counted as in flight.
        drop(self.note_call(&name, &arguments));
        let params = match EvalParams::from_json(arguments) {
            Ok(params) => params,
            Err(error) => return output::error_result(error.to_string()).into(),
        };
        let declared = context.client_capabilities().is_some_and(|caps| caps.sampling.is_some());
        let asks = sampling.open_rounds(&session.session, declared);
        let engine = self.engine.clone();
        let key = session.session.clone();
        let task = tokio::spawn(async move {
            let cancel = CancellationToken::new();
            match engine.call(&params, &session, &cancel, &|_| {}).await {
                Ok(CallOutcome::Finished(result)) => output::eval_result(result),
                Ok(CallOutcome::Running(report)) => output::running_result(report),
                Err(error) => output::error_result(error.to_string()),
            }
        });
        self.drive(task, asks, key).await
    }

    /// Wait for the cells to finish or to ask the client something.
    async fn drive(
        &self,
        mut task: tokio::task::JoinHandle<CallToolResult>,
        mut asks: mpsc::UnboundedReceiver<Asked>,
        session: String,
    ) -> CallToolResponse {
        tokio::select! {
            finished = &mut task => {
                if let Some(sampling) = &self.sampling {
                    sampling.close_rounds(&session);
                }
                match finished {
                    Ok(result) => result.into(),
                    Err(error) => output::error_result(format!("the eval call failed: {error}")).into(),
                }
            }
            Some(asked) = asks.recv() => {
                let Some(sampling) = &self.sampling else {
                    return output::error_result("sampling is not set up on this server").into();
                };
                let state = format!("{}#{}", session, sampling.rounds_seq.fetch_add(1, Ordering::Relaxed));
                let request = CreateMessageRequest::new(asked.params);
                let requests = BTreeMap::from([(ASK_KEY.to_string(), InputRequest::CreateMessage(request))]);
                sampling.parked.lock().unwrap().insert(state.clone(), Parked { task, asks, answer: asked.answer, session });
                InputRequiredResult::new(Some(requests), Some(state)).into()
            }
        }
    }
}
