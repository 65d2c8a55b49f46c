//! A Jupyter kernel's channels as the host's ZeroMQ sockets: connected
//! through the relays ([`super::relay`]), made ready, then split among the
//! tasks that carry its messages (one writer, a reader per channel), watch its
//! process and its heartbeat.
//!
//! The readers take turns delivering: a request's events reach its consumer
//! in the order [`route`] made them, whichever channel each came on.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use serde_json::{Value, json};
use tokio::sync::{mpsc, watch};
use zeromq::prelude::*;

use super::Outgoing;
use super::process::{KillSwitch, tail_text};
use super::relay::Broken;
use super::requests::fail_pending;
use super::route::{Shared, route};
use super::spec::KernelSpec;
use super::wire::Signer;
use crate::kernel::KernelError;
use crate::kernel::process::ExitInfo;
use crate::runtime::Runtime;

/// How often `kernel_info_request` is repeated until the kernel answers on both channels.
const READY_REPEAT: Duration = Duration::from_millis(250);

/// How an idle kernel's heartbeat is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Heartbeat {
    /// Time between pings, and the most a ping waits for its echo.
    pub interval: Duration,
    /// Echoes missed in a row (while idle) before the kernel is declared dead.
    pub misses: u32,
}

impl Default for Heartbeat {
    fn default() -> Self {
        Heartbeat { interval: Duration::from_secs(5), misses: 3 }
    }
}

/// The client's sockets, before they are split among the tasks.
pub(super) struct Channels {
    pub session: String,
    shell: zeromq::DealerSocket,
    iopub: zeromq::SubSocket,
    stdin: zeromq::DealerSocket,
    control: zeromq::DealerSocket,
    hb_endpoint: String,
}

/// What the tasks watching the kernel need.
pub(super) struct Watch {
    pub exit: watch::Receiver<Option<ExitInfo>>,
    pub tail: Arc<Mutex<Vec<u8>>>,
    pub spec: KernelSpec,
    pub heartbeat: Heartbeat,
    /// Why a relay cut the kernel off, when one did.
    pub broken: Broken,
    pub kill: KillSwitch,
}

impl Watch {
    /// The kernel is gone for `exit` (or for the limit a relay found it
    /// breaking): its process group is killed, and every pending request fails so.
    async fn lost(&self, shared: &Shared, exit: String) {
        self.kill.kill();
        let broken = self.broken.lock().unwrap().clone();
        let exit = broken.map_or(exit, |limit| format!("{limit}; it was killed"));
        let error = KernelError::Died {
            runtime: Runtime::Jupyter,
            exit: format!("{} ({}): {exit}", self.spec.display_name, self.spec.name),
            stderr_tail: tail_text(&self.tail),
        };
        fail_pending(shared, error).await;
    }
}

impl Channels {
    /// Connect to `endpoints` (shell, iopub, stdin, control, hb).
    pub async fn connect(endpoints: &[String], session: &str) -> Result<Channels, String> {
        let failed =
            |channel: &str, error: zeromq::ZmqError| format!("could not connect to its {channel} socket: {error}");
        // The shell and stdin sockets share an identity: a kernel sends
        // `input_request`s to the identity its shell request came from.
        let identity = || {
            let mut options = zeromq::SocketOptions::default();
            options.peer_identity(zeromq::util::PeerIdentity::try_from(session.as_bytes().to_vec()).expect("short"));
            options
        };
        let mut shell = zeromq::DealerSocket::with_options(identity());
        shell.connect(&endpoints[0]).await.map_err(|e| failed("shell", e))?;
        let mut iopub = zeromq::SubSocket::new();
        iopub.connect(&endpoints[1]).await.map_err(|e| failed("iopub", e))?;
        iopub.subscribe("").await.map_err(|e| failed("iopub", e))?;
        let mut stdin = zeromq::DealerSocket::with_options(identity());
        stdin.connect(&endpoints[2]).await.map_err(|e| failed("stdin", e))?;
        let mut control = zeromq::DealerSocket::new();
        control.connect(&endpoints[3]).await.map_err(|e| failed("control", e))?;
        Ok(Channels { session: session.to_string(), shell, iopub, stdin, control, hb_endpoint: endpoints[4].clone() })
    }

    /// Ask for `kernel_info` until a reply and an IOPub message have both
    /// come (IOPub drops what is published before its subscription is in
    /// place, so the request is repeated until one is heard); the reply's `language_info`.
    pub async fn handshake(
        &mut self,
        signer: &Signer,
        mut exit: watch::Receiver<Option<ExitInfo>>,
    ) -> Result<Value, String> {
        let (mut info, mut heard) = (None, false);
        let mut number = 0u64;
        while info.is_none() || !heard {
            number += 1;
            let request = json!({
                "header": {
                    "msg_id": format!("{}_ready_{number}", self.session), "msg_type": "kernel_info_request",
                    "session": self.session, "username": "cellbox", "version": "5.3",
                },
                "parent_header": {}, "metadata": {}, "content": {},
            });
            let frames = zeromq::ZmqMessage::try_from(signer.encode(&request)).map_err(|e| e.to_string())?;
            self.shell.send(frames).await.map_err(|e| format!("could not send to it: {e}"))?;
            let deadline = tokio::time::sleep(READY_REPEAT);
            tokio::pin!(deadline);
            loop {
                tokio::select! {
                    received = self.shell.recv() => {
                        let frames = received.map_err(|e| format!("its shell socket failed: {e}"))?.into_vec();
                        if let Ok(reply) = signer.decode(&frames, "shell")
                            && reply.pointer("/header/msg_type").and_then(Value::as_str) == Some("kernel_info_reply")
                        {
                            info = Some(small_language_info(reply.pointer("/content/language_info")));
                        }
                    }
                    received = self.iopub.recv() => {
                        let frames = received.map_err(|e| format!("its iopub socket failed: {e}"))?.into_vec();
                        heard |= signer.decode(&frames, "iopub").is_ok();
                    }
                    _ = exit.wait_for(Option::is_some) => return Err("it exited".into()),
                    _ = &mut deadline => break,
                }
                if info.is_some() && heard {
                    break;
                }
            }
        }
        Ok(info.unwrap_or(Value::Null))
    }
}

/// The `language_info` fields a notebook keeps (`name`, `version`, …), each
/// a short string (a kernel could send megabytes; every saved cell keeps it).
fn small_language_info(info: Option<&Value>) -> Value {
    const FIELDS: [&str; 7] =
        ["name", "version", "mimetype", "file_extension", "pygments_lexer", "codemirror_mode", "nbconvert_exporter"];
    let mut small = serde_json::Map::new();
    for field in FIELDS {
        if let Some(text) = info.and_then(|info| info.get(field)).and_then(Value::as_str).filter(|t| t.len() <= 256) {
            small.insert(field.into(), text.into());
        }
    }
    Value::Object(small)
}

impl Channels {
    /// Hand the sockets to the tasks that carry the kernel's messages.
    pub fn run(
        self,
        signer: Signer,
        outgoing: mpsc::UnboundedSender<Outgoing>,
        mut queue: mpsc::UnboundedReceiver<Outgoing>,
        shared: Arc<Shared>,
        watch: Watch,
    ) -> Vec<tokio::task::JoinHandle<()>> {
        let (mut shell_out, shell_in) = self.shell.split();
        let (mut stdin_out, stdin_in) = self.stdin.split();
        let (mut control_out, control_in) = self.control.split();
        let writer_signer = signer.clone();
        let writer = tokio::spawn(async move {
            while let Some(Outgoing::Message(message)) = queue.recv().await {
                let channel = message.get("channel").and_then(Value::as_str).unwrap_or("shell").to_string();
                let Ok(frames) = zeromq::ZmqMessage::try_from(writer_signer.encode(&message)) else { continue };
                let sent = match channel.as_str() {
                    "stdin" => stdin_out.send(frames).await,
                    "control" => control_out.send(frames).await,
                    _ => shell_out.send(frames).await,
                };
                if let Err(error) = sent {
                    tracing::warn!(target: "cellbox::jupyter", "a message to the kernel was lost: {error}");
                }
            }
        });
        let watch = Arc::new(watch);
        let turn = Arc::new(tokio::sync::Mutex::new(()));
        let session = self.session.clone();
        let reader = |mut socket: Box<dyn Receive>, channel: &'static str| {
            let (shared, signer, outgoing, session) =
                (shared.clone(), signer.clone(), outgoing.clone(), session.clone());
            let (turn, watch) = (turn.clone(), watch.clone());
            tokio::spawn(async move {
                let failure = loop {
                    let frames = match socket.receive().await {
                        Ok(frames) => frames,
                        Err(error) => break error.to_string(),
                    };
                    let message = match signer.decode(&frames, channel) {
                        Ok(message) => message,
                        Err(error) => {
                            tracing::warn!(target: "cellbox::jupyter", "skipping a message on {channel}: {error}");
                            continue;
                        }
                    };
                    let _turn = turn.lock().await;
                    for (sender, event) in route(&shared, message, &outgoing, &session) {
                        let _ = sender.send(event).await;
                    }
                };
                watch.lost(&shared, format!("its {channel} channel failed: {failure}")).await;
            })
        };
        let mut tasks = vec![
            writer,
            reader(Box::new(shell_in), "shell"),
            reader(Box::new(self.iopub), "iopub"),
            reader(Box::new(stdin_in), "stdin"),
            reader(Box::new(control_in), "control"),
        ];
        tasks.push(tokio::spawn(watch_exit(shared.clone(), watch.clone())));
        tasks.push(tokio::spawn(heartbeat(shared, self.hb_endpoint, watch)));
        tasks
    }
}

/// A socket the reader tasks take whole messages from.
trait Receive: Send {
    fn receive(&mut self) -> Pin<Box<dyn Future<Output = zeromq::ZmqResult<Vec<Bytes>>> + Send + '_>>;
}

impl<S: SocketRecv + Send> Receive for S {
    fn receive(&mut self) -> Pin<Box<dyn Future<Output = zeromq::ZmqResult<Vec<Bytes>>> + Send + '_>> {
        Box::pin(async move { self.recv().await.map(zeromq::ZmqMessage::into_vec) })
    }
}

/// When the process ends, every pending request fails with how it ended (or
/// with the limit it broke, when a relay cut it off for that).
async fn watch_exit(shared: Arc<Shared>, watch: Arc<Watch>) {
    let mut exit = watch.exit.clone();
    let Ok(ended) = exit.wait_for(Option::is_some).await.map(|exit| exit.expect("checked")) else { return };
    watch.lost(&shared, ended.to_string()).await;
}

/// Ping the kernel while it runs nothing; declare it dead (and kill it) after
/// `misses` pings in a row went unanswered.
async fn heartbeat(shared: Arc<Shared>, endpoint: String, watch: Arc<Watch>) {
    let Heartbeat { interval, misses } = watch.heartbeat;
    let mut socket: Option<zeromq::ReqSocket> = None;
    let mut missed = 0u32;
    loop {
        tokio::time::sleep(interval).await;
        let idle = {
            let routes = shared.routes.lock().unwrap();
            if routes.dead.is_some() {
                return;
            }
            routes.pending.is_empty()
        };
        if !idle {
            missed = 0;
            continue;
        }
        let answered = tokio::time::timeout(interval, async {
            if socket.is_none() {
                let mut fresh = zeromq::ReqSocket::new();
                fresh.connect(&endpoint).await.ok()?;
                socket = Some(fresh);
            }
            let req = socket.as_mut()?;
            req.send(zeromq::ZmqMessage::from("ping")).await.ok()?;
            req.recv().await.ok()
        })
        .await
        .ok()
        .flatten()
        .is_some();
        if answered {
            missed = 0;
            continue;
        }
        // A REQ socket that lost its answer cannot ask again: start over.
        socket = None;
        if !shared.routes.lock().unwrap().pending.is_empty() {
            missed = 0;
            continue;
        }
        missed += 1;
        if missed >= misses && watch.exit.borrow().is_none() {
            let silent = (interval * misses).as_secs_f64().round();
            watch
                .lost(&shared, format!("it stopped answering its heartbeat for {silent}s while idle; it was killed"))
                .await;
            return;
        }
    }
}
