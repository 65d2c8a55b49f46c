//! Hibernation: a session's Python kernel is saved to a file and stopped,
//! and the session's next call starts a kernel and brings the variables
//! back before its cells run.
//!
//! The pool hibernates a kernel idle past [`super::PoolLimits::hibernate_after`]
//! (or its idle timeout), the least recently used one when the live-kernel
//! limit or a shared kernel budget is reached, and every kernel at a server's
//! stop ([`super::KernelPool::hibernate_all`]). What is kept is the
//! runner's snapshot of the user's names (`runner/cellbox_kernel/snapshot.py`):
//! what cannot be pickled is named with its reason in the first result after
//! waking, and a file that cannot be loaded says what was lost. Other
//! languages' kernels are stopped as before, and the next call says their
//! state is gone.
//!
//! The files live in a folder of the host's that kernels cannot read
//! ([`Hibernation::dir`] is denied to them): the host opens each file itself
//! and hands the open file to the kernel on its control socket, so a kernel
//! never learns a path nor gets a right it did not have. Each session's file
//! holds only what its own kernel wrote, and goes back only into a kernel of
//! the same session.
//!
//! With a state folder ([`Hibernation::keeping`]) the files outlive the
//! process: a new engine on the same folder finds every hibernated session
//! again. Without one, they are in a private folder removed with the engine.

use std::collections::HashMap;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use super::handle::KernelHandle;
use crate::kernel::Kernel;

/// How long a kernel may take to write or load its snapshot before it is
/// given up on (a cell's object whose pickling never ends).
pub const SNAPSHOT_TIMEOUT: Duration = Duration::from_secs(120);

/// Where hibernated sessions are kept, and which ones are there now.
#[derive(Debug)]
pub struct Hibernation {
    dir: PathBuf,
    /// Files stay for the next engine on this folder (a state folder).
    keeps: bool,
    /// Hibernated sessions by (session, working folder).
    sleeping: Mutex<HashMap<(String, PathBuf), Sleeping>>,
    /// The folder's modification time when it was last read: an engine that
    /// a server set aside may still be hibernating into the folder its
    /// successor already read, and the successor reads it again when it changed.
    scanned: Mutex<Option<SystemTime>>,
    next: AtomicU64,
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
    /// The snapshot's file name in [`Hibernation::dir`].
    pub file: String,
    pub saved: Vec<String>,
    /// Names the snapshot could not hold, each with the reason.
    pub skipped: Vec<(String, String)>,
    pub bytes: u64,
    /// Why it was hibernated, as the wake note says it ("unused for 10 min").
    pub why: String,
    /// Seconds since the Unix epoch.
    pub since: u64,
}

/// Why a kernel could not be hibernated; it is stopped and its state is lost.
#[derive(Debug, thiserror::Error)]
pub enum HibernateError {
    #[error("only Python kernels run by cellbox can be hibernated")]
    Unsupported,
    #[error("the kernel did not write its snapshot within {}s", SNAPSHOT_TIMEOUT.as_secs())]
    Timeout,
    #[error("{0}")]
    Kernel(String),
    #[error("cannot write the hibernation file: {0}")]
    Io(#[from] std::io::Error),
}

/// Where engines without a state folder hibernate (each in a folder of its own); kernels are denied it.
pub fn temporary_root() -> PathBuf {
    crate::paths::cache_root().join("hibernate")
}

impl Hibernation {
    /// Sessions hibernated in a private folder removed with the engine.
    pub fn temporary(root: &Path) -> std::io::Result<Hibernation> {
        static ENGINES: AtomicU64 = AtomicU64::new(0);
        let name = format!("{}-{}", std::process::id(), ENGINES.fetch_add(1, Ordering::Relaxed));
        let dir = root.join("engines").join(name);
        if dir.exists() {
            std::fs::remove_dir_all(&dir)?; // left by a process of the same pid that was killed
        }
        crate::paths::private_dir_builder().create(&dir)?;
        Ok(Hibernation::at(dir, false))
    }

    /// Sessions kept in `dir` across restarts: the ones already there are
    /// found again. One process at a time may use a state folder: its front
    /// end holds [`lock_state_dir`] on it (or on a folder above it).
    pub fn keeping(dir: &Path) -> std::io::Result<Hibernation> {
        crate::paths::private_dir_builder().create(dir)?;
        crate::paths::tighten_dir(dir);
        let hibernation = Hibernation::at(dir.to_path_buf(), true);
        hibernation.load(true);
        Ok(hibernation)
    }

    fn at(dir: PathBuf, keeps: bool) -> Hibernation {
        Hibernation { dir, keeps, sleeping: Mutex::default(), scanned: Mutex::default(), next: AtomicU64::new(0) }
    }

    /// The folder of the files (kernels are denied it).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Whether the files outlive the engine.
    pub fn keeps(&self) -> bool {
        self.keeps
    }

    /// Read the records a previous engine left; a record whose file is gone
    /// or that cannot be read is set aside (renamed `.bad`), not guessed at.
    /// `initial`: this process starts on the folder, so a wake a stopped
    /// process left half done (its record renamed `.waking`) is undone.
    fn load(&self, initial: bool) {
        *self.scanned.lock().unwrap() = modified(&self.dir);
        let Ok(entries) = std::fs::read_dir(&self.dir) else { return };
        let mut sleeping = self.sleeping.lock().unwrap();
        let known: std::collections::HashSet<String> = sleeping.values().map(|record| record.file.clone()).collect();
        for entry in entries.flatten() {
            let mut path = entry.path();
            match path.extension().and_then(|e| e.to_str()) {
                Some("json") => {}
                Some("waking") if initial => {
                    let record = path.with_extension("json");
                    if std::fs::rename(&path, &record).is_err() {
                        continue;
                    }
                    path = record;
                }
                Some("tmp") if initial => {
                    let _ = std::fs::remove_file(&path); // a hibernation cut short
                    continue;
                }
                _ => continue,
            }
            let record = std::fs::read(&path).ok().and_then(|bytes| serde_json::from_slice::<Sleeping>(&bytes).ok());
            match record {
                Some(record) if known.contains(&record.file) => {}
                Some(record) if is_file_name(&record.file) && self.dir.join(&record.file).is_file() => {
                    sleeping.insert((record.session.clone(), record.cwd.clone()), record);
                }
                _ => {
                    tracing::warn!(record = %path.display(), "a hibernation record that cannot be used was set aside");
                    let _ = std::fs::rename(&path, path.with_extension("bad"));
                }
            }
        }
    }

    /// Save `kernel` (the Python kernel of `session` in `cwd`) and record it;
    /// the caller stops the kernel afterwards, whatever the outcome.
    pub async fn hibernate(
        &self,
        kernel: &KernelHandle,
        session: &str,
        cwd: &Path,
        interpreter: &Path,
        owners: Vec<String>,
        why: String,
    ) -> Result<Sleeping, HibernateError> {
        let process = kernel.as_process().ok_or(HibernateError::Unsupported)?;
        let stem = format!(
            "{}-{}",
            SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_nanos(),
            self.next.fetch_add(1, Ordering::Relaxed)
        );
        let file = format!("{stem}.snap");
        let temporary = self.dir.join(format!("{file}.tmp"));
        let handle = crate::paths::private_file_options().write(true).create_new(true).open(&temporary)?;
        let report = match snapshot_into(process, &handle).await {
            Ok(report) => report,
            Err(error) => {
                let _ = std::fs::remove_file(&temporary);
                return Err(error);
            }
        };
        handle.sync_all()?;
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
            since: SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_secs(),
        };
        std::fs::rename(&temporary, self.dir.join(&file))?;
        self.write_record(&stem, &record)?;
        let old = self.sleeping.lock().unwrap().insert((session.to_string(), cwd.to_path_buf()), record.clone());
        if let Some(old) = old {
            self.remove_files(&old);
        }
        Ok(record)
    }

    /// The record, written next to its file (atomically: the old one or the new one).
    fn write_record(&self, stem: &str, record: &Sleeping) -> std::io::Result<()> {
        let path = self.dir.join(format!("{stem}.json"));
        let temporary = self.dir.join(format!("{stem}.json.tmp"));
        let mut file = crate::paths::private_file_options().write(true).create(true).truncate(true).open(&temporary)?;
        file.write_all(&serde_json::to_vec(record).map_err(std::io::Error::other)?)?;
        file.sync_all()?;
        std::fs::rename(&temporary, &path)?;
        #[cfg(unix)]
        if let Ok(dir) = File::open(&self.dir) {
            let _ = dir.sync_all();
        }
        Ok(())
    }

    /// Take `session`'s record for `cwd`, if it sleeps: the caller wakes it
    /// ([`Hibernation::wake`]), which also removes its files.
    pub fn take(&self, session: &str, cwd: &Path) -> Option<Sleeping> {
        let key = (session.to_string(), cwd.to_path_buf());
        let mut record = self.sleeping.lock().unwrap().remove(&key);
        if record.is_none() && self.keeps && modified(&self.dir) != *self.scanned.lock().unwrap() {
            self.load(false);
            record = self.sleeping.lock().unwrap().remove(&key);
        }
        let record = record?;
        // Out of sight of a rescan while it wakes (and put back by the next start if this one stops midway).
        if let Some(stem) = record.file.strip_suffix(".snap") {
            let _ = std::fs::rename(self.dir.join(format!("{stem}.json")), self.dir.join(format!("{stem}.waking")));
        }
        Some(record)
    }

    /// Whether `session` sleeps (in any working folder).
    pub fn is_sleeping(&self, session: &str) -> bool {
        self.sleeping.lock().unwrap().keys().any(|(name, _)| name == session)
    }

    /// The hibernated sessions' records.
    pub fn sleeping(&self) -> Vec<Sleeping> {
        self.sleeping.lock().unwrap().values().cloned().collect()
    }

    /// Bring `record`'s variables back into `kernel` (just started for its
    /// session), remove its files, and say what happened in words for the
    /// call's result.
    pub async fn wake(&self, kernel: &KernelHandle, record: Sleeping) -> String {
        let started = std::time::Instant::now();
        let outcome = self.restore(kernel, &record).await;
        self.remove_files(&record);
        let saved = name_list(&record.saved);
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
                if lost.is_empty() {
                    note.push('.');
                } else {
                    let lost: Vec<String> = lost.iter().map(|(name, why)| format!("{name} ({why})")).collect();
                    note.push_str(&format!("; not restored: {}.", lost.join(", ")));
                }
                note.push_str(" Imports were redone; threads, open files and the execution count start anew.");
                note
            }
            Err(why) => format!(
                "This session was hibernated ({}), but its variables could not be brought back: {why}. It starts \
                 empty; lost: {}.",
                record.why,
                if saved.is_empty() { "nothing".to_string() } else { saved }
            ),
        }
    }

    async fn restore(&self, kernel: &KernelHandle, record: &Sleeping) -> Result<serde_json::Value, String> {
        let process = kernel.as_process().ok_or("it woke in a kernel cellbox does not run")?;
        let handle = open_read(&self.dir.join(&record.file)).map_err(|e| format!("its file cannot be read ({e})"))?;
        restore_from(process, &handle).await
    }

    /// Forget `session`'s records (a reset, or its owners are gone) and remove their files.
    pub fn forget(&self, session: &str) {
        let gone: Vec<Sleeping> = {
            let mut sleeping = self.sleeping.lock().unwrap();
            let keys: Vec<_> = sleeping.keys().filter(|(name, _)| name == session).cloned().collect();
            keys.iter().filter_map(|key| sleeping.remove(key)).collect()
        };
        for record in gone {
            self.remove_files(&record);
        }
    }

    /// `owner` is gone: records it alone held are forgotten, unless they are kept across restarts.
    pub fn drop_owner(&self, owner: &str) {
        let orphaned: Vec<String> = {
            let mut sleeping = self.sleeping.lock().unwrap();
            for record in sleeping.values_mut() {
                record.owners.retain(|held| held != owner);
            }
            sleeping.values().filter(|record| record.owners.is_empty()).map(|r| r.session.clone()).collect()
        };
        if !self.keeps {
            for session in orphaned {
                self.forget(&session);
            }
        }
    }

    fn remove_files(&self, record: &Sleeping) {
        if !is_file_name(&record.file) {
            return;
        }
        let _ = std::fs::remove_file(self.dir.join(&record.file));
        if let Some(stem) = record.file.strip_suffix(".snap") {
            for extension in ["json", "waking"] {
                let _ = std::fs::remove_file(self.dir.join(format!("{stem}.{extension}")));
            }
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

/// Hold `dir` (a state folder) for this process: a second cellbox on it is
/// refused, since two would take each other's sessions. Keep the file open.
pub fn lock_state_dir(dir: &Path) -> std::io::Result<File> {
    crate::paths::private_dir_builder().create(dir)?;
    crate::paths::tighten_dir(dir);
    let lock = crate::paths::private_file_options().create(true).truncate(false).write(true).open(dir.join("lock"))?;
    match lock.try_lock() {
        Ok(()) => Ok(lock),
        Err(std::fs::TryLockError::WouldBlock) => Err(std::io::Error::other(format!(
            "the state folder {} is in use by another cellbox; give each one a folder of its own",
            dir.display()
        ))),
        Err(std::fs::TryLockError::Error(error)) => Err(error),
    }
}

fn modified(dir: &Path) -> Option<SystemTime> {
    std::fs::metadata(dir).and_then(|meta| meta.modified()).ok()
}

/// A plain file name (a record edited by hand must not point elsewhere).
fn is_file_name(name: &str) -> bool {
    !name.is_empty()
        && Path::new(name).file_name().and_then(|n| n.to_str()) == Some(name)
        && name != ".."
        && name != "."
}

/// How the file is named in the kernel's messages.
#[cfg(unix)]
const LABEL: &str = "the hibernation file";

#[cfg(unix)]
async fn snapshot_into(process: &Kernel, handle: &File) -> Result<serde_json::Value, HibernateError> {
    match tokio::time::timeout(SNAPSHOT_TIMEOUT, process.snapshot_into(handle, LABEL)).await {
        Ok(Ok(report)) => Ok(report),
        Ok(Err(error)) => Err(HibernateError::Kernel(error.to_string())),
        Err(_) => Err(HibernateError::Timeout),
    }
}

#[cfg(unix)]
async fn restore_from(process: &Kernel, handle: &File) -> Result<serde_json::Value, String> {
    match tokio::time::timeout(SNAPSHOT_TIMEOUT, process.restore_from(handle, LABEL)).await {
        Ok(result) => result.map_err(|error| error.to_string()),
        Err(_) => Err(format!("the kernel did not load it within {}s", SNAPSHOT_TIMEOUT.as_secs())),
    }
}

/// Kernels have no control socket here: nothing is handed over (engines do not hibernate off Linux).
#[cfg(not(unix))]
async fn snapshot_into(_process: &Kernel, _handle: &File) -> Result<serde_json::Value, HibernateError> {
    Err(HibernateError::Unsupported)
}

#[cfg(not(unix))]
async fn restore_from(_process: &Kernel, _handle: &File) -> Result<serde_json::Value, String> {
    Err("hibernation needs Linux".into())
}

/// The file, opened for reading without following a symlink in its place.
fn open_read(path: &Path) -> std::io::Result<File> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(&mut options, nix::libc::O_NOFOLLOW);
    options.open(path)
}

fn name_list(names: &[String]) -> String {
    const SHOWN: usize = 20;
    let mut list = names.iter().take(SHOWN).cloned().collect::<Vec<_>>().join(", ");
    if names.len() > SHOWN {
        list.push_str(&format!(" and {} more", names.len() - SHOWN));
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
