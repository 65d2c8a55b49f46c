//! The operations on systems without Unix descriptors (Windows): plain file
//! calls after the name checks. Kernels there have no sandbox either (see
//! [`crate::sandbox`]), so the checks keep the configured policy, not a wall.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::{Entry, HostFileError, HostFiles, Kind, Place, Stat};

fn stat_of(meta: &std::fs::Metadata) -> Stat {
    let kind = if meta.file_type().is_symlink() {
        Kind::Symlink
    } else if meta.is_dir() {
        Kind::Dir
    } else if meta.is_file() {
        Kind::File
    } else {
        Kind::Other
    };
    let mode = match (kind, meta.permissions().readonly()) {
        (Kind::Dir, _) => 0o040755,
        (_, true) => 0o100444,
        (_, false) => 0o100644,
    };
    Stat { kind, size: meta.len(), mode, uid: 0, gid: 0, modified: meta.modified().ok(), inode: 0 }
}

fn path_of(place: &Place) -> PathBuf {
    place.folder.join(&place.below).join(&place.name)
}

fn refuse_symlink(path: &Path, target: &Path) -> Result<(), HostFileError> {
    match std::fs::symlink_metadata(target) {
        Ok(meta) if meta.file_type().is_symlink() => {
            Err(HostFileError::Symlink { path: path.to_path_buf(), link: target.to_path_buf() })
        }
        _ => Ok(()),
    }
}

pub(super) fn read(
    _files: &HostFiles,
    path: &Path,
    offset: u64,
    length: u64,
) -> Result<(Vec<u8>, bool), HostFileError> {
    let meta = std::fs::metadata(path).map_err(|e| HostFileError::io(path, e))?;
    if meta.is_dir() {
        return Err(HostFileError::IsAFolder { path: path.to_path_buf() });
    }
    if !meta.is_file() {
        return Err(HostFileError::NotAFile { path: path.to_path_buf(), kind: "special file" });
    }
    let file = std::fs::File::open(path).map_err(|e| HostFileError::io(path, e))?;
    super::read_chunk(file, path, offset, length)
}

pub(super) fn write(place: &Place, path: &Path, data: &[u8], append: bool) -> Result<(), HostFileError> {
    let target = path_of(place);
    refuse_symlink(path, &target)?;
    if target.is_dir() {
        return Err(HostFileError::IsAFolder { path: path.to_path_buf() });
    }
    if let Some(parent) = target.parent() {
        std::fs::create_dir_all(parent).map_err(|e| HostFileError::io(path, e))?;
    }
    let mut options = std::fs::OpenOptions::new();
    options.create(true).write(true).append(append).truncate(!append);
    options.open(&target).and_then(|mut file| file.write_all(data)).map_err(|e| HostFileError::io(path, e))
}

pub(super) fn replace(place: &Place, path: &Path, data: &[u8]) -> Result<(), HostFileError> {
    let target = path_of(place);
    refuse_symlink(path, &target)?;
    let dir = target.parent().unwrap_or(Path::new("."));
    let mut file = tempfile::NamedTempFile::new_in(dir).map_err(|e| HostFileError::io(path, e))?;
    file.write_all(data).map_err(|e| HostFileError::io(path, e))?;
    file.persist(&target).map_err(|e| HostFileError::io(path, e.error))?;
    Ok(())
}

pub(super) fn make_dir(place: &Place, path: &Path) -> Result<bool, HostFileError> {
    let target = path_of(place);
    refuse_symlink(path, &target)?;
    match std::fs::metadata(&target) {
        Ok(meta) if meta.is_dir() => Ok(false),
        Ok(_) => Err(HostFileError::Io {
            path: path.to_path_buf(),
            source: std::io::Error::other("it exists and is not a folder"),
        }),
        Err(_) => std::fs::create_dir_all(&target).map(|()| true).map_err(|e| HostFileError::io(path, e)),
    }
}

pub(super) fn remove(place: &Place, path: &Path) -> Result<bool, HostFileError> {
    let target = path_of(place);
    let meta = match std::fs::symlink_metadata(&target) {
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        other => other.map_err(|e| HostFileError::io(path, e))?,
    };
    let removed = if meta.is_dir() { std::fs::remove_dir_all(&target) } else { std::fs::remove_file(&target) };
    removed.map(|()| true).map_err(|e| HostFileError::io(path, e))
}

pub(super) fn rename(old: &Place, old_path: &Path, new: &Place, new_path: &Path) -> Result<(), HostFileError> {
    let (from, to) = (path_of(old), path_of(new));
    std::fs::symlink_metadata(&from).map_err(|e| HostFileError::io(old_path, e))?;
    std::fs::rename(&from, &to).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => HostFileError::NoParent { path: new_path.to_path_buf() },
        _ => HostFileError::io(new_path, e),
    })
}

fn describe(files: &HostFiles, path: &Path) -> Result<Option<Entry>, HostFileError> {
    let own = match std::fs::symlink_metadata(path) {
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        other => stat_of(&other.map_err(|e| HostFileError::io(path, e))?),
    };
    if own.kind != Kind::Symlink {
        return Ok(Some(Entry { path: path.to_path_buf(), stat: own, link: None }));
    }
    let target = super::resolve(path);
    let readable = files.check_real(path, &target).is_ok();
    match std::fs::metadata(path) {
        Ok(meta) if readable => {
            Ok(Some(Entry { path: path.to_path_buf(), stat: stat_of(&meta), link: Some((target, true)) }))
        }
        _ => Ok(Some(Entry { path: path.to_path_buf(), stat: own, link: Some((target, false)) })),
    }
}

pub(super) fn stat(files: &HostFiles, path: &Path) -> Result<Option<Entry>, HostFileError> {
    describe(files, path)
}

fn walk(
    files: &HostFiles,
    top: &Path,
    relative: &Path,
    depth: u64,
    limit: usize,
    out: &mut Vec<Entry>,
) -> Result<(), HostFileError> {
    let dir = top.join(relative);
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .map_err(|e| HostFileError::io(&dir, e))?
        .filter_map(|entry| entry.ok().map(|e| e.file_name()))
        .collect();
    names.sort();
    for name in names {
        let child = relative.join(&name);
        let shown = top.join(&child);
        if files.check_real(&shown, &super::resolve(&shown)).is_err() {
            continue;
        }
        let Ok(Some(entry)) = describe(files, &shown) else { continue };
        if out.len() >= limit {
            return Err(HostFileError::TooMany { path: top.to_path_buf(), limit });
        }
        let enter =
            depth > 1 && entry.stat.kind == Kind::Dir && entry.link.is_none() && relative.components().count() < 128;
        out.push(entry);
        if enter {
            // A folder that cannot be read is listed, not entered; a walk past the limit ends here.
            if let Err(error @ HostFileError::TooMany { .. }) = walk(files, top, &child, depth - 1, limit, out) {
                return Err(error);
            }
        }
    }
    Ok(())
}

pub(super) fn list(files: &HostFiles, path: &Path, depth: u64, limit: usize) -> Result<Vec<Entry>, HostFileError> {
    if !std::fs::metadata(path).map_err(|e| HostFileError::io(path, e))?.is_dir() {
        return Err(HostFileError::NotAFolder { path: path.to_path_buf() });
    }
    let mut out = Vec::new();
    walk(files, path, Path::new(""), depth, limit, &mut out)?;
    Ok(out)
}

pub(super) fn scan(
    files: &HostFiles,
    dir: &Path,
    recursive: bool,
    limit: usize,
) -> Result<Vec<(PathBuf, Stat)>, HostFileError> {
    let entries = list(files, dir, if recursive { u64::MAX } else { 1 }, limit)?;
    Ok(entries
        .into_iter()
        .map(|entry| (entry.path.strip_prefix(dir).map(Path::to_path_buf).unwrap_or_default(), entry.stat))
        .collect())
}
