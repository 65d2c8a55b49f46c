//! The SDK over any byte stream: what `cellbox serve` runs on a connection a
//! remote SDK upgraded from HTTP. The lines are the same JSON-RPC as on
//! stdin/stdout, so the SDK's remote transport differs from its local one
//! only in how it connects.
//!
//! A remote client is not trusted to be well-behaved: a request line longer
//! than [`StreamLimits::max_line`] is answered with an error (and skipped),
//! the lines waiting for the engine are few (the client's sends then wait),
//! and a client that leaves more than [`StreamLimits::max_unsent`] bytes of
//! answers and output unread has its connection closed.

use std::io::Write as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio_util::bytes::BytesMut;
use tokio_util::codec::{Decoder, LinesCodec, LinesCodecError};
use tokio_util::sync::CancellationToken;

use super::wire::{self, ErrorCode, Failure};
use crate::tool::EvalEngine;

/// What one connection may make the server hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamLimits {
    /// The longest request line, in bytes (the SDK sends files in 4 MiB chunks, base64 in a line).
    pub max_line: usize,
    /// Bytes of answers and output sent to the client and not yet written to it, at most.
    pub max_unsent: usize,
}

impl StreamLimits {
    /// A remote SDK's connection to `cellbox serve`.
    pub const REMOTE: StreamLimits = StreamLimits { max_line: 16 << 20, max_unsent: 64 << 20 };
}

/// Request lines read ahead of the engine.
const LINES_AHEAD: usize = 16;
/// How long the last answers of a connection may take to be written once it ends.
const DRAIN_AT_END: Duration = Duration::from_secs(30);

/// Serve one SDK connection on `stream` until it closes, `shutdown`, or `idle`
/// without work. The engine's kernels are stopped, then `held` is dropped,
/// then the stream is closed: a peer that sees the end knows both are over.
pub async fn serve_stream<S, H>(
    engine: Arc<EvalEngine>,
    root: PathBuf,
    idle: Option<Duration>,
    stream: S,
    held: H,
    limits: StreamLimits,
) -> std::io::Result<()>
where
    S: AsyncRead + AsyncWrite + Send + 'static,
{
    let (read_half, mut write_half) = tokio::io::split(stream);
    let (ahead, input) = mpsc::channel::<std::io::Result<String>>(LINES_AHEAD);
    let (out, mut messages) = mpsc::unbounded_channel::<Vec<u8>>();
    let unsent = Arc::new(AtomicUsize::new(0));
    // Set when the client leaves too much unread: the connection then ends.
    let too_slow = CancellationToken::new();
    let reader = tokio::spawn({
        let (out, unsent) = (out.clone(), unsent.clone());
        async move {
            // The codec recovers from an overlong line (it skips to the next newline); a
            // `FramedRead` around it would end at the first one.
            let mut codec = LinesCodec::new_with_max_length(limits.max_line);
            let mut buffer = BytesMut::with_capacity(64 << 10);
            let mut read_half = read_half;
            loop {
                let line = match codec.decode(&mut buffer) {
                    Ok(Some(line)) => Ok(line),
                    Ok(None) => match read_half.read_buf(&mut buffer).await {
                        Ok(0) => match codec.decode_eof(&mut buffer) {
                            Ok(Some(line)) => Ok(line),
                            _ => return,
                        },
                        Ok(_) => continue,
                        Err(error) => Err(error),
                    },
                    Err(LinesCodecError::MaxLineLengthExceeded) => {
                        let failure = Failure::new(
                            ErrorCode::InvalidRequest,
                            format!("a request line is longer than {} bytes; send files in chunks", limits.max_line),
                        );
                        let answer = encode(&wire::response(&Value::Null, Err(failure)));
                        unsent.fetch_add(answer.len(), Ordering::SeqCst);
                        let _ = out.send(answer);
                        continue;
                    }
                    Err(LinesCodecError::Io(error)) => Err(error),
                };
                let failed = line.is_err();
                if ahead.send(line).await.is_err() || failed {
                    return;
                }
            }
        }
    });
    // One writer, so a call's notifications come before its answer; it stops at an empty message
    // and hands the stream's write half back, still open.
    let writer = tokio::spawn({
        let unsent = unsent.clone();
        async move {
            let mut buffer = Vec::new();
            while let Some(message) = messages.recv().await {
                let mut next = Some(message);
                let mut last = false;
                while let Some(message) = next.take() {
                    if message.is_empty() {
                        last = true;
                        break;
                    }
                    buffer.extend_from_slice(&message);
                    next = messages.try_recv().ok();
                }
                let written = buffer.len();
                if write_half.write_all(&buffer).await.and(write_half.flush().await).is_err() || last {
                    break;
                }
                unsent.fetch_sub(written, Ordering::SeqCst);
                buffer.clear();
            }
            write_half
        }
    });
    let outbox = {
        let (unsent, too_slow) = (unsent.clone(), too_slow.clone());
        super::Outbox::new(move |message| {
            if message.is_null() {
                return out.send(Vec::new()).is_ok();
            }
            let bytes = encode(&message);
            if unsent.fetch_add(bytes.len(), Ordering::SeqCst) + bytes.len() > limits.max_unsent {
                too_slow.cancel();
                return false;
            }
            out.send(bytes).is_ok()
        })
    };
    let ending = tokio::select! {
        ending = super::serve_lines(engine.clone(), root, idle, input, outbox) => Some(ending),
        () = too_slow.cancelled() => None,
    };
    reader.abort();
    if ending.is_none() {
        // It reads nothing: what waits for it is dropped with the connection, at once.
        tracing::warn!("an SDK client left more than {} bytes unread: its connection is closed", limits.max_unsent);
        writer.abort();
        engine.dispose_all().await;
        drop(held);
        return Ok(());
    }
    drop(held);
    // What was answered is written, within a while: a client that stopped reading gets no more.
    let stop_writing = writer.abort_handle();
    match tokio::time::timeout(DRAIN_AT_END, writer).await {
        Ok(Ok(mut write_half)) => {
            let _ = write_half.shutdown().await;
        }
        Ok(Err(_)) => {}
        Err(_) => {
            stop_writing.abort();
            tracing::warn!("an SDK client did not read its last answers within {DRAIN_AT_END:?}: dropped");
        }
    }
    match ending {
        Some(ending) => {
            if let Some(why) = ending.as_ref().ok().and_then(|ending| ending.why()) {
                let _ = writeln!(std::io::stderr(), "cellbox serve: a remote SDK connection ended: {why}");
            }
            ending.map(drop)
        }
        None => Ok(()),
    }
}

/// One message as a line.
fn encode(message: &Value) -> Vec<u8> {
    let mut bytes = serde_json::to_vec(message).expect("messages serialize");
    bytes.push(b'\n');
    bytes
}
