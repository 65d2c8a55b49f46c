//! Carrying bytes both ways between a kernel's connection and the host it
//! reached. Each direction's buffer starts small and doubles while reads fill
//! it, up to [`LARGEST`]: a download then moves in few, large system calls
//! (with tokio's fixed 8 KiB it ran at under a third of the speed it has
//! now), while a connection that only trickles keeps [`FIRST`] per
//! direction. What the buffers grow by is taken from the kernel's
//! [`Budget`], and given back when a read comes in short (the burst is
//! over): a kernel that opens many connections and stops reading them holds
//! a bounded amount of cellbox's memory, not a megabyte for each.

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{Semaphore, SemaphorePermit};

/// What each direction reads at first.
const FIRST: usize = 16 << 10;
/// What a direction that keeps filling its buffer grows to.
const LARGEST: usize = 1 << 20;
/// What one kernel's buffers may grow by in all: 32 MiB (as many as 16
/// directions at [`LARGEST`] at once).
const BUDGET: usize = 32 << 20;

/// What one kernel's carried connections may add to their first buffers, in
/// units of [`FIRST`].
#[derive(Debug)]
pub struct Budget(Semaphore);

impl Default for Budget {
    fn default() -> Self {
        Budget(Semaphore::new(BUDGET / FIRST))
    }
}

/// Carry `a` ↔ `b` until both directions have ended (an end of one is passed
/// on as a shutdown of the other side's writing), or until either fails.
pub async fn carry<A, B>(a: &mut A, b: &mut B, budget: &Budget)
where
    A: AsyncRead + AsyncWrite + Unpin + ?Sized,
    B: AsyncRead + AsyncWrite + Unpin + ?Sized,
{
    let (mut a_read, mut a_write) = tokio::io::split(a);
    let (mut b_read, mut b_write) = tokio::io::split(b);
    // A failure either way ends both: nothing could be answered on it.
    let _ = tokio::try_join!(one_way(&mut a_read, &mut b_write, budget), one_way(&mut b_read, &mut a_write, budget));
}

/// Copy `from` into `to` until `from` ends, then shut `to`'s writing down.
/// Every write is flushed: a TLS stream may keep what it was given until then.
async fn one_way<R, W>(from: &mut R, to: &mut W, budget: &Budget) -> std::io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut buffer = Buffer::new(budget);
    loop {
        let read = from.read(&mut buffer.bytes).await?;
        if read == 0 {
            return to.shutdown().await;
        }
        to.write_all(&buffer.bytes[..read]).await?;
        to.flush().await?;
        buffer.after(read);
    }
}

/// One direction's buffer, and what it took from the budget to grow.
struct Buffer<'a> {
    bytes: Vec<u8>,
    budget: &'a Budget,
    grown: Option<SemaphorePermit<'a>>,
}

impl<'a> Buffer<'a> {
    fn new(budget: &'a Budget) -> Self {
        Buffer { bytes: vec![0u8; FIRST], budget, grown: None }
    }

    /// Grow after a read that filled the buffer, if the budget allows; go
    /// back to the first size after a short one.
    fn after(&mut self, read: usize) {
        let size = self.bytes.len();
        if read == size && size < LARGEST {
            // Doubling adds as much as the buffer holds now.
            if let Ok(more) = self.budget.0.try_acquire_many((size / FIRST) as u32) {
                match &mut self.grown {
                    Some(held) => held.merge(more),
                    None => self.grown = Some(more),
                }
                self.bytes.resize(size * 2, 0);
            }
        } else if read < FIRST && size > FIRST {
            self.bytes = vec![0u8; FIRST];
            self.grown = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::Budget;

    #[tokio::test]
    async fn both_ways_whole_and_in_order_with_each_end_passed_on() {
        let (mut kernel, mut near) = tokio::io::duplex(1 << 16);
        let (mut far, mut host) = tokio::io::duplex(1 << 16);
        let carried = tokio::spawn(async move { super::carry(&mut near, &mut far, &Budget::default()).await });
        let upload: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        let download: Vec<u8> = (0..3_000_000u32).map(|i| (i % 253) as u8).collect();
        let (sent, expected) = (upload.clone(), download.clone());
        let host_side = tokio::spawn(async move {
            let mut got = Vec::new();
            host.read_to_end(&mut got).await.unwrap();
            host.write_all(&download).await.unwrap();
            host.shutdown().await.unwrap();
            got
        });
        kernel.write_all(&upload).await.unwrap();
        kernel.shutdown().await.unwrap();
        let mut got = Vec::new();
        kernel.read_to_end(&mut got).await.unwrap();
        assert!(got == expected, "the download arrived whole ({} of {} bytes)", got.len(), expected.len());
        assert!(host_side.await.unwrap() == sent, "the upload arrived whole");
        carried.await.unwrap();
    }

    /// A side that keeps what it is given until flushed (as TLS may): what the
    /// kernel sent reaches the host while the connection stays open.
    #[tokio::test]
    async fn what_a_buffering_side_was_given_is_flushed_at_once() {
        let (mut kernel, mut near) = tokio::io::duplex(1 << 16);
        let (far, mut host) = tokio::io::duplex(1 << 16);
        let mut far = tokio::io::BufWriter::with_capacity(1 << 16, far);
        let _carried = tokio::spawn(async move { super::carry(&mut near, &mut far, &Budget::default()).await });
        kernel.write_all(b"GET / HTTP/1.1\r\n\r\n").await.unwrap();
        let mut got = [0u8; 18];
        // Unflushed, this read would wait forever: the limit only turns a hang into a failure.
        let read = tokio::time::timeout(Duration::from_secs(60), host.read_exact(&mut got)).await;
        assert!(read.is_ok(), "the request stayed in the buffering side");
        assert_eq!(&got, b"GET / HTTP/1.1\r\n\r\n");
    }

    /// Buffers grow only as far as the budget lets them, and give back what
    /// they took once a read comes in short.
    #[test]
    fn buffers_grow_within_the_budget_and_give_it_back() {
        const FIRST: usize = super::FIRST;
        let budget = Budget(tokio::sync::Semaphore::new(3));
        let mut buffer = super::Buffer::new(&budget);
        buffer.after(FIRST - 1);
        assert_eq!((buffer.bytes.len(), budget.0.available_permits()), (FIRST, 3), "a short read does not grow it");
        buffer.after(FIRST);
        assert_eq!((buffer.bytes.len(), budget.0.available_permits()), (2 * FIRST, 2));
        buffer.after(2 * FIRST);
        assert_eq!((buffer.bytes.len(), budget.0.available_permits()), (4 * FIRST, 0));
        buffer.after(4 * FIRST);
        assert_eq!((buffer.bytes.len(), budget.0.available_permits()), (4 * FIRST, 0), "the budget is spent");
        let other = super::Buffer::new(&budget);
        assert_eq!(other.bytes.len(), FIRST, "another connection still gets its first buffer");
        buffer.after(FIRST);
        assert_eq!((buffer.bytes.len(), budget.0.available_permits()), (4 * FIRST, 0), "a read of FIRST is no end");
        buffer.after(100);
        assert_eq!((buffer.bytes.len(), budget.0.available_permits()), (FIRST, 3), "given back after a short read");
        let whole = Budget::default();
        let mut large = super::Buffer::new(&whole);
        for _ in 0..10 {
            let size = large.bytes.len();
            large.after(size);
        }
        assert_eq!(large.bytes.len(), super::LARGEST, "alone, a buffer grows to the largest size and stops");
    }
}
