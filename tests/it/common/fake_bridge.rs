//! A library `Bridge` for tests, answering by prompt, that counts its calls
//! and notices when one is dropped before it finished (cancelled).
#![allow(dead_code)]

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use cellbox_engine::bridge::{
    AgentOutput, AgentRequest, BoxFuture, Bridge, BridgeError, Completion, CompletionRequest, ToolRequest,
};
use serde_json::{Value, json};

/// A bridge whose answers depend on the prompt: `sleep:<s>` waits,
/// `together:<n>` waits until `n` calls have been in flight at once (so a test
/// proves calls overlap without betting on how long they take), `fail`
/// errors, `json` answers a JSON object; anything else is echoed.
#[derive(Default)]
pub struct FakeBridge {
    pub running: AtomicUsize,
    pub most_at_once: AtomicUsize,
    pub started: AtomicUsize,
    /// Set when a call's future was dropped before it finished (cancelled).
    pub dropped: Arc<AtomicBool>,
    pub prompts: Mutex<Vec<String>>,
}

/// Marks a call as dropped unless it finished.
struct DropFlag(Arc<AtomicBool>, bool);

impl Drop for DropFlag {
    fn drop(&mut self) {
        if !self.1 {
            self.0.store(true, Ordering::SeqCst);
        }
    }
}

impl Bridge for FakeBridge {
    fn completion(&self, request: CompletionRequest) -> BoxFuture<'_, Result<Completion, BridgeError>> {
        Box::pin(async move {
            self.started.fetch_add(1, Ordering::SeqCst);
            self.prompts.lock().unwrap().push(request.prompt.clone());
            let now = self.running.fetch_add(1, Ordering::SeqCst) + 1;
            self.most_at_once.fetch_max(now, Ordering::SeqCst);
            let mut flag = DropFlag(self.dropped.clone(), false);
            if let Some(seconds) = request.prompt.strip_prefix("sleep:") {
                tokio::time::sleep(Duration::from_secs_f64(seconds.parse().unwrap())).await;
            }
            if let Some(count) = request.prompt.strip_prefix("together:") {
                let count: usize = count.parse().unwrap();
                // Bounded: calls that never overlap end here, and the test's check fails.
                let deadline = tokio::time::Instant::now() + super::PATIENCE / 2;
                while self.most_at_once.load(Ordering::SeqCst) < count && tokio::time::Instant::now() < deadline {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
            }
            flag.1 = true;
            self.running.fetch_sub(1, Ordering::SeqCst);
            match request.prompt.as_str() {
                "fail" => Err(BridgeError::new("host", "the model is on fire")),
                "json" => Ok(Completion { text: r#"{"name": "Ada", "age": 36}"#.into(), model: Some("fake-1".into()) }),
                prompt => Ok(Completion { text: format!("echo: {prompt}"), model: Some("fake-1".into()) }),
            }
        })
    }

    fn agent(&self, request: AgentRequest) -> BoxFuture<'_, Result<AgentOutput, BridgeError>> {
        Box::pin(async move {
            Ok(AgentOutput {
                text: format!("{} did: {}", request.agent, request.prompt),
                output: Some("transcript".into()),
                model: None,
            })
        })
    }

    fn tool(&self, request: ToolRequest) -> BoxFuture<'_, Result<Value, BridgeError>> {
        Box::pin(async move { Ok(json!({"tool": request.name, "args": request.args})) })
    }

    fn concurrency(&self) -> usize {
        16
    }
}
