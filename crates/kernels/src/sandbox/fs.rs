//! The filesystem part: which folders the kernel may read and write, as a
//! Landlock ruleset built in the host before the kernel is forked.
//!
//! Landlock only allows (a rule grants a right on a whole subtree), so "read
//! everywhere except `~/.ssh`" cannot be one rule on `/`. Instead every grant
//! that has a denied path beneath it is split: the grant moves down to the
//! siblings along the way to the denied path, and the denied path gets
//! nothing. Paths are compared in their resolved form because Landlock checks
//! where a file really is: a symlink is never given a rule (its target has
//! its own, or none), and a denied path that does not exist yet is still
//! denied, since its parent was split and new entries get no rule.

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use landlock::{
    ABI, Access, AccessFs, BitFlags, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset, RulesetAttr,
    RulesetCreatedAttr, Scope,
};

use super::Unenforceable;
#[cfg(test)]
use super::access::resolve;

/// The kinds of access a grant gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grant {
    /// Read files, list folders, execute.
    Read,
    /// Everything, including create, write, remove, rename and truncate.
    Write,
}

/// The lowest Landlock ABI the sandbox accepts: ABI 3 is the first that
/// controls `truncate(2)`, without which a file outside the workspace could
/// still be emptied.
pub const MIN_ABI: i32 = 3;

/// The Landlock ABI the running kernel offers (0 when it has none).
pub fn kernel_abi() -> i32 {
    // SAFETY: the documented version query: no pointer is read.
    let v = unsafe { libc::syscall(libc::SYS_landlock_create_ruleset, std::ptr::null::<libc::c_void>(), 0usize, 1u32) };
    if v < 0 { 0 } else { v as i32 }
}

/// [`check_abi`]'s answer, asked once: it does not change while the process
/// runs, and the engine asks after every call.
pub fn missing_once() -> Option<Unenforceable> {
    static FOUND: std::sync::OnceLock<Option<Unenforceable>> = std::sync::OnceLock::new();
    FOUND.get_or_init(|| check_abi().err()).clone()
}

/// Whether this kernel's Landlock can enforce the filesystem rules: ABI
/// [`MIN_ABI`] or newer, else what is missing.
pub fn check_abi() -> Result<(), Unenforceable> {
    match kernel_abi() {
        0 => Err(Unenforceable::NoLandlock),
        version if version < MIN_ABI => Err(Unenforceable::OldLandlock { version, needed: MIN_ABI }),
        _ => Ok(()),
    }
}

/// Turn grants into Landlock rules that leave every `denied` path (already
/// [`resolve`]d) without any access. The result is deduplicated: the
/// strongest grant on a path wins.
pub fn plan(grants: &[(PathBuf, Grant)], denied: &[PathBuf]) -> Vec<(PathBuf, Grant)> {
    let mut out: Vec<(PathBuf, Grant)> = Vec::new();
    let denied: Vec<&Path> = denied.iter().map(PathBuf::as_path).collect();
    for (path, grant) in grants {
        let Ok(real) = path.canonicalize() else { continue };
        split(&real, *grant, &denied, &mut out, 0);
    }
    // Write beats read on the same path; a read rule under a write rule is
    // harmless, since rights add up along the path.
    out.sort_by(|a, b| a.0.cmp(&b.0).then((a.1 == Grant::Read).cmp(&(b.1 == Grant::Read))));
    out.dedup_by(|later, earlier| later.0 == earlier.0);
    out
}

fn split(path: &Path, grant: Grant, denied: &[&Path], out: &mut Vec<(PathBuf, Grant)>, depth: usize) {
    if denied.iter().any(|d| path.starts_with(d)) {
        return;
    }
    // The denied paths below this one: only they matter to its entries.
    let below: Vec<&Path> = denied.iter().copied().filter(|d| d.starts_with(path)).collect();
    if below.is_empty() {
        out.push((path.to_path_buf(), grant));
        return;
    }
    // A strict ancestor of a denied path: the grant moves to its entries.
    if depth > 64 {
        return;
    }
    let Ok(entries) = std::fs::read_dir(path) else { return };
    for entry in entries.flatten() {
        let Ok(kind) = entry.file_type() else { continue };
        if kind.is_symlink() {
            continue;
        }
        split(&entry.path(), grant, &below, out, depth + 1);
    }
}

/// Every right a ruleset handles (a write grant's rights), as Landlock's bit mask.
pub fn all_rights() -> u64 {
    AccessFs::from_all(abi()).bits()
}

/// The Landlock ABI to build rulesets for: the kernel's, within what the
/// crate knows.
fn abi() -> ABI {
    ABI::from(kernel_abi().min(7))
}

/// What a ruleset scopes besides files (ABI 6+).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scoping {
    /// Nothing: a host thread doing file work for a kernel.
    None,
    /// A kernel cannot signal processes outside its sandbox.
    Signals,
    /// Nor reach abstract UNIX sockets outside it (with its network off).
    SignalsAndAbstractUnix,
}

/// Build the ruleset (in the host, before fork) and return its fd; the child
/// only has to call `landlock_restrict_self` on it. `scoping` says what it
/// closes besides files.
pub fn build_ruleset(rules: &[(PathBuf, Grant)], scoping: Scoping) -> Result<OwnedFd, Unenforceable> {
    check_abi()?;
    let version = kernel_abi();
    let abi = abi();
    let all = AccessFs::from_all(abi);
    let read = AccessFs::from_read(abi);
    let file_rights = AccessFs::from_file(abi);
    let err = |e: landlock::RulesetError| Unenforceable::Ruleset { source: Arc::new(e) };
    let mut ruleset =
        Ruleset::default().set_compatibility(CompatLevel::HardRequirement).handle_access(all).map_err(err)?;
    if version >= 6 && scoping != Scoping::None {
        let mut scopes: BitFlags<Scope> = Scope::Signal.into();
        if scoping == Scoping::SignalsAndAbstractUnix {
            scopes |= Scope::AbstractUnixSocket;
        }
        ruleset = ruleset.scope(scopes).map_err(err)?;
    }
    let mut created = ruleset.create().map_err(err)?;
    for (path, grant) in rules {
        let Ok(fd) = PathFd::new(path) else { continue };
        let mut access = match grant {
            Grant::Read => read,
            Grant::Write => all,
        };
        if !path.is_dir() {
            access &= file_rights;
        }
        created = created
            .add_rule(PathBeneath::new(fd, access))
            .map_err(|e| Unenforceable::LandlockRule { path: path.clone(), source: Arc::new(e) })?;
    }
    let fd: Option<OwnedFd> = created.into();
    fd.ok_or(Unenforceable::NoRuleset)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_denied_path_splits_its_ancestors_into_siblings() {
        let root = tempfile::tempdir().unwrap();
        let home = root.path().canonicalize().unwrap();
        std::fs::create_dir_all(home.join(".ssh")).unwrap();
        std::fs::create_dir_all(home.join("project/src")).unwrap();
        std::fs::write(home.join(".bashrc"), "").unwrap();
        std::os::unix::fs::symlink(home.join(".ssh"), home.join("link")).unwrap();
        let denied = vec![resolve(&home.join(".ssh")), resolve(&home.join(".config/gcloud"))];
        let rules = plan(&[(home.clone(), Grant::Read), (home.join("project"), Grant::Write)], &denied);
        let paths: Vec<_> = rules.iter().map(|(p, g)| (p.strip_prefix(&home).unwrap().to_path_buf(), *g)).collect();
        assert_eq!(paths, vec![(PathBuf::from(".bashrc"), Grant::Read), (PathBuf::from("project"), Grant::Write)]);
    }

    #[test]
    fn resolve_keeps_the_missing_tail() {
        let root = tempfile::tempdir().unwrap();
        let real = root.path().canonicalize().unwrap();
        assert_eq!(resolve(&root.path().join("a/../b/c")), real.join("b/c"));
    }
}
