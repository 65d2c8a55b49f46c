//! The SDK's files API (`sandbox.files`): files and folders of the sandbox's
//! machine, read and written by the engine itself.
//!
//! Methods (parameters in [`super::wire`]): `files.read` (base64 content,
//! whole or a range of it, and whether the end was reached), `files.write`
//! (several files at once; parent folders are made; `append` adds a chunk),
//! `files.list` (entries to a depth, depth-first in name order, symlinked
//! folders not entered), `files.exists`, `files.get_info` (E2B's `EntryInfo`
//! fields), `files.remove` (a missing path is no error), `files.rename`,
//! `files.make_dir` (false when the folder was there), and the watch methods
//! of [`super::watch`]: `files.watch`, `files.watch_events`, `files.unwatch`.
//! A missing path answers [`code::NOT_FOUND`].
//!
//! Relative paths start at the server's root (the sandbox's folder);
//! absolute ones are used as given. Unless the sandbox mode is `off`, every
//! call obeys the kernels' policy, from the same description their Landlock
//! rules are made of ([`file_access`]): a path that resolves into a secret
//! location cannot be read, listed, watched or written, and writing,
//! removing, renaming or making a folder is allowed only under the writable
//! folders (removing or renaming a writable folder itself is not). Both are
//! refused with [`code::DENIED`]. The files API enforces the configured mode
//! even where the OS cannot enforce it for kernels. Each kernel's private
//! temp dir is its own: the files API has none.

use std::fs;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::parse;
use super::watch::Watchers;
use super::wire::{self, EntryInfo, Failure, code};
use crate::discovery::{EnvActivation, env};
use crate::sandbox::{Denial, FileAccess, SandboxMode, file_access, resolve};
use crate::tool::EngineConfig;

/// What [`file_access`] is given as the kernel's private temp dir: a device
/// every mode may write already, so the files API gets no temp dir of its own.
const NO_TEMP_DIR: &str = "/dev/null";
/// How often a waiting `files.watch_events` looks at the folder again.
const WATCH_POLL: Duration = Duration::from_millis(100);

/// The files API of one server.
pub struct Files {
    root: PathBuf,
    /// `None` when the sandbox mode is `off`: nothing is checked.
    policy: Option<Policy>,
    watchers: Watchers,
}

/// The paths the sandbox policy gives kernels, and how to word a refusal.
struct Policy {
    mode: SandboxMode,
    access: FileAccess,
    /// The writable folders a refusal names (devices left out).
    places: Vec<PathBuf>,
}

impl Files {
    /// The files under `root`, held to `config`'s sandbox policy as a kernel
    /// in `root` would be (the same home, environment and `allow_write`).
    pub fn new(root: PathBuf, config: &EngineConfig) -> Files {
        let sandbox = &config.sandbox;
        let policy = (sandbox.mode != SandboxMode::Off).then(|| {
            let env = env::kernel_env(std::env::vars_os(), &EnvActivation::None, &config.extra_env);
            let home = env.get("HOME").map(PathBuf::from).or_else(dirs::home_dir).unwrap_or_else(|| PathBuf::from("/"));
            let access = file_access(sandbox, sandbox.mode, &root, &home, &env, Path::new(NO_TEMP_DIR));
            let mut places = Vec::new();
            if sandbox.mode == SandboxMode::WorkspaceWrite {
                places.push(resolve(&root));
                places.extend(sandbox.allow_write.iter().map(|p| resolve(p)));
            }
            Policy { mode: sandbox.mode, access, places }
        });
        Files { root, policy, watchers: Watchers::default() }
    }

    /// Answer one `files.*` request; `stopping` ends a waiting `files.watch_events`.
    pub async fn call(
        self: &Arc<Self>,
        method: &str,
        params: Value,
        stopping: &CancellationToken,
    ) -> Result<Value, Failure> {
        if method == "files.watch_events" {
            return self.watch_events(parse(method, params)?, stopping).await;
        }
        let (files, method) = (self.clone(), method.to_string());
        tokio::task::spawn_blocking(move || files.call_blocking(&method, params))
            .await
            .map_err(|error| Failure::new(code::FAILED, format!("the files call failed: {error}")))?
    }

    fn call_blocking(&self, method: &str, params: Value) -> Result<Value, Failure> {
        match method {
            "files.read" => self.read(parse(method, params)?),
            "files.write" => self.write(parse(method, params)?),
            "files.list" => self.list(parse(method, params)?),
            "files.exists" => {
                let path = self.path_of(parse(method, params)?);
                self.check_read(&path)?;
                Ok(json!(fs::symlink_metadata(&path).is_ok()))
            }
            "files.get_info" => {
                let path = self.path_of(parse(method, params)?);
                self.check_read(&path)?;
                Ok(json!(entry_info(&path, &mut Owners::default()).map_err(|e| io_failure(&path, e))?))
            }
            "files.remove" => self.remove(parse(method, params)?),
            "files.rename" => self.rename(parse(method, params)?),
            "files.make_dir" => self.make_dir(parse(method, params)?),
            "files.watch" => self.watch(parse(method, params)?),
            "files.unwatch" => {
                let params: wire::WatcherRef = parse(method, params)?;
                Ok(json!(self.watchers.remove(&params.watcher_id)))
            }
            other => Err(Failure::new(code::METHOD_NOT_FOUND, format!("no method {other:?}"))),
        }
    }

    /// `path` from the root when relative, with `.` and `..` folded (symlinks are not followed).
    fn absolute(&self, path: &str) -> PathBuf {
        lexical(&self.root.join(path))
    }

    fn path_of(&self, params: wire::FilePath) -> PathBuf {
        self.absolute(&params.path)
    }

    /// Refuse `path` when it resolves into a secret location.
    fn check_read(&self, path: &Path) -> Result<(), Failure> {
        self.check_secret(path, &resolve(path))
    }

    fn check_secret(&self, path: &Path, real: &Path) -> Result<(), Failure> {
        let Some(policy) = &self.policy else { return Ok(()) };
        match policy.access.denial(real) {
            None => Ok(()),
            Some(Denial::Private(root)) => Err(Failure::new(
                code::DENIED,
                format!(
                    "{}: only your own folder under {} is readable on this server; the others belong to other \
                     principals",
                    path.display(),
                    root.display()
                ),
            )),
            Some(Denial::Secret(secret)) => Err(Failure::new(
                code::DENIED,
                format!(
                    "{}: the sandbox policy ({}) keeps secret locations such as {} unreadable, for kernels and the \
                     files API alike; start the sandbox with sandbox=\"off\" (CELLBOX_SANDBOX=off) to reach them",
                    path.display(),
                    policy.mode,
                    secret.display()
                ),
            )),
        }
    }

    /// Refuse a change to `path` outside the writable folders. `contents`:
    /// the file or folder `path` resolves to is written (a write, a new
    /// folder); otherwise the entry itself changes (a remove or rename: its
    /// last component is not followed, and a writable folder itself is refused).
    fn check_write(&self, path: &Path, contents: bool) -> Result<(), Failure> {
        let real = match (contents, path.parent(), path.file_name()) {
            (false, Some(parent), Some(name)) => resolve(parent).join(name),
            _ => resolve(path),
        };
        self.check_secret(path, &real)?;
        let Some(policy) = &self.policy else { return Ok(()) };
        let mut under = policy.access.writable.iter().filter(|place| real.starts_with(place));
        if under.clone().any(|place| contents || real != *place) {
            return Ok(());
        }
        let reason = if under.next().is_some() {
            "is a writable folder itself: the policy lets its contents change, not the folder".to_string()
        } else if policy.places.is_empty() {
            format!(
                "the sandbox policy ({}) lets kernels and the files API write nowhere but each kernel's private temp \
                 dir; start the sandbox with sandbox=\"workspace-write\" to write in its folder, or sandbox=\"off\"",
                policy.mode
            )
        } else {
            let places: Vec<String> = policy.places.iter().map(|p| p.display().to_string()).collect();
            format!(
                "outside the folders the sandbox policy ({}) lets kernels and the files API write ({}); add the \
                 folder with CELLBOX_ALLOW_WRITE (or --allow-write), or start the sandbox with sandbox=\"off\" \
                 (CELLBOX_SANDBOX=off)",
                policy.mode,
                places.join(", ")
            )
        };
        Err(Failure::new(code::DENIED, format!("{}: {reason}", path.display())))
    }

    fn read(&self, params: wire::FileRead) -> Result<Value, Failure> {
        let path = self.absolute(&params.path);
        self.check_read(&path)?;
        let mut file = fs::File::open(&path).map_err(|e| io_failure(&path, e))?;
        if file.metadata().is_ok_and(|meta| meta.is_dir()) {
            return Err(Failure::invalid_params(format!("{} is a folder, not a file", path.display())));
        }
        let mut data = Vec::new();
        let read = file.seek(SeekFrom::Start(params.offset)).and_then(|_| match params.length {
            Some(length) => file.take(length).read_to_end(&mut data),
            None => file.read_to_end(&mut data),
        });
        read.map_err(|e| io_failure(&path, e))?;
        // A full chunk may have more behind it: the next call finds out.
        let eof = params.length.is_none_or(|length| (data.len() as u64) < length);
        Ok(json!({"data": BASE64.encode(&data), "eof": eof}))
    }

    /// Check and decode every file first, so that a refused or malformed one writes nothing.
    fn write(&self, params: wire::FileWrite) -> Result<Value, Failure> {
        let mut planned = Vec::new();
        for file in params.files {
            let path = self.absolute(&file.path);
            self.check_write(&path, true)?;
            let data = BASE64.decode(file.data.as_bytes()).map_err(|e| {
                Failure::invalid_params(format!("files.write: the data of {} is not base64: {e}", file.path))
            })?;
            planned.push((path, data, file.append));
        }
        let mut written = Vec::new();
        for (path, data, append) in planned {
            if path.is_dir() {
                return Err(Failure::invalid_params(format!("{} is a folder, not a file", path.display())));
            }
            if let Some(parent) = path.parent() {
                fs::create_dir_all(parent).map_err(|e| io_failure(parent, e))?;
            }
            let mut options = fs::OpenOptions::new();
            options.create(true).write(true).append(append).truncate(!append);
            options.open(&path).and_then(|mut file| file.write_all(&data)).map_err(|e| io_failure(&path, e))?;
            self.watchers.touched(&resolve(&path));
            written.push(json!({"name": name_of(&path), "type": "file", "path": path.display().to_string()}));
        }
        Ok(Value::Array(written))
    }

    fn list(&self, params: wire::FileList) -> Result<Value, Failure> {
        let depth = params.depth.unwrap_or(1);
        if depth < 1 {
            return Err(Failure::invalid_params(format!("files.list: depth should be at least 1, not {depth}")));
        }
        let path = self.absolute(&params.path);
        self.check_read(&path)?;
        let meta = fs::metadata(&path).map_err(|e| io_failure(&path, e))?;
        if !meta.is_dir() {
            return Err(Failure::invalid_params(format!("{} is not a folder", path.display())));
        }
        let mut entries = Vec::new();
        let mut owners = Owners::default();
        let names = sorted_names(&path).map_err(|e| io_failure(&path, e))?;
        self.walk(&path, names, depth as u64, &mut entries, &mut owners);
        Ok(json!(entries))
    }

    /// Depth-first, names in order; a folder is entered while `depth` lasts,
    /// unless it is a symlink, unreadable, or a secret location.
    fn walk(
        &self,
        dir: &Path,
        names: Vec<std::ffi::OsString>,
        depth: u64,
        out: &mut Vec<EntryInfo>,
        owners: &mut Owners,
    ) {
        for name in names {
            let child = dir.join(name);
            let Ok(info) = entry_info(&child, owners) else { continue };
            let enter = depth > 1 && info.kind == "dir" && info.symlink_target.is_none();
            out.push(info);
            if enter
                && self.check_read(&child).is_ok()
                && let Ok(names) = sorted_names(&child)
            {
                self.walk(&child, names, depth - 1, out, owners);
            }
        }
    }

    fn remove(&self, params: wire::FilePath) -> Result<Value, Failure> {
        let path = self.path_of(params);
        self.check_write(&path, false)?;
        let meta = match fs::symlink_metadata(&path) {
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Value::Null),
            other => other.map_err(|e| io_failure(&path, e))?,
        };
        let removed = if meta.is_dir() { fs::remove_dir_all(&path) } else { fs::remove_file(&path) };
        removed.map_err(|e| io_failure(&path, e))?;
        Ok(Value::Null)
    }

    fn rename(&self, params: wire::FileRename) -> Result<Value, Failure> {
        let (old, new) = (self.absolute(&params.old_path), self.absolute(&params.new_path));
        self.check_write(&old, false)?;
        self.check_write(&new, false)?;
        fs::symlink_metadata(&old).map_err(|e| io_failure(&old, e))?;
        fs::rename(&old, &new).map_err(|error| match error.kind() {
            std::io::ErrorKind::NotFound => {
                Failure::new(code::NOT_FOUND, format!("{}: its folder does not exist", new.display()))
            }
            _ => Failure::new(code::FAILED, format!("cannot rename {} to {}: {error}", old.display(), new.display())),
        })?;
        Ok(json!(entry_info(&new, &mut Owners::default()).map_err(|e| io_failure(&new, e))?))
    }

    fn make_dir(&self, params: wire::FilePath) -> Result<Value, Failure> {
        let path = self.path_of(params);
        self.check_write(&path, true)?;
        match fs::metadata(&path) {
            Ok(meta) if meta.is_dir() => return Ok(json!(false)),
            Ok(_) => return Err(Failure::new(code::FAILED, format!("{} exists and is not a folder", path.display()))),
            Err(_) => {}
        }
        fs::create_dir_all(&path).map_err(|e| io_failure(&path, e))?;
        Ok(json!(true))
    }

    fn watch(&self, params: wire::FileWatch) -> Result<Value, Failure> {
        let path = self.absolute(&params.path);
        self.check_read(&path)?;
        let meta = fs::metadata(&path).map_err(|e| io_failure(&path, e))?;
        if !meta.is_dir() {
            return Err(Failure::invalid_params(format!(
                "{} is not a folder: only folders can be watched",
                path.display()
            )));
        }
        let denied = self.policy.as_ref().map(|p| p.access.denied.clone()).unwrap_or_default();
        let id = self.watchers.add(&path, params.recursive, params.include_entry, denied);
        Ok(json!({"watcher_id": id}))
    }

    /// The changes since the last call; none yet: look again every
    /// [`WATCH_POLL`] until one comes or `wait` seconds pass.
    async fn watch_events(&self, params: wire::WatchEvents, stopping: &CancellationToken) -> Result<Value, Failure> {
        let wait = match params.wait {
            None => 0.0,
            Some(seconds) if seconds.is_finite() && seconds >= 0.0 => seconds.min(wire::MAX_WATCH_WAIT_SECS),
            Some(bad) => return Err(Failure::invalid_params(format!("wait must be 0 or more seconds, not {bad}"))),
        };
        let deadline = Instant::now() + Duration::from_secs_f64(wait);
        loop {
            let watcher = self.watchers.get(&params.watcher_id).ok_or_else(|| {
                Failure::new(code::NOT_FOUND, format!("no watcher {:?} (it was stopped)", params.watcher_id))
            })?;
            let events = tokio::task::spawn_blocking(move || watcher.lock().unwrap().poll())
                .await
                .map_err(|error| Failure::new(code::FAILED, format!("the watch failed: {error}")))?;
            if !events.is_empty() || Instant::now() >= deadline {
                return Ok(json!(events));
            }
            tokio::select! {
                _ = tokio::time::sleep(WATCH_POLL) => {}
                _ = stopping.cancelled() => return Ok(json!([])),
            }
        }
    }
}

/// `path` with `.` and `..` folded, without looking at the disk.
pub(super) fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                if !matches!(out.components().next_back(), None | Some(Component::RootDir | Component::Prefix(_))) {
                    out.pop();
                }
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

fn name_of(path: &Path) -> String {
    path.file_name().map_or_else(|| path.display().to_string(), |name| name.to_string_lossy().into_owned())
}

fn sorted_names(dir: &Path) -> std::io::Result<Vec<std::ffi::OsString>> {
    let mut names: Vec<_> = fs::read_dir(dir)?.filter_map(|entry| entry.ok().map(|e| e.file_name())).collect();
    names.sort();
    Ok(names)
}

fn io_failure(path: &Path, error: std::io::Error) -> Failure {
    match error.kind() {
        std::io::ErrorKind::NotFound => {
            Failure::new(code::NOT_FOUND, format!("no such file or folder: {}", path.display()))
        }
        _ => Failure::new(code::FAILED, format!("{}: {error}", path.display())),
    }
}

/// The entry at `path` (shown as written). A symlink is described by its
/// target, whose resolved path is its `symlink_target`; one whose target
/// is missing is of type `symlink`.
pub(super) fn entry_info(path: &Path, owners: &mut Owners) -> std::io::Result<EntryInfo> {
    let link = fs::symlink_metadata(path)?;
    let (meta, target) = if link.file_type().is_symlink() {
        let target = fs::canonicalize(path).ok().or_else(|| {
            let target = fs::read_link(path).ok()?;
            Some(path.parent().map_or(target.clone(), |parent| lexical(&parent.join(&target))))
        });
        (fs::metadata(path).ok(), target)
    } else {
        (Some(link.clone()), None)
    };
    let kind = match &meta {
        Some(meta) if meta.is_dir() => "dir",
        Some(_) => "file",
        None => "symlink",
    };
    let meta = meta.unwrap_or(link);
    let (mode, permissions) = permissions(&meta);
    let (owner, group) = owners.of(&meta);
    let modified = meta.modified().ok().and_then(|time| time.duration_since(UNIX_EPOCH).ok());
    Ok(EntryInfo {
        name: name_of(path),
        kind,
        path: path.display().to_string(),
        size: meta.len(),
        mode,
        permissions,
        owner,
        group,
        modified_time: modified.map_or(0.0, |elapsed| elapsed.as_secs_f64()),
        symlink_target: target.map(|target| target.display().to_string()),
    })
}

/// The permission bits and their `ls -l` style text (`-rw-r--r--`,
/// `drwxr-xr-x`; special bits as letters before them, as E2B shows them).
fn permissions(meta: &fs::Metadata) -> (u32, String) {
    #[cfg(unix)]
    let (mode, mut text) = {
        use std::os::unix::fs::{FileTypeExt, MetadataExt};
        let (kind, mode) = (meta.file_type(), meta.mode());
        let mut text = String::new();
        for (is, letter) in [
            (kind.is_dir(), "d"),
            (kind.is_symlink(), "L"),
            (kind.is_block_device() || kind.is_char_device(), "D"),
            (kind.is_fifo(), "p"),
            (kind.is_socket(), "S"),
            (mode & 0o4000 != 0, "u"),
            (mode & 0o2000 != 0, "g"),
            (kind.is_char_device(), "c"),
            (mode & 0o1000 != 0, "t"),
        ] {
            if is {
                text.push_str(letter);
            }
        }
        (mode & 0o777, text)
    };
    #[cfg(not(unix))]
    let (mode, mut text) = match (meta.is_dir(), meta.permissions().readonly()) {
        (true, _) => (0o755, "d".to_string()),
        (false, true) => (0o444, String::new()),
        (false, false) => (0o644, String::new()),
    };
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
    fn of(&mut self, meta: &fs::Metadata) -> (String, String) {
        use nix::unistd::{Gid, Group, Uid, User};
        use std::os::unix::fs::MetadataExt;
        let user = self.names.entry((true, meta.uid())).or_insert_with(|| {
            User::from_uid(Uid::from_raw(meta.uid())).ok().flatten().map_or(meta.uid().to_string(), |u| u.name)
        });
        let user = user.clone();
        let group = self.names.entry((false, meta.gid())).or_insert_with(|| {
            Group::from_gid(Gid::from_raw(meta.gid())).ok().flatten().map_or(meta.gid().to_string(), |g| g.name)
        });
        (user, group.clone())
    }

    #[cfg(not(unix))]
    fn of(&mut self, _meta: &fs::Metadata) -> (String, String) {
        (String::new(), String::new())
    }
}
