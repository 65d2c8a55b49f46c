//! The bridge of `cellbox run` and `cellbox repl`, configured by host-only
//! variables: `CELLBOX_LLM_BASE_URL`, `CELLBOX_LLM_API_KEY`, `CELLBOX_LLM_MODEL`
//! for `completion()`, `CELLBOX_AGENT_COMMAND` for `agent()`. None of them
//! reaches a kernel (see `crate::discovery::env`).

use super::command::AgentCommand;
use super::openai::{OpenAiClient, OpenAiSetupError};
use super::{AgentOutput, AgentRequest, BoxFuture, Bridge, BridgeError, Completion, CompletionRequest};
use crate::settings::{self, Environment};

/// Completions over HTTP and agents as a command, either of them optional.
#[derive(Debug, Clone)]
pub struct CliBridge {
    llm: Option<OpenAiClient>,
    agent: Option<AgentCommand>,
}

impl CliBridge {
    /// The bridge the environment configures; `Ok(None)` when none of the
    /// variables is set, `Err` when one is set wrongly.
    pub fn from_environment(env: &Environment, depth: u32) -> Result<Option<CliBridge>, OpenAiSetupError> {
        let owned = |var| env.get(var).map(str::to_string);
        let llm = match env.get(&settings::LLM_BASE_URL) {
            Some(base) => Some(OpenAiClient::new(base, owned(&settings::LLM_API_KEY), owned(&settings::LLM_MODEL))?),
            None => None,
        };
        let agent = owned(&settings::AGENT_COMMAND).map(|command| AgentCommand::new(command, depth));
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
                    "completion() needs a model endpoint: set CELLBOX_LLM_BASE_URL (and CELLBOX_LLM_API_KEY, \
                     CELLBOX_LLM_MODEL) where cellbox runs",
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
                    "agent() needs an agent command: set CELLBOX_AGENT_COMMAND where cellbox runs (e.g. \
                     `claude -p --output-format json`)",
                )),
            }
        })
    }
}
