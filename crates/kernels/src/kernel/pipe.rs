//! Async ends of the anonymous pipes between the host and a runner.
//!
//! On Unix these are tokio's own pipe types. tokio cannot wait on an
//! anonymous pipe on Windows (they have no overlapped I/O), so there a thread
//! per end does the blocking reads or writes and hands bytes over in chunks;
//! the async side offers the same few calls the kernel uses.

#[cfg(unix)]
use std::io;

#[cfg(unix)]
pub use tokio::net::unix::pipe::{Receiver, Sender};

#[cfg(windows)]
pub use self::windows::{Receiver, Sender};

/// The host's async reading end of `reader`.
#[cfg(unix)]
pub fn receiver(reader: io::PipeReader) -> io::Result<Receiver> {
    Receiver::from_owned_fd(std::os::fd::OwnedFd::from(reader))
}

/// The host's async writing end of `writer`.
#[cfg(unix)]
pub fn sender(writer: io::PipeWriter) -> io::Result<Sender> {
    Sender::from_owned_fd(std::os::fd::OwnedFd::from(writer))
}

#[cfg(windows)]
pub use self::windows::{receiver, sender};

#[cfg(windows)]
mod windows {
    use std::io::{self, Read};
    use std::pin::Pin;
    use std::sync::Mutex;
    use std::task::{Context, Poll};

    use tokio::io::{AsyncRead, ReadBuf};
    use tokio::sync::mpsc;

    /// Bytes a reader thread reads at once.
    const CHUNK: usize = 64 << 10;
    /// Chunks waiting for the host: the thread stops reading (and the pipe
    /// pushes back on the kernel) when the host falls this far behind.
    const QUEUED_CHUNKS: usize = 16;

    /// A pipe's reading end, read by its own thread.
    pub struct Receiver {
        state: Mutex<State>,
    }

    struct State {
        chunks: mpsc::Receiver<io::Result<Vec<u8>>>,
        /// The rest of a chunk a read did not take.
        left: Vec<u8>,
        offset: usize,
        /// End of file (or an error) was seen: every later read is 0.
        done: bool,
    }

    /// Start the thread that reads `reader` until end of file.
    pub fn receiver(mut reader: io::PipeReader) -> io::Result<Receiver> {
        let (tx, rx) = mpsc::channel(QUEUED_CHUNKS);
        std::thread::Builder::new().name("cellbox-pipe-reader".into()).spawn(move || {
            loop {
                let mut chunk = vec![0u8; CHUNK];
                let read = match reader.read(&mut chunk) {
                    Ok(0) => break,
                    Ok(n) => {
                        chunk.truncate(n);
                        Ok(chunk)
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    // A broken pipe is how Windows says the writer is gone.
                    Err(e) if e.kind() == io::ErrorKind::BrokenPipe => break,
                    Err(e) => Err(e),
                };
                let failed = read.is_err();
                if tx.blocking_send(read).is_err() || failed {
                    break;
                }
            }
        })?;
        Ok(Receiver { state: Mutex::new(State { chunks: rx, left: Vec::new(), offset: 0, done: false }) })
    }

    impl State {
        /// Copy what is held into `out`; `None` when nothing is held.
        fn take_into(&mut self, out: &mut [u8]) -> Option<usize> {
            if self.offset >= self.left.len() {
                return None;
            }
            let n = out.len().min(self.left.len() - self.offset);
            out[..n].copy_from_slice(&self.left[self.offset..self.offset + n]);
            self.offset += n;
            Some(n)
        }

        fn hold(&mut self, chunk: Vec<u8>) {
            self.left = chunk;
            self.offset = 0;
        }
    }

    impl Receiver {
        /// Read what has arrived without waiting: `WouldBlock` when nothing
        /// has, `Ok(0)` at end of file.
        pub fn try_read(&self, out: &mut [u8]) -> io::Result<usize> {
            let mut state = self.state.lock().unwrap();
            if let Some(n) = state.take_into(out) {
                return Ok(n);
            }
            if state.done {
                return Ok(0);
            }
            match state.chunks.try_recv() {
                Ok(Ok(chunk)) => {
                    state.hold(chunk);
                    Ok(state.take_into(out).unwrap_or(0))
                }
                Ok(Err(e)) => {
                    state.done = true;
                    Err(e)
                }
                Err(mpsc::error::TryRecvError::Empty) => Err(io::ErrorKind::WouldBlock.into()),
                Err(mpsc::error::TryRecvError::Disconnected) => {
                    state.done = true;
                    Ok(0)
                }
            }
        }

        /// [`Receiver::try_read`] into the spare room of `buf`, growing it by what was read.
        pub fn try_read_buf(&self, buf: &mut Vec<u8>) -> io::Result<usize> {
            let start = buf.len();
            let room = (buf.capacity() - start).max(CHUNK);
            buf.resize(start + room, 0);
            let read = self.try_read(&mut buf[start..]);
            buf.truncate(start + *read.as_ref().unwrap_or(&0));
            read
        }
    }

    impl AsyncRead for Receiver {
        fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, out: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
            let mut state = self.state.lock().unwrap();
            let room = out.initialize_unfilled();
            if let Some(n) = state.take_into(room) {
                out.advance(n);
                return Poll::Ready(Ok(()));
            }
            if state.done {
                return Poll::Ready(Ok(()));
            }
            match state.chunks.poll_recv(cx) {
                Poll::Pending => Poll::Pending,
                Poll::Ready(Some(Ok(chunk))) => {
                    state.hold(chunk);
                    let n = state.take_into(out.initialize_unfilled()).unwrap_or(0);
                    out.advance(n);
                    Poll::Ready(Ok(()))
                }
                Poll::Ready(Some(Err(e))) => {
                    state.done = true;
                    Poll::Ready(Err(e))
                }
                Poll::Ready(None) => {
                    state.done = true;
                    Poll::Ready(Ok(()))
                }
            }
        }
    }

    /// A pipe's writing end: tokio's file type runs each write on its
    /// blocking pool, in order.
    pub type Sender = tokio::fs::File;

    /// The host's async writing end of `writer`.
    pub fn sender(writer: io::PipeWriter) -> io::Result<Sender> {
        let handle = std::os::windows::io::OwnedHandle::from(writer);
        Ok(tokio::fs::File::from_std(std::fs::File::from(handle)))
    }
}
