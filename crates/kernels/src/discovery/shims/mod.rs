//! Following version-manager shims to the interpreter they would run.
//!
//! `~/.pyenv/shims/python3`, `~/.asdf/shims/python3` and
//! `~/.local/share/mise/shims/python3` pick an interpreter on every run from
//! the folder and the environment; running one costs ~150 ms (a shell, the
//! manager's own scripts) before Python even starts. Each manager's choice
//! is made here instead, from the same files and variables it reads, by an
//! ordered list of resolvers ([`RESOLVERS`]), one per manager, each usable
//! alone. A resolver that meets anything it does not fully understand
//! (hooks, plugins, fuzzy versions, extra config files) answers
//! [`Outcome::Uncertain`], and the shim is then probed as it always was:
//! never a wrong interpreter.
//!
//! A resolution is kept under `<cache>/shims/` ([`follow_cached_in`]), valid
//! while the shim, every file the resolver looked at (found or absent) and
//! the variables that matter are unchanged.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::input::{DiscoveryInput, is_executable};

mod asdf;
mod cache;
mod mise;
mod pyenv;

pub use asdf::asdf;
pub use cache::{follow_cached, follow_cached_in};
pub use mise::{mise, mise_toml_python};
pub use pyenv::{pyenv, read_pyenv_version_file};

/// A version manager whose shims can be followed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Manager {
    Pyenv,
    Asdf,
    Mise,
}

impl fmt::Display for Manager {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Manager::Pyenv => "pyenv",
            Manager::Asdf => "asdf",
            Manager::Mise => "mise",
        })
    }
}

/// A shim followed to the interpreter it would run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Followed {
    pub manager: Manager,
    pub shim: PathBuf,
    /// What the shim would exec.
    pub interpreter: PathBuf,
    /// The version name that chose it (`3.11.7`, `system`).
    pub version: String,
    /// Where the version came from: a variable's name or a file's path.
    pub origin: String,
}

impl Followed {
    /// `pyenv shim ~/.pyenv/shims/python3 → ~/.pyenv/versions/3.11.7/bin/python3 (from ~/.pyenv/version)`.
    pub fn describe(&self, home: Option<&Path>) -> String {
        let origin =
            if self.origin.starts_with('/') { tilde(Path::new(&self.origin), home) } else { self.origin.clone() };
        format!(
            "{} shim {} → {} (version {}, from {})",
            self.manager,
            tilde(&self.shim, home),
            tilde(&self.interpreter, home),
            self.version,
            origin
        )
    }
}

/// `path` with the home folder written `~`.
pub fn tilde(path: &Path, home: Option<&Path>) -> String {
    match home.filter(|h| !h.as_os_str().is_empty()).and_then(|h| path.strip_prefix(h).ok()) {
        Some(rest) => format!("~/{}", rest.display()),
        None => path.display().to_string(),
    }
}

/// Why a version manager's shim is not followed (it is then probed as it is), by cause;
/// the text is the "probed as a shim: …" note discovery shows.
#[derive(Debug, thiserror::Error)]
pub enum ShimError {
    #[error("the shim has no usable name")]
    NoName,
    #[error("no home folder")]
    NoHome,
    #[error("the shim is not in {dir}")]
    NotInShims { dir: PathBuf },
    #[error("the version {version:?} (from {origin}) is not a plain version")]
    NotPlainVersion { version: String, origin: String },
    #[error("version {version} (from {origin}) is not installed under that exact name")]
    NotInstalled { version: String, origin: String },
    /// None of the chosen versions has the program; `versions` as the manager lists them.
    #[error("no version in {versions} has `{program}`")]
    NoVersionHasProgram { versions: String, program: String },
    #[error("the shim does not name its PYENV_ROOT")]
    NoPyenvRoot,
    #[error("the pyenv hook {hook} may change its choice")]
    PyenvHook { hook: PathBuf },
    #[error("the version name {name:?} is a path")]
    VersionIsPath { name: String },
    #[error("the shim is not (only) the python plugin's")]
    NotPythonPlugin,
    #[error("{config} turns legacy version files on")]
    LegacyVersionFiles { config: PathBuf },
    #[error("the python plugin's {script} script may change its choice")]
    PluginScript { script: &'static str },
    #[error("no .tool-versions names a python version")]
    NoToolVersions,
    /// A variable this resolver does not read is set.
    #[error("{name} is set")]
    VariableSet { name: String },
    #[error("{path} exists")]
    SystemConfig { path: PathBuf },
    #[error("{path} is not read here")]
    UnreadConfig { path: PathBuf },
    #[error("both mise.toml and .mise.toml are in {dir}")]
    TwoMiseTomls { dir: PathBuf },
    #[error("{path}: {source}")]
    ReadConfig { path: PathBuf, source: std::io::Error },
    /// What [`mise_toml_python`] found wrong in the config file `path`.
    #[error("{path}: {source}")]
    InConfig { path: PathBuf, source: Box<ShimError> },
    #[error("it does not parse: {source}")]
    TomlSyntax { source: toml_edit::TomlError },
    #[error("it names python through a backend")]
    ThroughBackend,
    #[error("its python entry is not a version or a list of versions")]
    NotVersions,
    #[error("no mise config names a python version")]
    NoMiseConfig,
}

impl ShimError {
    fn in_config(self, path: &Path) -> ShimError {
        ShimError::InConfig { path: path.to_path_buf(), source: Box::new(self) }
    }
}

/// What following a candidate gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Not a shim of a known manager: use it as it is.
    NotAShim,
    /// The interpreter the shim would run, and every path the answer depends on.
    Followed(Followed, Vec<PathBuf>),
    /// A shim whose choice cannot be made here with certainty: probe the shim.
    Uncertain { manager: Manager, why: String },
}

/// What a resolver sees: the candidate, its first bytes, the discovery input
/// (cwd, home, PATH, [`MANAGER_VARS`](super::input::MANAGER_VARS)) and a list to note every path it reads.
pub struct Shim<'a> {
    pub path: &'a Path,
    pub head: &'a str,
    pub input: &'a DiscoveryInput,
}

/// `None`: not this manager's shim. `Some(Err(why))`: its shim, not followed.
pub type Resolver = fn(&Shim<'_>, &mut Vec<PathBuf>) -> Option<Result<Followed, ShimError>>;

/// Every resolver, in the order they are asked.
pub const RESOLVERS: &[(Manager, Resolver)] = &[(Manager::Pyenv, pyenv), (Manager::Asdf, asdf), (Manager::Mise, mise)];

/// Follow `candidate` if it is a known manager's shim (no cache).
pub fn follow(candidate: &Path, input: &DiscoveryInput) -> Outcome {
    let head = read_head(candidate);
    let shim = Shim { path: candidate, head: &head, input };
    for (manager, resolver) in RESOLVERS {
        let mut watched = vec![candidate.to_path_buf()];
        match resolver(&shim, &mut watched) {
            None => continue,
            Some(Ok(followed)) => {
                watched.push(followed.interpreter.clone());
                return Outcome::Followed(followed, watched);
            }
            Some(Err(why)) => return Outcome::Uncertain { manager: *manager, why: why.to_string() },
        }
    }
    Outcome::NotAShim
}

/// The first 4 KiB of a script, lossily; empty for binaries and unreadable files.
fn read_head(path: &Path) -> String {
    use std::io::Read;
    let mut buffer = vec![0u8; 4096];
    let Ok(mut file) = crate::discovery::input::open_regular(path, true) else { return String::new() };
    let mut filled = 0;
    while filled < buffer.len() {
        match file.read(&mut buffer[filled..]) {
            Ok(0) | Err(_) => break,
            Ok(n) => filled += n,
        }
    }
    buffer.truncate(filled);
    if !buffer.starts_with(b"#!") {
        return String::new();
    }
    String::from_utf8_lossy(&buffer).into_owned()
}

fn var<'a>(input: &'a DiscoveryInput, name: &str) -> Option<&'a str> {
    input.manager_vars.get(name).map(String::as_str).filter(|v| !v.is_empty())
}

fn program_name(shim: &Path) -> Result<String, ShimError> {
    shim.file_name().and_then(|n| n.to_str()).map(str::to_string).ok_or(ShimError::NoName)
}

/// `path` relative to `cwd` unless absolute.
fn absolute(cwd: &Path, path: &str) -> PathBuf {
    let path = Path::new(path);
    if path.is_absolute() { path.to_path_buf() } else { cwd.join(path) }
}

/// The folder as a process started in it sees it (`getcwd`: symlinks resolved).
fn physical(dir: &Path) -> PathBuf {
    std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf())
}

/// `start` and its ancestors, deepest first.
fn upward(start: &Path) -> impl Iterator<Item = &Path> {
    start.ancestors()
}

/// The first `<dir>/<name>` file from `start` upward (every path looked at is noted).
fn find_upward(start: &Path, name: &str, watched: &mut Vec<PathBuf>) -> Option<PathBuf> {
    for dir in upward(start) {
        let file = dir.join(name);
        watched.push(file.clone());
        if file.is_file() {
            return Some(file);
        }
    }
    None
}

/// `program` on PATH, skipping `skip` (the manager's shims folder), noting the folders read.
fn system_program(input: &DiscoveryInput, skip: &Path, program: &str, watched: &mut Vec<PathBuf>) -> Option<PathBuf> {
    let path = input.path.as_ref()?;
    for dir in std::env::split_paths(path) {
        if dir.as_os_str().is_empty() || dir == skip || dir.starts_with("~") {
            continue;
        }
        let file = dir.join(program);
        watched.push(dir);
        if is_executable(&file) {
            watched.push(file.clone());
            return Some(file);
        }
    }
    None
}

/// `python` versions in a `.tool-versions` file (`None`: the file names no python).
pub fn tool_versions_python(text: &str) -> Option<Vec<String>> {
    text.lines().map(|line| line.split('#').next().unwrap_or("")).find_map(|line| {
        let mut words = line.split_whitespace();
        (words.next() == Some("python")).then(|| words.map(str::to_string).collect())
    })
}

/// Each version's `bin/<program>` under `installs`, `system` meaning PATH
/// without `shims`; the first that exists.
fn pick_install(
    shim: &Shim<'_>,
    manager: Manager,
    installs: &Path,
    shims: &Path,
    versions: &[String],
    origin: String,
    watched: &mut Vec<PathBuf>,
) -> Result<Followed, ShimError> {
    let program = program_name(shim.path)?;
    watched.push(installs.to_path_buf());
    for version in versions {
        let found = if version == "system" {
            system_program(shim.input, shims, &program, watched)
        } else if let Some(dir) = version.strip_prefix("path:") {
            let file = absolute(&shim.input.cwd, dir).join("bin").join(&program);
            watched.push(file.clone());
            is_executable(&file).then_some(file)
        } else if version.contains(':') || version.contains('/') || version == ".." {
            return Err(ShimError::NotPlainVersion { version: version.clone(), origin });
        } else {
            let root = installs.join(version);
            watched.push(root.clone());
            if !root.is_dir() {
                return Err(ShimError::NotInstalled { version: version.clone(), origin });
            }
            let file = root.join("bin").join(&program);
            watched.push(file.clone());
            is_executable(&file).then_some(file)
        };
        if let Some(interpreter) = found {
            return Ok(Followed {
                manager,
                shim: shim.path.to_path_buf(),
                interpreter,
                version: version.clone(),
                origin,
            });
        }
    }
    Err(ShimError::NoVersionHasProgram { versions: versions.join(" "), program })
}

#[cfg(test)]
mod tests {
    use super::pyenv::{only_if_not_found, pyenv_root_in};
    use super::*;

    #[test]
    fn pyenv_version_files_take_the_first_word_of_each_line() {
        assert_eq!(read_pyenv_version_file("3.11.7\n"), ["3.11.7"]);
        assert_eq!(read_pyenv_version_file("# comment\n\n 3.12.1 extra\r\nsystem\n"), ["3.12.1", "system"]);
        assert!(read_pyenv_version_file("\n# nothing\n").is_empty());
    }

    #[test]
    fn tool_versions_name_python_or_not() {
        assert_eq!(
            tool_versions_python("nodejs 20\npython 3.11.7 system # two\n"),
            Some(vec!["3.11.7".into(), "system".into()])
        );
        assert_eq!(tool_versions_python("# python 3.1\nnodejs 20\n"), None);
    }

    #[test]
    fn mise_toml_versions_and_what_is_left_to_mise() {
        assert_eq!(mise_toml_python("[tools]\npython = \"3.12\"\n").unwrap(), Some(vec!["3.12".into()]));
        assert_eq!(mise_toml_python("[tools]\npython = [\"3.12\", \"3.11\"]\n").unwrap().unwrap().len(), 2);
        assert_eq!(mise_toml_python("[env]\nA = \"1\"\n").unwrap(), None);
        let table = mise_toml_python("[tools]\npython = { version = \"3.12\", virtualenv = \".venv\" }\n").unwrap_err();
        assert!(matches!(table, ShimError::NotVersions), "{table:?}");
        assert_eq!(table.to_string(), "its python entry is not a version or a list of versions");
        let backend = mise_toml_python("[tools]\n\"asdf:python\" = \"3.12\"\n").unwrap_err();
        assert!(matches!(backend, ShimError::ThroughBackend), "{backend:?}");
        let broken = mise_toml_python("[tools\n").unwrap_err();
        assert!(matches!(&broken, ShimError::TomlSyntax { .. }), "{broken:?}");
        assert!(broken.to_string().starts_with("it does not parse: "), "{broken}");
    }

    #[test]
    fn the_shim_names_its_pyenv_root() {
        let shim = "#!/usr/bin/env bash\nexport PYENV_ROOT=\"/home/u/.pyenv\"\nexec \"/home/u/.pyenv/libexec/pyenv\" exec \"$program\" \"$@\"\n";
        assert_eq!(pyenv_root_in(shim), Some(PathBuf::from("/home/u/.pyenv")));
        assert_eq!(pyenv_root_in("export PYENV_ROOT=\"$HOME/.pyenv\"\n"), None, "not a literal path");
    }

    #[test]
    fn which_hooks_acting_only_when_nothing_was_found_are_harmless() {
        let dir = tempfile::tempdir().unwrap();
        let which = dir.path().join("pyenv.d/which");
        std::fs::create_dir_all(&which).unwrap();
        let hook = which.join("h.bash");
        std::fs::write(&hook, "# x\nif [ ! -x \"${PYENV_COMMAND_PATH}\" ]; then\n  PYENV_COMMAND_PATH=/x\nfi\n")
            .unwrap();
        assert!(only_if_not_found(&hook));
        std::fs::write(&hook, "if [ ! -x \"${PYENV_COMMAND_PATH}\" ]; then\n  :\nfi\nPYENV_COMMAND_PATH=/x\n").unwrap();
        assert!(!only_if_not_found(&hook), "code after the guard acts every time");
        std::fs::write(&hook, "PYENV_COMMAND_PATH=/x\n").unwrap();
        assert!(!only_if_not_found(&hook));
    }

    #[test]
    fn descriptions_shorten_the_home_folder() {
        let followed = Followed {
            manager: Manager::Pyenv,
            shim: "/home/u/.pyenv/shims/python3".into(),
            interpreter: "/home/u/.pyenv/versions/3.11.7/bin/python3".into(),
            version: "3.11.7".into(),
            origin: "/home/u/.pyenv/version".into(),
        };
        assert_eq!(
            followed.describe(Some(Path::new("/home/u"))),
            "pyenv shim ~/.pyenv/shims/python3 → ~/.pyenv/versions/3.11.7/bin/python3 (version 3.11.7, from ~/.pyenv/version)"
        );
        assert_eq!(tilde(Path::new("/opt/x"), Some(Path::new("/home/u"))), "/opt/x");
    }

    #[test]
    fn a_real_binary_is_no_shim() {
        let dir = tempfile::tempdir().unwrap();
        let binary = dir.path().join("python3");
        std::fs::write(&binary, b"\x7fELF").unwrap();
        assert_eq!(follow(&binary, &DiscoveryInput::default()), Outcome::NotAShim);
    }
}
