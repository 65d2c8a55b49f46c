//! The server's stdin and stdout.
//!
//! Tokio's stdin and stdout hand every read and write to its blocking pool
//! and back, two thread switches each; a warm `run_code` reads one line and
//! writes two, so those switches cost as much as the engine's own work.
//!
//! On Linux, when both are anonymous pipes (as the SDK starts its engine), each is
//! opened again through `/proc/self/fd` as a non-blocking pipe of the runtime's
//! own: the worker that sees a request arrive reads it and starts the call, and
//! the task that ends a call wakes the writer on the same worker, which writes
//! the answer at once. No thread is woken for either. A file description of
//! its own keeps `O_NONBLOCK` away from fd 0 and 1, which the engine's children
//! may inherit.
//!
//! Elsewhere (a terminal, a file, a named pipe, a socket, another system) a
//! thread of its own blocks on each, one switch per message.

use std::io::{BufRead, Write};

use serde_json::Value;
use tokio::sync::mpsc;

use crate::Lines;

/// The server's stdout, being written by a task or a thread.
pub enum Writer {
    #[cfg(target_os = "linux")]
    Task(tokio::task::JoinHandle<()>),
    Thread(std::thread::JoinHandle<()>),
}

impl Writer {
    /// Wait until every message before the `null` one is written.
    pub async fn finish(self) {
        match self {
            #[cfg(target_os = "linux")]
            Writer::Task(task) => {
                let _ = task.await;
            }
            Writer::Thread(thread) => {
                let _ = tokio::task::spawn_blocking(move || thread.join()).await;
            }
        }
    }
}

/// stdin's request lines, and stdout's writer of `messages`: each message as
/// one line of JSON, in order, until a `null` message or the end of the
/// channel; messages already waiting go out in one write.
pub fn open(messages: mpsc::UnboundedReceiver<Value>) -> (Lines, Writer) {
    #[cfg(target_os = "linux")]
    if let Some(pipes) = pipes::open() {
        return pipes.serve(messages);
    }
    (read_lines_on_thread(), write_on_thread(messages))
}

/// The lines of stdin, read on a thread until its end (or a read error, which ends them too).
fn read_lines_on_thread() -> Lines {
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
    Lines::Unbounded(lines)
}

fn write_on_thread(mut messages: mpsc::UnboundedReceiver<Value>) -> Writer {
    let thread = std::thread::Builder::new()
        .name("sdk-stdout".into())
        .spawn(move || {
            let mut stdout = std::io::stdout().lock();
            let mut buffer = Vec::new();
            while let Some(message) = messages.blocking_recv() {
                let last = gather(message, &mut messages, &mut buffer);
                if stdout.write_all(&buffer).and_then(|()| stdout.flush()).is_err() || last {
                    return;
                }
                buffer.clear();
            }
        })
        .expect("a thread starts");
    Writer::Thread(thread)
}

/// `first` and the messages already waiting after it, as lines in `buffer`;
/// true when they ended with the `null` message (which is not written).
fn gather(first: Value, messages: &mut mpsc::UnboundedReceiver<Value>, buffer: &mut Vec<u8>) -> bool {
    let mut next = Some(first);
    while let Some(message) = next.take() {
        if message.is_null() {
            return true;
        }
        serde_json::to_writer(&mut *buffer, &message).expect("messages serialize");
        buffer.push(b'\n');
        next = messages.try_recv().ok();
    }
    false
}

#[cfg(target_os = "linux")]
mod pipes {
    use serde_json::Value;
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    use tokio::net::unix::pipe;
    use tokio::sync::mpsc;

    use super::{Writer, gather};
    use crate::Lines;

    /// stdin and stdout opened again as non-blocking pipes of the runtime's.
    pub(super) struct Pipes {
        input: pipe::Receiver,
        output: pipe::Sender,
    }

    /// Both, when both are pipes that can be opened again; else `None`.
    pub(super) fn open() -> Option<Pipes> {
        // Anonymous pipes only: a named one opened again without a writer at that moment
        // would never report the end of input; and a terminal is never opened.
        let anonymous = |fd: u8| {
            let target = std::fs::read_link(format!("/proc/self/fd/{fd}")).ok()?;
            target.to_str()?.starts_with("pipe:[").then_some(())
        };
        anonymous(0)?;
        anonymous(1)?;
        // Both or neither: the thread that would read stdin must not share it with a task.
        let input = pipe::OpenOptions::new().open_receiver("/proc/self/fd/0").ok()?;
        let output = pipe::OpenOptions::new().open_sender("/proc/self/fd/1").ok()?;
        Some(Pipes { input, output })
    }

    impl Pipes {
        pub(super) fn serve(self, messages: mpsc::UnboundedReceiver<Value>) -> (Lines, Writer) {
            let lines = BufReader::with_capacity(64 << 10, self.input).lines();
            (Lines::Pipe(lines), Writer::Task(tokio::spawn(write(self.output, messages))))
        }
    }

    async fn write(mut output: pipe::Sender, mut messages: mpsc::UnboundedReceiver<Value>) {
        let mut buffer = Vec::new();
        while let Some(message) = messages.recv().await {
            let last = gather(message, &mut messages, &mut buffer);
            if output.write_all(&buffer).await.is_err() || last {
                return;
            }
            buffer.clear();
        }
    }
}
