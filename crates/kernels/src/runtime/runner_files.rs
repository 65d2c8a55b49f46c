//! The runners (Python's and Node's), embedded in the binary and written to a
//! private cache folder on demand.
//!
//! Files go to `<cache>/cellbox/runner-<hash>/` (`runner-js-<hash>/` for
//! Node), where `<hash>` covers every file of that runner, so two cellbox
//! versions never share one. The folder is created
//! with mode 0700 and each file is written atomically (temp file + rename).
//! [`RunnerSet::ensure_in`] re-checks the files before every spawn: a temp cleaner
//! that deletes them mid-session costs one rewrite, not a broken kernel.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use sha2::{Digest, Sha256};

macro_rules! runner_file {
    ($path:literal) => {
        ($path, include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/runner/", $path)))
    };
}

/// Every runner file: (path inside the runner folder, content).
pub const RUNNER_FILES: &[(&str, &str)] = &[
    runner_file!("runner.py"),
    runner_file!("cellbox_kernel/__init__.py"),
    runner_file!("cellbox_kernel/autoreload.py"),
    runner_file!("cellbox_kernel/bridge.py"),
    runner_file!("cellbox_kernel/bridge_api.py"),
    runner_file!("cellbox_kernel/bridge_stdin.py"),
    runner_file!("cellbox_kernel/capture.py"),
    runner_file!("cellbox_kernel/channel.py"),
    runner_file!("cellbox_kernel/charts.py"),
    runner_file!("cellbox_kernel/frames.py"),
    runner_file!("cellbox_kernel/display.py"),
    runner_file!("cellbox_kernel/execute.py"),
    runner_file!("cellbox_kernel/expansion.py"),
    runner_file!("cellbox_kernel/fork.py"),
    runner_file!("cellbox_kernel/forking.py"),
    runner_file!("cellbox_kernel/handoff.py"),
    runner_file!("cellbox_kernel/helpers.py"),
    runner_file!("cellbox_kernel/import_hooks.py"),
    runner_file!("cellbox_kernel/interrupts.py"),
    runner_file!("cellbox_kernel/ipython_compat.py"),
    runner_file!("cellbox_kernel/magics/__init__.py"),
    runner_file!("cellbox_kernel/magics/catalog.py"),
    runner_file!("cellbox_kernel/magics/config.py"),
    runner_file!("cellbox_kernel/magics/debug.py"),
    runner_file!("cellbox_kernel/magics/dispatch.py"),
    runner_file!("cellbox_kernel/magics/execution.py"),
    runner_file!("cellbox_kernel/magics/extensions.py"),
    runner_file!("cellbox_kernel/magics/framework.py"),
    runner_file!("cellbox_kernel/magics/history.py"),
    runner_file!("cellbox_kernel/magics/introspection.py"),
    runner_file!("cellbox_kernel/magics/namespace.py"),
    runner_file!("cellbox_kernel/magics/packages.py"),
    runner_file!("cellbox_kernel/magics/scripts.py"),
    runner_file!("cellbox_kernel/magics/store.py"),
    runner_file!("cellbox_kernel/magics/system.py"),
    runner_file!("cellbox_kernel/main.py"),
    runner_file!("cellbox_kernel/memory.py"),
    runner_file!("cellbox_kernel/mpl.py"),
    runner_file!("cellbox_kernel/pil.py"),
    runner_file!("cellbox_kernel/precheck.py"),
    runner_file!("cellbox_kernel/prelude.py"),
    runner_file!("cellbox_kernel/pretty.py"),
    runner_file!("cellbox_kernel/pretty_flat.py"),
    runner_file!("cellbox_kernel/protocol.py"),
    runner_file!("cellbox_kernel/requests.py"),
    runner_file!("cellbox_kernel/schema_check.py"),
    runner_file!("cellbox_kernel/shell.py"),
    runner_file!("cellbox_kernel/shell_settings.py"),
    runner_file!("cellbox_kernel/snapshot.py"),
    runner_file!("cellbox_kernel/snapshot_file.py"),
    runner_file!("cellbox_kernel/slist.py"),
    runner_file!("cellbox_kernel/transform.py"),
    runner_file!("cellbox_kernel/usermain.py"),
    runner_file!("cellbox_kernel/wire.py"),
    runner_file!("cellbox_kernel/zygote.py"),
];

macro_rules! js_runner_file {
    ($path:literal) => {
        ($path, include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/runner-js/", $path)))
    };
}

/// Every file of the Node runner (`runner-js/`): (path inside its folder, content).
pub const NODE_RUNNER_FILES: &[(&str, &str)] = &[
    js_runner_file!("package.json"),
    js_runner_file!("runner.js"),
    js_runner_file!("lib/bridge.js"),
    js_runner_file!("lib/channel.js"),
    js_runner_file!("lib/display.js"),
    js_runner_file!("lib/errors.js"),
    js_runner_file!("lib/execute.js"),
    js_runner_file!("lib/main.js"),
    js_runner_file!("lib/modules.js"),
    js_runner_file!("lib/output.js"),
    js_runner_file!("lib/prelude.js"),
    js_runner_file!("lib/schema.js"),
    js_runner_file!("lib/transform.js"),
    js_runner_file!("lib/typescript.js"),
    js_runner_file!("lib/wire.js"),
    // The TypeScript stripper for Node before 22.13 (loaded on the first TypeScript cell only):
    // amaro's built file, unchanged, with its licences and record (scripts/update-ts-stripper).
    js_runner_file!("vendor/amaro/internal.js"),
    js_runner_file!("vendor/amaro/LICENSE"),
    js_runner_file!("vendor/amaro/LICENSE.md"),
    js_runner_file!("vendor/amaro/VENDOR.json"),
];

/// The bash runner (`runner-bash/`): one script.
pub const BASH_RUNNER_FILES: &[(&str, &str)] =
    &[("runner.sh", include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/runner-bash/runner.sh")))];

/// One runtime's embedded runner.
#[derive(Debug)]
pub struct RunnerSet {
    /// Folder name prefix in the cache (`<folder>-<hash>`).
    pub folder: &'static str,
    /// Where the sources live in this repository.
    pub source_dir: &'static str,
    /// Extension of the source files (for the "everything is embedded" check).
    pub extension: &'static str,
    /// The file the runtime starts.
    pub entry: &'static str,
    pub files: &'static [(&'static str, &'static str)],
    /// [`RunnerSet::hash`], computed once (the Node runner carries a 3.8 MB stripper).
    pub hash_once: OnceLock<String>,
}

impl RunnerSet {
    /// First 16 hex digits of the SHA-256 over all files of this runner.
    pub fn hash(&self) -> String {
        self.hash_once
            .get_or_init(|| {
                let mut hasher = Sha256::new();
                for (path, content) in self.files {
                    hasher.update(path.as_bytes());
                    hasher.update([0]);
                    hasher.update(content.as_bytes());
                    hasher.update([0]);
                }
                hasher.finalize().iter().take(8).map(|b| format!("{b:02x}")).collect()
            })
            .clone()
    }

    /// Make sure this runner is on disk under `root`; return the path of its entry file.
    pub fn ensure_in(&self, root: &Path) -> std::io::Result<PathBuf> {
        let folder = root.join(format!("{}-{}", self.folder, self.hash()));
        create_private_dir(root)?;
        create_private_dir(&folder)?;
        for (path, content) in self.files {
            let target = folder.join(path);
            // The whole content is compared (the files are small): a file edited
            // in place, even to the same length, is put back before it can run.
            let current = std::fs::read(&target).ok();
            if current.as_deref() != Some(content.as_bytes()) {
                write_atomically(&target, content.as_bytes())?;
                forget_bytecode(&target);
            }
        }
        Ok(folder.join(self.entry))
    }
}

/// Remove the cached bytecode of a rewritten `.py` file. Python trusts a
/// `.pyc` whose recorded mtime (whole seconds) and size match the source: a
/// file edited to the same length and put back within the same second would
/// otherwise run the edited code.
fn forget_bytecode(source: &Path) {
    let (Some(folder), Some(stem)) = (source.parent(), source.file_stem().and_then(|s| s.to_str())) else { return };
    if source.extension().is_none_or(|ext| ext != "py") {
        return;
    }
    let Ok(entries) = std::fs::read_dir(folder.join("__pycache__")) else { return };
    let prefix = format!("{stem}.");
    for entry in entries.flatten() {
        let name = entry.file_name();
        if name.to_str().is_some_and(|name| name.starts_with(&prefix) && name.ends_with(".pyc")) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    match crate::paths::private_dir_builder().create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    // An existing folder we own is tightened too; one we don't own is left alone.
    crate::paths::tighten_dir(dir);
    Ok(())
}

fn write_atomically(target: &Path, content: &[u8]) -> std::io::Result<()> {
    let parent = target.parent().expect("runner files live in a folder");
    create_private_dir(parent)?;
    let mut temp = tempfile::NamedTempFile::new_in(parent)?;
    temp.write_all(content)?;
    temp.as_file().sync_all()?;
    temp.persist(target).map_err(|e| e.error)?;
    Ok(())
}
