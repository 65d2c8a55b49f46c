//! The SDK over any byte stream: what `cellbox serve` runs on a connection a
//! remote SDK upgraded from HTTP. The lines are the same JSON-RPC as on
//! stdin/stdout, so the SDK's remote transport differs from its local one
//! only in how it connects.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

use crate::tool::EvalEngine;

/// Serve one SDK connection on `stream` until it closes, `shutdown`, or `idle`
/// without work. The engine's kernels are stopped, then `held` is dropped,
/// then the stream is closed: a peer that sees the end knows both are over.
pub async fn serve_stream<S, H>(
    engine: Arc<EvalEngine>,
    root: PathBuf,
    idle: Option<Duration>,
    stream: S,
    held: H,
) -> std::io::Result<()>
where
    S: AsyncRead + AsyncWrite + Send + 'static,
{
    let (read_half, mut write_half) = tokio::io::split(stream);
    let (lines_in, input) = mpsc::unbounded_channel();
    let reader = tokio::spawn(async move {
        let mut lines = BufReader::new(read_half).lines();
        loop {
            match lines.next_line().await {
                Ok(Some(line)) => {
                    if lines_in.send(Ok(line)).is_err() {
                        return;
                    }
                }
                Ok(None) => return,
                Err(error) => {
                    let _ = lines_in.send(Err(error));
                    return;
                }
            }
        }
    });
    let (out, mut messages) = mpsc::unbounded_channel::<Value>();
    // One writer, so a call's notifications come before its answer; it stops at `null`
    // and hands the stream's write half back, still open.
    let writer = tokio::spawn(async move {
        let mut buffer = Vec::new();
        while let Some(message) = messages.recv().await {
            let mut next = Some(message);
            let mut last = false;
            while let Some(message) = next.take() {
                if message.is_null() {
                    last = true;
                    break;
                }
                serde_json::to_writer(&mut buffer, &message).expect("messages serialize");
                buffer.push(b'\n');
                next = messages.try_recv().ok();
            }
            if write_half.write_all(&buffer).await.and(write_half.flush().await).is_err() || last {
                break;
            }
            buffer.clear();
        }
        write_half
    });
    let ending = super::serve_lines(engine, root, idle, input, super::Outbox::channel(out)).await;
    reader.abort();
    drop(held);
    if let Ok(mut write_half) = writer.await {
        let _ = write_half.shutdown().await;
    }
    if let Some(why) = ending.as_ref().ok().and_then(|ending| ending.why()) {
        eprintln!("cellbox serve: a remote SDK connection ended: {why}");
    }
    ending.map(drop)
}
