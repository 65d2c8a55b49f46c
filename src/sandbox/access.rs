//! What a filesystem mode lets a kernel touch, as paths: the one description
//! that each OS backend turns into its own rules (Landlock on Linux, a
//! Seatbelt profile on macOS), so the two cannot drift apart.
//!
//! Reads are allowed everywhere but [`FileAccess::denied`]; writes only under
//! [`FileAccess::writable`]. Paths are [`resolve`]d, because both backends
//! check where a file really is, not the symlink it was reached through.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use super::policy::{SandboxMode, SandboxPolicy, default_secret_paths};

/// Device files every mode may write: output sinks, randomness, terminals and
/// POSIX shared memory (multiprocessing's semaphores). Those a system does
/// not have are left out by the backend.
pub const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
    "/dev/ptmx",
    "/dev/pts",
    "/dev/shm",
];

/// The paths a filesystem mode gives a kernel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileAccess {
    /// Where the kernel may create, write, rename and remove, recursively.
    pub writable: Vec<PathBuf>,
    /// What the kernel may neither read nor write (the secret locations and
    /// the other entries of private roots), sorted, without duplicates; a
    /// path that does not exist yet is included.
    pub denied: Vec<PathBuf>,
    /// [`SandboxPolicy::private_roots`], resolved, each with the entry the
    /// kernel works in (none: the kernel works elsewhere).
    pub private: Vec<(PathBuf, Option<PathBuf>)>,
}

/// Why a path is unreadable under a [`FileAccess`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Denial<'a> {
    /// Under this secret location (or `deny_read` path).
    Secret(&'a Path),
    /// Under this private root, outside the entry the kernel works in.
    Private(&'a Path),
}

/// A name under each private root that never exists: denying it makes
/// Landlock split the root into rules for its entries of the moment, so an
/// entry made later gets no rule and stays unreadable.
const NEVER_AN_ENTRY: &str = ".cellbox-private-root";

impl FileAccess {
    /// Why the resolved path `real` is unreadable, if it is.
    pub fn denial(&self, real: &Path) -> Option<Denial<'_>> {
        if let Some(secret) = self.denied.iter().find(|secret| real.starts_with(secret)) {
            return Some(Denial::Secret(secret));
        }
        self.private
            .iter()
            .find(|(root, kept)| real.starts_with(root) && !kept.as_ref().is_some_and(|kept| real.starts_with(kept)))
            .map(|(root, _)| Denial::Private(root))
    }
}

/// The paths `mode` (not `off`) gives a kernel in `cwd` whose private temp
/// dir is `tmp`; `home` and the cache variables of `env` place the secrets
/// and the interpreter caches, and `policy` adds its `allow_write` (in
/// `workspace-write`) and `deny_read` paths. Interpreter caches that do not
/// exist yet are created, so that a rule can name them.
pub fn file_access(
    policy: &SandboxPolicy,
    mode: SandboxMode,
    cwd: &Path,
    home: &Path,
    env: &BTreeMap<String, String>,
    tmp: &Path,
) -> FileAccess {
    let mut writable = vec![tmp.to_path_buf()];
    writable.extend(DEVICES.iter().map(PathBuf::from));
    if mode == SandboxMode::WorkspaceWrite {
        writable.push(cwd.to_path_buf());
        writable.extend(policy.allow_write.iter().cloned());
        for cache in interpreter_caches(home, env) {
            let _ = std::fs::create_dir_all(&cache);
            writable.push(cache);
        }
    }
    let writable = writable.iter().map(|p| resolve(p)).collect();
    let mut denied: Vec<PathBuf> =
        default_secret_paths(home).iter().chain(&policy.deny_read).map(|p| resolve(p)).collect();
    let cwd = resolve(cwd);
    let mut private = Vec::new();
    for root in policy.private_roots.iter().map(|root| resolve(root)) {
        let kept = cwd.strip_prefix(&root).ok().and_then(|rest| rest.components().next()).map(|c| root.join(c));
        let entries = std::fs::read_dir(&root).into_iter().flatten().flatten();
        denied.extend(entries.map(|entry| resolve(&entry.path())).filter(|entry| Some(entry) != kept.as_ref()));
        denied.push(root.join(NEVER_AN_ENTRY));
        private.push((root, kept));
    }
    denied.sort();
    denied.dedup();
    FileAccess { writable, denied, private }
}

/// The folders an interpreter writes to while working normally: pip's and
/// uv's caches, matplotlib's config and font cache, and `%store`'s folder.
fn interpreter_caches(home: &Path, env: &BTreeMap<String, String>) -> Vec<PathBuf> {
    let var = |k: &str| env.get(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    let cache = var("XDG_CACHE_HOME").unwrap_or_else(|| home.join(".cache"));
    let data = var("XDG_DATA_HOME").unwrap_or_else(|| home.join(".local/share"));
    let config = var("XDG_CONFIG_HOME").unwrap_or_else(|| home.join(".config"));
    let mut out = vec![
        var("PIP_CACHE_DIR").unwrap_or_else(|| cache.join("pip")),
        var("UV_CACHE_DIR").unwrap_or_else(|| cache.join("uv")),
        var("MPLCONFIGDIR").unwrap_or_else(|| config.join("matplotlib")),
        cache.join("matplotlib"),
        data.join("cellbox/store"),
    ];
    out.retain(|p| p.is_absolute());
    out
}

/// A path with symlinks resolved as far as it exists; the rest is appended
/// as written (`.` and `..` folded), so a secret that does not exist yet
/// still names the place it would appear.
pub fn resolve(path: &Path) -> PathBuf {
    let mut existing = path.to_path_buf();
    let mut rest = Vec::new();
    loop {
        if let Ok(real) = existing.canonicalize() {
            let mut out = real;
            for part in rest.iter().rev() {
                out.push(part);
            }
            return out;
        }
        match (existing.file_name().map(|n| n.to_os_string()), existing.parent()) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                existing = parent.to_path_buf();
            }
            _ => {
                let mut out = PathBuf::new();
                for c in path.components() {
                    match c {
                        Component::ParentDir => {
                            out.pop();
                        }
                        Component::CurDir => {}
                        other => out.push(other.as_os_str()),
                    }
                }
                return out;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_private_root_keeps_only_the_working_entry_readable_and_names_a_split_for_later_entries() {
        let dir = tempfile::tempdir().unwrap();
        let root = resolve(dir.path()).join("principals");
        for name in ["alice", "bob"] {
            std::fs::create_dir_all(root.join(name)).unwrap();
        }
        let policy = SandboxPolicy { private_roots: vec![root.clone()], ..SandboxPolicy::default() };
        let cwd = root.join("alice/project");
        std::fs::create_dir_all(&cwd).unwrap();
        let home = dir.path().join("home");
        let access = file_access(&policy, SandboxMode::WorkspaceWrite, &cwd, &home, &BTreeMap::new(), dir.path());
        assert!(access.denied.contains(&root.join("bob")), "{access:?}");
        assert!(access.denied.contains(&root.join(NEVER_AN_ENTRY)), "the root is split: {access:?}");
        assert!(!access.denied.iter().any(|d| cwd.starts_with(d)), "{access:?}");
        assert_eq!(access.denial(&root.join("alice/project/x")), None);
        assert_eq!(access.denial(&root.join("carol/made-later")), Some(Denial::Private(&root)));
        assert_eq!(access.denial(&root), Some(Denial::Private(&root)), "the list of principals is closed");
        assert_eq!(access.denial(&home.join(".ssh/id_rsa")), Some(Denial::Secret(&home.join(".ssh"))));
    }
}
