//! The SDK's files API (`sandbox.files`): files and folders of the sandbox's
//! machine, reached with no more rights than the sandbox's kernels.
//!
//! Methods (parameters in [`super::wire`]): `files.read` (base64 content, a
//! range of it, and whether the end was reached), `files.write` (several
//! files at once; parent folders are made; `append` adds a chunk),
//! `files.list` (entries to a depth, depth-first in name order, symlinked
//! folders not entered), `files.exists`, `files.get_info` (E2B's `EntryInfo`
//! fields), `files.remove` (a missing path is no error), `files.rename`,
//! `files.make_dir` (false when the folder was there), and the watch methods
//! of [`super::watch`]: `files.watch`, `files.watch_events`, `files.unwatch`.
//! A missing path answers [`ErrorCode::NotFound`].
//!
//! Relative paths start at the server's root (the sandbox's folder);
//! absolute ones are used as given. Every call goes through the engine's
//! [`HostFiles`]: it runs confined by the kernels' own rules and works by
//! file descriptor, so a path a kernel could not read or write is refused
//! ([`ErrorCode::Denied`]) whatever symlink a kernel planted on the way; only
//! regular files are read and written, nothing under `/proc`, `/sys` or
//! `/dev` is opened, and a read returns at most [`MAX_READ_BYTES`] at a time
//! (the SDK reads larger files in chunks).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use tokio_util::sync::CancellationToken;

use super::watch::Watchers;
use super::wire::{self, Answer, Call, EntryInfo, EntryType, ErrorCode, Failure, FsEvent, WriteInfo};
use crate::sandbox::host_files::{Entry, HostFileError, HostFiles, Kind, Refusal};
use crate::sandbox::{SandboxMode, resolve};

/// How often a waiting `files.watch_events` looks at the folder again.
const WATCH_POLL: Duration = Duration::from_millis(100);
/// The most one `files.read` returns; a larger `length` (or none) gets this
/// much and `eof: false`, and the SDK asks for the rest.
pub const MAX_READ_BYTES: u64 = 8 << 20;
/// The most entries one `files.list` answers, or one watch looks at.
pub const MAX_ENTRIES: usize = 20_000;

/// The files API of one server.
pub struct Files {
    host: Result<Arc<HostFiles>, String>,
    watchers: Watchers,
}

impl Files {
    /// The files `host` reaches (the engine's, rooted in the sandbox's folder),
    /// or why the engine cannot reach any.
    pub fn new(host: Result<Arc<HostFiles>, String>) -> Files {
        Files { host, watchers: Watchers::default() }
    }

    /// Answer one `files.*` call; `stopping` ends a waiting `files.watch_events`.
    pub async fn call(self: &Arc<Self>, call: Call, stopping: &CancellationToken) -> Result<Answer, Failure> {
        if let Call::FilesWatchEvents(params) = call {
            return self.watch_events(params, stopping).await.map(Answer::FilesWatchEvents);
        }
        let files = self.clone();
        tokio::task::spawn_blocking(move || files.call_blocking(call))
            .await
            .map_err(|error| Failure::new(ErrorCode::Failed, format!("the files call failed: {error}")))?
    }

    fn host(&self) -> Result<&Arc<HostFiles>, Failure> {
        self.host.as_ref().map_err(|why| Failure::new(ErrorCode::Failed, why.clone()))
    }

    fn call_blocking(&self, call: Call) -> Result<Answer, Failure> {
        let host = self.host()?;
        match call {
            Call::FilesRead(params) => self.read(params).map(Answer::FilesRead),
            Call::FilesWrite(params) => self.write(params).map(Answer::FilesWrite),
            Call::FilesList(params) => self.list(params).map(Answer::FilesList),
            Call::FilesExists(params) => {
                let path = self.path_of(params);
                match host.stat(&path) {
                    Ok(entry) => Ok(Answer::FilesExists(entry.is_some())),
                    // A path nobody may reach is not there, for this principal.
                    Err(HostFileError::Refused { refusal: Refusal::Private(_), .. }) => Ok(Answer::FilesExists(false)),
                    Err(error) => Err(self.failure(error)),
                }
            }
            Call::FilesGetInfo(params) => {
                let path = self.path_of(params);
                let entry = host.stat(&path).map_err(|e| self.failure(e))?;
                let entry = entry.ok_or_else(|| self.failure(HostFileError::NotFound { path: path.clone() }))?;
                Ok(Answer::FilesGetInfo(entry_info(&entry, &mut Owners::default())))
            }
            Call::FilesRemove(params) => {
                let path = self.path_of(params);
                host.remove(&path).map_err(|e| self.failure(e))?;
                Ok(Answer::FilesRemove(()))
            }
            Call::FilesRename(params) => {
                let (old, new) = (host.absolute(&params.old_path), host.absolute(&params.new_path));
                let entry = host.rename(&old, &new).map_err(|e| self.failure(e))?;
                Ok(Answer::FilesRename(entry_info(&entry, &mut Owners::default())))
            }
            Call::FilesMakeDir(params) => {
                let path = self.path_of(params);
                Ok(Answer::FilesMakeDir(host.make_dir(&path).map_err(|e| self.failure(e))?))
            }
            Call::FilesWatch(params) => self.watch(params).map(Answer::FilesWatch),
            Call::FilesUnwatch(params) => Ok(Answer::FilesUnwatch(self.watchers.remove(&params.watcher_id))),
            other => {
                Err(Failure::new(ErrorCode::MethodNotFound, format!("no files method {:?}", other.method().name())))
            }
        }
    }

    fn path_of(&self, params: wire::FilePath) -> PathBuf {
        self.host().map_or_else(|_| PathBuf::from(&params.path), |host| host.absolute(&params.path))
    }

    /// The SDK's words for `error`: what refused it and how to lift that.
    fn failure(&self, error: HostFileError) -> Failure {
        let mode = self.host().map_or(SandboxMode::Off, |host| host.confinement().mode());
        match error {
            HostFileError::NotFound { path } => {
                Failure::new(ErrorCode::NotFound, format!("no such file or folder: {}", path.display()))
            }
            HostFileError::IsAFolder { .. } | HostFileError::NotAFolder { .. } | HostFileError::NotAFile { .. } => {
                Failure::invalid_params(error.to_string())
            }
            HostFileError::Refused { path, refusal } => {
                Failure::new(ErrorCode::Denied, format!("{}: {}", path.display(), refusal_words(&refusal, mode)))
            }
            HostFileError::System { .. } | HostFileError::Symlink { .. } | HostFileError::TooMany { .. } => {
                Failure::new(ErrorCode::Denied, error.to_string())
            }
            HostFileError::Io { path, source } if source.kind() == std::io::ErrorKind::PermissionDenied => {
                Failure::new(
                    ErrorCode::Denied,
                    format!(
                        "{}: {source}: the sandbox policy ({mode}) keeps it out of the kernels' reach, and so out of \
                         the files API's",
                        path.display()
                    ),
                )
            }
            other => Failure::new(ErrorCode::Failed, other.to_string()),
        }
    }

    fn read(&self, params: wire::FileRead) -> Result<wire::FileReadResult, Failure> {
        let host = self.host()?;
        let path = host.absolute(&params.path);
        let length = params.length.unwrap_or(MAX_READ_BYTES).min(MAX_READ_BYTES);
        // Fewer bytes than asked for: the end. A full chunk may have more behind it: the next call finds out.
        let (data, eof) = host.read(&path, params.offset, length).map_err(|e| self.failure(e))?;
        Ok(wire::FileReadResult { data: BASE64.encode(&data), eof })
    }

    /// Check and decode every file first, so that a refused or malformed one writes nothing.
    fn write(&self, params: wire::FileWrite) -> Result<Vec<WriteInfo>, Failure> {
        let host = self.host()?;
        let mut planned = Vec::new();
        for file in params.files {
            let path = host.absolute(&file.path);
            host.check_change(&path).map_err(|e| self.failure(e))?;
            let data = BASE64.decode(file.data.as_bytes()).map_err(|e| {
                Failure::invalid_params(format!("files.write: the data of {} is not base64: {e}", file.path))
            })?;
            planned.push((path, data, file.append));
        }
        let mut written = Vec::new();
        for (path, data, append) in planned {
            host.write(&path, &data, append).map_err(|e| self.failure(e))?;
            self.watchers.touched(&resolve(&path));
            written.push(WriteInfo { name: name_of(&path), kind: EntryType::File, path: path.display().to_string() });
        }
        Ok(written)
    }

    fn list(&self, params: wire::FileList) -> Result<Vec<EntryInfo>, Failure> {
        let host = self.host()?;
        let depth = params.depth.unwrap_or(1);
        if depth < 1 {
            return Err(Failure::invalid_params(format!("files.list: depth should be at least 1, not {depth}")));
        }
        let path = host.absolute(&params.path);
        let entries = host.list(&path, depth as u64, MAX_ENTRIES).map_err(|e| self.failure(e))?;
        let mut owners = Owners::default();
        Ok(entries.iter().map(|entry| entry_info(entry, &mut owners)).collect())
    }

    fn watch(&self, params: wire::FileWatch) -> Result<wire::WatchResult, Failure> {
        let host = self.host()?;
        let path = host.absolute(&params.path);
        match host.stat(&path).map_err(|e| self.failure(e))? {
            None => return Err(self.failure(HostFileError::NotFound { path })),
            Some(entry) if entry.stat.kind != Kind::Dir => {
                return Err(Failure::invalid_params(format!(
                    "{} is not a folder: only folders can be watched",
                    path.display()
                )));
            }
            Some(_) => {}
        }
        let id = self
            .watchers
            .add(host.clone(), &path, params.recursive, params.include_entry)
            .map_err(|e| self.failure(e))?;
        Ok(wire::WatchResult { watcher_id: id })
    }

    /// The changes since the last call; none yet: look again every
    /// [`WATCH_POLL`] until one comes or `wait` seconds pass.
    async fn watch_events(
        &self,
        params: wire::WatchEvents,
        stopping: &CancellationToken,
    ) -> Result<Vec<FsEvent>, Failure> {
        let wait = match params.wait {
            None => 0.0,
            Some(seconds) if seconds.is_finite() && seconds >= 0.0 => seconds.min(wire::MAX_WATCH_WAIT_SECS),
            Some(bad) => return Err(Failure::invalid_params(format!("wait must be 0 or more seconds, not {bad}"))),
        };
        let deadline = Instant::now() + Duration::from_secs_f64(wait);
        loop {
            let watcher = self.watchers.get(&params.watcher_id).ok_or_else(|| {
                Failure::new(ErrorCode::NotFound, format!("no watcher {:?} (it was stopped)", params.watcher_id))
            })?;
            let events = tokio::task::spawn_blocking(move || watcher.lock().unwrap().poll())
                .await
                .map_err(|error| Failure::new(ErrorCode::Failed, format!("the watch failed: {error}")))?
                .map_err(|error| self.failure(error))?;
            if !events.is_empty() || Instant::now() >= deadline {
                return Ok(events);
            }
            tokio::select! {
                _ = tokio::time::sleep(WATCH_POLL) => {}
                _ = stopping.cancelled() => return Ok(Vec::new()),
            }
        }
    }
}

/// A refusal in the SDK's words: which rule, and the sandbox option that lifts it.
fn refusal_words(refusal: &Refusal, mode: SandboxMode) -> String {
    match refusal {
        Refusal::Secret(secret) => format!(
            "the sandbox policy ({mode}) keeps secret locations such as {} unreadable, for kernels and the files API \
             alike; start the sandbox with sandbox=\"off\" (CELLBOX_SANDBOX=off) to reach them",
            secret.display()
        ),
        Refusal::Private(root) => format!(
            "only your own folder under {} is readable on this server; the others belong to other principals",
            root.display()
        ),
        Refusal::NotWritable(places) if places.is_empty() || mode == SandboxMode::ReadOnly => format!(
            "the sandbox policy ({mode}) lets kernels and the files API write nowhere but each kernel's private temp \
             dir; start the sandbox with sandbox=\"workspace-write\" to write in its folder, or sandbox=\"off\""
        ),
        Refusal::NotWritable(places) => {
            let places: Vec<String> = places.iter().map(|p| p.display().to_string()).collect();
            format!(
                "outside the folders the sandbox policy ({mode}) lets kernels and the files API write ({}); add the \
                 folder with CELLBOX_ALLOW_WRITE (or --allow-write), or start the sandbox with sandbox=\"off\" \
                 (CELLBOX_SANDBOX=off)",
                places.join(", ")
            )
        }
        Refusal::WritableFolder(_) => {
            "is a writable folder itself: the policy lets its contents change, not the folder".to_string()
        }
    }
}

fn name_of(path: &Path) -> String {
    path.file_name().map_or_else(|| path.display().to_string(), |name| name.to_string_lossy().into_owned())
}

/// E2B's `EntryInfo` of `entry`: a symlink is described by its target, whose
/// resolved path is its `symlink_target`; one whose target is missing (or
/// unreachable) is of type `symlink`.
pub(super) fn entry_info(entry: &Entry, owners: &mut Owners) -> EntryInfo {
    let stat = &entry.stat;
    let kind = match stat.kind {
        Kind::Dir => EntryType::Dir,
        Kind::Symlink => EntryType::Symlink,
        Kind::File | Kind::Other => EntryType::File,
    };
    let (mode, permissions) = permissions(stat.mode);
    let (owner, group) = owners.of(stat.uid, stat.gid);
    let modified = stat.modified.and_then(|time| time.duration_since(UNIX_EPOCH).ok());
    EntryInfo {
        name: name_of(&entry.path),
        kind,
        path: entry.path.display().to_string(),
        size: stat.size,
        mode,
        permissions,
        owner,
        group,
        modified_time: modified.map_or(0.0, |elapsed| elapsed.as_secs_f64()),
        symlink_target: entry.link.as_ref().map(|(target, _)| target.display().to_string()),
    }
}

/// The permission bits of `st_mode` and their `ls -l` style text (`-rw-r--r--`,
/// `drwxr-xr-x`; special bits as letters before them, as E2B shows them).
fn permissions(st_mode: u32) -> (u32, String) {
    const TYPE: u32 = 0o170000;
    let kind = st_mode & TYPE;
    let (dir, symlink, block, char_device, fifo, socket) = (0o040000, 0o120000, 0o060000, 0o020000, 0o010000, 0o140000);
    let mut text = String::new();
    for (is, letter) in [
        (kind == dir, "d"),
        (kind == symlink, "L"),
        (kind == block || kind == char_device, "D"),
        (kind == fifo, "p"),
        (kind == socket, "S"),
        (st_mode & 0o4000 != 0, "u"),
        (st_mode & 0o2000 != 0, "g"),
        (kind == char_device, "c"),
        (st_mode & 0o1000 != 0, "t"),
    ] {
        if is {
            text.push_str(letter);
        }
    }
    let mode = st_mode & 0o777;
    if text.is_empty() {
        text.push('-');
    }
    for (bit, letter) in (0..9).rev().zip("rwxrwxrwx".chars()) {
        text.push(if mode & (1 << bit) != 0 { letter } else { '-' });
    }
    (mode, text)
}

/// User and group names by id, looked up once per listing.
#[derive(Default)]
pub(super) struct Owners {
    #[cfg(unix)]
    names: std::collections::HashMap<(bool, u32), String>,
}

impl Owners {
    #[cfg(unix)]
    fn of(&mut self, uid: u32, gid: u32) -> (String, String) {
        use nix::unistd::{Gid, Group, Uid, User};
        let user = self
            .names
            .entry((true, uid))
            .or_insert_with(|| User::from_uid(Uid::from_raw(uid)).ok().flatten().map_or(uid.to_string(), |u| u.name));
        let user = user.clone();
        let group = self
            .names
            .entry((false, gid))
            .or_insert_with(|| Group::from_gid(Gid::from_raw(gid)).ok().flatten().map_or(gid.to_string(), |g| g.name));
        (user, group.clone())
    }

    #[cfg(not(unix))]
    fn of(&mut self, _uid: u32, _gid: u32) -> (String, String) {
        (String::new(), String::new())
    }
}
