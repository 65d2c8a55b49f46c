//! A kernel's workspace shown at another path, as its home: code written for
//! E2B expects its folder at `/home/user`, whatever folder of the host holds
//! it.
//!
//! In the kernel's own mount namespace the workspace is bound at that path.
//! When the path does not exist on the host (the usual case: `/home/user`
//! is nobody's), the host does not make it: a tmpfs covers its parent
//! (`/home`) in the kernel's namespace only, every entry of the parent is
//! bound back into it (so the users' folders and their mounts stay where
//! they were), and the path is made in the tmpfs. The tmpfs and the entries
//! bound back are then read-only mounts, like every mount the kernel may
//! not write; Landlock's rules follow the files, not their paths, so the
//! workspace bound at `/home/user` is exactly as writable as at its real path.

use std::path::{Path, PathBuf};

use super::SandboxPolicy;

/// Where a kernel sees its workspace: `real` on the host, `seen` in the kernel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HomeView {
    pub real: PathBuf,
    pub seen: PathBuf,
}

impl HomeView {
    /// `path` as the kernel sees it: a path in the workspace is given
    /// beneath the view; any other path is left as it is.
    pub fn seen(&self, path: &Path) -> PathBuf {
        match path.strip_prefix(&self.real) {
            Ok(rest) if rest.as_os_str().is_empty() => self.seen.clone(),
            Ok(rest) => self.seen.join(rest),
            Err(_) => path.to_path_buf(),
        }
    }
}

/// The view a kernel under `policy`, started in `cwd`, gets on this host:
/// `None` when the policy asks for none, or (after one warning that says
/// why) when the host cannot give one.
pub fn home_view(policy: &SandboxPolicy, cwd: &Path) -> Option<HomeView> {
    let seen = policy.home_view.as_ref()?;
    let real = policy.workspace.clone().unwrap_or_else(|| cwd.to_path_buf());
    match unavailable(policy, seen, cwd) {
        None => Some(HomeView { real, seen: seen.clone() }),
        Some(reason) => {
            crate::notice::warn_once(&format!(
                "kernels see their folder by its real path, not as {}: {reason}",
                seen.display()
            ));
            None
        }
    }
}

/// `cwd` as a kernel under `policy` started there sees it.
pub fn seen_cwd(policy: &SandboxPolicy, cwd: &Path) -> PathBuf {
    home_view(policy, cwd).map_or_else(|| cwd.to_path_buf(), |view| view.seen(cwd))
}

/// Why `seen` cannot be shown to kernels under `policy` here, if it cannot.
fn unavailable(policy: &SandboxPolicy, seen: &Path, cwd: &Path) -> Option<String> {
    if policy.is_off() {
        return Some("the sandbox is off, and only a sandboxed kernel has a mount namespace of its own".into());
    }
    if !cfg!(target_os = "linux") {
        return Some(format!(
            "only Linux gives a kernel a mount namespace of its own ({} does not)",
            std::env::consts::OS
        ));
    }
    let parent = match seen.parent() {
        Some(parent) if seen.is_absolute() && !parent.as_os_str().is_empty() => parent,
        _ => return Some("it must be an absolute path below `/`".into()),
    };
    if !parent.is_dir() {
        return Some(format!("{} is not a folder on this machine", parent.display()));
    }
    match std::fs::symlink_metadata(seen) {
        Ok(meta) if !meta.is_dir() => return Some(format!("{} exists here and is not a folder", seen.display())),
        Ok(_) => {}
        Err(_) => {
            let real = policy.workspace.as_deref().unwrap_or(cwd);
            if stage(real, seen).is_none() {
                return Some(format!("none of {} is a folder apart from it and the workspace", STAGES.join(", ")));
            }
            if std::fs::read_dir(parent).map_or(true, |entries| entries.count() > MAX_ENTRIES) {
                return Some(format!("{} cannot be listed, or has more than {MAX_ENTRIES} entries", parent.display()));
            }
        }
    }
    #[cfg(target_os = "linux")]
    if !super::probe::can_mount_private_shm() {
        return Some("this host does not let kernels have a mount namespace of their own".into());
    }
    None
}

/// More entries than this in the parent, and the view is not made: each
/// is a mount in every kernel.
const MAX_ENTRIES: usize = 256;

/// Existing folders where a cover is put together before it is moved onto
/// the view's parent: the first that neither holds nor lies in the parent or
/// the workspace is hidden in the kernel's namespace for that moment only.
const STAGES: &[&str] = &["/mnt", "/media", "/srv", "/opt", "/tmp", "/var/tmp", "/boot", "/dev"];

/// Where the cover for a view at `seen` of workspace `real` is put together,
/// when the view's path does not exist yet (`None`: no stage is needed, or none fits).
fn stage(real: &Path, seen: &Path) -> Option<PathBuf> {
    let parent = super::resolve(seen.parent()?);
    let real = super::resolve(real);
    STAGES.iter().map(|stage| super::resolve(Path::new(stage))).find(|stage| {
        stage.is_dir() && !stage.starts_with(&parent) && !parent.starts_with(stage) && !real.starts_with(stage)
    })
}

#[cfg(target_os = "linux")]
pub(super) use linux::{Mounts, plan};

#[cfg(target_os = "linux")]
mod linux {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    use std::path::{Path, PathBuf};

    use super::{HomeView, MAX_ENTRIES};

    /// What the child mounts for a view, prepared in the host.
    #[derive(Debug)]
    pub struct Mounts {
        workspace: CString,
        target: CString,
        cover: Option<Cover>,
    }

    /// A tmpfs put together at `stage` (the parent's entries bound into it,
    /// the view's path made and the workspace bound there), then moved onto `parent`.
    #[derive(Debug)]
    struct Cover {
        parent: CString,
        stage: CString,
        staged_target: CString,
        entries: Vec<Entry>,
    }

    #[derive(Debug)]
    struct Entry {
        /// Its path in the parent: bound from there, sealed there once moved.
        at: CString,
        staged: CString,
        kind: Kind,
        /// Made read-only once moved (false for a place the kernel may write).
        seal: bool,
    }

    #[derive(Debug)]
    enum Kind {
        Folder,
        File,
        Link(CString),
    }

    fn c_path(path: &Path) -> Result<CString, String> {
        CString::new(path.as_os_str().as_bytes()).map_err(|_| format!("{} holds a NUL byte", path.display()))
    }

    /// The mounts that show `view`, with `writable` the places the kernel may
    /// write (entries that are one stay writable). `Err` says why not.
    pub fn plan(view: &HomeView, writable: &[PathBuf]) -> Result<Mounts, String> {
        let workspace = c_path(&view.real)?;
        let target = c_path(&view.seen)?;
        if view.seen.is_dir() {
            return Ok(Mounts { workspace, target, cover: None });
        }
        let parent = view.seen.parent().ok_or("no parent folder")?;
        let name = view.seen.file_name().ok_or("no name")?;
        let stage = super::stage(&view.real, &view.seen).ok_or("no folder to put its cover together in")?;
        let listing = std::fs::read_dir(parent).map_err(|e| format!("cannot list {}: {e}", parent.display()))?;
        let mut entries = Vec::new();
        for entry in listing {
            let entry = entry.map_err(|e| format!("cannot list {}: {e}", parent.display()))?;
            if entries.len() == MAX_ENTRIES {
                return Err(format!("{} has more than {MAX_ENTRIES} entries", parent.display()));
            }
            let at = parent.join(entry.file_name());
            let kind = match entry.file_type() {
                Ok(kind) if kind.is_symlink() => match std::fs::read_link(&at) {
                    Ok(target) => Kind::Link(c_path(&target)?),
                    Err(_) => continue,
                },
                Ok(kind) if kind.is_dir() => Kind::Folder,
                Ok(_) => Kind::File,
                Err(_) => continue,
            };
            let seal = !writable.iter().any(|place| *place == super::super::resolve(&at));
            entries.push(Entry { at: c_path(&at)?, staged: c_path(&stage.join(entry.file_name()))?, kind, seal });
        }
        let cover = Cover {
            parent: c_path(parent)?,
            staged_target: c_path(&stage.join(name))?,
            stage: c_path(&stage)?,
            entries,
        };
        Ok(Mounts { workspace, target, cover: Some(cover) })
    }

    impl Mounts {
        /// In the kernel's new mount namespace, its mounts private: bind the
        /// workspace at the view, in a cover of the parent when the view's
        /// path does not exist. Async-signal-safe.
        pub unsafe fn show(&self) -> std::io::Result<()> {
            let check = |rc: libc::c_int| if rc < 0 { Err(std::io::Error::last_os_error()) } else { Ok(()) };
            let none = std::ptr::null();
            let bind = libc::MS_BIND | libc::MS_REC;
            // SAFETY: system calls on NUL-terminated strings prepared before the fork.
            unsafe {
                let Some(cover) = &self.cover else {
                    return check(libc::mount(self.workspace.as_ptr(), self.target.as_ptr(), none, bind, none.cast()));
                };
                check(libc::mount(
                    c"tmpfs".as_ptr(),
                    cover.stage.as_ptr(),
                    c"tmpfs".as_ptr(),
                    libc::MS_NOSUID | libc::MS_NODEV,
                    c"mode=0755".as_ptr().cast(),
                ))?;
                for entry in &cover.entries {
                    // An entry that cannot be put back is missing in the kernel, never more reachable.
                    match &entry.kind {
                        Kind::Link(target) => {
                            libc::symlink(target.as_ptr(), entry.staged.as_ptr());
                        }
                        Kind::Folder => {
                            if libc::mkdir(entry.staged.as_ptr(), 0o755) == 0 {
                                libc::mount(entry.at.as_ptr(), entry.staged.as_ptr(), none, bind, none.cast());
                            }
                        }
                        Kind::File => {
                            let flags = libc::O_CREAT | libc::O_WRONLY | libc::O_CLOEXEC;
                            let fd = libc::open(entry.staged.as_ptr(), flags, 0o644);
                            if fd >= 0 {
                                libc::close(fd);
                                libc::mount(entry.at.as_ptr(), entry.staged.as_ptr(), none, bind, none.cast());
                            }
                        }
                    }
                }
                check(libc::mkdir(cover.staged_target.as_ptr(), 0o755))?;
                check(libc::mount(self.workspace.as_ptr(), cover.staged_target.as_ptr(), none, bind, none.cast()))?;
                check(libc::mount(cover.stage.as_ptr(), cover.parent.as_ptr(), none, libc::MS_MOVE, none.cast()))
            }
        }

        /// The mounts made for the view that the kernel may not write, for
        /// [`super::super::child::read_only_each`] once all are in place.
        pub fn sealed(&self) -> impl Iterator<Item = &CString> {
            self.cover.iter().flat_map(|cover| {
                let entries = cover.entries.iter().filter(|e| e.seal && !matches!(e.kind, Kind::Link(_)));
                std::iter::once(&cover.parent).chain(entries.map(|e| &e.at))
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_in_the_workspace_are_seen_beneath_the_view_and_others_as_they_are() {
        let view = HomeView { real: PathBuf::from("/srv/alice/e2b/abc"), seen: PathBuf::from("/home/user") };
        assert_eq!(view.seen(Path::new("/srv/alice/e2b/abc")), Path::new("/home/user"));
        assert_eq!(view.seen(Path::new("/srv/alice/e2b/abc/a/b")), Path::new("/home/user/a/b"));
        assert_eq!(view.seen(Path::new("/srv/alice/e2b/abcd")), Path::new("/srv/alice/e2b/abcd"));
        assert_eq!(view.seen(Path::new("/tmp")), Path::new("/tmp"));
    }

    #[test]
    fn a_view_that_cannot_be_shown_says_why() {
        let dir = tempfile::tempdir().unwrap();
        let policy = |seen: &Path| SandboxPolicy {
            home_view: Some(seen.to_path_buf()),
            workspace: Some(dir.path().to_path_buf()),
            ..SandboxPolicy::default()
        };
        let no_parent = dir.path().join("missing/user");
        assert!(unavailable(&policy(&no_parent), &no_parent, dir.path()).unwrap().contains("is not a folder"));
        assert!(unavailable(&policy(Path::new("user")), Path::new("user"), dir.path()).unwrap().contains("absolute"));
        let file = dir.path().join("file");
        std::fs::write(&file, "").unwrap();
        assert!(unavailable(&policy(&file), &file, dir.path()).unwrap().contains("is not a folder"));
        let off = SandboxPolicy { home_view: Some(dir.path().join("user")), ..SandboxPolicy::off() };
        assert!(unavailable(&off, &dir.path().join("user"), dir.path()).unwrap().contains("sandbox is off"));
        assert_eq!(home_view(&SandboxPolicy::default(), dir.path()), None);
    }
}
