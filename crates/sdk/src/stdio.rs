//! The server's stdin and stdout, each served by a thread of its own.
//!
//! Tokio's stdin and stdout hand every read and write to its blocking pool
//! and back, two thread switches each; a warm `run_code` reads one line and
//! writes two, so those switches cost as much as the engine's own work. A
//! thread that blocks on the pipe itself costs one switch per message.

use std::io::{BufRead, Write};
use std::thread::JoinHandle;

use serde_json::Value;
use tokio::sync::mpsc;

/// The lines of stdin, read until its end (or a read error, which ends them too).
pub fn read_lines() -> mpsc::UnboundedReceiver<std::io::Result<String>> {
    let (send, lines) = mpsc::unbounded_channel();
    std::thread::Builder::new()
        .name("sdk-stdin".into())
        .spawn(move || {
            for line in std::io::stdin().lock().lines() {
                let failed = line.is_err();
                if send.send(line).is_err() || failed {
                    break;
                }
            }
        })
        .expect("a thread starts");
    lines
}

/// Write each message as one line of JSON, in order, until a `null` message
/// or the end of the channel; messages already waiting go out in one write.
pub fn write_messages(mut messages: mpsc::UnboundedReceiver<Value>) -> JoinHandle<()> {
    std::thread::Builder::new()
        .name("sdk-stdout".into())
        .spawn(move || {
            let mut stdout = std::io::stdout().lock();
            let mut buffer = Vec::new();
            while let Some(message) = messages.blocking_recv() {
                let mut next = Some(message);
                while let Some(message) = next.take() {
                    if message.is_null() {
                        let _ = stdout.write_all(&buffer).and_then(|()| stdout.flush());
                        return;
                    }
                    serde_json::to_writer(&mut buffer, &message).expect("messages serialize");
                    buffer.push(b'\n');
                    next = messages.try_recv().ok();
                }
                if stdout.write_all(&buffer).and_then(|()| stdout.flush()).is_err() {
                    return;
                }
                buffer.clear();
            }
        })
        .expect("a thread starts")
}
