//! What interpreter discovery looks at: the question ([`DiscoveryInput`]:
//! the cwd, an explicit setting and the variables read from the
//! environment) and the one file-system test every source uses. The sources
//! (`sources.rs`) and the shim resolvers (`shims/`) both build on it.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// What discovery looks at; built from the process environment by
/// [`DiscoveryInput::from_env`], or by hand in tests.
#[derive(Debug, Clone, Default)]
pub struct DiscoveryInput {
    pub cwd: PathBuf,
    pub explicit: Option<String>,
    pub virtual_env: Option<OsString>,
    pub conda_prefix: Option<OsString>,
    pub home: Option<PathBuf>,
    pub path: Option<OsString>,
    /// The version managers' variables ([`MANAGER_VARS`]) that are set.
    pub manager_vars: BTreeMap<String, String>,
    /// The kernels' sandbox policy, which every probe runs under (default: the default policy).
    pub sandbox: crate::sandbox::SandboxPolicy,
    /// The kernels' rules for the host's own reads of files a kernel may have
    /// planted (version managers' files found from the working folder up),
    /// when an engine gives them: such a read then reaches no more than a kernel.
    pub confinement: Option<std::sync::Arc<crate::sandbox::Confinement>>,
}

impl DiscoveryInput {
    /// Read `VIRTUAL_ENV`, `CONDA_PREFIX`, `HOME`, `PATH` and the version
    /// managers' variables from this process.
    pub fn from_env(cwd: impl Into<PathBuf>, explicit: Option<String>) -> Self {
        DiscoveryInput {
            cwd: cwd.into(),
            explicit,
            virtual_env: std::env::var_os("VIRTUAL_ENV").filter(|v| !v.is_empty()),
            conda_prefix: std::env::var_os("CONDA_PREFIX").filter(|v| !v.is_empty()),
            home: dirs::home_dir(),
            path: std::env::var_os("PATH"),
            manager_vars: manager_vars_from_env(),
            sandbox: crate::sandbox::SandboxPolicy::default(),
            confinement: None,
        }
    }

    /// [`read_small`] of a version manager's file, under the kernels' rules when this input has them.
    pub fn read_config(&self, path: &Path, follow: bool) -> std::io::Result<String> {
        match &self.confinement {
            Some(confinement) => confinement.run(|| read_small(path, follow)).map_err(std::io::Error::other)?,
            None => read_small(path, follow),
        }
    }
}

/// The variables the version managers read to choose a version. Their
/// values are part of a cached resolution's key.
pub const MANAGER_VARS: &[&str] = &[
    "PYENV_VERSION",
    "PYENV_DIR",
    "PYENV_HOOK_PATH",
    "ASDF_PYTHON_VERSION",
    "ASDF_DATA_DIR",
    "ASDF_CONFIG_FILE",
    "ASDF_DEFAULT_TOOL_VERSIONS_FILENAME",
    "MISE_PYTHON_VERSION",
    "MISE_DATA_DIR",
    "MISE_CONFIG_DIR",
    "MISE_ENV",
    "MISE_CONFIG_FILE",
    "MISE_GLOBAL_CONFIG_FILE",
    "MISE_SYSTEM_CONFIG_FILE",
    "MISE_DEFAULT_CONFIG_FILENAME",
    "MISE_DEFAULT_TOOL_VERSIONS_FILENAME",
    "MISE_OVERRIDE_CONFIG_FILENAMES",
    "MISE_OVERRIDE_TOOL_VERSIONS_FILENAMES",
    "MISE_SHIMS_DIR",
    "XDG_DATA_HOME",
    "XDG_CONFIG_HOME",
];

/// [`MANAGER_VARS`] that are set (and not empty) in this process.
pub fn manager_vars_from_env() -> BTreeMap<String, String> {
    MANAGER_VARS
        .iter()
        .filter_map(|name| Some((name.to_string(), std::env::var(name).ok().filter(|v| !v.is_empty())?)))
        .collect()
}

/// The most of a version manager's file (`.python-version`, `.tool-versions`,
/// `mise.toml`) that is read: they are a few lines, and a kernel may plant them.
pub const MAX_CONFIG_BYTES: u64 = 64 << 10;

/// The text of a small configuration file of a version manager, read by the
/// host: only a regular file, at most [`MAX_CONFIG_BYTES`] (a FIFO or device
/// is refused instead of blocking or never ending). Files found from the
/// working folder upward may have been planted by a kernel: `follow` is
/// false for them, and a symlink (to a key, say, whose first line would end
/// up in an error message) is not read. The user's own dotfiles are read
/// through their symlinks.
pub fn read_small(path: &Path, follow: bool) -> std::io::Result<String> {
    use std::io::Read;
    let mut text = String::new();
    open_regular(path, follow)?.take(MAX_CONFIG_BYTES).read_to_string(&mut text)?;
    Ok(text)
}

/// Open `path` for reading if it is a regular file (through a symlink when
/// `follow`): a FIFO a kernel swapped in neither blocks the open nor is read.
pub fn open_regular(path: &Path, follow: bool) -> std::io::Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(
        &mut options,
        libc::O_NONBLOCK | libc::O_NOCTTY | if follow { 0 } else { libc::O_NOFOLLOW },
    );
    #[cfg(not(unix))]
    let _ = follow;
    let file = options.open(path)?;
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::other(format!("{} is not a regular file", path.display())));
    }
    Ok(file)
}

/// A regular file (after symlinks) with an execute bit.
#[cfg(unix)]
pub fn is_executable(file: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(file).map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0).unwrap_or(false)
}

/// A regular file whose extension Windows runs (`.exe`, `.com`, `.bat`, `.cmd`).
#[cfg(windows)]
pub fn is_executable(file: &Path) -> bool {
    let runnable = file
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| ["exe", "com", "bat", "cmd"].iter().any(|known| e.eq_ignore_ascii_case(known)));
    runnable && std::fs::metadata(file).map(|m| m.is_file()).unwrap_or(false)
}
