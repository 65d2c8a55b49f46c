//! Carrying bytes both ways between a kernel's connection and the host it
//! reached. Each direction's buffer starts small and doubles while reads fill
//! it, up to [`LARGEST`]: a download then moves in few, large system calls
//! (with tokio's fixed 8 KiB it made several times as many, and ran at half
//! the speed), while a connection that only trickles keeps [`FIRST`] per
//! direction (a kernel may hold [`super::handoff`]'s 256 at once).

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// What each direction reads at first.
const FIRST: usize = 16 << 10;
/// What a direction that keeps filling its buffer grows to.
const LARGEST: usize = 1 << 20;

/// Carry `a` ↔ `b` until both directions have ended (an end of one is passed
/// on as a shutdown of the other side's writing), or until either fails.
pub async fn carry<A, B>(a: &mut A, b: &mut B)
where
    A: AsyncRead + AsyncWrite + Unpin + ?Sized,
    B: AsyncRead + AsyncWrite + Unpin + ?Sized,
{
    let (mut a_read, mut a_write) = tokio::io::split(a);
    let (mut b_read, mut b_write) = tokio::io::split(b);
    // A failure either way ends both: nothing could be answered on it.
    let _ = tokio::try_join!(one_way(&mut a_read, &mut b_write), one_way(&mut b_read, &mut a_write));
}

/// Copy `from` into `to` until `from` ends, then shut `to`'s writing down.
async fn one_way<R, W>(from: &mut R, to: &mut W) -> std::io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut buffer = vec![0u8; FIRST];
    loop {
        let read = from.read(&mut buffer).await?;
        if read == 0 {
            return to.shutdown().await;
        }
        to.write_all(&buffer[..read]).await?;
        if read == buffer.len() && buffer.len() < LARGEST {
            buffer.resize(buffer.len() * 2, 0);
        }
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test]
    async fn both_ways_whole_and_in_order_with_each_end_passed_on() {
        let (mut kernel, mut near) = tokio::io::duplex(1 << 16);
        let (mut far, mut host) = tokio::io::duplex(1 << 16);
        let carried = tokio::spawn(async move { super::carry(&mut near, &mut far).await });
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
}
