//! The hibernation folder's names and files: which names are cellbox's,
//! where engines without a state folder keep theirs, the lock a process
//! holds on a state folder, and the leftovers of processes that are gone.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

/// Where engines without a state folder hibernate (each in a folder of its
/// own); every engine denies it to its kernels.
pub fn temporary_root() -> PathBuf {
    crate::paths::cache_root().join("hibernate")
}

/// Hold `dir` (a state folder) for this process: a second cellbox on it is
/// refused, since two would take each other's sessions. Keep the file open.
pub fn lock_state_dir(dir: &Path) -> std::io::Result<File> {
    crate::paths::private_dir_builder().create(dir)?;
    crate::paths::tighten_dir(dir);
    let lock = crate::paths::private_file_options().create(true).truncate(false).write(true).open(dir.join("lock"))?;
    match lock.try_lock() {
        Ok(()) => Ok(lock),
        Err(std::fs::TryLockError::WouldBlock) => Err(std::io::Error::other(format!(
            "the state folder {} is in use by another cellbox; give each one a folder of its own",
            dir.display()
        ))),
        Err(std::fs::TryLockError::Error(error)) => Err(error),
    }
}

/// `(stem, extension)` of a name this module writes (`<digits>-<digits>.<extension>`), else `None`.
pub(super) fn ours(name: &str) -> Option<(&str, &str)> {
    let (stem, extension) = name.split_once('.')?;
    let (nanos, count) = stem.split_once('-')?;
    let digits = |part: &str| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit());
    let known = ["snap", "json", "waking", "bad", "snap.tmp", "json.tmp"].contains(&extension);
    (digits(nanos) && digits(count) && known).then_some((stem, extension))
}

/// Remove the folders of engines whose process is gone (killed before it could clean up).
pub(super) fn sweep_dead(engines: &Path) {
    let Ok(entries) = std::fs::read_dir(engines) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = name.split('-').next().and_then(|pid| pid.parse::<u32>().ok()) else { continue };
        if pid != std::process::id() && !process_exists(pid) {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

fn process_exists(pid: u32) -> bool {
    #[cfg(unix)]
    {
        let Ok(pid) = i32::try_from(pid) else { return false };
        // Signal 0 checks that the process exists; EPERM means it does (another user's).
        !matches!(nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None), Err(nix::errno::Errno::ESRCH))
    }
    #[cfg(not(unix))]
    {
        let _ = pid;
        true
    }
}

pub(super) fn modified(dir: &Path) -> Option<SystemTime> {
    std::fs::metadata(dir).and_then(|meta| meta.modified()).ok()
}

pub(super) fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_secs()
}

/// The file, opened for reading without following a symlink in its place.
pub(super) fn open_read(path: &Path) -> std::io::Result<File> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(&mut options, nix::libc::O_NOFOLLOW);
    options.open(path)
}
