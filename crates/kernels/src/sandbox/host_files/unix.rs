//! The operations by file descriptor (see the module above): reads open once
//! and check the descriptor; changes walk down from their writable folder
//! with `O_NOFOLLOW` and act on the last folder's descriptor.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::Write;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, UNIX_EPOCH};

use nix::errno::Errno;
use nix::fcntl::{AtFlags, OFlag, openat, readlinkat, renameat};
use nix::sys::stat::{FileStat, Mode, SFlag, fstat, fstatat, mkdirat};
use nix::unistd::{UnlinkatFlags, unlinkat};

use super::{Entry, HostFileError, HostFiles, Kind, Place, Stat};

/// Folders deeper than this below a removed one are not removed (each level holds a descriptor).
const MAX_REMOVE_DEPTH: usize = 256;
/// Folders deeper than this below a listed or watched one are listed, not entered.
const MAX_WALK_DEPTH: usize = 128;

fn io_error(path: &Path, errno: Errno) -> HostFileError {
    HostFileError::io(path, std::io::Error::from(errno))
}

fn stat_of(st: &FileStat) -> Stat {
    let kind = match SFlag::from_bits_truncate(st.st_mode as _) & SFlag::S_IFMT {
        SFlag::S_IFREG => Kind::File,
        SFlag::S_IFDIR => Kind::Dir,
        SFlag::S_IFLNK => Kind::Symlink,
        _ => Kind::Other,
    };
    let modified = (st.st_mtime >= 0)
        .then(|| UNIX_EPOCH + Duration::new(st.st_mtime as u64, st.st_mtime_nsec.clamp(0, 999_999_999) as u32));
    Stat {
        kind,
        size: st.st_size.max(0) as u64,
        mode: mode_bits(st),
        uid: st.st_uid,
        gid: st.st_gid,
        modified,
        inode: st.st_ino,
    }
}

/// `st_mode` as `u32` (it is narrower on some systems).
#[allow(clippy::useless_conversion, reason = "u16 on macOS")]
fn mode_bits(st: &FileStat) -> u32 {
    u32::from(st.st_mode)
}

fn kind_name(st: &FileStat) -> &'static str {
    match SFlag::from_bits_truncate(st.st_mode as _) & SFlag::S_IFMT {
        SFlag::S_IFDIR => "folder",
        SFlag::S_IFIFO => "FIFO",
        SFlag::S_IFSOCK => "socket",
        SFlag::S_IFCHR => "character device",
        SFlag::S_IFBLK => "block device",
        SFlag::S_IFLNK => "symlink",
        SFlag::S_IFREG => "regular file",
        _ => "special file",
    }
}

/// Where the open file `fd` really is, from the descriptor itself.
#[cfg(target_os = "linux")]
pub fn real_path(fd: BorrowedFd<'_>) -> Option<PathBuf> {
    std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd())).ok()
}

/// Where the open file `fd` really is, from the descriptor itself.
#[cfg(target_os = "macos")]
pub fn real_path(fd: BorrowedFd<'_>) -> Option<PathBuf> {
    let mut buffer = vec![0u8; libc::PATH_MAX as usize + 1];
    // SAFETY: F_GETPATH writes at most MAXPATHLEN bytes into the buffer.
    let rc = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETPATH, buffer.as_mut_ptr()) };
    if rc < 0 {
        return None;
    }
    let end = buffer.iter().position(|&b| b == 0)?;
    Some(PathBuf::from(OsStr::from_bytes(&buffer[..end])))
}

/// Other systems cannot say; the name checks made before opening stand.
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
pub fn real_path(_fd: BorrowedFd<'_>) -> Option<PathBuf> {
    None
}

/// What a read wants the path to be.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Want {
    /// A regular file, to read.
    File,
    /// A folder, to list.
    Dir,
    /// A folder to look up entries in (`fstatat`), not to list: on Linux it
    /// stays an `O_PATH` descriptor, as a kernel may look into a folder it may not list.
    Lookup,
}

/// Open `path` for reading, following symlinks as a kernel would, and check
/// what the descriptor holds: the kind wanted, and a real place that is
/// neither a system folder nor denied. On Linux the first open is `O_PATH`
/// (it opens no device and blocks on no FIFO) and the file is opened for
/// reading through that very descriptor; elsewhere `O_NONBLOCK` keeps a FIFO
/// from blocking.
fn open_checked(files: &HostFiles, path: &Path, want: Want) -> Result<OwnedFd, HostFileError> {
    #[cfg(target_os = "linux")]
    let first = OFlag::O_PATH | OFlag::O_CLOEXEC;
    #[cfg(not(target_os = "linux"))]
    let first = OFlag::O_RDONLY | OFlag::O_NONBLOCK | OFlag::O_NOCTTY | OFlag::O_CLOEXEC;
    let fd = nix::fcntl::open(path, first, Mode::empty()).map_err(|e| io_error(path, e))?;
    let st = fstat(&fd).map_err(|e| io_error(path, e))?;
    let kind = stat_of(&st).kind;
    match (want, kind) {
        (Want::File, Kind::File) | (Want::Dir | Want::Lookup, Kind::Dir) => {}
        (Want::File, Kind::Dir) => return Err(HostFileError::IsAFolder { path: path.to_path_buf() }),
        (Want::Dir | Want::Lookup, _) => return Err(HostFileError::NotAFolder { path: path.to_path_buf() }),
        (Want::File, _) => return Err(HostFileError::NotAFile { path: path.to_path_buf(), kind: kind_name(&st) }),
    }
    match real_path(fd.as_fd()) {
        Some(real) => files.check_real(path, &real)?,
        // Where this system can say where a descriptor is, not knowing is a refusal.
        None if cfg!(any(target_os = "linux", target_os = "macos")) => {
            return Err(HostFileError::Io {
                path: path.to_path_buf(),
                source: std::io::Error::other("where it leads cannot be told (a path too long?)"),
            });
        }
        None => {}
    }
    if let Some(root) = pseudo_filesystem(&fd) {
        return Err(HostFileError::System { path: path.to_path_buf(), root });
    }
    reopen(fd, want).map_err(|e| io_error(path, e))
}

/// The kind of kernel pseudo-filesystem `fd` is on (`/proc`, `/sys` and their
/// kin, wherever they are mounted: a container may have the host's `/proc`
/// at `/host/proc`), if it is on one.
#[cfg(target_os = "linux")]
fn pseudo_filesystem(fd: &OwnedFd) -> Option<&'static str> {
    const KINDS: &[(i64, &str)] = &[
        (0x9fa0, "/proc"),     // procfs
        (0x6265_6572, "/sys"), // sysfs
        (0x6462_6720, "/sys"), // debugfs
        (0x7472_6163, "/sys"), // tracefs
        (0x7363_6673, "/sys"), // securityfs
        (0x6367_7270, "/sys"), // cgroup2
        (0x0027_e0eb, "/sys"), // cgroup
        (0xcafe_4a11, "/sys"), // bpf
        (0x6165_676c, "/sys"), // pstore
        (0xde5e_81e4, "/sys"), // efivarfs
        (0x6265_6570, "/sys"), // configfs
        (0x6573_5543, "/sys"), // fusectl
        (0x1cd1, "/dev"),      // devpts
        (0x1980_0202, "/dev"), // mqueue
    ];
    let kind = nix::sys::statfs::fstatfs(fd).ok()?.filesystem_type().0 as i64;
    KINDS.iter().find(|(magic, _)| *magic == kind).map(|(_, root)| *root)
}

#[cfg(not(target_os = "linux"))]
fn pseudo_filesystem(_fd: &OwnedFd) -> Option<&'static str> {
    None
}

/// `fd` (checked) opened for reading.
#[cfg(target_os = "linux")]
fn reopen(fd: OwnedFd, want: Want) -> nix::Result<OwnedFd> {
    match want {
        Want::Lookup => Ok(fd),
        Want::Dir => openat(&fd, ".", OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC, Mode::empty()),
        // The magic link leads to the very file `fd` holds, whatever its name now leads to.
        Want::File => nix::fcntl::open(
            format!("/proc/self/fd/{}", fd.as_raw_fd()).as_str(),
            OFlag::O_RDONLY | OFlag::O_NOCTTY | OFlag::O_CLOEXEC,
            Mode::empty(),
        ),
    }
}

#[cfg(not(target_os = "linux"))]
fn reopen(fd: OwnedFd, _want: Want) -> nix::Result<OwnedFd> {
    Ok(fd)
}

pub(super) fn read(files: &HostFiles, path: &Path, offset: u64, length: u64) -> Result<(Vec<u8>, bool), HostFileError> {
    super::read_chunk(File::from(open_checked(files, path, Want::File)?), path, offset, length)
}

/// How the folders of a walk are opened: on Linux as `O_PATH`, which reads
/// nothing (a writable folder on the way to a secret cannot be listed, yet
/// its entries can be written); elsewhere for reading.
#[cfg(target_os = "linux")]
const WALK: OFlag = OFlag::O_PATH;
#[cfg(not(target_os = "linux"))]
const WALK: OFlag = OFlag::O_RDONLY;

/// The folder `below` under the writable `folder`, reached one component at
/// a time without following a symlink (missing ones made when `create`).
fn walk(folder: &Path, below: &Path, create: bool, path: &Path) -> Result<OwnedFd, HostFileError> {
    let flags = WALK | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC;
    let mut dir = nix::fcntl::open(folder, flags, Mode::empty()).map_err(|e| io_error(folder, e))?;
    // The writable folder itself may be a kernel's to swap (an --allow-write folder inside the
    // workspace): it must be where it was resolved to.
    if real_path(dir.as_fd()).is_some_and(|real| real != folder) {
        return Err(HostFileError::Symlink { path: path.to_path_buf(), link: folder.to_path_buf() });
    }
    let mut reached = folder.to_path_buf();
    for component in below.components() {
        let std::path::Component::Normal(name) = component else { continue };
        reached.push(name);
        let next = match openat(&dir, name, flags | OFlag::O_NOFOLLOW, Mode::empty()) {
            Err(Errno::ENOENT) if create => {
                match mkdirat(&dir, name, Mode::from_bits_truncate(0o777)) {
                    Ok(()) | Err(Errno::EEXIST) => {}
                    Err(e) => return Err(io_error(&reached, e)),
                }
                openat(&dir, name, flags | OFlag::O_NOFOLLOW, Mode::empty())
            }
            other => other,
        };
        dir = match next {
            Ok(next) => next,
            Err(Errno::ENOENT) => return Err(HostFileError::NoParent { path: path.to_path_buf() }),
            Err(Errno::ELOOP | Errno::ENOTDIR) => return Err(refuse_entry(&dir, name, &reached, path)),
            Err(e) => return Err(io_error(&reached, e)),
        };
    }
    Ok(dir)
}

/// The error for the entry `name` of `dir` that a walk could not enter: a symlink, or not a folder.
fn refuse_entry(dir: &OwnedFd, name: &OsStr, reached: &Path, path: &Path) -> HostFileError {
    match fstatat(dir, name, AtFlags::AT_SYMLINK_NOFOLLOW).map(|st| stat_of(&st).kind) {
        Ok(Kind::Symlink) => HostFileError::Symlink { path: path.to_path_buf(), link: reached.to_path_buf() },
        _ => HostFileError::NotAFolder { path: reached.to_path_buf() },
    }
}

/// The entry `name` of `dir` without following it; `None` when missing.
fn entry_stat(dir: &impl AsFd, name: &OsStr, path: &Path) -> Result<Option<FileStat>, HostFileError> {
    match fstatat(dir, name, AtFlags::AT_SYMLINK_NOFOLLOW) {
        Ok(st) => Ok(Some(st)),
        Err(Errno::ENOENT) => Ok(None),
        Err(e) => Err(io_error(path, e)),
    }
}

/// Open the entry `name` of `dir` for writing: never through a symlink, a
/// regular file only (made when missing), emptied unless `append`.
fn open_for_write(dir: &OwnedFd, name: &OsStr, path: &Path, append: bool) -> Result<File, HostFileError> {
    let mut flags =
        OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK | OFlag::O_NOCTTY | OFlag::O_CLOEXEC;
    if append {
        flags |= OFlag::O_APPEND;
    }
    let fd = match openat(dir, name, flags, Mode::from_bits_truncate(0o666)) {
        Ok(fd) => fd,
        Err(Errno::ELOOP) => {
            return Err(HostFileError::Symlink { path: path.to_path_buf(), link: path.to_path_buf() });
        }
        Err(Errno::EISDIR) => return Err(HostFileError::IsAFolder { path: path.to_path_buf() }),
        Err(Errno::ENXIO) => return Err(HostFileError::NotAFile { path: path.to_path_buf(), kind: "FIFO" }),
        Err(e) => return Err(io_error(path, e)),
    };
    let st = fstat(&fd).map_err(|e| io_error(path, e))?;
    if stat_of(&st).kind != Kind::File {
        return Err(HostFileError::NotAFile { path: path.to_path_buf(), kind: kind_name(&st) });
    }
    let file = File::from(fd);
    if !append {
        file.set_len(0).map_err(|e| HostFileError::io(path, e))?;
    }
    Ok(file)
}

pub(super) fn write(place: &Place, path: &Path, data: &[u8], append: bool) -> Result<(), HostFileError> {
    let dir = walk(&place.folder, &place.below, true, path)?;
    let mut file = open_for_write(&dir, &place.name, path, append)?;
    file.write_all(data).map_err(|e| HostFileError::io(path, e))
}

pub(super) fn replace(place: &Place, path: &Path, data: &[u8]) -> Result<(), HostFileError> {
    let dir = walk(&place.folder, &place.below, false, path)?;
    let mode = match entry_stat(&dir, &place.name, path)? {
        None => 0o644,
        Some(st) => match stat_of(&st).kind {
            Kind::File => mode_bits(&st) & 0o7777,
            Kind::Dir => return Err(HostFileError::IsAFolder { path: path.to_path_buf() }),
            Kind::Symlink => {
                return Err(HostFileError::Symlink { path: path.to_path_buf(), link: path.to_path_buf() });
            }
            Kind::Other => return Err(HostFileError::NotAFile { path: path.to_path_buf(), kind: kind_name(&st) }),
        },
    };
    let mut suffix = [0u8; 6];
    getrandom::fill(&mut suffix).map_err(|e| HostFileError::io(path, std::io::Error::other(e.to_string())))?;
    let mut temp = OsString::from(".");
    temp.push(&place.name);
    temp.push(format!(".{}.tmp", suffix.iter().map(|b| format!("{b:02x}")).collect::<String>()));
    let flags = OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    let fd = openat(&dir, temp.as_os_str(), flags, Mode::from_bits_truncate(0o600)).map_err(|e| io_error(path, e))?;
    let mut file = File::from(fd);
    let written = file
        .write_all(data)
        .and_then(|()| {
            use std::os::unix::fs::PermissionsExt;
            file.set_permissions(std::fs::Permissions::from_mode(mode))
        })
        .map_err(|e| HostFileError::io(path, e))
        .and_then(|()| renameat(&dir, temp.as_os_str(), &dir, place.name.as_os_str()).map_err(|e| io_error(path, e)));
    if written.is_err() {
        let _ = unlinkat(&dir, temp.as_os_str(), UnlinkatFlags::NoRemoveDir);
    }
    written
}

pub(super) fn make_dir(place: &Place, path: &Path) -> Result<bool, HostFileError> {
    let dir = walk(&place.folder, &place.below, true, path)?;
    match entry_stat(&dir, &place.name, path)? {
        Some(st) => match stat_of(&st).kind {
            Kind::Dir => Ok(false),
            Kind::Symlink => Err(HostFileError::Symlink { path: path.to_path_buf(), link: path.to_path_buf() }),
            _ => Err(HostFileError::Io {
                path: path.to_path_buf(),
                source: std::io::Error::other("it exists and is not a folder"),
            }),
        },
        None => match mkdirat(&dir, place.name.as_os_str(), Mode::from_bits_truncate(0o777)) {
            Ok(()) => Ok(true),
            Err(Errno::EEXIST) => Ok(false),
            Err(e) => Err(io_error(path, e)),
        },
    }
}

pub(super) fn remove(place: &Place, path: &Path) -> Result<bool, HostFileError> {
    let dir = match walk(&place.folder, &place.below, false, path) {
        Err(HostFileError::NoParent { .. }) => return Ok(false),
        other => other?,
    };
    let Some(st) = entry_stat(&dir, &place.name, path)? else { return Ok(false) };
    if stat_of(&st).kind == Kind::Dir {
        remove_tree(&dir, &place.name, path, 0)?;
    } else {
        unlinkat(&dir, place.name.as_os_str(), UnlinkatFlags::NoRemoveDir).map_err(|e| io_error(path, e))?;
    }
    Ok(true)
}

/// Remove the folder `name` of `parent` and everything in it, never following a symlink.
fn remove_tree(parent: &OwnedFd, name: &OsStr, path: &Path, depth: usize) -> Result<(), HostFileError> {
    if depth > MAX_REMOVE_DEPTH {
        return Err(HostFileError::Io {
            path: path.to_path_buf(),
            source: std::io::Error::other(format!(
                "folders nest deeper than {MAX_REMOVE_DEPTH}; remove the inner ones first"
            )),
        });
    }
    let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    let fd = openat(parent, name, flags, Mode::empty()).map_err(|e| io_error(path, e))?;
    let names = entry_names(&fd, usize::MAX).map_err(|e| io_error(path, e))?.unwrap_or_default();
    for child in names {
        let Some(st) = entry_stat(&fd, &child, path)? else { continue };
        if stat_of(&st).kind == Kind::Dir {
            remove_tree(&fd, &child, path, depth + 1)?;
        } else {
            unlinkat(&fd, child.as_os_str(), UnlinkatFlags::NoRemoveDir).map_err(|e| io_error(path, e))?;
        }
    }
    unlinkat(parent, name, UnlinkatFlags::RemoveDir).map_err(|e| io_error(path, e))
}

pub(super) fn rename(old: &Place, old_path: &Path, new: &Place, new_path: &Path) -> Result<(), HostFileError> {
    let from = walk(&old.folder, &old.below, false, old_path)?;
    let to = walk(&new.folder, &new.below, false, new_path)?;
    if entry_stat(&from, &old.name, old_path)?.is_none() {
        return Err(HostFileError::NotFound { path: old_path.to_path_buf() });
    }
    renameat(&from, old.name.as_os_str(), &to, new.name.as_os_str()).map_err(|e| match e {
        Errno::ENOENT => HostFileError::NoParent { path: new_path.to_path_buf() },
        other => io_error(new_path, other),
    })
}

/// The names in the open folder `dir` (not `.` and `..`), sorted; `None`
/// when it holds more than `limit` (they are not all read).
fn entry_names(dir: &OwnedFd, limit: usize) -> nix::Result<Option<Vec<OsString>>> {
    let fd = openat(dir, ".", OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC, Mode::empty())?;
    let mut listing = nix::dir::Dir::from_fd(fd)?;
    let mut names = Vec::new();
    for entry in listing.iter() {
        let name = OsStr::from_bytes(entry?.file_name().to_bytes()).to_os_string();
        if name != "." && name != ".." {
            if names.len() >= limit {
                return Ok(None);
            }
            names.push(name);
        }
    }
    names.sort();
    Ok(Some(names))
}

/// Describe the entry `name` of the open folder `dir`, shown as `shown`, whose real path is `real`.
fn describe(files: &HostFiles, dir: &OwnedFd, name: &OsStr, st: &FileStat, shown: PathBuf, real: &Path) -> Entry {
    let own = stat_of(st);
    if own.kind != Kind::Symlink {
        return Entry { path: shown, stat: own, link: None };
    }
    let text = readlinkat(dir, name).map(PathBuf::from).unwrap_or_default();
    let written = real.parent().map_or(text.clone(), |parent| super::lexical(&parent.join(&text)));
    // The target, followed as a kernel would follow it, described only where it may be read.
    let followed = openat(dir, name, follow_flags(), Mode::empty()).ok().and_then(|fd| {
        let target = real_path(fd.as_fd()).unwrap_or_else(|| written.clone());
        files.check_real(&shown, &target).ok()?;
        Some((target, stat_of(&fstat(&fd).ok()?)))
    });
    match followed {
        Some((target, stat)) => Entry { path: shown, stat, link: Some((target, true)) },
        None => Entry { path: shown, stat: own, link: Some((written, false)) },
    }
}

#[cfg(target_os = "linux")]
fn follow_flags() -> OFlag {
    OFlag::O_PATH | OFlag::O_CLOEXEC
}

#[cfg(not(target_os = "linux"))]
fn follow_flags() -> OFlag {
    OFlag::O_RDONLY | OFlag::O_NONBLOCK | OFlag::O_NOCTTY | OFlag::O_CLOEXEC
}

pub(super) fn stat(files: &HostFiles, path: &Path) -> Result<Option<Entry>, HostFileError> {
    // The entry by itself, as it resolves (the root folder, or a principal's own folder).
    let itself = || {
        let fd = open_checked(files, path, Want::Lookup)?;
        let st = fstat(&fd).map_err(|e| io_error(path, e))?;
        Ok(Some(Entry { path: path.to_path_buf(), stat: stat_of(&st), link: None }))
    };
    let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else { return itself() };
    let dir = match open_checked(files, parent, Want::Lookup) {
        Err(HostFileError::NotFound { .. } | HostFileError::NotAFolder { .. }) => return Ok(None),
        // A closed folder (a private root) may hold one's own entry: that one is looked at
        // by itself, and any other is refused by its own check.
        Err(HostFileError::Refused { .. }) => {
            return match itself() {
                Err(HostFileError::NotFound { .. } | HostFileError::NotAFolder { .. }) => Ok(None),
                other => other,
            };
        }
        other => other?,
    };
    let Some(st) = entry_stat(&dir, name, path)? else { return Ok(None) };
    let real = real_path(dir.as_fd()).unwrap_or_else(|| parent.to_path_buf()).join(name);
    files.check_real(path, &real)?;
    Ok(Some(describe(files, &dir, name, &st, path.to_path_buf(), &real)))
}

/// A walk of a folder tree: entries depth-first in name order, folders (not
/// symlinks, not unreachable ones) entered while `depth` lasts.
struct Walk<'a> {
    files: &'a HostFiles,
    top: &'a Path,
    limit: usize,
    out: Vec<(PathBuf, FileStat, Entry)>,
    describe: bool,
}

impl Walk<'_> {
    fn folder(&mut self, dir: &OwnedFd, relative: &Path, real: &Path, depth: u64) -> Result<(), HostFileError> {
        let shown = self.top.join(relative);
        let room = self.limit.saturating_sub(self.out.len());
        let names = entry_names(dir, room)
            .map_err(|e| io_error(&shown, e))?
            .ok_or_else(|| HostFileError::TooMany { path: self.top.to_path_buf(), limit: self.limit })?;
        for name in names {
            let child_real = real.join(&name);
            if self.files.check_real(&shown, &child_real).is_err() {
                continue;
            }
            let Ok(Some(st)) = entry_stat(dir, &name, &shown) else { continue };
            if self.out.len() >= self.limit {
                return Err(HostFileError::TooMany { path: self.top.to_path_buf(), limit: self.limit });
            }
            let child = relative.join(&name);
            let entry = if self.describe {
                describe(self.files, dir, &name, &st, self.top.join(&child), &child_real)
            } else {
                Entry { path: child.clone(), stat: stat_of(&st), link: None }
            };
            let enter = depth > 1 && stat_of(&st).kind == Kind::Dir && relative.components().count() < MAX_WALK_DEPTH;
            self.out.push((child.clone(), st, entry));
            if enter {
                let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
                // A folder that cannot be opened (unreadable, or swapped meanwhile) is listed, not entered.
                if let Ok(fd) = openat(dir, name.as_os_str(), flags, Mode::empty()) {
                    self.folder(&fd, &child, &child_real, depth - 1)?;
                }
            }
        }
        Ok(())
    }
}

fn walk_tree(
    files: &HostFiles,
    path: &Path,
    depth: u64,
    limit: usize,
    describe: bool,
) -> Result<Vec<(PathBuf, FileStat, Entry)>, HostFileError> {
    let dir = open_checked(files, path, Want::Dir)?;
    let real = real_path(dir.as_fd()).unwrap_or_else(|| super::resolve(path));
    let mut walk = Walk { files, top: path, limit, out: Vec::new(), describe };
    walk.folder(&dir, Path::new(""), &real, depth)?;
    Ok(walk.out)
}

pub(super) fn list(files: &HostFiles, path: &Path, depth: u64, limit: usize) -> Result<Vec<Entry>, HostFileError> {
    Ok(walk_tree(files, path, depth, limit, true)?.into_iter().map(|(_, _, entry)| entry).collect())
}

pub(super) fn scan(
    files: &HostFiles,
    dir: &Path,
    recursive: bool,
    limit: usize,
) -> Result<Vec<(PathBuf, Stat)>, HostFileError> {
    let depth = if recursive { u64::MAX } else { 1 };
    Ok(walk_tree(files, dir, depth, limit, false)?
        .into_iter()
        .map(|(relative, st, _)| (relative, stat_of(&st)))
        .collect())
}
