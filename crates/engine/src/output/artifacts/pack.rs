//! Small artifacts of one session, many to a file.
//!
//! A file per call cost a new inode and directory entry every time, the
//! largest part of a warm call's CPU once the rest was cut. The saver appends
//! each small artifact to its session's current *pack* instead:
//! `<session-hash>/<millis>-<seq>.pack`, named after its first record. A pack
//! takes no more records once it is [`PACK_BYTES`] long or [`PACK_AGE`] old,
//! or after a write to it failed: pruning by age then frees space in a session
//! that never ends, no pack is written to by the time it can be pruned, and a
//! record cut short by a failed write is the last of its pack.
//!
//! A record is a header line, `<millis>-<seq> <length>\n`, and then `length`
//! bytes, written with one `write` to a file opened for appending (records of
//! a closing host's calls beside the saver's land whole, one after the other,
//! on a local file system). Reading an id reads the session's packs, newest
//! first, from header to header; what is not a whole record ends a pack. What
//! was read of each pack is kept ([`Index`]), so reading again only reads what
//! was appended since.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

/// A pack takes no new record past this size. Tests make it small, to cross it.
#[cfg(not(test))]
pub(super) const PACK_BYTES: u64 = 16 << 20;
#[cfg(test)]
pub(super) const PACK_BYTES: u64 = 4 << 10;

/// Nor once its first record is this old: a record outlives the retention by
/// at most this much, and a pack old enough to be pruned is never written to.
pub(super) const PACK_AGE: Duration = Duration::from_secs(3600);

/// The file name ending of packs.
pub(super) const EXTENSION: &str = ".pack";

/// Longest header a reader accepts: three 20-digit numbers, a dash, a space, a newline.
const MAX_HEADER: u64 = 64;

/// Records remembered across all packs at most; past it the index starts over.
const MAX_INDEXED: usize = 200_000;

/// The bytes to append for the artifact `name` (`<millis>-<seq>`).
pub(super) fn record(name: &str, bytes: &[u8]) -> Vec<u8> {
    let header = format!("{name} {}\n", bytes.len());
    let mut record = Vec::with_capacity(header.len() + bytes.len());
    record.extend_from_slice(header.as_bytes());
    record.extend_from_slice(bytes);
    record
}

/// `<millis>-<seq>`: two runs of digits, each a `u64`.
pub(super) fn parse_name(name: &str) -> Option<(u64, u64)> {
    let (millis, seq) = name.split_once('-')?;
    let digits = |s: &str| !s.is_empty() && s.len() <= 20 && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(millis) || !digits(seq) {
        return None;
    }
    Some((millis.parse().ok()?, seq.parse().ok()?))
}

/// One record: its name, where its bytes start in the pack, how many there are.
type Entry = (String, u64, u64);

/// What was read of each pack: its whole records and where reading stopped.
#[derive(Debug, Default)]
pub(super) struct Index {
    packs: Mutex<HashMap<PathBuf, Scanned>>,
}

#[derive(Debug, Default)]
struct Scanned {
    records: Vec<Entry>,
    /// Where the next header would start.
    end: u64,
}

impl Index {
    /// Where the record `name` lies in `folder`'s packs: the pack, where its
    /// bytes start, and how many there are.
    pub(super) fn find(&self, folder: &Path, name: &str) -> std::io::Result<Option<(PathBuf, u64, u64)>> {
        for pack in packs(folder)? {
            let found = self.with_records(&pack, |records| {
                records.iter().find(|(record, ..)| record == name).map(|&(_, start, length)| (start, length))
            })?;
            if let Some((start, length)) = found {
                return Ok(Some((pack, start, length)));
            }
        }
        Ok(None)
    }

    /// Every record in `folder`'s packs: (name, length). A pack that cannot be
    /// read is left out.
    pub(super) fn records(&self, folder: &Path) -> Vec<(String, u64)> {
        let mut all = Vec::new();
        for pack in packs(folder).unwrap_or_default() {
            let _ = self.with_records(&pack, |records| {
                all.extend(records.iter().map(|(name, _, length)| (name.clone(), *length)));
            });
        }
        all
    }

    /// Bring `pack`'s entry up to date (reading only what was appended since)
    /// and look at its records.
    fn with_records<T>(&self, pack: &Path, look: impl FnOnce(&[Entry]) -> T) -> std::io::Result<T> {
        let mut packs = self.packs.lock().unwrap();
        if packs.values().map(|scanned| scanned.records.len()).sum::<usize>() > MAX_INDEXED {
            packs.clear();
        }
        let scanned = packs.entry(pack.to_path_buf()).or_default();
        if let Err(error) = scan(pack, scanned) {
            packs.remove(pack);
            return Err(error);
        }
        Ok(look(&scanned.records))
    }
}

/// The packs in `folder`, newest first (by the record each is named after).
/// Only regular files: a FIFO or a link by a pack's name is not one.
fn packs(folder: &Path) -> std::io::Result<Vec<PathBuf>> {
    let entries = match std::fs::read_dir(folder) {
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        entries => entries?,
    };
    let mut found: Vec<((u64, u64), PathBuf)> = entries
        .flatten()
        .filter(|entry| entry.file_type().is_ok_and(|kind| kind.is_file()))
        .filter_map(|entry| {
            let name = entry.file_name().into_string().ok()?;
            let order = parse_name(name.strip_suffix(EXTENSION)?)?;
            Some((order, entry.path()))
        })
        .collect();
    found.sort_by_key(|(order, _)| std::cmp::Reverse(*order));
    Ok(found.into_iter().map(|(_, path)| path).collect())
}

/// Read `pack`'s whole records from `scanned.end` on. A pack shorter than what
/// was read before was replaced: it is read again from the start.
fn scan(pack: &Path, scanned: &mut Scanned) -> std::io::Result<()> {
    let file = open_for_reading(pack)?;
    let size = file.metadata()?.len();
    if size < scanned.end {
        *scanned = Scanned::default();
    }
    if size == scanned.end {
        return Ok(());
    }
    let mut reader = BufReader::with_capacity(64 << 10, file);
    reader.seek_relative(scanned.end as i64)?;
    let mut header = Vec::with_capacity(MAX_HEADER as usize);
    loop {
        header.clear();
        if reader.by_ref().take(MAX_HEADER).read_until(b'\n', &mut header)? == 0 {
            return Ok(());
        }
        let Some(line) = header.strip_suffix(b"\n").and_then(|line| std::str::from_utf8(line).ok()) else {
            return Ok(());
        };
        let Some((name, length)) = line.split_once(' ') else { return Ok(()) };
        let (Some(_), Ok(length)) = (parse_name(name), length.parse::<u64>()) else { return Ok(()) };
        let start = scanned.end + header.len() as u64;
        if start.checked_add(length).is_none_or(|end| end > size) {
            return Ok(());
        }
        scanned.records.push((name.to_string(), start, length));
        scanned.end = start + length;
        reader.seek_relative(length as i64)?;
    }
}

/// Open a pack to read it: never through a link, never waiting on a FIFO.
pub(super) fn open_for_reading(pack: &Path) -> std::io::Result<File> {
    let mut options = File::options();
    options.read(true);
    open_regular(pack, options)
}

/// Open `path` with `options` only if it is a regular file: a symlink at its
/// name is not followed, and a FIFO or a device there is refused, not waited on.
pub(super) fn open_regular(path: &Path, options: std::fs::OpenOptions) -> std::io::Result<File> {
    #[cfg(unix)]
    let options = {
        use nix::fcntl::OFlag;
        let mut options = options;
        std::os::unix::fs::OpenOptionsExt::custom_flags(&mut options, (OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK).bits());
        options
    };
    let file = options.open(path)?;
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::other(format!("{} is not a regular file", path.display())));
    }
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_are_found_by_name_and_a_cut_or_foreign_tail_ends_the_pack() {
        let dir = tempfile::tempdir().unwrap();
        let mut bytes = Vec::new();
        bytes.extend(record("5-1", b"first\n"));
        bytes.extend(record("5-2", b""));
        bytes.extend(record("6-3", "é\n".as_bytes()));
        bytes.extend_from_slice(b"7-4 100\nonly a part");
        std::fs::write(dir.path().join("5-1.pack"), &bytes).unwrap();
        // Not packs: another name, a header of a huge length, a run of digits with no end.
        std::fs::write(dir.path().join("notes.pack"), record("8-1", b"x")).unwrap();
        std::fs::write(dir.path().join("9-1.pack"), b"9-1 18446744073709551615\n").unwrap();
        let mut endless = b"9-3 1".to_vec();
        endless.extend(vec![b'0'; 1 << 16]);
        endless.extend_from_slice(b"\nx");
        std::fs::write(dir.path().join("9-2.pack"), endless).unwrap();
        let index = Index::default();
        let (pack, start, length) = index.find(dir.path(), "6-3").unwrap().unwrap();
        let text = std::fs::read(&pack).unwrap();
        assert_eq!(&text[start as usize..(start + length) as usize], "é\n".as_bytes());
        assert_eq!(index.find(dir.path(), "5-2").unwrap().map(|(_, _, length)| length), Some(0));
        assert!(index.find(dir.path(), "7-4").unwrap().is_none(), "a record cut short is not one");
        assert!(index.find(dir.path(), "8-1").unwrap().is_none());
        assert!(index.find(dir.path(), "9-3").unwrap().is_none(), "a header past 64 bytes is not one");
        let listed = index.records(dir.path());
        assert_eq!(listed, [("5-1".into(), 6), ("5-2".into(), 0), ("6-3".into(), 3)]);
    }

    #[test]
    fn what_was_appended_since_is_read_and_a_replaced_pack_is_read_again() {
        let dir = tempfile::tempdir().unwrap();
        let pack = dir.path().join("1-1.pack");
        std::fs::write(&pack, record("1-1", b"one")).unwrap();
        let index = Index::default();
        assert_eq!(index.records(dir.path()).len(), 1);
        let mut more = std::fs::File::options().append(true).open(&pack).unwrap();
        std::io::Write::write_all(&mut more, &record("1-2", b"two")).unwrap();
        assert_eq!(index.find(dir.path(), "1-2").unwrap().map(|(_, _, length)| length), Some(3));
        std::fs::write(&pack, record("1-9", b"")).unwrap();
        assert_eq!(index.records(dir.path()), [("1-9".into(), 0)], "shorter than before: read anew");
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_or_a_link_by_a_packs_name_is_not_read() {
        let dir = tempfile::tempdir().unwrap();
        nix::unistd::mkfifo(&dir.path().join("9-9.pack"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        let outside = dir.path().join("elsewhere");
        std::fs::write(&outside, record("9-8", b"secret")).unwrap();
        std::os::unix::fs::symlink(&outside, dir.path().join("9-8.pack")).unwrap();
        let index = Index::default();
        assert!(index.find(dir.path(), "9-8").unwrap().is_none(), "a link is not followed");
        assert!(index.records(dir.path()).is_empty());
        assert!(open_for_reading(&dir.path().join("9-9.pack")).is_err(), "nor a FIFO waited on");
    }

    #[test]
    fn names_are_two_numbers() {
        for bad in ["", "1", "1-", "-1", "1-2-3", "a-1", "1-1/..", "1 -1", "123456789012345678901-1"] {
            assert!(parse_name(bad).is_none(), "{bad:?}");
        }
        assert_eq!(parse_name("1700000000000-42"), Some((1_700_000_000_000, 42)));
    }
}
