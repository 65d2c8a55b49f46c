//! What a filesystem mode lets a kernel touch, as paths: the one description
//! that each OS backend turns into its own rules (Landlock on Linux, a
//! Seatbelt profile on macOS), so the two cannot drift apart.
//!
//! Reads are allowed everywhere but [`FileAccess::denied`]; writes only under
//! [`FileAccess::writable`]. Paths are [`resolve`]d, because both backends
//! check where a file really is, not the symlink it was reached through.

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
    /// kernel may reach (none: every entry is closed).
    pub private: Vec<(PathBuf, Option<PathBuf>)>,
}

/// Why a path is unreadable under a [`FileAccess`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Denial<'a> {
    /// Under this secret location (or `deny_read` path).
    Secret(&'a Path),
    /// Under this private root, outside the entry the kernel may reach.
    Private(&'a Path),
}

/// A name under each private root that never exists: denying it makes
/// Landlock split the root into rules for its entries of the moment, so an
/// entry made later gets no rule and stays unreadable.
const NEVER_AN_ENTRY: &str = ".cellbox-private-root";

impl FileAccess {
    /// Why the resolved path `real` is unreadable, if it is.
    pub fn denial(&self, real: &Path) -> Option<Denial<'_>> {
        // Private roots first: their closed entries are in `denied` too (for Landlock), and are
        // another owner's, not secrets.
        let private = self
            .private
            .iter()
            .find(|(root, kept)| real.starts_with(root) && !kept.as_ref().is_some_and(|kept| real.starts_with(kept)));
        if let Some((root, _)) = private {
            return Some(Denial::Private(root));
        }
        self.denied.iter().find(|secret| real.starts_with(secret)).map(|secret| Denial::Secret(secret))
    }

    /// The writable folder the resolved path `real` is under, if any.
    pub fn writable_place(&self, real: &Path) -> Option<&Path> {
        self.writable
            .iter()
            .filter(|place| real.starts_with(place))
            .max_by_key(|p| p.as_os_str().len())
            .map(|p| p.as_path())
    }
}

/// The paths `mode` (not `off`) gives a kernel in `cwd` whose private temp
/// dir is `tmp` (none: the host's own file work, which has no temp dir);
/// `home` and the variables of `env` place the secrets. `policy` adds its
/// workspace (else `cwd`), `allow_write` and caches (in `workspace-write`),
/// its `deny_read` paths and its private roots. The caches folder is
/// created, so that a rule can name it.
pub fn file_access(
    policy: &SandboxPolicy,
    mode: SandboxMode,
    cwd: &Path,
    home: &Path,
    tmp: Option<&Path>,
) -> FileAccess {
    let mut writable: Vec<PathBuf> = tmp.into_iter().map(Path::to_path_buf).collect();
    writable.extend(DEVICES.iter().map(PathBuf::from));
    if mode == SandboxMode::WorkspaceWrite {
        writable.push(policy.workspace.clone().unwrap_or_else(|| cwd.to_path_buf()));
        writable.extend(policy.allow_write.iter().cloned());
        let caches = policy.caches();
        if crate::paths::private_dir_builder().create(&caches).is_ok() {
            writable.push(caches);
        }
    }
    let writable = writable.iter().map(|p| resolve(p)).collect();
    let secrets = homes(home).into_iter().flat_map(|home| default_secret_paths(&home));
    let mut denied: Vec<PathBuf> = secrets.chain(policy.deny_read.iter().cloned()).map(|p| resolve(&p)).collect();
    let mut private = Vec::new();
    for root in &policy.private_roots {
        let path = resolve(&root.path);
        let kept = root.keep.as_ref().map(|name| path.join(name));
        let entries = std::fs::read_dir(&path).into_iter().flatten().flatten();
        let others = entries.filter(|entry| root.keep.as_deref().is_none_or(|keep| entry.file_name() != keep));
        denied.extend(others.map(|entry| resolve(&entry.path())));
        denied.push(path.join(NEVER_AN_ENTRY));
        private.push((path, kept));
    }
    denied.sort();
    denied.dedup();
    FileAccess { writable, denied, private }
}

/// Every home folder whose secrets are kept from kernels: the one kernels get
/// (`HOME` may be set for them), this process's, and the user's own in the
/// password database. A kernel's `HOME` moved elsewhere (`envs={"HOME": ...}`)
/// does not make the user's `~/.ssh` readable.
fn homes(kernel_home: &Path) -> Vec<PathBuf> {
    let mut homes = vec![kernel_home.to_path_buf()];
    homes.extend(dirs::home_dir());
    #[cfg(unix)]
    if let Ok(Some(user)) = nix::unistd::User::from_uid(nix::unistd::getuid()) {
        homes.push(user.dir);
    }
    homes.sort();
    homes.dedup();
    homes.retain(|home| home.is_absolute() && home != Path::new("/"));
    homes
}

/// The home folder of a kernel whose environment is `env` (its `HOME`, else
/// this user's, else `/`): where its secret locations are.
pub fn kernel_home(env: &std::collections::BTreeMap<String, String>) -> PathBuf {
    env.get("HOME").map(PathBuf::from).or_else(dirs::home_dir).unwrap_or_else(|| PathBuf::from("/"))
}

/// The variables that point each tool a kernel runs at the kernels' own
/// caches folder `caches`: pip's and uv's caches, matplotlib's config and
/// cache, and `%store`'s folder.
pub fn cache_env(caches: &Path) -> Vec<(String, String)> {
    let at = |folder: &str| caches.join(folder).display().to_string();
    vec![
        ("PIP_CACHE_DIR".into(), at("pip")),
        ("UV_CACHE_DIR".into(), at("uv")),
        ("MPLCONFIGDIR".into(), at("matplotlib")),
        (crate::settings::STORE_DIR.name.into(), at("store")),
    ]
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
        let policy = SandboxPolicy {
            private_roots: vec![super::super::PrivateRoot::new(&root, Some("alice"))],
            kernel_files: Some(dir.path().join("kernel-files")),
            ..SandboxPolicy::default()
        };
        let cwd = root.join("alice/project");
        std::fs::create_dir_all(&cwd).unwrap();
        let home = dir.path().join("home");
        let access = file_access(&policy, SandboxMode::WorkspaceWrite, &cwd, &home, Some(dir.path()));
        assert!(access.denied.contains(&root.join("bob")), "{access:?}");
        assert!(access.denied.contains(&root.join(NEVER_AN_ENTRY)), "the root is split: {access:?}");
        assert!(!access.denied.iter().any(|d| cwd.starts_with(d)), "{access:?}");
        assert_eq!(access.denial(&root.join("alice/project/x")), None);
        assert_eq!(access.denial(&root.join("carol/made-later")), Some(Denial::Private(&root)));
        assert_eq!(access.denial(&root), Some(Denial::Private(&root)), "the list of principals is closed");
        assert_eq!(access.denial(&home.join(".ssh/id_rsa")), Some(Denial::Secret(&home.join(".ssh"))));
    }
}
