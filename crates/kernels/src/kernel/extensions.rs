//! Extension modules: Python files run in every new Python kernel right
//! after the prelude, so a user or a project can add helpers of their own.
//!
//! They come from `~/.cellbox/modules/*.py` (or `$CELLBOX_MODULES_DIR`) and
//! `<cwd>/.cellbox/modules/*.py`; a project module replaces a user module of
//! the same file name. Each runs in the cell namespace, in name order, with
//! its own file name in tracebacks. The host reads them, so they work the
//! same for runner processes and for kernels on a remote gateway.
//!
//! A project's folder is the kernel's own to write, so what the host reads
//! there is read with the kernel's rights, never the host's: through
//! [`HostFiles`], confined by the kernel's sandbox policy and by file
//! descriptor. A module a cell links to a secret, to `/proc/self/environ` or
//! to another principal's file is refused, a FIFO is not waited on, and a
//! module is at most [`MAX_MODULE_BYTES`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::sandbox::host_files::{HostFileError, HostFiles, Kind};
use crate::sandbox::{Confinement, SandboxPolicy};

/// Most bytes one module may have: modules are helpers, and each is read whole.
pub const MAX_MODULE_BYTES: u64 = 1 << 20;

/// Most bytes all of a kernel's modules may have together (every kernel's
/// start reads them all, in the host: a thousand links to one file are not a
/// thousand megabytes).
pub const MAX_MODULES_BYTES: u64 = 8 << 20;

/// Most modules a kernel may have.
pub const MAX_MODULES: usize = 64;

/// Most entries a folder of modules may have.
const MAX_ENTRIES: usize = 1000;

/// One module to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Extension {
    pub path: PathBuf,
    pub source: String,
}

/// The user's folder of extension modules.
pub fn user_dir() -> Option<PathBuf> {
    match crate::settings::MODULES_DIR.path() {
        Some(dir) => Some(dir),
        None => dirs::home_dir().map(|home| home.join(".cellbox").join("modules")),
    }
}

/// An extension module (or its folder) that exists but cannot be read: the
/// kernel does not start without it, rather than start without the helpers
/// its user expects. The reason begins with the path.
#[derive(Debug, thiserror::Error)]
#[error("could not read the extension module {reason}")]
pub struct UnreadableExtension {
    pub path: PathBuf,
    pub reason: String,
}

impl UnreadableExtension {
    fn new(path: &Path, reason: impl std::fmt::Display) -> UnreadableExtension {
        UnreadableExtension { path: path.to_path_buf(), reason: reason.to_string() }
    }
}

/// The modules for a kernel in `cwd` under `policy` (its home: `home`), by
/// file name (project over user), read with that kernel's rights.
pub fn find(cwd: &Path, policy: &SandboxPolicy, home: &Path) -> Result<Vec<Extension>, UnreadableExtension> {
    let dirs: Vec<PathBuf> = user_dir()
        .into_iter()
        .chain([cwd.join(".cellbox").join("modules")])
        .filter(|dir| std::fs::symlink_metadata(dir).is_ok())
        .collect();
    if dirs.is_empty() {
        return Ok(Vec::new());
    }
    let confinement = Confinement::new(policy, cwd, home)
        .map_err(|error| UnreadableExtension::new(cwd, format!("folders of {}: {error}", cwd.display())))?;
    let files = HostFiles::new(confinement, cwd.to_path_buf());
    let mut found: BTreeMap<String, PathBuf> = BTreeMap::new();
    for dir in dirs {
        let entries = match files.list(&dir, 1, MAX_ENTRIES) {
            Ok(entries) => entries,
            Err(HostFileError::NotFound { .. } | HostFileError::NotAFolder { .. }) => continue,
            Err(error) => return Err(UnreadableExtension::new(&dir, error)),
        };
        for entry in entries {
            let is_module = entry.path.extension().is_some_and(|ext| ext == "py") && entry.stat.kind != Kind::Dir;
            if let (true, Some(name)) = (is_module, entry.path.file_name()) {
                found.insert(name.to_string_lossy().into_owned(), entry.path);
            }
        }
    }
    if found.len() > MAX_MODULES {
        let dir = cwd.join(".cellbox").join("modules");
        let reason = format!("{}: more than {MAX_MODULES} modules; a kernel runs at most that many", dir.display());
        return Err(UnreadableExtension::new(&dir, reason));
    }
    let mut modules = Vec::new();
    let mut total: u64 = 0;
    for path in found.into_values() {
        let left = MAX_MODULES_BYTES - total;
        let data = match files.read(&path, 0, left.min(MAX_MODULE_BYTES) + 1) {
            Ok((data, _)) => data,
            // A link that leads nowhere is no module (as before a kernel made its target).
            Err(HostFileError::NotFound { .. } | HostFileError::IsAFolder { .. }) => continue,
            Err(error) => return Err(UnreadableExtension::new(&path, error)),
        };
        if data.len() as u64 > MAX_MODULE_BYTES {
            let reason =
                format!("{}: more than {} MiB; a module may have at most that", path.display(), MAX_MODULE_BYTES >> 20);
            return Err(UnreadableExtension::new(&path, reason));
        }
        total += data.len() as u64;
        if total > MAX_MODULES_BYTES {
            let reason = format!(
                "{}: the modules together pass {} MiB; a kernel's modules may have at most that",
                path.display(),
                MAX_MODULES_BYTES >> 20
            );
            return Err(UnreadableExtension::new(&path, reason));
        }
        let source = String::from_utf8(data)
            .map_err(|_| UnreadableExtension::new(&path, format!("{}: not UTF-8 text", path.display())))?;
        modules.push(Extension { path, source });
    }
    Ok(modules)
}

/// The code that runs `modules` in the cell namespace, or `None` when there are none.
pub fn load_code(modules: &[Extension]) -> Option<String> {
    if modules.is_empty() {
        return None;
    }
    let quote = |text: &str| serde_json::to_string(text).expect("strings serialize");
    let mut code = String::new();
    for module in modules {
        code.push_str(&format!(
            "exec(compile({}, {}, 'exec'), globals())\n",
            quote(&module.source),
            quote(&module.path.display().to_string())
        ));
    }
    Some(code)
}
