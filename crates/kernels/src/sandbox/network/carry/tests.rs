use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::{BUDGET, Budget, Buffer, FIRST, LARGEST};

/// The budget's units while nothing is carried.
const WHOLE: usize = BUDGET / FIRST;

/// Long enough for anything here to happen; it only turns a hang into a failure.
const PATIENCE: Duration = Duration::from_secs(60);

#[tokio::test]
async fn both_ways_whole_and_in_order_with_each_end_passed_on_and_the_budget_back() {
    let budget = std::sync::Arc::new(Budget::default());
    let (mut kernel, mut near) = tokio::io::duplex(1 << 16);
    let (mut far, mut host) = tokio::io::duplex(1 << 16);
    let carrying = budget.clone();
    let carried = tokio::spawn(async move { super::carry(&mut near, &mut far, &carrying).await });
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
    assert_eq!(budget.0.available_permits(), WHOLE, "everything the buffers took was given back");
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
    let read = tokio::time::timeout(PATIENCE, host.read_exact(&mut got)).await;
    assert!(read.is_ok(), "the request stayed in the buffering side");
    assert_eq!(&got, b"GET / HTTP/1.1\r\n\r\n");
}

/// The request's head `one_request` writes reaches a buffering upstream
/// while the client waits for the answer.
#[tokio::test]
async fn one_requests_head_is_flushed_to_the_upstream() {
    let (mut kernel, near) = tokio::io::duplex(1 << 16);
    let (far, mut host) = tokio::io::duplex(1 << 16);
    let far = tokio::io::BufWriter::with_capacity(1 << 16, far);
    let budget = Budget::default();
    let relay = async { super::super::open::one_request(near, far, "api.test", &budget, |head| head).await };
    let client_and_host = async {
        kernel.write_all(b"GET /v1 HTTP/1.1\r\nHost: api.test\r\n\r\n").await.unwrap();
        let mut got = vec![0u8; 16];
        let read = tokio::time::timeout(PATIENCE, host.read_exact(&mut got)).await;
        assert!(read.is_ok(), "the head stayed in the buffering upstream");
        assert_eq!(&got, b"GET /v1 HTTP/1.1");
        drop(host);
        drop(kernel);
    };
    tokio::join!(relay, client_and_host);
}

/// A server that answers and closes while the kernel still uploads: its
/// answer still reaches the kernel.
#[tokio::test]
async fn an_answer_sent_before_the_upload_ended_is_carried() {
    let (mut kernel, mut near) = tokio::io::duplex(1 << 16);
    let (mut far, mut host) = tokio::io::duplex(1 << 16);
    let _carried = tokio::spawn(async move { super::carry(&mut near, &mut far, &Budget::default()).await });
    let (mut kernel_read, mut kernel_write) = tokio::io::split(&mut kernel);
    let uploading = async {
        let chunk = vec![b'u'; 1 << 16];
        // Ends with an error once the host is gone.
        for _ in 0..1024 {
            if kernel_write.write_all(&chunk).await.is_err() {
                break;
            }
        }
    };
    let host_side = async move {
        let mut first = [0u8; 100];
        host.read_exact(&mut first).await.unwrap();
        host.write_all(b"HTTP/1.1 413 Payload Too Large\r\n\r\n").await.unwrap();
        drop(host);
    };
    let answer = async {
        let mut got = Vec::new();
        let _ = tokio::time::timeout(PATIENCE, kernel_read.read_to_end(&mut got)).await;
        got
    };
    let ((), (), got) = tokio::join!(uploading, host_side, answer);
    assert!(got.starts_with(b"HTTP/1.1 413"), "{:?}", String::from_utf8_lossy(&got));
}

/// A reader that stops reading leaves the buffer grown, holding part of the
/// budget; all of it comes back when the connection ends.
#[tokio::test]
async fn a_stalled_reader_holds_part_of_the_budget_until_the_end() {
    let budget = std::sync::Arc::new(Budget::default());
    let (mut kernel, mut near) = tokio::io::duplex(1 << 16);
    let (mut far, mut host) = tokio::io::duplex(4 << 20);
    host.write_all(&vec![b'd'; 3 << 20]).await.unwrap();
    host.shutdown().await.unwrap();
    let carrying = budget.clone();
    let carried = tokio::spawn(async move { super::carry(&mut near, &mut far, &carrying).await });
    let grew = async {
        while budget.0.available_permits() == WHOLE {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    };
    assert!(tokio::time::timeout(PATIENCE, grew).await.is_ok(), "the buffer never grew");
    let mut got = Vec::new();
    kernel.shutdown().await.unwrap();
    kernel.read_to_end(&mut got).await.unwrap();
    assert_eq!(got.len(), 3 << 20);
    carried.await.unwrap();
    assert_eq!(budget.0.available_permits(), WHOLE);
}

/// Buffers grow only as far as the budget lets them, halve after a short
/// read, and give everything back when idle or dropped.
#[test]
fn buffers_grow_within_the_budget_and_give_it_back() {
    let budget = Budget(tokio::sync::Semaphore::new(3));
    let state = |buffer: &Buffer| (buffer.bytes.len(), budget.0.available_permits());
    let mut buffer = Buffer::new(&budget);
    buffer.after(FIRST - 1);
    assert_eq!(state(&buffer), (FIRST, 3), "a short read does not grow it");
    buffer.after(FIRST);
    assert_eq!(state(&buffer), (2 * FIRST, 2));
    buffer.after(2 * FIRST);
    assert_eq!(state(&buffer), (4 * FIRST, 0));
    buffer.after(4 * FIRST);
    assert_eq!(state(&buffer), (4 * FIRST, 0), "the budget is spent");
    assert_eq!(Buffer::new(&budget).bytes.len(), FIRST, "another connection still gets its first buffer");
    buffer.after(FIRST);
    assert_eq!(state(&buffer), (4 * FIRST, 0), "a read of FIRST is no end");
    buffer.after(100);
    assert_eq!(state(&buffer), (2 * FIRST, 2), "halved after a short read");
    buffer.after(2 * FIRST);
    buffer.give_back();
    assert_eq!(state(&buffer), (FIRST, 3), "all given back when idle");
    buffer.after(FIRST);
    drop(buffer);
    assert_eq!(budget.0.available_permits(), 3, "and when dropped");
    let whole = Budget::default();
    let mut large = Buffer::new(&whole);
    for _ in 0..10 {
        let size = large.bytes.len();
        large.after(size);
    }
    assert_eq!(large.bytes.len(), LARGEST, "alone, a buffer grows to the largest size and stops");
    assert_eq!(whole.0.available_permits(), WHOLE - (LARGEST / FIRST - 1));
}
