//! Host-bridge calls of gateway kernels, carried by the Jupyter stdin channel.
//!
//! A kernel on a gateway can reach the host only through the Jupyter
//! protocol, so the runner's `bridge_stdin` module sends calls as the prompt
//! of an `input_request` ([`MARKER`], then `{"calls": [{id, op, args}],
//! "waiting": [ids]}`) and reads answers from the `input_reply`
//! (`{"results": [{id, ok, value | error}]}`). ipykernel serves one
//! input_request at a time, so the kernel makes them one after another from a
//! single pump thread: each request brings the calls queued since the last,
//! and the host holds it until an answer is ready (or [`POLL_HOLD`] has
//! passed, so calls queued meanwhile need not wait for a slow one). Many
//! calls are thus in flight on the host at once while only one request is.
//!
//! Everything else (per-cell counts, cancellation when the cell ends or is
//! interrupted, the budget's pause/resume events around every call, status
//! events) is the process kernels' code:
//! [`crate::kernel::bridge_relay::dispatch`] and [`crate::kernel::bridge_relay::cancel`].

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::Outgoing;
use crate::kernel::bridge_relay::{self, BridgeHook, BridgeState, CallSink};
use crate::kernel::{ExecEvent, KernelError};
use crate::protocol::BridgeResult;

/// How an input_request carrying bridge calls begins (`MARKER` in `bridge_stdin.py`).
pub const MARKER: &str = "cellbox-bridge/1 ";

/// How long a request with no answer ready is held before it is answered
/// empty, so that calls queued in the kernel meanwhile are sent.
pub const POLL_HOLD: Duration = Duration::from_millis(100);

type EventSender = mpsc::Sender<Result<ExecEvent, KernelError>>;

/// Finds the event sender of a running cell (for status events).
pub(crate) type CellEvents = Box<dyn Fn(&str) -> Option<EventSender> + Send + Sync>;

/// The calls of one marked input_request.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CallRequest {
    /// (id, op, args) of each new call.
    pub calls: Vec<(String, String, Value)>,
}

impl CallRequest {
    /// The calls in an input_request's content, when its prompt is marked;
    /// `None` for an ordinary `input()`.
    pub fn from_content(content: &Value) -> Option<CallRequest> {
        let prompt = content.get("prompt").and_then(Value::as_str)?;
        let body: Value = serde_json::from_str(prompt.strip_prefix(MARKER)?).ok()?;
        let calls = body
            .get("calls")
            .and_then(Value::as_array)
            .map(|calls| {
                calls
                    .iter()
                    .filter_map(|call| {
                        let id = call.get("id").and_then(Value::as_str)?.to_string();
                        let op = call.get("op").and_then(Value::as_str).unwrap_or_default().to_string();
                        Some((id, op, call.get("args").cloned().unwrap_or(Value::Null)))
                    })
                    .collect()
            })
            .unwrap_or_default();
        Some(CallRequest { calls })
    }
}

/// The request the kernel waits on, and the answers not yet sent.
#[derive(Default)]
struct Polls {
    /// The header of the input_request to reply to, and its number.
    waiting: Option<(u64, Value)>,
    ready: Vec<Value>,
    count: u64,
}

/// The bridge side of one gateway kernel.
pub(crate) struct GatewayBridge {
    hook: Mutex<Option<BridgeHook>>,
    calls: Mutex<BridgeState>,
    polls: Mutex<Polls>,
    outgoing: mpsc::UnboundedSender<Outgoing>,
    session: String,
    cell_events: CellEvents,
}

impl GatewayBridge {
    pub fn new(outgoing: mpsc::UnboundedSender<Outgoing>, session: String, cell_events: CellEvents) -> Self {
        GatewayBridge {
            hook: Mutex::new(None),
            calls: Mutex::new(BridgeState::default()),
            polls: Mutex::new(Polls::default()),
            outgoing,
            session,
            cell_events,
        }
    }

    /// Who answers the calls from now on.
    pub fn set_hook(&self, hook: BridgeHook) {
        *self.hook.lock().unwrap() = Some(hook);
    }

    /// A marked input_request (header `header`) of the cell `cell`, `None`
    /// when that cell no longer runs: start its calls and hold the request
    /// until an answer is ready.
    pub fn on_request(self: &Arc<Self>, header: Value, cell: Option<String>, request: CallRequest) {
        let hook = self.hook.lock().unwrap().clone();
        for (id, op, args) in request.calls {
            bridge_relay::dispatch(self, hook.clone(), id, cell.clone(), op, args);
        }
        let number = {
            let mut polls = self.polls.lock().unwrap();
            polls.count += 1;
            let number = polls.count;
            if let Some((_, stale)) = polls.waiting.replace((number, header)) {
                // The kernel asks one at a time; a request it gave up on gets an empty answer.
                self.reply(&stale, Vec::new());
            }
            number
        };
        self.flush();
        let me = self.clone();
        tokio::spawn(async move {
            tokio::time::sleep(POLL_HOLD).await;
            let mut polls = me.polls.lock().unwrap();
            if polls.waiting.as_ref().is_some_and(|(held, _)| *held == number) {
                let (_, header) = polls.waiting.take().expect("checked");
                let ready = std::mem::take(&mut polls.ready);
                me.reply(&header, ready);
            }
        });
    }

    /// The cell `cell` ended: stop its calls (their answers go out with the held request).
    pub fn cell_ended(self: &Arc<Self>, cell: &str) {
        bridge_relay::cancel(self, Some(cell), "its cell has finished");
        self.calls.lock().unwrap().counts.remove(cell);
    }

    /// Stop every call (an interrupt, or the kernel is gone).
    pub fn cancel_all(self: &Arc<Self>, why: &str) {
        bridge_relay::cancel(self, None, why);
    }

    /// Answer the held request if answers are ready.
    fn flush(&self) {
        let mut polls = self.polls.lock().unwrap();
        if polls.ready.is_empty() {
            return;
        }
        if let Some((_, header)) = polls.waiting.take() {
            let ready = std::mem::take(&mut polls.ready);
            self.reply(&header, ready);
        }
    }

    /// Send the `input_reply` to `parent` carrying `results`.
    fn reply(&self, parent: &Value, results: Vec<Value>) {
        let msg_id = parent.get("msg_id").and_then(Value::as_str).unwrap_or_default();
        let value = json!({ "results": results }).to_string();
        let reply = json!({
            "header": {
                "msg_id": format!("{}_bridge_{msg_id}", self.session), "msg_type": "input_reply",
                "session": self.session, "username": "cellbox", "version": "5.3",
            },
            "parent_header": parent, "metadata": {}, "content": { "value": value }, "channel": "stdin", "buffers": [],
        });
        let _ = self.outgoing.send(Outgoing::Message(reply));
    }
}

impl CallSink for GatewayBridge {
    fn calls(&self) -> &Mutex<BridgeState> {
        &self.calls
    }

    async fn cell_event(&self, cell: &str, event: ExecEvent) {
        if let Some(sender) = (self.cell_events)(cell) {
            let _ = sender.send(Ok(event)).await;
        }
    }

    async fn answer(&self, answer: BridgeResult) {
        let answer = serde_json::to_value(&answer).expect("answers serialize");
        self.polls.lock().unwrap().ready.push(answer);
        self.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::bridge_relay::{BridgeCall, BridgeFuture, BridgeHandler, BridgeReply};

    /// Answers `{"prompt": "slow"}` after a second, anything else at once.
    struct Echo;

    impl BridgeHandler for Echo {
        fn call(&self, call: BridgeCall) -> BridgeFuture {
            Box::pin(async move {
                if call.args["prompt"] == "slow" {
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
                Ok(BridgeReply {
                    value: json!(format!("echo {}", call.args["prompt"].as_str().unwrap_or_default())),
                    status: None,
                })
            })
        }
    }

    fn request(calls: &[(&str, &str)]) -> CallRequest {
        let calls = calls.iter().map(|(id, prompt)| (id.to_string(), "completion".into(), json!({"prompt": prompt})));
        CallRequest { calls: calls.collect() }
    }

    /// The results of the next input_reply sent, and the msg_id it answers.
    async fn next_reply(queue: &mut mpsc::UnboundedReceiver<Outgoing>) -> (String, Value) {
        let Some(Outgoing::Message(reply)) = queue.recv().await else { panic!("a reply") };
        assert_eq!(reply["header"]["msg_type"], "input_reply");
        let value: Value = serde_json::from_str(reply["content"]["value"].as_str().unwrap()).unwrap();
        (reply["parent_header"]["msg_id"].as_str().unwrap().to_string(), value["results"].clone())
    }

    #[tokio::test(start_paused = true)]
    async fn requests_are_held_until_an_answer_is_ready_or_the_hold_ends() {
        let (outgoing, mut queue) = mpsc::unbounded_channel();
        let bridge = Arc::new(GatewayBridge::new(outgoing, "s".into(), Box::new(|_: &str| None)));
        bridge.set_hook(BridgeHook(Arc::new(Echo)));
        let cell = Some("cell-1".to_string());

        // A quick call: its answer goes out with the request that brought it.
        bridge.on_request(json!({"msg_id": "r1"}), cell.clone(), request(&[("b1", "hi")]));
        let (parent, results) = next_reply(&mut queue).await;
        assert_eq!((parent.as_str(), &results[0]["id"], &results[0]["value"]), ("r1", &json!("b1"), &json!("echo hi")));

        // A slow call: the request is answered empty once the hold ends…
        let start = tokio::time::Instant::now();
        bridge.on_request(json!({"msg_id": "r2"}), cell.clone(), request(&[("b2", "slow")]));
        let (parent, results) = next_reply(&mut queue).await;
        assert_eq!((parent.as_str(), results), ("r2", json!([])));
        assert_eq!(start.elapsed(), POLL_HOLD);
        // …and a later request gets the answer when it is ready.
        bridge.on_request(json!({"msg_id": "r3"}), cell.clone(), request(&[]));
        let (parent, results) = loop {
            let (parent, results) = next_reply(&mut queue).await;
            if results != json!([]) {
                break (parent, results);
            }
            let next = format!("r{}", start.elapsed().as_millis());
            bridge.on_request(json!({"msg_id": next}), cell.clone(), request(&[]));
        };
        assert_eq!(results[0]["value"], "echo slow", "{parent}");

        // The cell ends with a call in flight: the caller is told it was cancelled.
        bridge.on_request(json!({"msg_id": "r4"}), cell.clone(), request(&[("b3", "slow")]));
        bridge.cell_ended("cell-1");
        let (_, results) = next_reply(&mut queue).await;
        assert_eq!((&results[0]["id"], &results[0]["error"]["kind"]), (&json!("b3"), &json!("cancelled")));

        // A call whose cell no longer runs is refused at once.
        bridge.on_request(json!({"msg_id": "r5"}), None, request(&[("b4", "hi")]));
        let (_, results) = next_reply(&mut queue).await;
        assert_eq!(results[0]["error"]["kind"], "cancelled");
        assert!(results[0]["error"]["message"].as_str().unwrap().contains("after its cell had finished"));
    }

    #[test]
    fn only_marked_prompts_carry_calls() {
        let prompt =
            format!("{MARKER}{}", json!({"calls": [{"id": "b1", "op": "completion", "args": {"prompt": "hi"}}]}));
        let request = CallRequest::from_content(&json!({ "prompt": prompt })).unwrap();
        assert_eq!(request.calls, vec![("b1".to_string(), "completion".to_string(), json!({"prompt": "hi"}))]);
        let waiting = format!("{MARKER}{}", json!({"calls": [], "waiting": ["b1"]}));
        assert_eq!(CallRequest::from_content(&json!({ "prompt": waiting })).unwrap().calls, vec![]);
        assert_eq!(CallRequest::from_content(&json!({ "prompt": "Your name? " })), None);
        assert_eq!(CallRequest::from_content(&json!({ "prompt": format!("{MARKER}not json") })), None);
    }
}
