//! Where a kernel's sockets are, and how the host reaches them.
//!
//! The kernel binds its five sockets (`ipc` transport) in a folder of its
//! private temp dir. Unix sockets work across the network namespace a
//! sandboxed kernel lives in, and only the kernel and the host can reach
//! them. The kernel could swap a socket for a symlink to some other socket,
//! so on Linux the host opens each socket itself without following symlinks
//! (`O_PATH | O_NOFOLLOW`, from the folder's own descriptor), checks that it
//! is a socket, and connects through `/proc/self/fd/N`: it never reaches a
//! socket the kernel could not reach.
//!
//! Jupyter names an `ipc` socket `<ip>-<port>`; some kernels (tslab) write
//! `<ip>:<port>`. Either is taken, per socket.

use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::sync::watch;

use crate::kernel::process::ExitInfo;

/// The channels, in the order of their port numbers in the connection file.
pub(super) const CHANNELS: [&str; 5] = ["shell", "iopub", "stdin", "control", "hb"];

/// The longest socket path the kernel is given (a Unix socket's path holds
/// at most 107 bytes on Linux, 103 on macOS).
pub(super) const MAX_SOCKET_PATH: usize = 100;

/// The name the kernel binds its sockets under: its connection folder, or,
/// when that path is too long for a socket (a deep temp root), a short
/// symlink to it in `/tmp` that the host made (and removes). The host itself
/// never goes through the link: it opens the folder it made ([`Sockets`]).
pub(super) struct ShortName {
    path: PathBuf,
    link: bool,
}

impl ShortName {
    pub(super) fn for_folder(folder: &Path) -> std::io::Result<ShortName> {
        if folder.join("k-5").as_os_str().len() <= MAX_SOCKET_PATH {
            return Ok(ShortName { path: folder.to_path_buf(), link: false });
        }
        #[cfg(unix)]
        for _ in 0..16 {
            let mut random = [0u8; 8];
            getrandom::fill(&mut random).map_err(std::io::Error::other)?;
            let name: String = random.iter().map(|b| format!("{b:02x}")).collect();
            let link = Path::new("/tmp").join(format!("cellbox-jupyter-{name}"));
            match std::os::unix::fs::symlink(folder, &link) {
                Ok(()) => return Ok(ShortName { path: link, link: true }),
                Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(error) => return Err(error),
            }
        }
        Err(std::io::Error::other(format!(
            "its connection folder's path is longer than a socket's ({} bytes), and no short link to it could be made \
             in /tmp",
            folder.as_os_str().len()
        )))
    }

    pub(super) fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for ShortName {
    fn drop(&mut self) {
        if self.link {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// The kernel's five sockets, as paths the host connects to (its relays do: [`super::relay`]).
pub(super) struct Sockets {
    pub targets: Vec<PathBuf>,
    /// On Linux, the sockets themselves (`O_PATH`), which the targets name.
    #[cfg(target_os = "linux")]
    _held: Vec<std::os::fd::OwnedFd>,
}

impl Sockets {
    /// Wait until the kernel has bound all five sockets in `folder` (or exited).
    pub(super) async fn wait_for(
        folder: &Path,
        mut exit: watch::Receiver<Option<ExitInfo>>,
    ) -> Result<Sockets, String> {
        let mut delay = Duration::from_millis(5);
        loop {
            match Sockets::open(folder)? {
                Some(sockets) => return Ok(sockets),
                None => {
                    tokio::select! {
                        _ = tokio::time::sleep(delay) => {}
                        _ = exit.wait_for(Option::is_some) => return Err("it exited".into()),
                    }
                    delay = (delay * 2).min(Duration::from_millis(100));
                }
            }
        }
    }

    /// The sockets, once every one exists; an entry that is not a socket is an error.
    #[cfg(target_os = "linux")]
    fn open(folder: &Path) -> Result<Option<Sockets>, String> {
        use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
        let path = std::ffi::CString::new(folder.as_os_str().as_encoded_bytes()).map_err(|e| e.to_string())?;
        // SAFETY: plain system calls on a NUL-terminated path and fds this function owns.
        let dir =
            unsafe { libc::open(path.as_ptr(), libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC) };
        if dir < 0 {
            return Err(format!("its connection folder is gone: {}", std::io::Error::last_os_error()));
        }
        // SAFETY: `dir` was just opened and is owned here.
        let dir = unsafe { OwnedFd::from_raw_fd(dir) };
        let mut held = Vec::new();
        for port in 1..=CHANNELS.len() {
            let open = |name: String| {
                let name = std::ffi::CString::new(name).expect("no NUL");
                // SAFETY: as above.
                unsafe {
                    libc::openat(dir.as_raw_fd(), name.as_ptr(), libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC)
                }
            };
            let mut fd = open(format!("k-{port}"));
            if fd < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ENOENT) {
                fd = open(format!("k:{port}"));
            }
            if fd < 0 {
                let error = std::io::Error::last_os_error();
                return match error.raw_os_error() {
                    Some(libc::ENOENT) => Ok(None),
                    _ => Err(format!("its socket k-{port} cannot be opened: {error}")),
                };
            }
            // SAFETY: `fd` was just opened and is owned here.
            let fd = unsafe { OwnedFd::from_raw_fd(fd) };
            // SAFETY: a zeroed stat buffer filled by fstat on a live fd.
            let mut stat: libc::stat = unsafe { std::mem::zeroed() };
            if unsafe { libc::fstat(fd.as_raw_fd(), &mut stat) } != 0 || stat.st_mode & libc::S_IFMT != libc::S_IFSOCK {
                return Err(format!("k-{port} in its connection folder is not a socket (was it replaced?)"));
            }
            held.push(fd);
        }
        let targets = held.iter().map(|fd| PathBuf::from(format!("/proc/self/fd/{}", fd.as_raw_fd()))).collect();
        Ok(Some(Sockets { targets, _held: held }))
    }

    /// The sockets, once every one exists (by name: see docs/kernels.md on macOS).
    #[cfg(not(target_os = "linux"))]
    fn open(folder: &Path) -> Result<Option<Sockets>, String> {
        let mut targets = Vec::new();
        for port in 1..=CHANNELS.len() {
            let dashed = folder.join(format!("k-{port}"));
            let path = if dashed.exists() { dashed } else { folder.join(format!("k:{port}")) };
            match std::fs::symlink_metadata(&path) {
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
                Err(error) => return Err(format!("its socket k-{port} cannot be read: {error}")),
                Ok(meta) if meta.file_type().is_symlink() => {
                    return Err(format!("k-{port} in its connection folder is not a socket (was it replaced?)"));
                }
                Ok(_) => targets.push(path),
            }
        }
        Ok(Some(Sockets { targets }))
    }
}
