//! `agent()` through a command line such as `claude -p --output-format json`,
//! `codex exec` or `gemini -p --output-format json`.
//!
//! The command runs through `sh -c` in a process group of its own. The prompt
//! goes on its stdin, which is then closed; when the command contains
//! `{prompt}`, the prompt is passed there as one argument instead and stdin
//! is empty. Dropping the call (the cell was interrupted or ended) kills the
//! whole group. The final text is taken from the known JSON shapes of agent
//! CLIs, or stdout as it is.

use std::process::Stdio;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::{AgentOutput, AgentRequest, BridgeError};

/// Where the prompt goes when the command names it.
pub const PROMPT_PLACEHOLDER: &str = "{prompt}";
/// How much of a failing command's stderr an error quotes.
const STDERR_QUOTE: usize = 2000;

/// A configured agent command.
#[derive(Debug, Clone)]
pub struct AgentCommand {
    command: String,
    /// The depth agents started from here run at.
    child_depth: u32,
}

/// Kills the command's process group unless it finished.
struct GroupGuard(Option<i32>);

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if let Some(pgid) = self.0 {
            let _ = crate::kernel::process::signal_group(pgid as u32, crate::kernel::process::Signal::SIGKILL);
        }
    }
}

impl AgentCommand {
    /// `command` is a shell command line; `depth` is this host's bridge depth.
    pub fn new(command: impl Into<String>, depth: u32) -> Self {
        AgentCommand { command: command.into(), child_depth: depth + 1 }
    }

    /// Run the command on `request` and return its final text.
    pub async fn run(&self, request: AgentRequest) -> Result<AgentOutput, BridgeError> {
        let mut prompt = request.prompt.clone();
        if let Some(schema) = &request.schema {
            prompt.push_str(&format!(
                "\n\nAnswer with only a JSON value (no prose, no code fence) matching this JSON Schema:\n{schema}"
            ));
        }
        if cfg!(windows) {
            return Err(BridgeError::new(
                "host",
                "agent commands are not supported on Windows yet: they run through `sh -c`".to_string(),
            ));
        }
        let as_argument = self.command.contains(PROMPT_PLACEHOLDER);
        let script = self.command.replace(PROMPT_PLACEHOLDER, "\"$1\"");
        let mut command = tokio::process::Command::new("sh");
        command.arg("-c").arg(&script).arg("cellbox-agent");
        if as_argument {
            command.arg(&prompt);
        }
        command
            .env(crate::settings::BRIDGE_DEPTH.name, self.child_depth.to_string())
            .env(crate::settings::AGENT_KIND.name, &request.agent)
            .stdin(if as_argument { Stdio::null() } else { Stdio::piped() })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        // Its own process group, so the guard below stops whatever it started too.
        #[cfg(unix)]
        command.process_group(0);
        if let Some(model) = &request.model {
            command.env(crate::settings::AGENT_MODEL.name, model);
        }
        let mut child = command.spawn().map_err(|e| {
            BridgeError::new("host", format!("could not start the agent command ({}): {e}", self.command))
        })?;
        let mut guard = GroupGuard(child.id().map(|pid| pid as i32));
        if let Some(mut stdin) = child.stdin.take() {
            // A command that never reads its stdin must not block us.
            let _ = stdin.write_all(prompt.as_bytes()).await;
            drop(stdin);
        }
        let mut stdout = child.stdout.take().expect("piped");
        let mut stderr = child.stderr.take().expect("piped");
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let (read_out, read_err, status) =
            tokio::join!(stdout.read_to_end(&mut out), stderr.read_to_end(&mut err), child.wait());
        let _ = (read_out, read_err);
        let status = status.map_err(|e| BridgeError::new("host", format!("waiting for the agent command: {e}")))?;
        guard.0 = None;
        let out = String::from_utf8_lossy(&out).into_owned();
        if !status.success() {
            let err = String::from_utf8_lossy(&err);
            let tail: String = err.chars().rev().take(STDERR_QUOTE).collect::<Vec<_>>().into_iter().rev().collect();
            return Err(BridgeError::new("host", format!("the agent command failed ({status}): {}", tail.trim())));
        }
        let text = final_text(&out);
        let output = (text != out.trim()).then_some(out);
        Ok(AgentOutput { text, output, model: request.model })
    }
}

/// The final answer in an agent CLI's stdout: the known JSON shapes
/// (`{"result": …}` of Claude Code, `{"response": …}` of Gemini CLI, JSONL
/// events ending in an `agent_message` of Codex, `text`/`output`/`content`),
/// else stdout as it is (trimmed).
pub fn final_text(stdout: &str) -> String {
    let trimmed = stdout.trim();
    if let Ok(value) = serde_json::from_str::<Value>(trimmed)
        && let Some(text) = text_of(&value)
    {
        return text;
    }
    // JSON lines: the last event that carries a final text.
    let lines: Vec<Value> = trimmed.lines().filter_map(|line| serde_json::from_str(line.trim()).ok()).collect();
    if !lines.is_empty() && lines.len() == trimmed.lines().filter(|l| !l.trim().is_empty()).count() {
        for value in lines.iter().rev() {
            if let Some(text) = text_of(value) {
                return text;
            }
        }
    }
    trimmed.to_string()
}

fn text_of(value: &Value) -> Option<String> {
    let object = value.as_object()?;
    for key in ["result", "response", "text", "output", "content"] {
        if let Some(text) = object.get(key).and_then(Value::as_str) {
            return Some(text.to_string());
        }
    }
    // Codex: {"type": "item.completed", "item": {"type": "agent_message", "text": …}}
    let item = object.get("item")?;
    if item.get("type").and_then(Value::as_str) == Some("agent_message") {
        return item.get("text").and_then(Value::as_str).map(String::from);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_final_text_of_known_shapes() {
        assert_eq!(final_text(r#"{"type":"result","result":"done","cost":1}"#), "done");
        assert_eq!(final_text(r#"{"response":"hi","stats":{}}"#), "hi");
        let codex = "{\"type\":\"thread.started\"}\n{\"type\":\"item.completed\",\"item\":{\"type\":\"agent_message\",\"text\":\"ok\"}}\n{\"type\":\"turn.completed\"}\n";
        assert_eq!(final_text(codex), "ok");
        assert_eq!(final_text("  plain answer\n"), "plain answer");
        assert_eq!(final_text("[1, 2]"), "[1, 2]");
    }
}
