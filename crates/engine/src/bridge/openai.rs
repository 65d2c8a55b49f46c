//! `completion()` through an OpenAI-compatible `POST {base}/chat/completions`.
//!
//! Works with OpenAI, OpenRouter, vLLM, llama.cpp's server, Ollama's `/v1`
//! and the like. The API key stays in the host: it is sent as a bearer token
//! and never enters a kernel's environment. A `schema` becomes
//! `response_format: {"type": "json_schema", …}`.

use std::time::Duration;

use serde_json::{Value, json};

use super::{BridgeError, Completion, CompletionRequest};

/// How long connecting to the endpoint may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(20);

/// A chat-completions endpoint.
#[derive(Debug, Clone)]
pub struct OpenAiClient {
    /// e.g. `https://api.openai.com/v1` (the `/chat/completions` is appended).
    base_url: String,
    api_key: Option<String>,
    /// Used when the cell names no model.
    model: Option<String>,
    http: reqwest::Client,
}

/// Why an [`OpenAiClient`] cannot be made (a setting, not a request, is at fault), by cause.
#[derive(Debug, thiserror::Error)]
pub enum OpenAiSetupError {
    /// The base URL setting (`name`) is not an http(s) URL; `url` as trimmed.
    #[error("{name} must start with http:// or https:// (got {url:?})")]
    BadBaseUrl { name: &'static str, url: String },
    #[error("could not set up the HTTP client: {0}")]
    Http(#[source] reqwest::Error),
}

impl OpenAiClient {
    /// A client for `base_url`; fails when it is not an http(s) URL.
    pub fn new(base_url: &str, api_key: Option<String>, model: Option<String>) -> Result<Self, OpenAiSetupError> {
        let base_url = base_url.trim().trim_end_matches('/').to_string();
        if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
            return Err(OpenAiSetupError::BadBaseUrl { name: crate::settings::LLM_BASE_URL.name, url: base_url });
        }
        crate::tls::install_crypto();
        let http =
            reqwest::Client::builder().connect_timeout(CONNECT_TIMEOUT).build().map_err(OpenAiSetupError::Http)?;
        Ok(OpenAiClient { base_url, api_key: api_key.filter(|k| !k.is_empty()), model, http })
    }

    /// The request body for `request`.
    pub fn body(&self, request: &CompletionRequest, model: &str) -> Value {
        let mut messages = Vec::new();
        if let Some(system) = &request.system {
            messages.push(json!({"role": "system", "content": system}));
        }
        messages.push(json!({"role": "user", "content": request.prompt}));
        let mut body = json!({"model": model, "messages": messages});
        if let Some(max_tokens) = request.max_tokens {
            body["max_tokens"] = json!(max_tokens);
        }
        if let Some(temperature) = request.temperature {
            body["temperature"] = json!(temperature);
        }
        if let Some(schema) = &request.schema {
            body["response_format"] = json!({
                "type": "json_schema",
                "json_schema": {"name": "answer", "schema": schema, "strict": false},
            });
        }
        body
    }

    /// Ask once; the error says what the endpoint answered.
    pub async fn complete(&self, request: CompletionRequest) -> Result<Completion, BridgeError> {
        let model = request.model.clone().or_else(|| self.model.clone()).ok_or_else(|| {
            BridgeError::new(
                "unavailable",
                "no model named: pass completion(..., model=...) or set CELLBOX_LLM_MODEL on the host",
            )
        })?;
        let url = format!("{}/chat/completions", self.base_url);
        let mut post = self.http.post(&url).json(&self.body(&request, &model));
        if let Some(key) = &self.api_key {
            post = post.bearer_auth(key);
        }
        let response = post
            .send()
            .await
            .map_err(|e| BridgeError::new("host", format!("the model endpoint {url} could not be reached: {e}")))?;
        let status = response.status();
        let text = response
            .text()
            .await
            .map_err(|e| BridgeError::new("host", format!("reading the answer from {url} failed: {e}")))?;
        if !status.is_success() {
            let detail = serde_json::from_str::<Value>(&text)
                .ok()
                .and_then(|v| v.pointer("/error/message").and_then(Value::as_str).map(String::from))
                .unwrap_or_else(|| text.chars().take(500).collect());
            return Err(BridgeError::new("host", format!("the model endpoint answered {status}: {detail}")));
        }
        let answer: Value = serde_json::from_str(&text).map_err(|e| {
            BridgeError::new("host", format!("the model endpoint answered with something that is not JSON ({e})"))
        })?;
        let content = answer.pointer("/choices/0/message/content").and_then(Value::as_str).ok_or_else(|| {
            BridgeError::new("host", "the model endpoint's answer has no choices[0].message.content".to_string())
        })?;
        let used = answer.get("model").and_then(Value::as_str).map(String::from).unwrap_or(model);
        Ok(Completion { text: content.to_string(), model: Some(used) })
    }
}
