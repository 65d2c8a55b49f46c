//! Extension modules: Python files run in every new Python kernel right
//! after the prelude, so a user or a project can add helpers of their own.
//!
//! They come from `~/.cellbox/modules/*.py` (or `$CELLBOX_MODULES_DIR`) and
//! `<cwd>/.cellbox/modules/*.py`; a project module replaces a user module of
//! the same file name. Each runs in the cell namespace, in name order, with
//! its own file name in tracebacks. The host reads them, so they work the
//! same for runner processes and for kernels on a remote gateway.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

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

/// An extension module that exists but cannot be read: the kernel does not
/// start without it, rather than start without the helpers its user expects.
#[derive(Debug, thiserror::Error)]
#[error("could not read the extension module {} ({source})", path.display())]
pub struct UnreadableExtension {
    pub path: PathBuf,
    #[source]
    pub source: std::io::Error,
}

/// The modules for a kernel in `cwd`, by file name (project over user).
pub fn find(cwd: &Path) -> Result<Vec<Extension>, UnreadableExtension> {
    let mut found: BTreeMap<String, PathBuf> = BTreeMap::new();
    for dir in user_dir().into_iter().chain([cwd.join(".cellbox").join("modules")]) {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.extension().is_some_and(|ext| ext == "py") && path.is_file() {
                found.insert(entry.file_name().to_string_lossy().into_owned(), path);
            }
        }
    }
    found
        .into_values()
        .map(|path| match std::fs::read_to_string(&path) {
            Ok(source) => Ok(Extension { path, source }),
            Err(source) => Err(UnreadableExtension { path, source }),
        })
        .collect()
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
