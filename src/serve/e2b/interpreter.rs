//! The code interpreter's API (the port E2B's code-interpreter SDKs call):
//! `POST /execute` streams a cell's output as E2B's NDJSON events, and
//! `/contexts` makes, lists, restarts and removes contexts. The cells run in
//! the sandbox's cellbox kernels, through its SDK connection: results,
//! charts and errors are what `from cellbox import Sandbox` produces.
//!
//! E2B's clients bound a cell by closing the request, so a cell has no limit
//! of its own here beyond the longest a cell may run; a client that goes away
//! interrupts its cell.

use std::collections::BTreeMap;
use std::time::SystemTime;

use axum::body::{Body, Bytes};
use axum::extract::Path;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use cellbox_sdk::wire::{self, Answer, Call, ErrorCode, Failure, Output};
use cellbox_sdk::{Event, Pending};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::{ApiError, Routed, error, parse_body};

/// MIME types with a field of their own in E2B's `result` event.
const MIME_FIELDS: &[(&str, &str)] = &[
    ("text/plain", "text"),
    ("text/html", "html"),
    ("text/markdown", "markdown"),
    ("image/svg+xml", "svg"),
    ("image/png", "png"),
    ("image/jpeg", "jpeg"),
    ("application/pdf", "pdf"),
    ("text/latex", "latex"),
    ("application/json", "json"),
    ("application/javascript", "javascript"),
    (cellbox_protocol::DATA_MIME, "data"),
    (cellbox_protocol::CHART_MIME, "chart"),
];

#[derive(Debug, Deserialize)]
struct ExecuteRequest {
    code: String,
    context_id: Option<String>,
    language: Option<String>,
    env_vars: Option<BTreeMap<String, String>>,
}

/// An SDK failure as the interpreter's HTTP error.
fn failure_response(failure: &Failure) -> ApiError {
    let status = match failure.code {
        ErrorCode::NotFound => StatusCode::NOT_FOUND,
        ErrorCode::InvalidParams | ErrorCode::InvalidRequest | ErrorCode::ParseError => StatusCode::BAD_REQUEST,
        ErrorCode::Denied => StatusCode::FORBIDDEN,
        ErrorCode::MethodNotFound | ErrorCode::Failed => StatusCode::INTERNAL_SERVER_ERROR,
    };
    error(status, failure.message.clone())
}

pub(crate) async fn execute(Routed(sandbox): Routed, body: Bytes) -> Response {
    let request: ExecuteRequest = match parse_body(&body) {
        Ok(request) => request,
        Err(refusal) => return refusal.into_response(),
    };
    // A context names its language; E2B's server takes the context when both come.
    let language = if request.context_id.is_some() { None } else { request.language.filter(|l| !l.trim().is_empty()) };
    // Refusals are answered before the stream starts, as E2B's HTTP errors: the
    // answer's headers cannot wait for a cell that may run for hours.
    if let Some(language) = &language
        && let Err(failure) = cellbox_sdk::SdkLanguage::parse(language)
    {
        return failure_response(&failure).into_response();
    }
    if let Some(id) = &request.context_id {
        match sandbox.link.call(Call::ListContexts(wire::NoParams)).await {
            Ok(Answer::ListContexts(contexts)) if contexts.iter().any(|context| &context.id == id) => {}
            Ok(_) => return error(StatusCode::NOT_FOUND, format!("Context {id} not found")).into_response(),
            Err(failure) => return failure_response(&failure).into_response(),
        }
    }
    let call = Call::RunCode(wire::RunCode {
        code: request.code,
        language,
        context_id: request.context_id,
        envs: request.env_vars,
        // E2B's clients bound a cell by closing the request: here, no limit but the longest.
        timeout: Some(0.0),
        checkpoint: None,
    });
    let pending = match sandbox.link.start(call).await {
        Ok(pending) => pending,
        Err(failure) => return failure_response(&failure).into_response(),
    };
    let lines = Lines { pending: Some(pending), finished: false, ended: sandbox.ended.clone() };
    let body = Body::from_stream(futures_util::stream::unfold(lines, |mut lines| async move {
        let line = lines.next_line().await?;
        Some((line, lines))
    }));
    let mut response = Response::new(body);
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/x-ndjson"));
    response
}

/// A cell's events as NDJSON lines; interrupts the cell if dropped before its end.
struct Lines {
    pending: Option<Pending>,
    finished: bool,
    /// The sandbox's end.
    ended: tokio_util::sync::CancellationToken,
}

/// How often a cell with nothing to say sends a keepalive line: a client that
/// went away is noticed (and its cell interrupted) when one cannot be sent.
const KEEPALIVE: std::time::Duration = std::time::Duration::from_secs(2);

impl Lines {
    async fn next_line(&mut self) -> Option<Result<Bytes, std::io::Error>> {
        if self.finished {
            return None;
        }
        let pending = self.pending.as_mut()?;
        let event = tokio::select! {
            biased;
            () = self.ended.cancelled() => None,
            event = pending.next() => event,
            () = tokio::time::sleep(KEEPALIVE) => {
                return Some(Ok(Bytes::from_static(b"{\"type\":\"keepalive\"}\n")));
            }
        };
        let lines = match event {
            Some(Event::Output(output)) => vec![output_event(output)],
            Some(Event::Answer(answer)) => {
                self.finished = true;
                self.pending = None;
                end_events(answer)
            }
            // The sandbox ended (killed, or timed out) under the cell: the answer is
            // cut off, which E2B's clients read as "the sandbox was killed".
            None => {
                self.finished = true;
                self.pending = None;
                return Some(Err(std::io::Error::other("the sandbox was killed during the cell")));
            }
        };
        let mut text = String::new();
        for line in lines {
            text.push_str(&line.to_string());
            text.push('\n');
        }
        Some(Ok(Bytes::from(text)))
    }
}

impl Drop for Lines {
    fn drop(&mut self) {
        // The client went away before the cell ended: interrupt it, as E2B's server does.
        if let Some(pending) = self.pending.take() {
            tokio::spawn(async move { pending.cancel().await });
        }
    }
}

fn timestamp() -> u64 {
    SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
}

/// One output as E2B's event.
fn output_event(output: Output) -> Value {
    match output {
        Output::Stdout { text, .. } => json!({"type": "stdout", "text": text, "timestamp": timestamp()}),
        Output::Stderr { text, .. } => json!({"type": "stderr", "text": text, "timestamp": timestamp()}),
        Output::Error { name, value, traceback } => {
            json!({"type": "error", "name": name, "value": value, "traceback": traceback})
        }
        Output::Result { bundle, is_main_result } => result_event(bundle, is_main_result),
    }
}

/// A MIME bundle as E2B's `result` event: known types by field name, the rest in `extra`.
fn result_event(bundle: Map<String, Value>, is_main_result: bool) -> Value {
    let mut event = Map::new();
    event.insert("type".into(), "result".into());
    let mut extra = Map::new();
    for (mime, value) in bundle {
        match MIME_FIELDS.iter().find(|(known, _)| *known == mime) {
            Some((_, "text")) => {
                event.insert("text".into(), unquoted(value));
            }
            Some((_, field)) => {
                event.insert((*field).into(), value);
            }
            None if mime == cellbox_protocol::STATUS_MIME => {}
            None => {
                extra.insert(mime, value);
            }
        }
    }
    if !extra.is_empty() {
        event.insert("extra".into(), Value::Object(extra));
    }
    event.insert("is_main_result".into(), is_main_result.into());
    Value::Object(event)
}

/// A string value's text as E2B shows it: without the one pair of quotes its
/// repr wraps it in (`'bar'` is `bar`).
fn unquoted(text: Value) -> Value {
    match text.as_str() {
        Some(text) if text.len() >= 2 => {
            let quoted = |q: char| text.starts_with(q) && text.ends_with(q);
            if quoted('\'') || quoted('"') { Value::String(text[1..text.len() - 1].to_string()) } else { text.into() }
        }
        _ => text,
    }
}

/// The events that end a cell: its execution count, then the end.
fn end_events(answer: Result<Answer, Failure>) -> Vec<Value> {
    let mut events = Vec::new();
    match answer {
        Ok(Answer::RunCode(result)) => {
            // What cellbox says of the cell (a kernel restarted, output clamped into an
            // artifact, a limit hit) reaches the caller as stderr: E2B has no place for it.
            for note in &result.notes {
                events.push(json!({"type": "stderr", "text": format!("cellbox: {note}\n"), "timestamp": timestamp()}));
            }
            if let Some(count) = result.execution_count {
                events.push(json!({"type": "number_of_executions", "execution_count": count}));
            }
        }
        Ok(_) => {}
        Err(failure) => {
            events.push(json!({"type": "error", "name": "SandboxError", "value": failure.message, "traceback": ""}));
        }
    }
    events.push(json!({"type": "end_of_execution"}));
    events
}

#[derive(Debug, Deserialize)]
struct NewContext {
    language: Option<String>,
    cwd: Option<String>,
}

/// A context as E2B's answer shows it (its folder as the sandbox sees it).
fn context_json(sandbox: &super::Sandbox, info: &wire::ContextInfo) -> Value {
    json!({"id": info.id, "language": info.language, "cwd": sandbox.home.to_virtual(&info.cwd)})
}

pub(crate) async fn create_context(Routed(sandbox): Routed, body: Bytes) -> Response {
    let request: NewContext = match parse_body(&body) {
        Ok(request) => request,
        Err(refusal) => return refusal.into_response(),
    };
    let cwd = request.cwd.as_deref().map(|cwd| sandbox.home.to_real(cwd));
    let call = Call::CreateContext(wire::CreateContext { language: request.language, cwd, name: None });
    match sandbox.link.call(call).await {
        Ok(Answer::CreateContext(info)) => axum::Json(context_json(&sandbox, &info)).into_response(),
        Ok(other) => unexpected(other),
        Err(failure) => failure_response(&failure).into_response(),
    }
}

pub(crate) async fn list_contexts(Routed(sandbox): Routed) -> Response {
    match sandbox.link.call(Call::ListContexts(wire::NoParams)).await {
        Ok(Answer::ListContexts(contexts)) => {
            let body: Vec<Value> = contexts.iter().map(|info| context_json(&sandbox, info)).collect();
            axum::Json(body).into_response()
        }
        Ok(other) => unexpected(other),
        Err(failure) => failure_response(&failure).into_response(),
    }
}

pub(crate) async fn restart_context(Routed(sandbox): Routed, Path(id): Path<String>) -> Response {
    match sandbox.link.call(Call::RestartContext(wire::ContextRef { context_id: id })).await {
        Ok(_) => StatusCode::NO_CONTENT.into_response(),
        Err(failure) => failure_response(&failure).into_response(),
    }
}

pub(crate) async fn remove_context(Routed(sandbox): Routed, Path(id): Path<String>) -> Response {
    match sandbox.link.call(Call::RemoveContext(wire::ContextRef { context_id: id })).await {
        Ok(_) => StatusCode::NO_CONTENT.into_response(),
        Err(failure) => failure_response(&failure).into_response(),
    }
}

fn unexpected(answer: Answer) -> Response {
    error(StatusCode::INTERNAL_SERVER_ERROR, format!("the sandbox answered {:?} out of turn", answer.method().name()))
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bundle_becomes_e2b_fields_with_the_rest_in_extra() {
        let bundle = json!({
            "text/plain": "<Figure>",
            "image/png": "iVBOR",
            "application/vnd.cellbox.chart+json": {"type": "line"},
            "application/x-cellbox-status": {"op": "x"},
            "application/x-custom": "y",
        });
        let Value::Object(bundle) = bundle else { unreachable!() };
        let event = result_event(bundle, true);
        assert_eq!(
            event,
            json!({
                "type": "result", "text": "<Figure>", "png": "iVBOR", "chart": {"type": "line"},
                "extra": {"application/x-custom": "y"}, "is_main_result": true,
            })
        );
    }

    #[test]
    fn a_cell_ends_with_its_count_then_the_end() {
        let result = wire::RunCodeResult {
            status: "ok".into(),
            execution_count: Some(3),
            error: None,
            notes: vec![],
            artifact: None,
        };
        assert_eq!(
            end_events(Ok(Answer::RunCode(result))),
            vec![json!({"type": "number_of_executions", "execution_count": 3}), json!({"type": "end_of_execution"})]
        );
        let failed = end_events(Err(Failure::new(ErrorCode::Failed, "gone")));
        assert_eq!(failed.last(), Some(&json!({"type": "end_of_execution"})));
        assert_eq!(failed[0]["type"], "error");
    }
}
