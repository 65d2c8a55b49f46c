//! Hibernation: a session's Python kernel is saved to a file and stopped,
//! and the session's next call starts a kernel and brings the variables
//! back before its cells run.
//!
//! The pool hibernates a kernel idle past [`super::PoolLimits::hibernate_after`]
//! (or its idle timeout), the least recently used one when the live-kernel
//! limit or a shared kernel budget is reached, and every one at a server's
//! stop ([`super::KernelPool::hibernate_all`]); see `eviction.rs`. What is
//! kept is the runner's snapshot of the user's names
//! (`runner/cellbox_kernel/snapshot.py`): what cannot be pickled is named
//! with its reason in the first result after waking, and a file that cannot
//! be loaded says what was lost. A kernel that could not be saved at a stop
//! leaves a record saying so, which the session's next call reports.
//!
//! The files live in a folder of the host's that kernels cannot read (the
//! engine denies it to them): the host opens each file itself and hands the
//! open file to the kernel on its control socket, so a kernel is never given
//! a path and gets no right it did not have. Each session's file holds only
//! what its own kernel wrote, and goes back only into a kernel of the same
//! session.
//!
//! With a state folder ([`Hibernation::keeping`]) the files outlive the
//! process: a new engine on the same folder finds every hibernated session
//! again. Without one, they are in a private folder removed with the engine.
//! Every change to the folder's records is made under the lock of the
//! in-memory map, so a rescan never sees half of one.

use std::collections::HashMap;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

mod folder;

pub use folder::{lock_state_dir, temporary_root};
use folder::{modified, now, open_read, ours, sweep_dead};

use super::handle::KernelHandle;
use crate::kernel::Kernel;

/// How long a kernel may take to write or load its snapshot before it is
/// given up on (a cell's object whose pickling never ends).
pub const SNAPSHOT_TIMEOUT: Duration = Duration::from_secs(120);

/// The names a note lists at most before "and N more".
const LISTED: usize = 20;

/// Where hibernated sessions are kept, and which ones are there now.
#[derive(Debug)]
pub struct Hibernation {
    /// The records and their files.
    dir: PathBuf,
    /// What kernels are denied: `dir`, or the state folder above it.
    denied: PathBuf,
    /// Files stay for the next engine on this folder (a state folder).
    keeps: bool,
    /// Hibernated sessions by (session, working folder), and the folder's
    /// modification time when it was last read (a rescan happens when it changed).
    sleeping: Mutex<Records>,
    next: AtomicU64,
}

#[derive(Debug, Default)]
struct Records {
    by_key: HashMap<(String, PathBuf), Sleeping>,
    scanned: Option<SystemTime>,
    /// Every record's stem this engine has read or written: a rescan reads only new ones.
    seen: std::collections::HashSet<String>,
}

/// One hibernated session's Python kernel: where its file is and what it holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sleeping {
    pub session: String,
    /// The kernel's working folder (part of its slot's key).
    pub cwd: PathBuf,
    /// The interpreter it ran (a newer one may refuse the file; the note says so).
    pub interpreter: PathBuf,
    /// Who held the session: a session whose owners are all gone is dropped with them.
    pub owners: Vec<String>,
    /// The snapshot's file name in the folder (`<stem>.snap`); `<stem>.lost`,
    /// naming no file, for a kernel that could not be saved.
    pub file: String,
    pub saved: Vec<String>,
    /// Names the snapshot could not hold, each with the reason.
    pub skipped: Vec<(String, String)>,
    pub bytes: u64,
    /// Why it was hibernated, as the wake note says it ("unused for 10 min").
    pub why: String,
    /// Seconds since the Unix epoch.
    pub since: u64,
    /// Set when the kernel was stopped without being saved (a stop while it
    /// was busy, a failed snapshot): why, for the session's next call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost: Option<String>,
}

/// Why a kernel could not be hibernated.
#[derive(Debug, thiserror::Error)]
pub enum HibernateError {
    #[error("only Python kernels run by cellbox can be hibernated")]
    Unsupported,
    #[error("the kernel did not write its snapshot within {}s", .0.as_secs())]
    Timeout(Duration),
    #[error("{0}")]
    Kernel(String),
    #[error("cannot write the hibernation file: {0}")]
    Io(#[from] std::io::Error),
}

impl Hibernation {
    /// Sessions hibernated in a private folder removed with the engine.
    pub fn temporary(root: &Path) -> std::io::Result<Hibernation> {
        let engines = root.join("engines");
        crate::paths::private_dir_builder().create(&engines)?;
        sweep_dead(&engines);
        let dir = tempfile::Builder::new().prefix(&format!("{}-", std::process::id())).tempdir_in(&engines)?;
        Ok(Hibernation::at(dir.keep(), root.to_path_buf(), false))
    }

    /// Sessions kept in `state` across restarts (in its `sessions` folder):
    /// the ones already there are found again. One process at a time may use
    /// a state folder: its front end holds [`lock_state_dir`] on it.
    pub fn keeping(state: &Path) -> std::io::Result<Hibernation> {
        let dir = state.join("sessions");
        crate::paths::private_dir_builder().create(&dir)?;
        crate::paths::tighten_dir(state);
        crate::paths::tighten_dir(&dir);
        let hibernation = Hibernation::at(dir, state.to_path_buf(), true);
        hibernation.load(&mut hibernation.records(), true);
        Ok(hibernation)
    }

    fn at(dir: PathBuf, denied: PathBuf, keeps: bool) -> Hibernation {
        Hibernation { dir, denied, keeps, sleeping: Mutex::default(), next: AtomicU64::new(0) }
    }

    fn records(&self) -> MutexGuard<'_, Records> {
        self.sleeping.lock().unwrap()
    }

    /// The folder kernels must not reach (the records' folder, or the state folder holding it).
    pub fn denied(&self) -> &Path {
        &self.denied
    }

    /// Whether the files outlive the engine.
    pub fn keeps(&self) -> bool {
        self.keeps
    }

    /// Read the records a previous engine left. Only names this module
    /// writes are touched; a record whose file is gone, that cannot be read,
    /// or that names a file outside the folder is set aside (renamed `.bad`).
    /// `initial`: this process starts on the folder, so leftovers of a
    /// process that stopped midway are cleaned (a half-written file is
    /// removed, a wake that did not finish is undone).
    fn load(&self, records: &mut Records, initial: bool) {
        records.scanned = modified(&self.dir);
        let Ok(entries) = std::fs::read_dir(&self.dir) else { return };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some((stem, extension)) = ours(&name) else { continue };
            if records.seen.contains(stem) {
                continue;
            }
            let mut path = entry.path();
            match extension {
                "json" => {}
                "waking" if initial => {
                    let record = self.dir.join(format!("{stem}.json"));
                    if std::fs::rename(&path, &record).is_err() {
                        continue;
                    }
                    path = record;
                }
                "snap.tmp" | "json.tmp" if initial => {
                    let _ = std::fs::remove_file(&path);
                    continue;
                }
                _ => continue,
            }
            records.seen.insert(stem.to_string());
            let record = std::fs::read(&path).ok().and_then(|bytes| serde_json::from_slice::<Sleeping>(&bytes).ok());
            let usable = |record: &Sleeping| {
                let saved = record.file == format!("{stem}.snap") && self.dir.join(&record.file).is_file();
                saved || (record.lost.is_some() && record.file == format!("{stem}.lost"))
            };
            match record {
                Some(record) if usable(&record) => {
                    let key = (record.session.clone(), record.cwd.clone());
                    // Two records of one session (a successor engine's and its predecessor's): the newest wins.
                    match records.by_key.get(&key) {
                        Some(current) if current.since > record.since => self.remove_files(stem),
                        _ => {
                            if let Some(older) = records.by_key.insert(key, record) {
                                self.remove_record_files(&older);
                            }
                        }
                    }
                }
                _ => {
                    tracing::warn!(record = %path.display(), "a hibernation record that cannot be used was set aside");
                    let _ = std::fs::rename(&path, self.dir.join(format!("{stem}.bad")));
                }
            }
        }
    }

    /// Save `kernel` (the Python kernel of `session` in `cwd`) and record it,
    /// giving it up after `timeout`; the caller stops the kernel afterwards,
    /// whatever the outcome.
    #[allow(clippy::too_many_arguments)]
    pub async fn hibernate(
        &self,
        kernel: &KernelHandle,
        session: &str,
        cwd: &Path,
        interpreter: &Path,
        owners: Vec<String>,
        why: String,
        timeout: Duration,
    ) -> Result<Sleeping, HibernateError> {
        let process = kernel.as_process().ok_or(HibernateError::Unsupported)?;
        let stem = self.new_stem();
        let file = format!("{stem}.snap");
        let temporary = self.dir.join(format!("{file}.tmp"));
        let handle = crate::paths::private_file_options().write(true).create_new(true).open(&temporary)?;
        let report = match snapshot_into(process, &handle, timeout).await {
            Ok(report) => report,
            Err(error) => {
                let _ = std::fs::remove_file(&temporary);
                return Err(error);
            }
        };
        if self.keeps {
            handle.sync_all()?; // a state folder outlives a crash of the host; a temporary one does not
        }
        drop(handle);
        let record = Sleeping {
            session: session.to_string(),
            cwd: cwd.to_path_buf(),
            interpreter: interpreter.to_path_buf(),
            owners,
            file: file.clone(),
            saved: report_strings(&report["saved"]),
            skipped: report_reasons(&report["skipped"]),
            bytes: report["bytes"].as_u64().unwrap_or(0),
            why,
            since: now(),
            lost: None,
        };
        let mut records = self.records();
        if let Err(error) = std::fs::rename(&temporary, self.dir.join(&file)) {
            let _ = std::fs::remove_file(&temporary);
            return Err(error.into());
        }
        self.commit(&mut records, &stem, record.clone())?;
        Ok(record)
    }

    /// Record that `session`'s Python kernel in `cwd` was stopped without
    /// being saved, and why: its next call says so (with a state folder, after a restart too).
    pub fn record_lost(&self, session: &str, cwd: &Path, interpreter: &Path, owners: Vec<String>, why: String) {
        let record = Sleeping {
            session: session.to_string(),
            cwd: cwd.to_path_buf(),
            interpreter: interpreter.to_path_buf(),
            owners,
            file: String::new(),
            saved: Vec::new(),
            skipped: Vec::new(),
            bytes: 0,
            why: why.clone(),
            since: now(),
            lost: Some(why),
        };
        let stem = self.new_stem();
        let record = Sleeping { file: format!("{stem}.lost"), ..record };
        let mut records = self.records();
        if let Err(error) = self.commit(&mut records, &stem, record) {
            tracing::warn!(session, "cannot record a lost session: {error}");
        }
    }

    fn new_stem(&self) -> String {
        let nanos = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_nanos();
        format!("{nanos}-{}", self.next.fetch_add(1, Ordering::Relaxed))
    }

    /// Write `record`'s file next to its snapshot and put it in the map (the lock held).
    fn commit(&self, records: &mut Records, stem: &str, record: Sleeping) -> std::io::Result<()> {
        if let Err(error) = self.write_record(stem, &record) {
            self.remove_record_files(&record);
            return Err(error);
        }
        records.seen.insert(stem.to_string());
        let key = (record.session.clone(), record.cwd.clone());
        if let Some(old) = records.by_key.insert(key, record) {
            self.remove_record_files(&old);
        }
        Ok(())
    }

    /// The record, written next to its file (atomically: the old one or the new one).
    fn write_record(&self, stem: &str, record: &Sleeping) -> std::io::Result<()> {
        let path = self.dir.join(format!("{stem}.json"));
        let temporary = self.dir.join(format!("{stem}.json.tmp"));
        let mut file = crate::paths::private_file_options().write(true).create(true).truncate(true).open(&temporary)?;
        file.write_all(&serde_json::to_vec(record).map_err(std::io::Error::other)?)?;
        if self.keeps {
            file.sync_all()?;
        }
        std::fs::rename(&temporary, &path)?;
        #[cfg(unix)]
        if self.keeps
            && let Ok(dir) = File::open(&self.dir)
        {
            let _ = dir.sync_all();
        }
        Ok(())
    }

    /// Take `session`'s record for `cwd`, if it sleeps: the caller wakes it
    /// ([`Hibernation::wake`]), which also removes its files.
    pub fn take(&self, session: &str, cwd: &Path) -> Option<Sleeping> {
        let key = (session.to_string(), cwd.to_path_buf());
        let mut records = self.records();
        if !records.by_key.contains_key(&key) && self.keeps && modified(&self.dir) != records.scanned {
            self.load(&mut records, false);
        }
        let record = records.by_key.remove(&key)?;
        // Put back by the next start if this one stops midway.
        if let Some(stem) = record.file.strip_suffix(".snap") {
            let _ = std::fs::rename(self.dir.join(format!("{stem}.json")), self.dir.join(format!("{stem}.waking")));
        }
        Some(record)
    }

    /// Whether `session` sleeps (in any working folder).
    pub fn is_sleeping(&self, session: &str) -> bool {
        self.records().by_key.keys().any(|(name, _)| name == session)
    }

    /// Whether `session` sleeps in `cwd`.
    pub fn is_sleeping_in(&self, session: &str, cwd: &Path) -> bool {
        self.records().by_key.contains_key(&(session.to_string(), cwd.to_path_buf()))
    }

    /// The hibernated sessions' records.
    pub fn sleeping(&self) -> Vec<Sleeping> {
        self.records().by_key.values().cloned().collect()
    }

    /// Bring `record`'s variables back into `kernel` (just started for its
    /// session), remove its files, and say what happened in words for the
    /// call's result.
    pub async fn wake(&self, kernel: &KernelHandle, record: Sleeping) -> String {
        if let Some(why) = &record.lost {
            self.remove_record_files(&record);
            return format!(
                "This session's Python kernel was stopped without its variables being saved ({why}); it starts empty."
            );
        }
        let started = std::time::Instant::now();
        let outcome = self.restore(kernel, &record).await;
        self.remove_record_files(&record);
        match outcome {
            Ok(report) => {
                let restored = report_strings(&report["restored"]);
                let mut lost = record.skipped.clone();
                lost.extend(report_reasons(&report["failed"]));
                let mut note = format!(
                    "This session was hibernated ({}) and woke now: {} restored ({}, {} ms)",
                    record.why,
                    if restored.is_empty() { "no variables".to_string() } else { name_list(&restored) },
                    crate::output::limiter::human_bytes(record.bytes),
                    started.elapsed().as_millis()
                );
                let settings = report_strings(&report["settings"]);
                if !settings.is_empty() {
                    note.push_str(&format!(", with its settings ({})", name_list(&settings)));
                }
                if lost.is_empty() {
                    note.push('.');
                } else {
                    let lost: Vec<String> = lost.iter().map(|(name, why)| format!("{name} ({why})")).collect();
                    note.push_str(&format!("; not restored: {}.", name_list(&lost)));
                }
                note.push_str(" Imports were redone; threads, open files and the execution count start anew.");
                note
            }
            Err(Restore::Failed(why)) => format!(
                "This session was hibernated ({}), but its variables could not be brought back: {why}. It starts \
                 empty; lost: {}.",
                record.why,
                if record.saved.is_empty() { "nothing".to_string() } else { name_list(&record.saved) }
            ),
            Err(Restore::TimedOut) => format!(
                "This session was hibernated ({}), and its variables did not finish loading within {} s: which of \
                 {} came back is unknown.",
                record.why,
                SNAPSHOT_TIMEOUT.as_secs(),
                name_list(&record.saved)
            ),
        }
    }

    async fn restore(&self, kernel: &KernelHandle, record: &Sleeping) -> Result<serde_json::Value, Restore> {
        let process = kernel.as_process().ok_or(Restore::Failed("it woke in a kernel cellbox does not run".into()))?;
        let handle = open_read(&self.dir.join(&record.file))
            .map_err(|e| Restore::Failed(format!("its file cannot be read ({e})")))?;
        restore_from(process, &handle).await
    }

    /// Forget `session`'s records (a reset, or its owners are gone) and remove
    /// their files; how many held saved variables.
    pub fn forget(&self, session: &str) -> usize {
        let mut records = self.records();
        let keys: Vec<_> = records.by_key.keys().filter(|(name, _)| name == session).cloned().collect();
        let mut saved = 0;
        for key in keys {
            if let Some(record) = records.by_key.remove(&key) {
                saved += usize::from(record.lost.is_none());
                self.remove_record_files(&record);
            }
        }
        saved
    }

    /// Forget `session`'s record in `cwd` (its kernel was replaced by other means: a reset cell, an undo).
    pub fn forget_in(&self, session: &str, cwd: &Path) {
        let mut records = self.records();
        if let Some(record) = records.by_key.remove(&(session.to_string(), cwd.to_path_buf())) {
            self.remove_record_files(&record);
        }
    }

    /// Forget `record` if it is still the one of its session (a reset raced its hibernation).
    pub fn withdraw(&self, record: &Sleeping) {
        let mut records = self.records();
        let key = (record.session.clone(), record.cwd.clone());
        if records.by_key.get(&key).is_some_and(|current| current.file == record.file && current.since == record.since)
        {
            records.by_key.remove(&key);
            self.remove_record_files(record);
        }
    }

    /// `owner` is gone: records it alone held are forgotten, unless they are kept across restarts.
    pub fn drop_owner(&self, owner: &str) {
        let orphaned: Vec<String> = {
            let mut records = self.records();
            for record in records.by_key.values_mut() {
                record.owners.retain(|held| held != owner);
            }
            records.by_key.values().filter(|record| record.owners.is_empty()).map(|r| r.session.clone()).collect()
        };
        if !self.keeps {
            for session in orphaned {
                self.forget(&session);
            }
        }
    }

    fn remove_record_files(&self, record: &Sleeping) {
        let stem = record.file.strip_suffix(".snap").or_else(|| record.file.strip_suffix(".lost"));
        if let Some(stem) = stem.filter(|stem| ours(&format!("{stem}.json")).is_some()) {
            self.remove_files(stem);
        }
    }

    fn remove_files(&self, stem: &str) {
        for extension in ["snap", "json", "waking"] {
            let _ = std::fs::remove_file(self.dir.join(format!("{stem}.{extension}")));
        }
    }
}

impl Drop for Hibernation {
    fn drop(&mut self) {
        if !self.keeps {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// Why a restore did not bring the variables back.
enum Restore {
    Failed(String),
    /// The kernel may still be loading: what it holds is unknown.
    #[cfg_attr(not(unix), allow(dead_code, reason = "only a Unix kernel is handed a file to load"))]
    TimedOut,
}

/// How the file is named in the kernel's messages.
#[cfg(unix)]
const LABEL: &str = "the hibernation file";

#[cfg(unix)]
async fn snapshot_into(
    process: &Kernel,
    handle: &File,
    timeout: Duration,
) -> Result<serde_json::Value, HibernateError> {
    match tokio::time::timeout(timeout, process.snapshot_into(handle, LABEL)).await {
        Ok(Ok(report)) => Ok(report),
        Ok(Err(error)) => Err(HibernateError::Kernel(error.to_string())),
        Err(_) => Err(HibernateError::Timeout(timeout)),
    }
}

#[cfg(unix)]
async fn restore_from(process: &Kernel, handle: &File) -> Result<serde_json::Value, Restore> {
    match tokio::time::timeout(SNAPSHOT_TIMEOUT, process.restore_from(handle, LABEL)).await {
        Ok(result) => result.map_err(|error| Restore::Failed(error.to_string())),
        Err(_) => Err(Restore::TimedOut),
    }
}

/// Kernels have no control socket here: nothing is handed over (engines do not hibernate off Linux).
#[cfg(not(unix))]
async fn snapshot_into(
    _process: &Kernel,
    _handle: &File,
    _timeout: Duration,
) -> Result<serde_json::Value, HibernateError> {
    Err(HibernateError::Unsupported)
}

#[cfg(not(unix))]
async fn restore_from(_process: &Kernel, _handle: &File) -> Result<serde_json::Value, Restore> {
    Err(Restore::Failed("hibernation needs Linux".into()))
}

fn name_list(names: &[String]) -> String {
    let mut list = names.iter().take(LISTED).cloned().collect::<Vec<_>>().join(", ");
    if names.len() > LISTED {
        list.push_str(&format!(" and {} more", names.len() - LISTED));
    }
    list
}

/// A runner report's list of names (`saved`, `restored`).
pub fn report_strings(value: &serde_json::Value) -> Vec<String> {
    value.as_array().into_iter().flatten().filter_map(|name| name.as_str().map(str::to_string)).collect()
}

/// A runner report's `[{"name", "reason"}]` (`skipped`, `failed`) as pairs.
pub fn report_reasons(value: &serde_json::Value) -> Vec<(String, String)> {
    let pair = |entry: &serde_json::Value| {
        Some((entry["name"].as_str()?.to_string(), entry["reason"].as_str().unwrap_or("").to_string()))
    };
    value.as_array().into_iter().flatten().filter_map(pair).collect()
}
