//! The pipes between the host and one runner, and the host's reading of raw output.
//!
//! The host creates every pipe itself, so what the kernel writes is in the
//! host's hands the moment it is written, even if the process dies right after:
//!
//! | runner fd | what                                   | host end          |
//! | --------- | -------------------------------------- | ----------------- |
//! | 0         | requests (moved to a private fd)       | write             |
//! | 1, 2      | the cell's stdout and stderr, raw bytes | read              |
//! | 3         | frames (moved to a private fd)         | read              |
//! | 4         | the runner's own diagnostics (moved)   | read              |
//! | 5         | the control socket (Python on Unix)     | read and write    |
//! | 6         | the started page (Python on Linux)      | read after death  |
//!
//! Output bytes are decoded here ([`Utf8Stream`]): invalid UTF-8 becomes
//! U+FFFD, and a sequence cut at the end of a read waits for its rest.

use std::io::{self, PipeWriter};
#[cfg(unix)]
use std::os::fd::RawFd;

use super::pipe::{self, Receiver};

/// The frames pipe's write end as the runner sees it.
#[cfg(unix)]
pub const FRAMES_FD: RawFd = 3;
/// The diagnostics pipe's write end as the runner sees it.
#[cfg(unix)]
pub const DIAGNOSTICS_FD: RawFd = 4;
/// The control socket (fork requests bring their fds on it), when there is one.
#[cfg(unix)]
pub const CONTROL_FD: RawFd = 5;
/// The memory file the runner writes the id of each request it begins into
/// (see `super::began`), when there is one.
#[cfg(unix)]
pub const STARTED_FD: RawFd = 6;
/// Output pipes are enlarged to this (Linux), so bursts block the writer less.
#[cfg(target_os = "linux")]
const OUTPUT_PIPE_SIZE: i32 = 1 << 20;

/// The child's ends of the pipes, handed over at spawn.
pub struct ChildEnds {
    pub stdout: PipeWriter,
    pub stderr: PipeWriter,
    pub frames: PipeWriter,
    pub diagnostics: PipeWriter,
}

/// The host's reading ends.
pub struct HostEnds {
    pub stdout: Receiver,
    pub stderr: Receiver,
    pub frames: Receiver,
    pub diagnostics: Receiver,
}

/// Create the output, frame and diagnostics pipes (all close-on-exec).
/// Must run inside a tokio runtime (the readers register with it).
pub fn create() -> io::Result<(ChildEnds, HostEnds)> {
    let (out_r, out_w) = io::pipe()?;
    let (err_r, err_w) = io::pipe()?;
    let (frames_r, frames_w) = io::pipe()?;
    let (diag_r, diag_w) = io::pipe()?;
    grow(&out_w);
    grow(&err_w);
    let child = ChildEnds { stdout: out_w, stderr: err_w, frames: frames_w, diagnostics: diag_w };
    let host = HostEnds {
        stdout: pipe::receiver(out_r)?,
        stderr: pipe::receiver(err_r)?,
        frames: pipe::receiver(frames_r)?,
        diagnostics: pipe::receiver(diag_r)?,
    };
    Ok((child, host))
}

#[cfg(target_os = "linux")]
fn grow(end: &PipeWriter) {
    // SAFETY: F_SETPIPE_SZ on a pipe we own; failure only keeps the default size.
    unsafe {
        libc::fcntl(std::os::fd::AsRawFd::as_raw_fd(end), libc::F_SETPIPE_SZ, OUTPUT_PIPE_SIZE);
    }
}

#[cfg(not(target_os = "linux"))]
fn grow(_end: &PipeWriter) {}

/// In the forked child, before exec: put `frames` at fd 3, `diagnostics`
/// at fd 4, `control`, if any, at fd 5 and `started`, if any, at fd 6
/// (inheritable). Only async-signal-safe calls.
///
/// All are first copied above fd 10, so none can be overwritten by another's
/// `dup2` whatever numbers they had in the host.
#[cfg(unix)]
pub fn place_in_child(
    frames: RawFd,
    diagnostics: RawFd,
    control: Option<RawFd>,
    started: Option<RawFd>,
) -> io::Result<()> {
    // An array, not a Vec: nothing may allocate between fork and exec.
    let mut all = [
        (frames, FRAMES_FD),
        (diagnostics, DIAGNOSTICS_FD),
        (control.unwrap_or(-1), CONTROL_FD),
        (started.unwrap_or(-1), STARTED_FD),
    ];
    // SAFETY: plain fd syscalls on fds this child owns.
    unsafe {
        for place in all.iter_mut().filter(|place| place.0 >= 0) {
            place.0 = libc::fcntl(place.0, libc::F_DUPFD, 10);
            if place.0 < 0 {
                return Err(io::Error::last_os_error());
            }
        }
        for &(high, target) in all.iter().filter(|place| place.0 >= 0) {
            if libc::dup2(high, target) < 0 {
                return Err(io::Error::last_os_error());
            }
            libc::close(high);
        }
    }
    Ok(())
}

/// How much one read from an output pipe takes at most.
pub const READ_CHUNK: usize = 1 << 16;
/// A decoded read at least this long is handed over in the buffer it was
/// read into (no copy); a shorter one is copied out and the buffer reused, so
/// small writes do not each hold a whole read buffer.
const HAND_OVER_MIN: usize = 16 << 10;

/// Incremental UTF-8 decoding of one output stream, in the buffer reads fill.
///
/// Bulk output is touched as little as possible on its way: the pipe is read
/// into [`Utf8Stream::buffer`], validated in place, and a large read becomes
/// the event's `String` without being copied.
pub struct Utf8Stream {
    /// Where the next read lands, after the start of a multi-byte sequence
    /// cut by the end of the last read (at most 3 bytes).
    buffer: Vec<u8>,
}

impl Default for Utf8Stream {
    fn default() -> Self {
        Utf8Stream { buffer: Vec::with_capacity(READ_CHUNK) }
    }
}

impl Utf8Stream {
    /// The buffer the next read appends to (room for a whole read).
    pub fn buffer(&mut self) -> &mut Vec<u8> {
        if self.buffer.capacity() - self.buffer.len() < READ_CHUNK / 2 {
            self.buffer.reserve_exact(READ_CHUNK);
        }
        &mut self.buffer
    }

    /// The text read so far, keeping an incomplete trailing sequence for the next read.
    pub fn take(&mut self) -> String {
        let cut = incomplete_tail(&self.buffer);
        let complete = self.buffer.len() - cut;
        if complete == 0 {
            return String::new();
        }
        let bytes = if complete >= HAND_OVER_MIN {
            let mut next = Vec::with_capacity(READ_CHUNK);
            next.extend_from_slice(&self.buffer[complete..]);
            self.buffer.truncate(complete);
            let mut bytes = std::mem::replace(&mut self.buffer, next);
            if bytes.len() < bytes.capacity() / 4 * 3 {
                bytes.shrink_to_fit();
            }
            bytes
        } else {
            let bytes = self.buffer[..complete].to_vec();
            self.buffer.drain(..complete);
            bytes
        };
        match String::from_utf8(bytes) {
            Ok(text) => text,
            Err(error) => String::from_utf8_lossy(error.as_bytes()).into_owned(),
        }
    }

    /// Decode `bytes`, keeping an incomplete trailing sequence for the next call.
    pub fn decode(&mut self, bytes: &[u8]) -> String {
        self.buffer.extend_from_slice(bytes);
        self.take()
    }

    /// What is still held (an incomplete sequence at the very end), as U+FFFD.
    pub fn finish(&mut self) -> String {
        if self.buffer.is_empty() {
            return String::new();
        }
        let text = String::from_utf8_lossy(&self.buffer).into_owned();
        self.buffer.clear();
        text
    }
}

/// How many bytes at the end of `data` start a UTF-8 sequence that could
/// still be completed by more bytes (0 when the end is complete or invalid).
fn incomplete_tail(data: &[u8]) -> usize {
    let len = data.len();
    for back in 1..=3.min(len) {
        let byte = data[len - back];
        if byte & 0xC0 == 0x80 {
            continue; // a continuation byte: look further back for the lead
        }
        let needed = match byte {
            0xC2..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF4 => 4,
            _ => return 0,
        };
        if needed <= back {
            return 0;
        }
        // Only hold it when what follows the lead is a valid prefix.
        return match std::str::from_utf8(&data[len - back..]) {
            Err(error) if error.error_len().is_none() => back,
            _ => 0,
        };
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequences_cut_between_reads_are_joined() {
        let text = "añ€😀";
        let bytes = text.as_bytes();
        for cut in 0..=bytes.len() {
            let mut stream = Utf8Stream::default();
            let mut out = stream.decode(&bytes[..cut]);
            out.push_str(&stream.decode(&bytes[cut..]));
            out.push_str(&stream.finish());
            assert_eq!(out, text, "cut at {cut}");
        }
    }

    #[test]
    fn large_reads_are_handed_over_and_small_ones_copied_out() {
        let text = "é".repeat(20_000); // 40 000 bytes
        let bytes = text.as_bytes();
        let mut stream = Utf8Stream::default();
        // A read that cuts the last character: the large part is handed over, the cut kept.
        stream.buffer().extend_from_slice(&bytes[..30_001]);
        let first = stream.take();
        assert_eq!(first.len(), 30_000);
        stream.buffer().extend_from_slice(&bytes[30_001..]);
        let second = stream.take();
        assert_eq!(format!("{first}{second}"), text);
        assert!(stream.buffer().capacity() >= READ_CHUNK, "a fresh buffer takes the next read");
        stream.buffer().extend_from_slice(b"small\n");
        assert_eq!(stream.take(), "small\n");
        assert_eq!(stream.finish(), "");
    }

    #[test]
    fn invalid_bytes_become_replacement_characters() {
        let mut stream = Utf8Stream::default();
        assert_eq!(stream.decode(b"a\xffb"), "a\u{fffd}b");
        assert_eq!(stream.decode(b"c\xe2\x82"), "c");
        assert_eq!(stream.decode(b"x"), "\u{fffd}x");
        assert_eq!(stream.decode(b"\xf0\x9f"), "");
        assert_eq!(stream.finish(), "\u{fffd}");
    }
}
