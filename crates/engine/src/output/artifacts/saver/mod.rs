//! Small artifacts written after their call instead of during it.
//!
//! Most calls print a few lines, and making a file for them (a new inode and
//! a directory entry) cost more than the rest of a warm call together. Output
//! that stays under [`SMALL_BYTES`] is kept in memory while the call runs and
//! handed here when it ends; one thread per store appends it to its session's
//! pack ([`super::pack`]), in order. Woken by a call, the thread lets the next
//! few calls' outputs join for [`GATHER`] and writes each pack's share of them
//! at once: back-to-back calls then cost it one wake-up and one `write` for
//! several, instead of a wake-up, an `open`, a `write` and a `close` each.
//!
//! Nothing is lost on the way: every read of the store waits for the files
//! queued before it ([`Saver::settle`]), the store waits for all of them when
//! it is dropped and when its engine is disposed, and a file that could not be
//! written is named in the next result of its session. A session's first
//! artifact is always written during its call, so a store that cannot be
//! written at all says so in the very result whose output it could not keep.

use std::collections::{HashMap, HashSet, VecDeque};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};

/// How long the thread waits, once woken, for more records to write with the
/// first. No reader waits for it: [`Saver::settle`] cuts it short.
const GATHER: std::time::Duration = std::time::Duration::from_millis(5);

/// Output up to this size waits in memory for the end of its call.
pub(super) const SMALL_BYTES: usize = 64 << 10;

/// Bytes queued at most: past this, a call's end waits for the thread (as it
/// waited for a slow disk before), so memory stays bounded.
const MAX_QUEUED_BYTES: usize = 8 << 20;

/// Failed writes named in a session's next result, at most; past it the
/// result says how many more there were.
const NAMED_FAILURES: usize = 16;

/// Sessions whose current pack is remembered, at most; past it one is
/// forgotten for each new one (it starts a new pack: no record is lost).
const MAX_PACKS: usize = 16_384;

/// The writer of one store's small artifacts.
#[derive(Debug, Default)]
pub(super) struct Saver {
    state: Mutex<State>,
    /// Work was queued, or the store is going away.
    work: Condvar,
    /// A file was written (or failed): the queue shrank.
    progress: Condvar,
}

#[derive(Debug, Default)]
struct State {
    queue: VecDeque<(PathBuf, Vec<u8>)>,
    queued_bytes: usize,
    /// Files handed over so far, and how many of them are written (or failed):
    /// a reader waits for the ones before it, not for a queue that may never
    /// be empty while calls keep ending.
    handed: u64,
    done: u64,
    thread_started: bool,
    /// The host is going away ([`Saver::close`]): from now on files are
    /// written at once, by the call that ends, as before this thread existed.
    closing: bool,
    /// Someone waits for what is queued (a reader, or a call over the
    /// memory bound): the thread writes it without gathering more.
    hurry: bool,
    /// Packs appended to so far (each `write` of one or more records).
    #[cfg(test)]
    appends: u64,
    /// Session folders this store has written a file into: later files there
    /// may wait for the end of their call.
    proven: HashSet<OsString>,
    /// What could not be saved, by session folder, for that session's next result.
    failures: HashMap<OsString, Failures>,
    /// Each session folder's current pack ([`super::pack`]).
    packs: HashMap<OsString, Current>,
}

impl Saver {
    /// Whether `path`'s output may be kept until its call ends: not once the
    /// store is closing (the call then writes it, and says so if it cannot).
    pub(super) fn may_defer(&self, path: &Path) -> bool {
        let state = self.state.lock().unwrap();
        !state.closing && folder_of(path).is_some_and(|folder| state.proven.contains(&folder))
    }

    /// A file of `path`'s session folder was written during its call.
    pub(super) fn proven(&self, path: &Path) {
        if let Some(folder) = folder_of(path) {
            self.state.lock().unwrap().proven.insert(folder);
        }
    }

    /// Write `bytes` as the artifact `path` names, soon. Waits only while the queue is
    /// full; writes at once when the store is closing or no thread can start.
    pub(super) fn save(self: &Arc<Self>, path: PathBuf, bytes: Vec<u8>) {
        let mut state = self.state.lock().unwrap();
        if !state.closing && !state.thread_started {
            let saver = self.clone();
            let spawned = std::thread::Builder::new().name("cellbox-artifacts".into()).spawn(move || saver.run());
            state.thread_started = spawned.is_ok();
        }
        while state.thread_started && !state.closing && state.queued_bytes > MAX_QUEUED_BYTES {
            state.hurry = true;
            self.work.notify_one();
            state = self.progress.wait(state).unwrap();
        }
        // Checked after the wait: the thread may have ended meanwhile, and no one would write it.
        if state.closing || !state.thread_started {
            drop(state);
            return self.write(&path, bytes);
        }
        state.queued_bytes += bytes.len();
        state.handed += 1;
        state.queue.push_back((path, bytes));
        // A queue that held records has woken the thread already, which takes this one with them.
        let idle = state.queue.len() == 1;
        drop(state);
        if idle {
            self.work.notify_one();
        }
    }

    /// Wait until every file handed over before this call is on disk (or has failed).
    pub(super) fn settle(&self) {
        let mut state = self.state.lock().unwrap();
        let target = state.handed;
        if state.done < target {
            state.hurry = true;
            self.work.notify_one();
        }
        while state.done < target {
            state = self.progress.wait(state).unwrap();
        }
    }

    /// Failures taken for a result that never came (its call was dropped):
    /// kept for the session's next one.
    pub(super) fn put_back_failures(&self, path: &Path, earlier: Failures) {
        let Some(folder) = folder_of(path) else { return };
        let mut state = self.state.lock().unwrap();
        let failures = state.failures.entry(folder).or_default();
        let later = std::mem::replace(failures, earlier);
        for failure in later.named {
            failures.add(failure);
        }
        failures.more += later.more;
    }

    /// What of `path`'s session could not be saved since its last result.
    pub(super) fn take_failures(&self, path: &Path) -> Failures {
        let Some(folder) = folder_of(path) else { return Failures::default() };
        self.state.lock().unwrap().failures.remove(&folder).unwrap_or_default()
    }

    /// Write what is queued and let the thread end; files of calls that end
    /// later are written by those calls.
    pub(super) fn close(&self) {
        self.state.lock().unwrap().closing = true;
        self.work.notify_all();
        self.settle();
    }

    fn run(&self) {
        let mut state = self.state.lock().unwrap();
        loop {
            if state.queue.is_empty() {
                if state.closing {
                    return;
                }
                // Whoever hurried waits for nothing more: the next batch gathers again.
                state.hurry = false;
                state = self.work.wait(state).unwrap();
                continue;
            }
            if !state.hurry && !state.closing {
                state = self.work.wait_timeout_while(state, GATHER, |s| !s.hurry && !s.closing).unwrap().0;
            }
            let batch: Vec<(PathBuf, Vec<u8>)> = state.queue.drain(..).collect();
            let (count, bytes) = (batch.len() as u64, batch.iter().map(|(_, bytes)| bytes.len()).sum::<usize>());
            drop(state);
            // A panic here must not leave readers waiting for these files forever.
            let paths: Vec<PathBuf> = batch.iter().map(|(path, _)| path.clone()).collect();
            let written = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.write_batch(batch)));
            if written.is_err() {
                for path in &paths {
                    self.failed(path, "the writer failed".to_string());
                }
            }
            state = self.state.lock().unwrap();
            state.done += count;
            state.queued_bytes -= bytes;
            self.progress.notify_all();
        }
    }

    /// Append `bytes` as the record of `path`'s artifact to its session's pack.
    fn write(&self, path: &Path, bytes: Vec<u8>) {
        self.write_batch(vec![(path.to_path_buf(), bytes)]);
    }

    /// Append each record of `batch` to its session's pack: one `write` per
    /// pack, each session's records in the order they came.
    fn write_batch(&self, batch: Vec<(PathBuf, Vec<u8>)>) {
        let mut groups: Vec<Records> = Vec::new();
        for (path, bytes) in batch {
            let (Some(folder), Some(name)) = (path.parent(), path.file_stem().and_then(|n| n.to_str())) else {
                self.failed(&path, "it has no session folder".to_string());
                continue;
            };
            let record = super::pack::record(name, &bytes);
            drop(bytes);
            let key = folder.file_name().unwrap_or_default().to_os_string();
            let pack = folder.join(self.pack_for(&key, name, record.len() as u64));
            let group = match groups.iter().position(|group| group.pack == pack) {
                Some(at) => &mut groups[at],
                None => {
                    groups.push(Records { key, pack, bytes: Vec::new(), ends: Vec::new() });
                    groups.last_mut().expect("just pushed")
                }
            };
            group.bytes.extend_from_slice(&record);
            group.ends.push((group.bytes.len(), path));
        }
        for group in groups {
            self.append(group);
        }
    }

    /// Append `records` to their pack. Records that did not land whole are named in their session's next result.
    fn append(&self, records: Records) {
        let Records { key, pack, bytes, ends } = records;
        let mut landed = 0;
        // One write when it can: records of a closing host's calls and of this thread land one after the other.
        let failure = match super::open_private(&pack) {
            Ok(mut file) => loop {
                match std::io::Write::write(&mut file, &bytes[landed..]) {
                    Ok(0) if landed < bytes.len() => break Some("nothing more could be written".to_string()),
                    Ok(n) if landed + n < bytes.len() => landed += n,
                    Ok(n) => {
                        landed += n;
                        break None;
                    }
                    Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(error) => break Some(error.to_string()),
                }
            },
            Err(error) => Some(error.to_string()),
        };
        let Some(why) = failure else {
            #[cfg(test)]
            {
                self.state.lock().unwrap().appends += 1;
            }
            return;
        };
        // Part of a record may be there: nothing more goes after it.
        let name = pack.file_name().unwrap_or_default();
        if let Some(current) = self.state.lock().unwrap().packs.get_mut(&key).filter(|c| *name == *c.name) {
            current.full = true;
        }
        for (_, path) in ends.into_iter().filter(|(end, _)| *end > landed) {
            self.failed(&path, why.clone());
        }
    }

    /// The pack of the session folder `key` that takes a record of `length`
    /// bytes, named after `name`'s record when it starts a new one.
    fn pack_for(&self, key: &OsString, name: &str, length: u64) -> String {
        let mut state = self.state.lock().unwrap();
        if state.packs.len() >= MAX_PACKS && !state.packs.contains_key(key) {
            let forgotten = state.packs.keys().next().cloned();
            forgotten.map(|forgotten| state.packs.remove(&forgotten));
        }
        let now = std::time::Instant::now();
        let current = state.packs.entry(key.clone()).or_insert_with(|| Current::full(now));
        if current.full || current.bytes >= super::pack::PACK_BYTES || now - current.started >= super::pack::PACK_AGE {
            *current =
                Current { name: format!("{name}{}", super::pack::EXTENSION), bytes: 0, started: now, full: false };
        }
        current.bytes += length;
        current.name.clone()
    }

    fn failed(&self, path: &Path, why: String) {
        let id = super::id_of(path).unwrap_or_default();
        let failure = format!("The full output of an earlier call (artifact://{id}) could not be saved: {why}.");
        tracing::warn!("{failure}");
        let mut state = self.state.lock().unwrap();
        let folder = folder_of(path).unwrap_or_default();
        if state.failures.len() >= MAX_PACKS && !state.failures.contains_key(&folder) {
            return; // said in the log above: so many sessions with failures are not remembered one by one
        }
        state.failures.entry(folder).or_default().add(failure);
    }
}

/// A session's failed writes since its last result.
#[derive(Debug, Default)]
pub(super) struct Failures {
    named: Vec<String>,
    /// Failed writes past [`NAMED_FAILURES`].
    more: u64,
}

impl Failures {
    pub(super) fn is_empty(&self) -> bool {
        self.named.is_empty() && self.more == 0
    }

    fn add(&mut self, failure: String) {
        if self.named.len() < NAMED_FAILURES {
            self.named.push(failure);
        } else {
            self.more += 1;
        }
    }

    /// As a result tells them: each named, then how many more.
    pub(super) fn told(self) -> Vec<String> {
        let mut told = self.named;
        match self.more {
            0 => {}
            1 => told.push("The full output of 1 more earlier call could not be saved either.".to_string()),
            more => told.push(format!("The full output of {more} more earlier calls could not be saved either.")),
        }
        told
    }
}

/// Records on their way to one pack, written together.
#[derive(Debug)]
struct Records {
    /// Its session folder's name.
    key: OsString,
    pack: PathBuf,
    bytes: Vec<u8>,
    /// Where each record ends in `bytes`, and its artifact's path.
    ends: Vec<(usize, PathBuf)>,
}

/// A session's current pack.
#[derive(Debug)]
struct Current {
    name: String,
    /// Bytes given to it by this store.
    bytes: u64,
    started: std::time::Instant,
    /// It takes no more records (a write to it failed).
    full: bool,
}

impl Current {
    /// None yet: the next record starts one.
    fn full(now: std::time::Instant) -> Current {
        Current { name: String::new(), bytes: 0, started: now, full: true }
    }
}

fn folder_of(path: &Path) -> Option<OsString> {
    Some(path.parent()?.file_name()?.to_os_string())
}

#[cfg(test)]
mod tests;
