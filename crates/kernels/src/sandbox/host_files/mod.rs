//! The host's own work on a kernel's or a principal's files (the SDK's files
//! API and its watches, notebook exports): one rule, one place.
//!
//! A kernel can change its files while the host works on them: swap a folder
//! for a symlink between a check and an open, plant a FIFO that blocks an
//! open, point a name at `/proc/self/environ` or `/dev/zero`. So every
//! operation here
//!
//! - runs on a thread confined by the kernels' own Landlock rules
//!   ([`Confinement`]): it cannot read or write anything the principal's
//!   kernels could not;
//! - opens once and checks what the descriptor holds, never a name twice:
//!   reads follow symlinks as the kernel would, then refuse what is not a
//!   regular file (or a folder, to list) and what really lies under `/proc`,
//!   `/sys` or `/dev` or where the policy denies reading;
//! - changes (write, make a folder, remove, rename, replace) start at the
//!   writable folder they fall under and walk down one component at a time
//!   with `O_NOFOLLOW`, acting on the last folder's descriptor (`openat`,
//!   `unlinkat`, `renameat`): no symlink below a writable folder is ever
//!   followed or replaced;
//! - reads are bounded by the caller's length, walks by an entry limit.
//!
//! Names are checked first as well, only so that a refusal says which rule
//! refused it; the descriptors are what hold.

#[cfg(not(unix))]
mod portable;
#[cfg(unix)]
mod unix;

#[cfg(not(unix))]
use portable as ops;
#[cfg(unix)]
use unix as ops;

use std::path::{Component, Path, PathBuf};
use std::time::SystemTime;

use super::access::{Denial, FileAccess, resolve};
use super::confine::{ConfineError, Confinement};

/// What a path is: the entry's own kind (a symlink is not followed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    File,
    Dir,
    Symlink,
    /// A FIFO, socket or device.
    Other,
}

/// An entry's metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stat {
    pub kind: Kind,
    pub size: u64,
    /// The whole `st_mode` (type and permission bits; on other systems a likeness of it).
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
    pub modified: Option<SystemTime>,
    pub inode: u64,
}

/// One entry of a folder, or one path looked at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The path as the caller named it (a listing's entries: the folder's path joined with their names).
    pub path: PathBuf,
    /// The entry's own metadata, or for a symlink its target's when the target may be read.
    pub stat: Stat,
    /// For a symlink: where it leads (its resolved target, else its text), and
    /// whether that target may be described (it exists and may be read).
    pub link: Option<(PathBuf, bool)>,
}

/// Why a path may not be reached, by rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// Under this secret location (or `--deny-read` path).
    Secret(PathBuf),
    /// Under this private root (other principals' folders, other kernels' temp dirs).
    Private(PathBuf),
    /// Outside every writable folder; these are the writable folders (devices left out).
    NotWritable(Vec<PathBuf>),
    /// The writable folder itself: its contents may change, not the folder.
    WritableFolder(PathBuf),
}

/// Why an operation on a kernel's files failed; the text says what to do.
#[derive(Debug, thiserror::Error)]
pub enum HostFileError {
    #[error("no such file or folder: {}", path.display())]
    NotFound { path: PathBuf },
    #[error("{}: its folder does not exist", path.display())]
    NoParent { path: PathBuf },
    #[error(
        "{}: {root} holds the host's processes, kernel state and devices, which the files API does not open",
        path.display()
    )]
    System { path: PathBuf, root: &'static str },
    #[error("{}: a {kind}, not a regular file; only regular files are read and written", path.display())]
    NotAFile { path: PathBuf, kind: &'static str },
    #[error("{} is a folder, not a file", path.display())]
    IsAFolder { path: PathBuf },
    #[error("{} is not a folder", path.display())]
    NotAFolder { path: PathBuf },
    #[error(
        "{}: {} is a symlink, and a change never goes through or replaces one (a kernel may have planted it); \
         name the real path, or remove the link first",
        path.display(), link.display()
    )]
    Symlink { path: PathBuf, link: PathBuf },
    #[error("{}: {refusal}", path.display())]
    Refused { path: PathBuf, refusal: Refusal },
    #[error("{}: more than {limit} entries; name a smaller folder, or a smaller depth", path.display())]
    TooMany { path: PathBuf, limit: usize },
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
    #[error(transparent)]
    Confine(#[from] ConfineError),
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::Secret(secret) => write!(
                f,
                "the sandbox keeps secret locations such as {} unreadable, for kernels and the host's file work \
                 alike (only --sandbox off lifts it)",
                secret.display()
            ),
            Refusal::Private(root) => write!(
                f,
                "only your own entry of {} may be reached; the others belong to other principals or kernels",
                root.display()
            ),
            Refusal::NotWritable(places) if places.is_empty() => {
                f.write_str("the sandbox lets kernels write nowhere but their private temp dirs (read-only)")
            }
            Refusal::NotWritable(places) => {
                let places: Vec<String> = places.iter().map(|p| p.display().to_string()).collect();
                write!(
                    f,
                    "outside the folders the sandbox lets kernels write ({}); add one with --allow-write PATH \
                     (CELLBOX_ALLOW_WRITE)",
                    places.join(", ")
                )
            }
            Refusal::WritableFolder(place) => {
                write!(f, "{} is a writable folder itself: its contents may change, not the folder", place.display())
            }
        }
    }
}

impl HostFileError {
    pub(crate) fn io(path: &Path, source: std::io::Error) -> HostFileError {
        match source.kind() {
            std::io::ErrorKind::NotFound => HostFileError::NotFound { path: path.to_path_buf() },
            _ => HostFileError::Io { path: path.to_path_buf(), source },
        }
    }
}

/// The folders under which nothing is opened for a principal: the host's
/// processes (`/proc/self/environ` is the server's environment), kernel
/// state and devices (`/dev/zero` never ends).
const SYSTEM_ROOTS: &[&str] = &["/proc", "/sys", "/dev"];

/// The system folder `real` (a resolved path) is under, if any.
pub fn system_root(real: &Path) -> Option<&'static str> {
    SYSTEM_ROOTS.iter().copied().find(|root| real.starts_with(root))
}

/// `path` with `.` and `..` folded, without looking at the disk.
pub fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                if !matches!(out.components().next_back(), None | Some(Component::RootDir | Component::Prefix(_))) {
                    out.pop();
                }
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// A principal's files, as its kernels may reach them: every method runs
/// under the [`Confinement`] and by descriptor (see the module).
#[derive(Debug)]
pub struct HostFiles {
    confinement: std::sync::Arc<Confinement>,
    root: PathBuf,
}

/// Where a change happens: the writable folder it falls under (resolved),
/// the folders below it down to the changed entry's folder, and its name.
pub(crate) struct Place {
    pub(crate) folder: PathBuf,
    pub(crate) below: PathBuf,
    pub(crate) name: std::ffi::OsString,
}

impl HostFiles {
    /// The files of a principal whose relative paths start at `root`, held to `confinement`.
    pub fn new(confinement: Confinement, root: PathBuf) -> HostFiles {
        HostFiles { confinement: std::sync::Arc::new(confinement), root }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn confinement(&self) -> &std::sync::Arc<Confinement> {
        &self.confinement
    }

    /// `path` from the root when relative, with `.` and `..` folded (symlinks are not followed).
    pub fn absolute(&self, path: impl AsRef<Path>) -> PathBuf {
        lexical(&self.root.join(path))
    }

    /// Refuse reaching `path` (resolved as it is now) when a rule forbids it.
    fn check_reach(&self, path: &Path) -> Result<PathBuf, HostFileError> {
        let real = resolve(path);
        self.check_real(path, &real)?;
        Ok(real)
    }

    /// Refuse the resolved path `real` of `path` when it is a system folder's or denied.
    pub(crate) fn check_real(&self, path: &Path, real: &Path) -> Result<(), HostFileError> {
        if let Some(root) = system_root(real).or_else(|| system_root(path)) {
            return Err(HostFileError::System { path: path.to_path_buf(), root });
        }
        let Some(access) = self.confinement.access() else { return Ok(()) };
        match access.denial(real) {
            None => Ok(()),
            Some(denial) => Err(HostFileError::Refused { path: path.to_path_buf(), refusal: refusal_of(denial) }),
        }
    }

    /// Where a change of the entry `path` happens, or the rule that refuses it.
    fn place(&self, path: &Path) -> Result<Place, HostFileError> {
        let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
            return Err(self.not_writable(path));
        };
        let real_parent = resolve(parent);
        let real = real_parent.join(name);
        self.check_real(path, &real)?;
        let folder = match self.confinement.access() {
            None => PathBuf::from("/"),
            Some(access) => match access.writable_place(&real) {
                Some(folder) if folder == real => {
                    let refusal = Refusal::WritableFolder(folder.to_path_buf());
                    return Err(HostFileError::Refused { path: path.to_path_buf(), refusal });
                }
                Some(folder) => folder.to_path_buf(),
                None => return Err(self.not_writable(path)),
            },
        };
        let below = real_parent.strip_prefix(&folder).map(Path::to_path_buf).unwrap_or_default();
        Ok(Place { folder, below, name: name.to_os_string() })
    }

    fn not_writable(&self, path: &Path) -> HostFileError {
        let places = self.confinement.access().map(writable_places).unwrap_or_default();
        HostFileError::Refused { path: path.to_path_buf(), refusal: Refusal::NotWritable(places) }
    }

    /// Run `work` under the confinement.
    fn confined<T: Send>(&self, work: impl FnOnce() -> Result<T, HostFileError> + Send) -> Result<T, HostFileError> {
        self.confinement.run(work)?
    }

    /// Up to `length` bytes of the regular file `path` from `offset`, and
    /// whether its end was reached.
    pub fn read(&self, path: &Path, offset: u64, length: u64) -> Result<(Vec<u8>, bool), HostFileError> {
        self.confined(|| {
            self.check_reach(path)?;
            ops::read(self, path, offset, length)
        })
    }

    /// Refuse a change of the entry `path` that a rule forbids, without
    /// changing anything (to check a batch before its first change).
    pub fn check_change(&self, path: &Path) -> Result<(), HostFileError> {
        self.place(path).map(drop)
    }

    /// Write `data` into the regular file `path` (made, with its folders, when
    /// missing), replacing its content or, with `append`, after it.
    pub fn write(&self, path: &Path, data: &[u8], append: bool) -> Result<(), HostFileError> {
        self.confined(|| ops::write(&self.place(path)?, path, data, append))
    }

    /// Replace the file `path` whole with `data`: written beside it, then
    /// renamed over it (a reader never sees half of it); its folder must exist.
    pub fn replace(&self, path: &Path, data: &[u8]) -> Result<(), HostFileError> {
        self.confined(|| ops::replace(&self.place(path)?, path, data))
    }

    /// The entry `path` names (`None` when there is none).
    pub fn stat(&self, path: &Path) -> Result<Option<Entry>, HostFileError> {
        self.confined(|| {
            self.check_reach(path)?;
            ops::stat(self, path)
        })
    }

    /// The entries of the folder `path` to `depth` (1: its own), depth-first
    /// in name order; symlinked folders and unreachable ones are not entered.
    pub fn list(&self, path: &Path, depth: u64, limit: usize) -> Result<Vec<Entry>, HostFileError> {
        self.confined(|| {
            self.check_reach(path)?;
            ops::list(self, path, depth, limit)
        })
    }

    /// Every entry under the folder `dir` (its own entries unless
    /// `recursive`), by path relative to it, at most `limit` of them.
    pub fn scan(&self, dir: &Path, recursive: bool, limit: usize) -> Result<Vec<(PathBuf, Stat)>, HostFileError> {
        self.confined(|| {
            self.check_reach(dir)?;
            ops::scan(self, dir, recursive, limit)
        })
    }

    /// Make the folder `path` and its missing parents; false when it was there.
    pub fn make_dir(&self, path: &Path) -> Result<bool, HostFileError> {
        self.confined(|| ops::make_dir(&self.place(path)?, path))
    }

    /// Remove the file, symlink or folder tree `path`; false when there was none.
    pub fn remove(&self, path: &Path) -> Result<bool, HostFileError> {
        self.confined(|| ops::remove(&self.place(path)?, path))
    }

    /// Rename `old` to `new` (replacing an entry there, never following it), and describe the result.
    pub fn rename(&self, old: &Path, new: &Path) -> Result<Entry, HostFileError> {
        self.confined(|| {
            ops::rename(&self.place(old)?, old, &self.place(new)?, new)?;
            ops::stat(self, new)?.ok_or_else(|| HostFileError::NotFound { path: new.to_path_buf() })
        })
    }
}

/// At most `length` bytes of an opened `file` from `offset`, and whether they
/// reach its end (a full chunk may have more behind it: the next call finds out).
fn read_chunk(
    mut file: std::fs::File,
    path: &Path,
    offset: u64,
    length: u64,
) -> Result<(Vec<u8>, bool), HostFileError> {
    use std::io::{Read, Seek, SeekFrom};
    let mut data = Vec::new();
    file.seek(SeekFrom::Start(offset))
        .and_then(|_| Read::by_ref(&mut file).take(length).read_to_end(&mut data))
        .map_err(|error| HostFileError::io(path, error))?;
    let eof = (data.len() as u64) < length;
    Ok((data, eof))
}

fn refusal_of(denial: Denial<'_>) -> Refusal {
    match denial {
        Denial::Secret(secret) => Refusal::Secret(secret.to_path_buf()),
        Denial::Private(root) => Refusal::Private(root.to_path_buf()),
    }
}

/// The writable folders a refusal names: devices are not folders anyone writes files into.
fn writable_places(access: &FileAccess) -> Vec<PathBuf> {
    access.writable.iter().filter(|place| !place.starts_with("/dev")).cloned().collect()
}

#[cfg(all(test, unix))]
mod tests;
