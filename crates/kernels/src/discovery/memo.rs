//! Probe answers kept on disk between cellbox processes.
//!
//! Every `cellbox run` and every `cellbox mcp` start used to run the
//! interpreter (and `node`) once just to learn its version and real path:
//! ~20–40 ms per start, in series with the kernel's own start. The answer
//! cannot change while the binary does not, so it is kept under
//! `<cache>/probes/`, valid for the exact file it came from (device, inode,
//! size, modification and change times of the resolved binary). Scripts
//! (`#!`, e.g. version-manager shims) are never remembered: their answer
//! depends on the folder and the environment, not on the file; nor are mise's
//! shims, links to the `mise` binary itself.

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde::de::DeserializeOwned;
use sha2::{Digest, Sha256};

use crate::paths::cache_root;

/// What identifies one build of a binary on disk.
fn identity(program: &Path) -> Option<(PathBuf, [i64; 6])> {
    let real = std::fs::canonicalize(program).ok()?;
    let meta = std::fs::metadata(&real).ok()?;
    let mut head = [0u8; 2];
    let mut file = super::input::open_regular(&real, false).ok()?;
    let script = std::io::Read::read_exact(&mut file, &mut head).is_ok() && &head == b"#!";
    let mise_shim = real.file_name().is_some_and(|name| name == "mise");
    if script || mise_shim || !meta.is_file() {
        return None;
    }
    let [dev, ino, size, modified, changed] = super::stamp::file_stamp(&meta);
    let stamp = [dev, ino, size, modified, changed, 0];
    Some((real, stamp))
}

#[derive(Serialize, serde::Deserialize)]
struct Entry<T> {
    program: PathBuf,
    real: PathBuf,
    stamp: [i64; 6],
    value: T,
}

fn entry_path(root: &Path, kind: &str, program: &Path) -> PathBuf {
    let digest = Sha256::digest(program.as_os_str().as_encoded_bytes());
    let name: String = digest.iter().take(10).map(|b| format!("{b:02x}")).collect();
    root.join("probes").join(format!("{kind}-{name}.json"))
}

/// `probe()`'s answer for `program`, from the disk when the same binary was
/// probed before (in `root`), else probed now and kept. Failures are not kept.
pub fn remembered_in<T: Serialize + DeserializeOwned, E>(
    root: &Path,
    kind: &str,
    program: &Path,
    probe: impl FnOnce() -> Result<T, E>,
) -> Result<T, E> {
    let Some((real, stamp)) = identity(program) else { return probe() };
    let file = entry_path(root, kind, program);
    if let Ok(text) = std::fs::read(&file)
        && let Ok(entry) = serde_json::from_slice::<Entry<T>>(&text)
        && entry.program == program
        && entry.real == real
        && entry.stamp == stamp
    {
        return Ok(entry.value);
    }
    let value = probe()?;
    let entry = Entry { program: program.to_path_buf(), real, stamp, value };
    // Best effort: a folder that cannot be written only costs the next start a probe.
    if let (Some(dir), Ok(text)) = (file.parent(), serde_json::to_vec(&entry))
        && std::fs::create_dir_all(dir).is_ok()
        && let Ok(mut temp) = tempfile::NamedTempFile::new_in(dir)
        && std::io::Write::write_all(&mut temp, &text).is_ok()
    {
        let _ = temp.persist(&file);
        forget_missing(dir);
    }
    Ok(entry.value)
}

/// Drop the answers about binaries that are gone (temporary venvs, removed
/// versions), so the folder does not grow with every path ever probed. Run
/// only after a probe, which costs far more than this.
fn forget_missing(dir: &Path) {
    #[derive(serde::Deserialize)]
    struct Program {
        program: PathBuf,
    }
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for file in entries.flatten().map(|e| e.path()) {
        let gone = match std::fs::read(&file).map(|text| serde_json::from_slice::<Program>(&text)) {
            Ok(Ok(entry)) => !entry.program.exists(),
            _ => file.extension().is_some_and(|ext| ext == "json"), // unreadable: a broken entry
        };
        if gone {
            let _ = std::fs::remove_file(&file);
        }
    }
}

/// [`remembered_in`] the default [`cache_root`].
pub fn remembered<T: Serialize + DeserializeOwned, E>(
    kind: &str,
    program: &Path,
    probe: impl FnOnce() -> Result<T, E>,
) -> Result<T, E> {
    remembered_in(&cache_root(), kind, program, probe)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    /// A probe's failure, for these tests (the memo takes any error type).
    #[derive(Debug, PartialEq)]
    struct Broken;

    fn probe_counting<'a>(calls: &'a Cell<u32>, answer: &'a str) -> impl FnOnce() -> Result<String, Broken> + 'a {
        move || {
            calls.set(calls.get() + 1);
            Ok(answer.to_string())
        }
    }

    #[test]
    fn a_binary_is_probed_once_until_it_changes() {
        let root = tempfile::tempdir().unwrap();
        let binary = root.path().join("tool");
        std::fs::write(&binary, b"\x7fELF binary").unwrap();
        let calls = Cell::new(0);
        assert_eq!(remembered_in(root.path(), "t", &binary, probe_counting(&calls, "v1")).unwrap(), "v1");
        assert_eq!(remembered_in(root.path(), "t", &binary, probe_counting(&calls, "v2")).unwrap(), "v1");
        assert_eq!(calls.get(), 1, "the second start read the disk");
        // A new build at the same path (another size) is probed again.
        std::fs::write(&binary, b"\x7fELF a newer binary").unwrap();
        assert_eq!(remembered_in(root.path(), "t", &binary, probe_counting(&calls, "v3")).unwrap(), "v3");
        assert_eq!(calls.get(), 2);
    }

    #[test]
    fn answers_about_removed_binaries_are_dropped() {
        let root = tempfile::tempdir().unwrap();
        let (kept, removed) = (root.path().join("kept"), root.path().join("removed"));
        std::fs::write(&kept, b"\x7fELF kept").unwrap();
        std::fs::write(&removed, b"\x7fELF removed").unwrap();
        let calls = Cell::new(0);
        remembered_in(root.path(), "t", &removed, probe_counting(&calls, "r")).unwrap();
        std::fs::remove_file(&removed).unwrap();
        remembered_in(root.path(), "t", &kept, probe_counting(&calls, "k")).unwrap();
        let left: Vec<_> = std::fs::read_dir(root.path().join("probes")).unwrap().flatten().collect();
        assert_eq!(left.len(), 1, "only the answer about the binary that exists is kept");
    }

    #[test]
    fn scripts_and_failures_are_never_remembered() {
        let root = tempfile::tempdir().unwrap();
        let shim = root.path().join("python");
        std::fs::write(&shim, b"#!/bin/sh\nexec real-python \"$@\"\n").unwrap();
        let calls = Cell::new(0);
        remembered_in(root.path(), "t", &shim, probe_counting(&calls, "a")).unwrap();
        remembered_in(root.path(), "t", &shim, probe_counting(&calls, "b")).unwrap();
        assert_eq!(calls.get(), 2, "a shim's answer depends on where it runs");
        let binary = root.path().join("tool");
        std::fs::write(&binary, b"\x7fELF").unwrap();
        assert_eq!(remembered_in::<String, _>(root.path(), "t", &binary, || Err(Broken)), Err(Broken));
        assert_eq!(remembered_in(root.path(), "t", &binary, probe_counting(&calls, "ok")).unwrap(), "ok");
    }

    #[test]
    #[cfg(unix)]
    fn a_symlink_is_valid_for_its_target_only() {
        let root = tempfile::tempdir().unwrap();
        let (one, two) = (root.path().join("one"), root.path().join("two"));
        std::fs::write(&one, b"\x7fELF one").unwrap();
        std::fs::write(&two, b"\x7fELF two!").unwrap();
        let link = root.path().join("venv-python");
        std::os::unix::fs::symlink(&one, &link).unwrap();
        let calls = Cell::new(0);
        assert_eq!(remembered_in(root.path(), "t", &link, probe_counting(&calls, "one")).unwrap(), "one");
        // The venv is recreated on another base interpreter.
        std::fs::remove_file(&link).unwrap();
        std::os::unix::fs::symlink(&two, &link).unwrap();
        assert_eq!(remembered_in(root.path(), "t", &link, probe_counting(&calls, "two")).unwrap(), "two");
        assert_eq!(calls.get(), 2);
    }
}
