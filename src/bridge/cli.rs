//! The bridge of `evalkit run` and `evalkit repl`, configured by host-only
//! variables: `EVALKIT_LLM_BASE_URL`, `EVALKIT_LLM_API_KEY`, `EVALKIT_LLM_MODEL`
//! for `completion()`, `EVALKIT_AGENT_COMMAND` for `agent()`. None of them
//! reaches a kernel (see `crate::runtime::env`).

use super::command::AgentCommand;
use super::openai::OpenAiClient;
use super::{AgentOutput, AgentRequest, BoxFuture, Bridge, BridgeError, Completion, CompletionRequest};

pub const BASE_URL_VAR: &str = "EVALKIT_LLM_BASE_URL";
pub const API_KEY_VAR: &str = "EVALKIT_LLM_API_KEY";
pub const MODEL_VAR: &str = "EVALKIT_LLM_MODEL";
pub const AGENT_COMMAND_VAR: &str = "EVALKIT_AGENT_COMMAND";

/// Completions over HTTP and agents as a command, either of them optional.
#[derive(Debug, Clone)]
pub struct CliBridge {
    llm: Option<OpenAiClient>,
    agent: Option<AgentCommand>,
}

impl CliBridge {
    /// The bridge the environment configures; `Ok(None)` when none of the
    /// variables is set, `Err` when one is set wrongly.
    pub fn from_env(depth: u32) -> Result<Option<CliBridge>, String> {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        let llm = match var(BASE_URL_VAR) {
            Some(base) => Some(OpenAiClient::new(&base, var(API_KEY_VAR), var(MODEL_VAR))?),
            None => None,
        };
        let agent = var(AGENT_COMMAND_VAR).map(|command| AgentCommand::new(command, depth));
        if llm.is_none() && agent.is_none() {
            return Ok(None);
        }
        Ok(Some(CliBridge { llm, agent }))
    }
}

impl Bridge for CliBridge {
    fn completion(&self, request: CompletionRequest) -> BoxFuture<'_, Result<Completion, BridgeError>> {
        Box::pin(async move {
            match &self.llm {
                Some(llm) => llm.complete(request).await,
                None => Err(BridgeError::new(
                    "unavailable",
                    "completion() needs a model endpoint: set EVALKIT_LLM_BASE_URL (and EVALKIT_LLM_API_KEY, \
                     EVALKIT_LLM_MODEL) where evalkit runs",
                )),
            }
        })
    }

    fn agent(&self, request: AgentRequest) -> BoxFuture<'_, Result<AgentOutput, BridgeError>> {
        Box::pin(async move {
            match &self.agent {
                Some(command) => command.run(request).await,
                None => Err(BridgeError::new(
                    "unavailable",
                    "agent() needs an agent command: set EVALKIT_AGENT_COMMAND where evalkit runs (e.g. \
                     `claude -p --output-format json`)",
                )),
            }
        })
    }
}
