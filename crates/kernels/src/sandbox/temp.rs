//! Kernels' private temp dirs: one per kernel, made by the host and removed
//! with the kernel. A host that is killed cannot remove its own, so each dir
//! is held by an advisory lock on its folder while its kernel lives, and the
//! first kernel a host starts in a temp root sweeps the dirs there that
//! nobody holds. A lock is seen by every host on the machine, whatever PID
//! namespace it runs in, where a process id would not be.

use std::path::{Path, PathBuf};

/// What the names of kernels' private temp dirs start with (the host's
/// process id and a random part follow).
pub const KERNEL_TEMP_PREFIX: &str = "cellbox-kernel-";

/// How old a dir nobody holds must be before a sweep removes it: a host
/// takes the lock right after making the dir, never this long after.
#[cfg(unix)]
const UNHELD_FOR: std::time::Duration = std::time::Duration::from_secs(60);

/// One kernel's temp dir, removed (then unlocked) when dropped.
#[derive(Debug)]
pub struct KernelTemp {
    dir: tempfile::TempDir,
    /// The open folder whose lock says the dir is in use (declared after
    /// `dir`, so it is released only once the dir is gone).
    _held: Option<std::fs::File>,
}

impl KernelTemp {
    /// A fresh temp dir in `root` (which exists), held until dropped.
    pub fn create(root: &Path) -> std::io::Result<KernelTemp> {
        sweep_once(root);
        let prefix = format!("{KERNEL_TEMP_PREFIX}{}-", std::process::id());
        let dir = tempfile::Builder::new().prefix(&prefix).tempdir_in(root)?;
        let held = hold(dir.path());
        Ok(KernelTemp { dir, _held: held })
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

/// The folder `dir` opened and locked, or `None` where locks are not to be had.
#[cfg(unix)]
fn hold(dir: &Path) -> Option<std::fs::File> {
    use std::os::fd::AsRawFd;
    let folder = std::fs::File::open(dir).ok()?;
    // SAFETY: flock on an fd this function owns.
    let locked = unsafe { libc::flock(folder.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0;
    locked.then_some(folder)
}

#[cfg(not(unix))]
fn hold(_dir: &Path) -> Option<std::fs::File> {
    None
}

/// Sweep `root` once per process, in the background (a kernel's start does
/// not wait for it).
fn sweep_once(root: &Path) {
    static SWEPT: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());
    let mut swept = SWEPT.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if swept.iter().any(|known| known == root) {
        return;
    }
    swept.push(root.to_path_buf());
    let root = root.to_path_buf();
    std::thread::spawn(move || sweep(&root));
}

/// Remove the kernels' temp dirs in `root` that no live host holds.
#[cfg(unix)]
pub(super) fn sweep(root: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(root) else { return 0 };
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(|name| name.strip_prefix(KERNEL_TEMP_PREFIX)) else { continue };
        // Only dirs named the way this code names them (a host's pid first): older ones
        // were never locked, so a live one cannot be told from a dead one.
        let Some((pid, _)) = rest.split_once('-') else { continue };
        if pid.is_empty() || !pid.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let path = entry.path();
        let Ok(meta) = std::fs::symlink_metadata(&path) else { continue };
        let old = meta.modified().ok().and_then(|at| at.elapsed().ok()).is_some_and(|age| age >= UNHELD_FOR);
        if !meta.is_dir() || !old {
            continue;
        }
        // Held while it is being removed, so that a racing sweep leaves it alone.
        if let Some(_held) = hold(&path)
            && std::fs::remove_dir_all(&path).is_ok()
        {
            removed += 1;
        }
    }
    removed
}

#[cfg(not(unix))]
pub(super) fn sweep(_root: &Path) -> usize {
    0
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    /// Set `path`'s modification time `seconds` into the past.
    fn age(path: &Path, seconds: u64) {
        let at = std::time::SystemTime::now() - std::time::Duration::from_secs(seconds);
        std::fs::File::open(path).unwrap().set_modified(at).unwrap();
    }

    #[test]
    fn a_sweep_removes_only_old_dirs_nobody_holds() {
        let root = tempfile::tempdir().unwrap();
        let live = KernelTemp::create(root.path()).unwrap();
        std::fs::write(live.path().join("data"), "in use").unwrap();
        let dead = root.path().join(format!("{KERNEL_TEMP_PREFIX}999999-abc"));
        std::fs::create_dir_all(dead.join("inner")).unwrap();
        std::fs::write(dead.join("inner/left"), "x").unwrap();
        let fresh = root.path().join(format!("{KERNEL_TEMP_PREFIX}999998-abc"));
        let older_kind = root.path().join(format!("{KERNEL_TEMP_PREFIX}abcdef"));
        let outside = tempfile::tempdir().unwrap();
        let link = root.path().join(format!("{KERNEL_TEMP_PREFIX}999997-link"));
        std::os::unix::fs::symlink(outside.path(), &link).unwrap();
        std::fs::write(outside.path().join("kept"), "x").unwrap();
        for folder in [&fresh, &older_kind] {
            std::fs::create_dir(folder).unwrap();
        }
        for folder in [live.path(), &dead, &older_kind] {
            age(folder, 3600);
        }

        assert_eq!(sweep(root.path()), 1);
        assert!(!dead.exists(), "a dir nobody holds, an hour old, is gone");
        assert!(live.path().join("data").exists(), "a held dir stays, however old");
        assert!(fresh.exists(), "a dir just made may be about to be held");
        assert!(older_kind.exists(), "a dir of an older naming could be in use");
        assert!(link.symlink_metadata().is_ok() && outside.path().join("kept").exists(), "links are not followed");
        let path = live.path().to_path_buf();
        drop(live);
        assert!(!path.exists(), "the kernel's dir goes with it");
    }
}
