//! Where cellbox keeps its files on this machine, and how it makes them private.

use std::fs::{DirBuilder, OpenOptions, Permissions};
use std::path::{Path, PathBuf};

/// Where cellbox keeps caches: `$CELLBOX_CACHE_DIR`, else
/// `$XDG_CACHE_HOME/cellbox` (or the platform cache folder), else a
/// per-user folder under the temp dir.
pub fn cache_root() -> PathBuf {
    if let Some(dir) = crate::settings::CACHE_DIR.path() {
        return dir;
    }
    match dirs::cache_dir() {
        Some(dir) => dir.join("cellbox"),
        None => std::env::temp_dir().join(format!("cellbox-{}", user_tag())),
    }
}

/// Where cellbox keeps settings a user makes (the server's tokens file):
/// `$XDG_CONFIG_HOME/cellbox` (or the platform's config folder), else a
/// folder beside the caches.
pub fn config_root() -> PathBuf {
    match dirs::config_dir() {
        Some(dir) => dir.join("cellbox"),
        None => cache_root().join("config"),
    }
}

/// Tells users apart in a shared temp dir.
#[cfg(unix)]
fn user_tag() -> String {
    nix::unistd::getuid().to_string()
}

/// Windows gives every user their own temp dir; the name only has to be stable.
#[cfg(windows)]
fn user_tag() -> String {
    std::env::var("USERNAME").unwrap_or_else(|_| "user".to_string())
}

/// A folder builder that makes folders only their owner can enter (0700 on
/// Unix; on Windows a folder under the user's profile is private already).
pub fn private_dir_builder() -> DirBuilder {
    let mut builder = DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder
}

/// Options that create files only their owner can read (0600 on Unix).
pub fn private_file_options() -> OpenOptions {
    #[allow(unused_mut, reason = "only Unix sets a mode")]
    let mut options = OpenOptions::new();
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options
}

/// Make an existing folder private again (an owner's folder is tightened;
/// failure, e.g. someone else's folder, leaves it as it was).
pub fn tighten_dir(dir: &Path) {
    #[cfg(unix)]
    let _ = std::fs::set_permissions(dir, std::os::unix::fs::PermissionsExt::from_mode(0o700));
    #[cfg(not(unix))]
    let _ = dir;
}

/// The permissions for a file about to be replaced by a temp file renamed
/// over it: the old file's, else the usual rw-r--r-- (a temp file starts
/// private). `None` where the platform's defaults already fit (Windows).
pub fn replacement_permissions(path: &Path) -> Option<Permissions> {
    if let Ok(meta) = std::fs::metadata(path) {
        return Some(meta.permissions());
    }
    #[cfg(unix)]
    return Some(std::os::unix::fs::PermissionsExt::from_mode(0o644));
    #[cfg(not(unix))]
    None
}
