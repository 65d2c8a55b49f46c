//! Where cellbox keeps its files on this machine.

use std::path::PathBuf;

/// Where cellbox keeps caches: `$CELLBOX_CACHE_DIR`, else
/// `$XDG_CACHE_HOME/cellbox` (or the platform cache folder), else a
/// per-user folder under the temp dir.
pub fn cache_root() -> PathBuf {
    if let Some(dir) = crate::settings::CACHE_DIR.path() {
        return dir;
    }
    match dirs::cache_dir() {
        Some(dir) => dir.join("cellbox"),
        None => std::env::temp_dir().join(format!("cellbox-{}", nix::unistd::getuid())),
    }
}
