//! Carrying bytes both ways between a kernel's connection and the host it
//! reached. Each direction's buffer starts small and doubles while reads fill
//! it, up to [`LARGEST`]: a download then moves in few, large system calls
//! (with tokio's fixed 8 KiB it ran at under a third of the speed it has
//! now), while a connection that only trickles keeps [`FIRST`] per
//! direction. What the buffers grow by is taken from the kernel's
//! [`Budget`], and given back as the burst ends: halved after a short read,
//! and whole once the direction has waited [`IDLE`] for more. A kernel that
//! opens many connections and stops reading them holds a bounded amount of
//! cellbox's memory, not a megabyte for each.

use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::Semaphore;

/// What each direction reads at first.
const FIRST: usize = 16 << 10;
/// What a direction that keeps filling its buffer grows to.
const LARGEST: usize = 1 << 20;
/// What one kernel's buffers may grow by in all: 32 MiB (32 directions at
/// [`LARGEST`] at once).
const BUDGET: usize = 32 << 20;
/// How long a grown buffer waits for more before it is given back.
const IDLE: Duration = Duration::from_secs(1);

/// What one kernel's carried connections may add to their first buffers, in
/// units of [`FIRST`].
#[derive(Debug)]
pub struct Budget(Semaphore);

impl Default for Budget {
    fn default() -> Self {
        Budget(Semaphore::new(BUDGET / FIRST))
    }
}

/// Carry `a` ↔ `b` until both directions have ended. The end of one, or its
/// failure, is passed on as a shutdown of the other side's writing, and the
/// other direction goes on: a server that refuses an upload halfway still
/// has its answer read.
pub async fn carry<A, B>(a: &mut A, b: &mut B, budget: &Budget)
where
    A: AsyncRead + AsyncWrite + Unpin + ?Sized,
    B: AsyncRead + AsyncWrite + Unpin + ?Sized,
{
    let (mut a_read, mut a_write) = tokio::io::split(a);
    let (mut b_read, mut b_write) = tokio::io::split(b);
    tokio::join!(one_way(&mut a_read, &mut b_write, budget), one_way(&mut b_read, &mut a_write, budget));
}

/// Copy `from` into `to` until `from` ends or either fails, then shut `to`'s
/// writing down. Every write is flushed: a TLS stream may keep what it was
/// given until then.
async fn one_way<R, W>(from: &mut R, to: &mut W, budget: &Budget)
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut buffer = Buffer::new(budget);
    loop {
        let read = if buffer.taken == 0 {
            from.read(&mut buffer.bytes).await
        } else {
            // Reads are cancel-safe: one that waited too long took nothing.
            match tokio::time::timeout(IDLE, from.read(&mut buffer.bytes)).await {
                Ok(read) => read,
                Err(_) => {
                    buffer.give_back();
                    continue;
                }
            }
        };
        let Ok(read) = read else { break };
        if read == 0 {
            break;
        }
        let written = async {
            to.write_all(&buffer.bytes[..read]).await?;
            to.flush().await
        };
        if written.await.is_err() {
            break;
        }
        buffer.after(read);
    }
    let _ = to.shutdown().await;
}

/// One direction's buffer, and how many units it took from the budget to grow.
struct Buffer<'a> {
    bytes: Vec<u8>,
    budget: &'a Budget,
    taken: usize,
}

impl<'a> Buffer<'a> {
    fn new(budget: &'a Budget) -> Self {
        Buffer { bytes: vec![0u8; FIRST], budget, taken: 0 }
    }

    /// Double after a read that filled the buffer, if the budget allows;
    /// halve after a short one.
    fn after(&mut self, read: usize) {
        let size = self.bytes.len();
        if read == size && size < LARGEST {
            // Doubling adds as much as the buffer holds now.
            let more = size / FIRST;
            if let Ok(permit) = self.budget.0.try_acquire_many(more as u32) {
                permit.forget();
                self.taken += more;
                // A new buffer, not a resized one: nothing in it is kept, so nothing is copied.
                self.bytes = vec![0u8; size * 2];
            }
        } else if read < FIRST && size > FIRST {
            let half = size / 2;
            self.release(half / FIRST);
            self.bytes = vec![0u8; half];
        }
    }

    /// Back to the first size, everything taken given back.
    fn give_back(&mut self) {
        self.release(self.taken);
        self.bytes = vec![0u8; FIRST];
    }

    fn release(&mut self, units: usize) {
        self.taken -= units;
        self.budget.0.add_permits(units);
    }
}

impl Drop for Buffer<'_> {
    fn drop(&mut self) {
        self.budget.0.add_permits(self.taken);
    }
}

#[cfg(test)]
mod tests;
