//! The MCP server's host bridge: a cell's `completion()` and `agent()` are
//! answered by the client of the connection whose call runs the cell, through
//! MCP sampling (`sampling/createMessage`).
//!
//! Each `eval` call names its client as the one answering its session's
//! cells ([`SamplingBridge::answer_through`]), and the requests ride that
//! call's own response stream (over HTTP, its SSE stream). A session no call
//! named yet falls back to its connection: engine sessions of a connection are
//! named `<connection>` and `<connection>/<name>`, so the connection is the
//! part before the first `/`. Over HTTP, one principal's MCP sessions share
//! engine sessions, which is why the call, not the connection, decides.
//! `agent()` becomes one sampling request with the agent's instructions as
//! the system prompt; a `schema` asks for JSON (the cell validates the answer).
//! A client without the sampling capability gets an error in the cell that
//! says so. Protocol versions that forbid server-to-client requests
//! (2026-07-28 and later) get an error naming the older version to negotiate.

// rmcp marks sampling deprecated (SEP-2577); it is still how a server reaches
// the client's model on the protocol versions clients negotiate today.
#![allow(deprecated)]

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::AtomicU64;

use rmcp::model::{
    ClientResult, CreateMessageRequest, CreateMessageRequestParams, CreateMessageResult, ModelHint, ModelPreferences,
    ProtocolVersion, RequestId, SamplingMessage, ServerRequest,
};
use rmcp::service::{OriginatingRequestId, ServiceError};
use rmcp::{Peer, RoleServer};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use crate::bridge::{AgentOutput, AgentRequest, BoxFuture, Bridge, BridgeError, Completion, CompletionRequest};

/// Tokens asked for when the cell gives no `max_tokens` (sampling requires a number).
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

/// Answers bridge calls through the MCP clients of the server's connections.
#[derive(Default)]
pub struct SamplingBridge {
    /// Each connection's client, by connection name.
    peers: Mutex<HashMap<String, Peer<RoleServer>>>,
    /// The client of the last `eval` call on each engine session.
    callers: Mutex<HashMap<String, Caller>>,
    /// Engine sessions whose running call answers sampling in rounds
    /// (`InputRequiredResult`) rather than by a server-to-client request.
    rounds: Mutex<HashMap<String, Rounds>>,
    /// `eval` calls waiting for the client's next round, by `requestState`.
    /// Kept here, not per connection, because a stateless HTTP request gets a
    /// server of its own and the retry comes in another request.
    pub(super) parked: Mutex<HashMap<String, super::rounds::Parked>>,
    pub(super) rounds_seq: AtomicU64,
}

/// A client that answers sampling requests, and the request of its whose
/// response stream carries them (none: whichever stream the transport picks).
#[derive(Clone)]
struct Caller {
    peer: Peer<RoleServer>,
    origin: Option<RequestId>,
}

/// Why a client's round did not answer a sampling request, by cause; the cell's
/// `completion()` fails with this text.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SamplingError {
    /// `value` is what the client sent, in JSON.
    #[error("the client answered with something other than a message: {value}")]
    NotAMessage { value: Value },
    #[error("the client's retry carried no answer to the sampling request")]
    NoAnswer,
}

/// One sampling request waiting for the client's next round, and where its answer goes.
pub struct Asked {
    pub params: CreateMessageRequestParams,
    pub answer: oneshot::Sender<Result<CreateMessageResult, SamplingError>>,
}

/// How a call in the round-trip protocol takes its cells' sampling requests.
struct Rounds {
    /// Whether the client declared the sampling capability on that call.
    sampling: bool,
    asks: mpsc::UnboundedSender<Asked>,
}

impl SamplingBridge {
    /// Answer the cells of `connection` (and its named sessions) through `peer`.
    pub fn register(&self, connection: &str, peer: Peer<RoleServer>) {
        self.peers.lock().unwrap().insert(connection.to_string(), peer);
    }

    /// Forget `connection` when its client leaves.
    pub fn unregister(&self, connection: &str) {
        self.peers.lock().unwrap().remove(connection);
    }

    /// The `eval` call `origin` of `peer` runs `session`'s cells: their
    /// sampling requests go to that client on that call's stream. It stays the
    /// answerer until the next call on the session, so a run that outlives its
    /// call still reaches a client (on the stream the transport picks).
    pub fn answer_through(&self, session: &str, peer: Peer<RoleServer>, origin: RequestId) {
        self.callers.lock().unwrap().insert(session.to_string(), Caller { peer, origin: Some(origin) });
    }

    /// While the current call of `session` runs, its cells' sampling requests
    /// go to the returned receiver (to be asked in `InputRequiredResult`
    /// rounds); `sampling` says whether the client declared the capability.
    pub fn open_rounds(&self, session: &str, sampling: bool) -> mpsc::UnboundedReceiver<Asked> {
        let (asks, receiver) = mpsc::unbounded_channel();
        self.rounds.lock().unwrap().insert(session.to_string(), Rounds { sampling, asks });
        receiver
    }

    /// The call of `session` is over: its requests go the default way again.
    pub fn close_rounds(&self, session: &str) {
        self.rounds.lock().unwrap().remove(session);
    }

    /// The client that runs `session`'s cells, if it can sample.
    fn caller_for(&self, session: &str) -> Result<Caller, BridgeError> {
        let caller = self.callers.lock().unwrap().get(session).cloned();
        let caller = caller.or_else(|| {
            let connection = session.split('/').next().unwrap_or(session);
            let peer = self.peers.lock().unwrap().get(connection).cloned()?;
            Some(Caller { peer, origin: None })
        });
        let caller = caller.ok_or_else(|| {
            BridgeError::new(
                "unavailable",
                "this cell's MCP client is gone; completion() and agent() need a connected client",
            )
        })?;
        let Some(info) = caller.peer.peer_info() else {
            return Err(BridgeError::new(
                "unavailable",
                "this MCP client connected without the initialize handshake (protocol 2026-07-28 or later), where \
                 the server may not send sampling requests; connect with protocol 2025-11-25 or older to answer \
                 completion() and agent()",
            ));
        };
        if info.capabilities.sampling.is_none() {
            return Err(no_sampling());
        }
        if info.protocol_version >= ProtocolVersion::V_2026_07_28 {
            return Err(BridgeError::new(
                "unavailable",
                format!(
                    "this MCP client negotiated protocol {}, which forbids server-to-client sampling requests; \
                     connect with protocol 2025-11-25 or older to answer completion() and agent()",
                    info.protocol_version
                ),
            ));
        }
        Ok(caller)
    }

    /// One sampling round trip: the model's text and name.
    async fn sample(&self, session: &str, params: CreateMessageRequestParams) -> Result<Completion, BridgeError> {
        let rounds = self.rounds.lock().unwrap().get(session).map(|r| (r.sampling, r.asks.clone()));
        let result = match rounds {
            Some((false, _)) => return Err(no_sampling()),
            Some((true, asks)) => {
                let (answer, answered) = oneshot::channel();
                asks.send(Asked { params, answer }).map_err(|_| gone())?;
                let result = answered.await.map_err(|_| gone())?;
                result.map_err(|error| {
                    BridgeError::new("failed", format!("the MCP client did not answer the sampling request: {error}"))
                })?
            }
            None => self.caller_for(session)?.create_message(params).await.map_err(|error| {
                BridgeError::new("failed", format!("the MCP client did not answer the sampling request: {error}"))
            })?,
        };
        let text: String =
            result.message.content.iter().filter_map(|block| block.as_text()).map(|t| t.text.as_str()).collect();
        Ok(Completion { text, model: Some(result.model).filter(|model| !model.is_empty()) })
    }
}

impl Caller {
    /// `sampling/createMessage` to this client, on its call's stream when known.
    async fn create_message(&self, params: CreateMessageRequestParams) -> Result<CreateMessageResult, ServiceError> {
        params.validate().map_err(|error| ServiceError::McpError(rmcp::ErrorData::invalid_params(error, None)))?;
        let mut request = CreateMessageRequest::new(params);
        if let Some(origin) = &self.origin {
            request.extensions.insert(OriginatingRequestId(origin.clone()));
        }
        match self.peer.send_request(ServerRequest::CreateMessageRequest(request)).await? {
            ClientResult::CreateMessageResult(result) => Ok(*result),
            _ => Err(ServiceError::UnexpectedResponse),
        }
    }
}

fn no_sampling() -> BridgeError {
    BridgeError::new(
        "unavailable",
        "this MCP client does not offer sampling; completion() and agent() need a client that declares the sampling \
         capability (or run the code with `cellbox run` and CELLBOX_LLM_BASE_URL set)",
    )
}

fn gone() -> BridgeError {
    BridgeError::new("cancelled", "the MCP call that ran this cell is over; its sampling request was not answered")
}

/// A sampling request for `prompt`, asking for JSON when a schema is given.
fn request(
    prompt: &str,
    system: Option<String>,
    schema: Option<&Value>,
    model: Option<String>,
    max_tokens: Option<u64>,
) -> CreateMessageRequestParams {
    let mut prompt = prompt.to_string();
    if let Some(schema) = schema {
        prompt.push_str(&format!(
            "\n\nAnswer with only a JSON value (no prose, no code fence) matching this JSON Schema:\n{schema}"
        ));
    }
    let max_tokens = max_tokens.map_or(DEFAULT_MAX_TOKENS, |n| n.clamp(1, u32::MAX as u64) as u32);
    let mut params = CreateMessageRequestParams::new(vec![SamplingMessage::user_text(prompt)], max_tokens);
    if let Some(system) = system {
        params = params.with_system_prompt(system);
    }
    if let Some(model) = model {
        params = params.with_model_preferences(ModelPreferences::new().with_hints(vec![ModelHint::new(model)]));
    }
    params
}

/// The system prompt a sub-agent of kind `agent` runs under.
fn agent_instructions(request: &AgentRequest) -> String {
    let mut text = format!(
        "You are a sub-agent of kind {:?} started by a program. Do the task you are given and answer with its final \
         result only.",
        request.agent
    );
    if let Some(label) = &request.label {
        text.push_str(&format!(" Your task is labelled {label:?}."));
    }
    text
}

impl Bridge for SamplingBridge {
    fn completion(&self, request: CompletionRequest) -> BoxFuture<'_, Result<Completion, BridgeError>> {
        self.completion_for("", request)
    }

    fn completion_for(&self, session: &str, call: CompletionRequest) -> BoxFuture<'_, Result<Completion, BridgeError>> {
        let session = session.to_string();
        Box::pin(async move {
            let mut params = request(&call.prompt, call.system, call.schema.as_ref(), call.model, call.max_tokens);
            if let Some(temperature) = call.temperature {
                params = params.with_temperature(temperature as f32);
            }
            self.sample(&session, params).await
        })
    }

    fn agent(&self, request: AgentRequest) -> BoxFuture<'_, Result<AgentOutput, BridgeError>> {
        self.agent_for("", request)
    }

    fn agent_for(&self, session: &str, call: AgentRequest) -> BoxFuture<'_, Result<AgentOutput, BridgeError>> {
        let session = session.to_string();
        Box::pin(async move {
            let system = agent_instructions(&call);
            let params = request(&call.prompt, Some(system), call.schema.as_ref(), call.model.clone(), None);
            let answer = self.sample(&session, params).await?;
            Ok(AgentOutput { text: answer.text, output: None, model: answer.model })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_schema_asks_for_json_and_a_model_becomes_a_hint() {
        let schema = serde_json::json!({"type": "object"});
        let params = request("hi", Some("be brief".into()), Some(&schema), Some("m1".into()), None);
        assert_eq!(params.max_tokens, DEFAULT_MAX_TOKENS);
        assert_eq!(params.system_prompt.as_deref(), Some("be brief"));
        let text = params.messages[0].content.first().and_then(|b| b.as_text()).unwrap().text.clone();
        assert!(text.starts_with("hi") && text.contains("JSON Schema") && text.contains("\"object\""), "{text}");
        let hints = params.model_preferences.unwrap().hints.unwrap();
        assert_eq!(hints[0].name.as_deref(), Some("m1"));
    }

    #[test]
    fn an_unknown_connection_is_a_clear_error() {
        let bridge = SamplingBridge::default();
        let error = bridge.caller_for("mcp-1-0/data").err().unwrap();
        assert!(error.to_string().contains("client is gone"), "{error}");
    }
}
