//! Which request the runner had begun, known without a frame saying so.
//!
//! A kernel's death is blamed on a cell only when the runner had begun it; a
//! request it took but never started (the OOM killer struck in between) or
//! never took was not the cell's doing. The Python runner used to say
//! `started` on its frames pipe before each cell, which woke the host and
//! cost a frame to read and parse on every call. On Linux it now writes the
//! id into a small memory file the host made (`--started-fd`), which the host
//! reads only when the kernel has died: the last request begun.
//!
//! A kernel forked from the fork server gets its page with its other fds. One
//! forked from another kernel keeps saying `started` (it gets no page), as
//! does the Node runner.

use std::fs::File;

use super::Runtime;

/// The memory file the runner writes the id of each request it begins into.
#[derive(Debug)]
pub(super) struct StartedPage(File);

/// Longest id read back; the host's ids are a few bytes (`r123`).
const MAX_ID: usize = 256;

impl StartedPage {
    /// A page for a kernel of `runtime` (Python on Linux), or `None`: the
    /// runner then says `started` as before.
    pub(super) fn create(runtime: Runtime) -> Option<StartedPage> {
        if runtime != Runtime::Python {
            return None;
        }
        create_file().map(StartedPage)
    }

    /// The memory file itself, for a kernel forked from the fork server.
    pub(super) fn file(&self) -> &File {
        &self.0
    }

    #[cfg(unix)]
    pub(super) fn raw_fd(&self) -> std::os::fd::RawFd {
        std::os::fd::AsRawFd::as_raw_fd(&self.0)
    }

    /// The id of the last request the runner began, once it has died.
    pub(super) fn last_begun(&self) -> Option<String> {
        let mut buffer = [0u8; MAX_ID];
        let read = read_at_start(&self.0, &mut buffer)?;
        let line = &buffer[..read];
        let end = line.iter().position(|&b| b == b'\n')?;
        String::from_utf8(line[..end].to_vec()).ok()
    }
}

#[cfg(target_os = "linux")]
fn create_file() -> Option<File> {
    use std::os::fd::FromRawFd;
    // SAFETY: a NUL-terminated name and flags; the fd returned is ours alone.
    let fd = unsafe { libc::memfd_create(c"cellbox-started".as_ptr(), libc::MFD_CLOEXEC) };
    // SAFETY: a fresh fd nothing else owns.
    (fd >= 0).then(|| unsafe { File::from_raw_fd(fd) })
}

#[cfg(not(target_os = "linux"))]
fn create_file() -> Option<File> {
    None
}

#[cfg(unix)]
fn read_at_start(file: &File, buffer: &mut [u8]) -> Option<usize> {
    std::os::unix::fs::FileExt::read_at(file, buffer, 0).ok()
}

#[cfg(not(unix))]
fn read_at_start(_file: &File, _buffer: &mut [u8]) -> Option<usize> {
    None
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use std::os::unix::fs::FileExt;

    #[test]
    fn the_last_id_written_over_a_longer_one_is_read_back() {
        let page = StartedPage::create(Runtime::Python).expect("memfd_create works on Linux");
        assert_eq!(page.last_begun(), None, "nothing begun yet");
        page.0.write_at(b"r10\n", 0).unwrap();
        assert_eq!(page.last_begun().as_deref(), Some("r10"));
        page.0.write_at(b"r9\n", 0).unwrap();
        assert_eq!(page.last_begun().as_deref(), Some("r9"), "what a longer id left behind is ignored");
        assert!(StartedPage::create(Runtime::Node).is_none(), "only the Python runner writes one");
    }
}
