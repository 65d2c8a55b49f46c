//! Full call output on disk, addressed as `artifact://<id>`.
//!
//! Each call's output is appended to a file as it streams, so the host keeps
//! only bounded text in memory while nothing is lost. Files live in a folder
//! per session: `<root>/<session-hash>/<millis>-<seq>.log`, and the id is
//! `<session-hash>-<millis>-<seq>`: an id names its file without ever being
//! used as a path, so no id can reach outside the store. Output that stays
//! small is written when its call ends, off the call's path ([`saver`]), as a
//! record in the session's pack rather than a file of its own ([`pack`]).

use std::fs::File;
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::thread::JoinHandle;

use sha2::{Digest, Sha256};

mod pack;
mod saver;

use saver::{Failures, SMALL_BYTES, Saver};

/// URI scheme of artifact links.
pub const SCHEME: &str = "artifact://";

/// URI scheme of a sub-agent's stored output (`agent(..., handle=True)`): an
/// artifact id under another name, read back the same ways.
pub const AGENT_SCHEME: &str = "agent://";

/// Artifacts older than this are deleted when an engine starts (7 days).
pub const DEFAULT_RETENTION: std::time::Duration = std::time::Duration::from_secs(7 * 24 * 3600);

/// Default on-disk cap for one artifact (512 MiB); past it a notice is written and the rest dropped.
pub const DEFAULT_MAX_ARTIFACT_BYTES: u64 = 512 * 1024 * 1024;

/// Why an artifact could not be read, or written (the call then goes on without it).
#[derive(Debug, thiserror::Error)]
pub enum ArtifactError {
    #[error("{0:?} is not an artifact id (expected something like artifact://0123abcd-1700000000000-1)")]
    InvalidId(String),
    #[error("artifact {0} does not exist (artifacts are kept on this machine only, under {1})")]
    NotFound(String, PathBuf),
    #[error("artifact {id} could not be read: {message}")]
    Io { id: String, message: String },
    #[error("cannot create {path}: {source}")]
    Create { path: PathBuf, source: std::io::Error },
    #[error("cannot write {path}: {source}")]
    Write { path: PathBuf, source: std::io::Error },
    /// The writer thread ended without saying why (it panicked).
    #[error("cannot write {path}: its writer stopped")]
    WriterStopped { path: PathBuf },
}

/// Where artifacts live.
#[derive(Debug)]
pub struct ArtifactStore {
    root: PathBuf,
    max_bytes: u64,
    sequence: AtomicU64,
    saver: Arc<Saver>,
    /// What was read of the packs.
    index: pack::Index,
}

impl Drop for ArtifactStore {
    fn drop(&mut self) {
        self.saver.close();
    }
}

impl ArtifactStore {
    pub fn new(root: impl Into<PathBuf>, max_bytes: u64) -> Self {
        let (sequence, saver, index) = (AtomicU64::new(1), Arc::default(), pack::Index::default());
        ArtifactStore { root: root.into(), max_bytes, sequence, saver, index }
    }

    /// Wait until the output of every call that has ended is on disk (see
    /// [`saver`]); every read of the store does this first.
    pub fn settle(&self) {
        self.saver.settle();
    }

    /// The host is about to exit: write what waits, and from now on write
    /// each call's output before its call ends.
    pub fn stop_deferring(&self) {
        self.saver.close();
    }

    /// `$CELLBOX_ARTIFACTS_DIR`, else `<cache>/cellbox/artifacts`.
    pub fn default_root() -> PathBuf {
        match crate::settings::ARTIFACTS_DIR.path() {
            Some(dir) => dir,
            None => crate::paths::cache_root().join("artifacts"),
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Start a new artifact for `session`. Its file is created on first write,
    /// or, for small output, it becomes a record of the session's pack when
    /// the call ends (see [`saver`]).
    pub fn create(&self, session: &str) -> ArtifactWriter {
        self.create_as(session, true)
    }

    /// An artifact whose file is written as it goes, never after: for an id
    /// handed out the moment it is written (a sub-agent's `agent://` handle).
    pub fn create_now(&self, session: &str) -> ArtifactWriter {
        self.create_as(session, false)
    }

    fn create_as(&self, session: &str, may_defer: bool) -> ArtifactWriter {
        let session_hash = session_hash(session);
        let millis = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0);
        let seq = self.sequence.fetch_add(1, Ordering::Relaxed);
        let id = format!("{session_hash}-{millis}-{seq}");
        let path = self.root.join(&session_hash).join(format!("{millis}-{seq}.log"));
        let deferred = may_defer && self.saver.may_defer(&path);
        let earlier_failures = if may_defer { self.saver.take_failures(&path) } else { Failures::default() };
        ArtifactWriter {
            path,
            id,
            saver: self.saver.clone(),
            deferred,
            earlier_failures,
            sink: Sink::Unopened,
            opened: false,
            written: 0,
            max_bytes: self.max_bytes,
            capped: false,
            failed: None,
        }
    }

    /// Where an id's (or `artifact://id`'s) bytes are, after validating it.
    fn locate(&self, id: &str) -> Result<Location, ArtifactError> {
        let bare = id.strip_prefix(SCHEME).or_else(|| id.strip_prefix(AGENT_SCHEME)).unwrap_or(id);
        let invalid = || ArtifactError::InvalidId(id.to_string());
        let Some((session, name)) = bare.split_once('-') else { return Err(invalid()) };
        if !is_session_folder_name(session) || pack::parse_name(name).is_none() {
            return Err(invalid());
        }
        let folder = self.root.join(session);
        let path = folder.join(format!("{name}.log"));
        self.settle();
        // Not through a link (the read below would refuse it anyway).
        if std::fs::symlink_metadata(&path).is_ok_and(|meta| meta.is_file()) {
            return Ok(Location::File(path));
        }
        match self.index.find(&folder, name) {
            Ok(Some((pack, start, length))) => Ok(Location::Packed { pack, start, length }),
            Ok(None) => Err(ArtifactError::NotFound(bare.to_string(), self.root.clone())),
            Err(error) => Err(ArtifactError::Io { id: bare.to_string(), message: error.to_string() }),
        }
    }

    /// Delete artifacts last written more than `max_age` ago (a pack goes
    /// whole, with its newest record: at most [`pack::PACK_AGE`] after its
    /// first), and session folders left empty.
    /// Returns how many files were removed.
    pub fn prune(&self, max_age: std::time::Duration) -> usize {
        let Some(cutoff) = std::time::SystemTime::now().checked_sub(max_age) else { return 0 };
        self.settle();
        let Ok(sessions) = std::fs::read_dir(&self.root) else { return 0 };
        let mut removed = 0;
        for session in sessions.flatten() {
            let folder = session.path();
            let is_store_folder = session.file_name().to_str().is_some_and(is_session_folder_name);
            if !is_store_folder || !folder.is_dir() {
                continue;
            }
            for file in std::fs::read_dir(&folder).into_iter().flatten().flatten() {
                let old = file.metadata().and_then(|m| m.modified()).is_ok_and(|t| t < cutoff);
                let name = file.file_name();
                let ours = name.to_str().is_some_and(|n| n.ends_with(".log") || n.ends_with(pack::EXTENSION));
                if old && ours && std::fs::remove_file(file.path()).is_ok() {
                    removed += 1;
                }
            }
            let _ = std::fs::remove_dir(&folder); // only succeeds when empty
        }
        removed
    }

    /// The artifacts of `session`, newest first: (id, size in bytes).
    pub fn list(&self, session: &str) -> Vec<(String, u64)> {
        let hash = session_hash(session);
        self.settle();
        let folder = self.root.join(&hash);
        let Ok(entries) = std::fs::read_dir(&folder) else { return Vec::new() };
        let files = entries.flatten().filter_map(|entry| {
            let name = entry.file_name().into_string().ok()?;
            let name = name.strip_suffix(".log")?.to_string();
            Some((name, entry.metadata().ok()?.len()))
        });
        let mut found: Vec<((u64, u64), String, u64)> = files
            .chain(self.index.records(&folder))
            .filter_map(|(name, size)| Some((pack::parse_name(&name)?, format!("{hash}-{name}"), size)))
            .collect();
        found.sort_by_key(|entry| std::cmp::Reverse(entry.0));
        found.into_iter().map(|(_, id, size)| (id, size)).collect()
    }

    /// Read up to `limit` bytes from `offset`; returns the text (invalid
    /// UTF-8 replaced) and the artifact's total size.
    pub fn read(&self, id: &str, offset: u64, limit: usize) -> Result<(String, u64), ArtifactError> {
        let io = |e: std::io::Error| ArtifactError::Io { id: id.to_string(), message: e.to_string() };
        let (mut file, start, size) = match self.locate(id)? {
            Location::File(path) => {
                let file = pack::open_for_reading(&path).map_err(io)?;
                let size = file.metadata().map_err(io)?.len();
                (file, 0, size)
            }
            Location::Packed { pack, start, length } => (pack::open_for_reading(&pack).map_err(io)?, start, length),
        };
        let skip = offset.min(size);
        file.seek(SeekFrom::Start(start + skip)).map_err(io)?;
        let wanted = (limit as u64).min(size - skip);
        let mut buffer = Vec::with_capacity(wanted as usize);
        file.take(wanted).read_to_end(&mut buffer).map_err(io)?;
        Ok((String::from_utf8_lossy(&buffer).into_owned(), size))
    }
}

/// Where an artifact's bytes are: a file of its own, or a record in a pack.
#[derive(Debug)]
enum Location {
    File(PathBuf),
    Packed { pack: PathBuf, start: u64, length: u64 },
}

/// The id of the artifact file `path` (`<folder>/<millis>-<seq>.log`).
pub(super) fn id_of(path: &Path) -> Option<String> {
    let folder = path.parent()?.file_name()?.to_str()?;
    let name = path.file_name()?.to_str()?.strip_suffix(".log")?;
    Some(format!("{folder}-{name}"))
}

/// Whether `name` is what [`session_hash`] produces: 8 lowercase hex digits.
fn is_session_folder_name(name: &str) -> bool {
    name.len() == 8 && name.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
}

/// First 8 hex digits of the session id's SHA-256: a folder name that leaks nothing.
pub fn session_hash(session: &str) -> String {
    Sha256::digest(session.as_bytes()).iter().take(4).map(|b| format!("{b:02x}")).collect()
}

/// Output past this much goes to the file on a thread of its own, so the
/// call goes on reading the kernel's pipes while the file system copies.
const BACKGROUND_AFTER: u64 = 1 << 20;
/// Bytes handed to that thread at a time.
const BATCH_BYTES: usize = 256 << 10;
/// Batches waiting for it at most: a writer that falls behind holds the
/// call back (as a slow disk always did) instead of growing its memory.
const QUEUED_BATCHES: usize = 4;

/// Where an artifact's bytes go.
#[derive(Debug)]
enum Sink {
    /// Nothing written yet, so no file.
    Unopened,
    /// Small output so far, for the store's saver when the call ends.
    Memory(Vec<u8>),
    /// The first [`BACKGROUND_AFTER`] bytes: written on the caller's thread.
    Direct(BufWriter<File>),
    /// Bulk output: batches for the writer thread, in order.
    Background {
        batch: Vec<u8>,
        queue: SyncSender<Vec<u8>>,
        /// Batches the thread has written, emptied for reuse (no page faults for fresh ones).
        spent: Receiver<Vec<u8>>,
        thread: JoinHandle<Result<(), ArtifactError>>,
    },
    /// Finished, or failed.
    Closed,
}

/// Appends one call's output to its artifact file.
#[derive(Debug)]
pub struct ArtifactWriter {
    id: String,
    path: PathBuf,
    /// The store's writer of small output, told too when a file of this
    /// session was written during its call.
    saver: Arc<Saver>,
    /// Small output waits for the end of the call (false: the file is written
    /// during it, as the session's first is).
    deferred: bool,
    /// Small outputs of this session's earlier calls that could not be saved.
    earlier_failures: Failures,
    sink: Sink,
    opened: bool,
    written: u64,
    max_bytes: u64,
    capped: bool,
    failed: Option<ArtifactError>,
}

impl ArtifactWriter {
    pub fn id(&self) -> &str {
        &self.id
    }

    pub fn uri(&self) -> String {
        format!("{SCHEME}{}", self.id)
    }

    /// Whether anything was written (an empty call leaves no file).
    pub fn exists(&self) -> bool {
        self.opened
    }

    pub fn bytes_written(&self) -> u64 {
        self.written
    }

    /// True once the cap cut the output.
    pub fn was_capped(&self) -> bool {
        self.capped
    }

    /// Why writing failed, if it did (the call goes on without its artifact).
    pub fn failure(&self) -> Option<&ArtifactError> {
        self.failed.as_ref()
    }

    /// What of this session's earlier calls could not be saved after they
    /// ended, for this call's result (a writer dropped without taking them
    /// leaves them for the next).
    pub fn take_earlier_failures(&mut self) -> Vec<String> {
        std::mem::take(&mut self.earlier_failures).told()
    }

    pub fn write(&mut self, text: &str) {
        if self.capped || self.failed.is_some() || text.is_empty() {
            return;
        }
        if matches!(self.sink, Sink::Unopened) {
            if self.deferred {
                self.sink = Sink::Memory(Vec::with_capacity(text.len().clamp(256, SMALL_BYTES)));
                self.opened = true;
            } else if !self.open() {
                return;
            }
        }
        let room = self.max_bytes.saturating_sub(self.written);
        let mut chunk = text;
        if chunk.len() as u64 > room {
            let mut cut = room as usize;
            while !chunk.is_char_boundary(cut) {
                cut -= 1;
            }
            chunk = &chunk[..cut];
            self.capped = true;
        }
        self.emit(chunk.as_bytes());
        self.written += chunk.len() as u64;
        if self.capped {
            let notice = format!(
                "\n[cellbox: artifact capped at {} bytes; the rest of the output was not kept]\n",
                self.max_bytes
            );
            self.emit(notice.as_bytes());
        }
    }

    /// Open the file for what is written from now on; false (and why,
    /// kept) when it cannot be.
    fn open(&mut self) -> bool {
        match open_private(&self.path) {
            Ok(file) => {
                self.sink = Sink::Direct(BufWriter::with_capacity(1 << 16, file));
                self.opened = true;
                true
            }
            Err(source) => {
                self.failed = Some(ArtifactError::Create { path: self.path.clone(), source });
                self.sink = Sink::Closed;
                self.opened = false; // no link to a file that is not there
                false
            }
        }
    }

    /// Send bytes on to the file, moving the writing to its own thread once
    /// the output is bulk.
    fn emit(&mut self, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        if let Sink::Memory(kept) = &mut self.sink {
            if kept.len() + bytes.len() <= SMALL_BYTES {
                kept.extend_from_slice(bytes);
                return;
            }
            // No longer small: the file takes what was kept, then the rest.
            let kept = std::mem::take(kept);
            if !self.open() {
                return;
            }
            self.emit(&kept);
            if self.failed.is_some() {
                return;
            }
        }
        if matches!(self.sink, Sink::Direct(_)) && self.written + bytes.len() as u64 > BACKGROUND_AFTER {
            self.go_background();
        }
        match &mut self.sink {
            Sink::Direct(file) => {
                if let Err(source) = file.write_all(bytes) {
                    self.fail(ArtifactError::Write { path: self.path.clone(), source });
                }
            }
            Sink::Background { batch, queue, spent, .. } => {
                batch.extend_from_slice(bytes);
                if batch.len() >= BATCH_BYTES {
                    let next = spent.try_recv().unwrap_or_else(|_| Vec::with_capacity(BATCH_BYTES + READ_SLACK));
                    let full = std::mem::replace(batch, next);
                    if queue.send(full).is_err() {
                        // The thread stopped on an error: it says which when joined.
                        self.close();
                    }
                }
            }
            Sink::Unopened | Sink::Memory(_) | Sink::Closed => {}
        }
    }

    /// Hand the open file to a writer thread (if one cannot start, writing
    /// simply stays on this thread).
    fn go_background(&mut self) {
        let Sink::Direct(file) = std::mem::replace(&mut self.sink, Sink::Closed) else { return };
        let (queue, batches) = sync_channel::<Vec<u8>>(QUEUED_BATCHES);
        let (give_back, spent) = sync_channel::<Vec<u8>>(QUEUED_BATCHES + 1);
        let path = self.path.clone();
        let file = std::sync::Arc::new(std::sync::Mutex::new(Some(file)));
        let for_thread = file.clone();
        let spawned = std::thread::Builder::new().name("cellbox-artifact".into()).spawn(move || {
            let mut file = for_thread.lock().unwrap().take().expect("handed over once");
            let fail = |source| ArtifactError::Write { path: path.clone(), source };
            for mut batch in batches {
                file.write_all(&batch).map_err(fail)?;
                batch.clear();
                let _ = give_back.try_send(batch);
            }
            file.flush().map_err(fail)
        });
        self.sink = match spawned {
            Ok(thread) => {
                Sink::Background { batch: Vec::with_capacity(BATCH_BYTES + READ_SLACK), queue, spent, thread }
            }
            Err(_) => match file.lock().unwrap().take() {
                Some(file) => Sink::Direct(file),
                None => Sink::Closed,
            },
        };
    }

    fn fail(&mut self, error: ArtifactError) {
        self.failed.get_or_insert(error);
        self.sink = Sink::Closed;
    }

    /// Write out what is pending and close the file, waiting for the writer
    /// thread (if any) to finish, so the artifact is whole when this returns.
    fn close(&mut self) {
        match std::mem::replace(&mut self.sink, Sink::Closed) {
            Sink::Memory(kept) => self.saver.save(self.path.clone(), kept),
            Sink::Direct(mut file) => match file.flush() {
                Err(source) => self.fail(ArtifactError::Write { path: self.path.clone(), source }),
                Ok(()) => self.saver.proven(&self.path),
            },
            Sink::Background { batch, queue, thread, .. } => {
                if !batch.is_empty() {
                    let _ = queue.send(batch);
                }
                drop(queue);
                match thread.join() {
                    Ok(Ok(())) => self.saver.proven(&self.path),
                    Ok(Err(error)) => self.fail(error),
                    Err(_) => self.fail(ArtifactError::WriterStopped { path: self.path.clone() }),
                }
            }
            Sink::Unopened | Sink::Closed => {}
        }
    }

    /// Flush to disk; call at the end of the call.
    pub fn finish(&mut self) {
        self.close();
    }
}

/// A writer dropped before [`ArtifactWriter::finish`] (its call was cancelled
/// or its task stopped) still leaves what it kept in memory or had not yet
/// handed to its writer thread: the run that named its artifact may be read later.
impl Drop for ArtifactWriter {
    fn drop(&mut self) {
        match std::mem::replace(&mut self.sink, Sink::Closed) {
            Sink::Memory(kept) => self.saver.save(self.path.clone(), kept),
            // The writer thread ends when the queue closes, after this last batch (not waited for here).
            Sink::Background { batch, queue, .. } if !batch.is_empty() => {
                let _ = queue.send(batch);
            }
            // A file written on this thread flushes as it drops.
            _ => {}
        }
        if !self.earlier_failures.is_empty() {
            self.saver.put_back_failures(&self.path, std::mem::take(&mut self.earlier_failures));
        }
    }
}

/// Room for one more read beyond a full batch, so a batch is not regrown.
const READ_SLACK: usize = 64 << 10;

/// The session's folder is made only when the file cannot be opened without
/// it: after its first call it is there, and every call opens a file. Only a
/// regular file is written: a symlink at its name is not followed, and a FIFO
/// or a device there is refused rather than waited on.
pub(super) fn open_private(path: &Path) -> std::io::Result<File> {
    let open = || {
        let mut options = crate::paths::private_file_options();
        options.create(true).append(true);
        pack::open_regular(path, options)
    };
    match open() {
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            let parent = path.parent().expect("artifact files live in a folder");
            crate::paths::private_dir_builder().create(parent)?;
            open()
        }
        opened => opened,
    }
}

#[cfg(test)]
mod tests;
