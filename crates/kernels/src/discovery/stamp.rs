//! What identifies one state of a file: the memos on disk stay valid while it is unchanged.

use std::fs::Metadata;

/// Device, inode, size, modification and change time (ns) of a file, as
/// numbers that differ when the file was replaced or rewritten.
#[cfg(unix)]
pub fn file_stamp(meta: &Metadata) -> [i64; 5] {
    use std::os::unix::fs::MetadataExt;
    [
        meta.dev() as i64,
        meta.ino() as i64,
        meta.size() as i64,
        meta.mtime().saturating_mul(1_000_000_000).saturating_add(meta.mtime_nsec()),
        meta.ctime().saturating_mul(1_000_000_000).saturating_add(meta.ctime_nsec()),
    ]
}

/// Windows has no inode in stable std: size, modification and creation time
/// (100 ns ticks) stand in; a file replaced by one of the same size within
/// one tick is the only change missed.
#[cfg(windows)]
pub fn file_stamp(meta: &Metadata) -> [i64; 5] {
    use std::os::windows::fs::MetadataExt;
    [0, 0, meta.file_size() as i64, meta.last_write_time() as i64, meta.creation_time() as i64]
}
