//! Watching a folder for the SDK (`files.watch_dir`), by polling: no crate
//! and no OS notification API, so it works the same everywhere and sees
//! what kernels and commands change as well as what the files API does.
//!
//! `files.watch` takes a snapshot of the folder (its entries, or the whole
//! tree when recursive), through the engine's [`HostFiles`]: confined like
//! the kernels, symlinked folders and what the principal may not read never
//! entered, and at most [`MAX_ENTRIES`] entries (a bigger tree is refused
//! when the watch starts, and a watch whose folder grows past it fails). `files.watch_events` compares the folder with the snapshot,
//! answers the differences as events and keeps the new state:
//!
//! - a new entry is `create`, a new non-empty file `create` then `write`;
//! - a file whose size, modification time or inode changed is `write`;
//! - changed permission bits are `chmod`;
//! - a vanished entry is `remove`, or `rename` when the same inode appeared
//!   under another name (that one is then a `create`).
//!
//! Between two looks only the net change is seen: a file created and removed
//! in between leaves no event, and a rewrite of a file with the same size
//! within the file system's timestamp granularity is seen only when the files
//! API made it (its writes are remembered for every watcher that covers them).
//! The SDK's async handle asks with a `wait`, which makes the engine look
//! again every 100 ms until something changed.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use super::files::{MAX_ENTRIES, Owners, entry_info};
use super::wire::{FsEvent, FsEventType};
use crate::sandbox::host_files::{HostFileError, HostFiles, Kind, Stat};
use crate::sandbox::resolve;

/// Watchers one connection may have at once (each keeps its folder's entries).
pub const MAX_WATCHERS: usize = 64;

/// The watchers of one server, by id.
#[derive(Default)]
pub struct Watchers {
    next: AtomicU64,
    all: Mutex<HashMap<String, Arc<Mutex<Watcher>>>>,
}

impl Watchers {
    /// Start watching `dir` (shown as given) through `host`. Returns the watcher's id.
    pub fn add(
        &self,
        host: Arc<HostFiles>,
        dir: &Path,
        recursive: bool,
        include_entry: bool,
    ) -> Result<String, HostFileError> {
        let mut watcher = Watcher {
            host,
            real: resolve(dir),
            shown: dir.to_path_buf(),
            recursive,
            include_entry,
            seen: BTreeMap::new(),
            touched: HashSet::new(),
        };
        if self.all.lock().unwrap().len() >= MAX_WATCHERS {
            return Err(HostFileError::TooMany { path: dir.to_path_buf(), limit: MAX_WATCHERS });
        }
        watcher.seen = watcher.scan()?;
        let id = format!("watch-{}", self.next.fetch_add(1, Ordering::Relaxed) + 1);
        let mut all = self.all.lock().unwrap();
        if all.len() >= MAX_WATCHERS {
            return Err(HostFileError::TooMany { path: dir.to_path_buf(), limit: MAX_WATCHERS });
        }
        all.insert(id.clone(), Arc::new(Mutex::new(watcher)));
        Ok(id)
    }

    pub fn get(&self, id: &str) -> Option<Arc<Mutex<Watcher>>> {
        self.all.lock().unwrap().get(id).cloned()
    }

    /// Stop a watcher; false when there was none by that id.
    pub fn remove(&self, id: &str) -> bool {
        self.all.lock().unwrap().remove(id).is_some()
    }

    /// The files API wrote the file at `real` (a resolved path): the next
    /// look of every watcher that covers it reports a `write`.
    pub fn touched(&self, real: &Path) {
        let watchers: Vec<_> = self.all.lock().unwrap().values().cloned().collect();
        for watcher in watchers {
            let mut watcher = watcher.lock().unwrap();
            let Ok(relative) = real.strip_prefix(&watcher.real) else { continue };
            if watcher.recursive || relative.components().count() == 1 {
                let relative = relative.to_path_buf();
                watcher.touched.insert(relative);
            }
        }
    }
}

/// One watched folder and what it held at the last look.
pub struct Watcher {
    host: Arc<HostFiles>,
    real: PathBuf,
    shown: PathBuf,
    recursive: bool,
    include_entry: bool,
    seen: BTreeMap<PathBuf, Signature>,
    /// Files the files API wrote since the last look (relative paths).
    touched: HashSet<PathBuf>,
}

/// What a change of an entry is told by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Signature {
    is_dir: bool,
    size: u64,
    modified: Option<SystemTime>,
    mode: u32,
    inode: u64,
}

impl Watcher {
    /// The events since the last look, removals and renames first.
    pub fn poll(&mut self) -> Result<Vec<FsEvent>, HostFileError> {
        let now = self.scan()?;
        let touched = std::mem::take(&mut self.touched);
        let mut events = Vec::new();
        let appeared: HashMap<u64, &PathBuf> = now
            .iter()
            .filter(|(path, signature)| signature.inode != 0 && !self.seen.contains_key(*path))
            .map(|(path, signature)| (signature.inode, path))
            .collect();
        let mut renamed_to = HashSet::new();
        for (path, old) in &self.seen {
            if now.contains_key(path) {
                continue;
            }
            match appeared.get(&old.inode).filter(|new| old.inode != 0 && now[**new].is_dir == old.is_dir) {
                Some(new) => {
                    renamed_to.insert((*new).clone());
                    events.push(self.event(path, FsEventType::Rename, false));
                }
                None => events.push(self.event(path, FsEventType::Remove, false)),
            }
        }
        for (path, new) in &now {
            let written = touched.contains(path);
            match self.seen.get(path) {
                None => {
                    events.push(self.event(path, FsEventType::Create, true));
                    if !new.is_dir && !renamed_to.contains(path) && (new.size > 0 || written) {
                        events.push(self.event(path, FsEventType::Write, true));
                    }
                }
                Some(old) if old.is_dir != new.is_dir => {
                    events.push(self.event(path, FsEventType::Remove, false));
                    events.push(self.event(path, FsEventType::Create, true));
                }
                Some(old) => {
                    if old.mode != new.mode {
                        events.push(self.event(path, FsEventType::Chmod, true));
                    }
                    let changed = old.size != new.size || old.modified != new.modified || old.inode != new.inode;
                    if !new.is_dir && (changed || written) {
                        events.push(self.event(path, FsEventType::Write, true));
                    }
                }
            }
        }
        self.seen = now;
        Ok(events)
    }

    fn event(&self, relative: &Path, kind: FsEventType, exists: bool) -> FsEvent {
        let name: Vec<String> = relative.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
        let entry = (self.include_entry && exists)
            .then(|| self.host.stat(&self.shown.join(relative)).ok().flatten())
            .flatten()
            .map(|entry| entry_info(&entry, &mut Owners::default()));
        FsEvent { name: name.join("/"), kind, entry }
    }

    /// Every entry under the folder now (the folder's own entries unless recursive).
    fn scan(&self) -> Result<BTreeMap<PathBuf, Signature>, HostFileError> {
        let entries = self.host.scan(&self.shown, self.recursive, MAX_ENTRIES)?;
        Ok(entries.into_iter().map(|(relative, stat)| (relative, signature(&stat))).collect())
    }
}

/// `stat` is the entry's own (a symlink is not followed).
fn signature(stat: &Stat) -> Signature {
    Signature {
        is_dir: stat.kind == Kind::Dir,
        size: stat.size,
        modified: stat.modified,
        mode: stat.mode & 0o7777,
        inode: stat.inode,
    }
}
