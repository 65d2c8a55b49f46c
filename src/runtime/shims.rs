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
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::discovery::{DiscoveryInput, is_executable};

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
/// (cwd, home, PATH, [`MANAGER_VARS`]) and a list to note every path it reads.
pub struct Shim<'a> {
    pub path: &'a Path,
    pub head: &'a str,
    pub input: &'a DiscoveryInput,
}

/// `None`: not this manager's shim. `Some(Err(why))`: its shim, not followed.
pub type Resolver = fn(&Shim<'_>, &mut Vec<PathBuf>) -> Option<Result<Followed, String>>;

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
            Some(Err(why)) => return Outcome::Uncertain { manager: *manager, why },
        }
    }
    Outcome::NotAShim
}

/// The first 4 KiB of a script, lossily; empty for binaries and unreadable files.
fn read_head(path: &Path) -> String {
    use std::io::Read;
    let mut buffer = vec![0u8; 4096];
    let Ok(mut file) = std::fs::File::open(path) else { return String::new() };
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

fn program_name(shim: &Path) -> Result<String, String> {
    shim.file_name().and_then(|n| n.to_str()).map(str::to_string).ok_or_else(|| "the shim has no usable name".into())
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

// ---------------------------------------------------------------- pyenv

/// The value of `export PYENV_ROOT="…"` in a pyenv shim.
fn pyenv_root_in(head: &str) -> Option<PathBuf> {
    head.lines().find_map(|line| {
        let value = line.trim().strip_prefix("export PYENV_ROOT=")?;
        let value = value.trim().trim_matches('"');
        (!value.is_empty() && !value.contains('$')).then(|| PathBuf::from(value))
    })
}

/// Versions named in a pyenv version file: the first word of each line,
/// blank lines and `#` comments skipped.
pub fn read_pyenv_version_file(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|line| line.split_whitespace().next())
        .filter(|word| !word.starts_with('#'))
        .map(str::to_string)
        .collect()
}

/// Hooks that can change pyenv's choice (`which`, `version-name`, and
/// `exec` hooks other than pyenv's own pip-rehash): with any, pyenv is not
/// followed.
fn pyenv_hooks(root: &Path, input: &DiscoveryInput, watched: &mut Vec<PathBuf>) -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> =
        var(input, "PYENV_HOOK_PATH").map(|p| std::env::split_paths(p).collect()).unwrap_or_default();
    dirs.push(root.join("pyenv.d"));
    for system in ["/usr/etc/pyenv.d", "/usr/local/etc/pyenv.d", "/etc/pyenv.d", "/usr/lib/pyenv/hooks"] {
        dirs.push(PathBuf::from(system));
    }
    let plugins = root.join("plugins");
    watched.push(plugins.clone());
    if let Ok(entries) = std::fs::read_dir(&plugins) {
        dirs.extend(entries.flatten().map(|e| e.path().join("etc/pyenv.d")));
    }
    for dir in dirs {
        for kind in ["which", "version-name", "exec"] {
            let hooks = dir.join(kind);
            watched.push(hooks.clone());
            let Ok(entries) = std::fs::read_dir(&hooks) else { continue };
            for entry in entries.flatten() {
                let name = entry.file_name();
                let name = name.to_string_lossy();
                if name.ends_with(".bash")
                    && !(kind == "exec" && name == "pip-rehash.bash")
                    && !only_if_not_found(&entry.path())
                {
                    return Some(entry.path());
                }
            }
        }
    }
    None
}

/// A `which` hook that acts only when no version had the program (as
/// pyenv-virtualenv's do): it cannot change an answer that was found.
fn only_if_not_found(hook: &Path) -> bool {
    let in_which = hook.parent().is_some_and(|dir| dir.ends_with("pyenv.d/which"));
    let Ok(text) = std::fs::read_to_string(hook) else { return false };
    let mut code = text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#'));
    let opens = code.next().is_some_and(|first| first.starts_with(r#"if [ ! -x "${PYENV_COMMAND_PATH}" ]"#));
    // Nothing after the `fi` that closes the first `if`.
    let mut depth = 1;
    let mut closed_at_end = false;
    for line in code {
        if closed_at_end {
            return false;
        }
        if line.starts_with("if ") {
            depth += 1;
        } else if line == "fi" {
            depth -= 1;
            closed_at_end = depth == 0;
        }
    }
    in_which && opens && closed_at_end
}

/// pyenv: `PYENV_VERSION`, else the first `.python-version` from `PYENV_DIR`
/// (or the cwd) upward, else `$PYENV_ROOT/version`, else `system`; each
/// version's `bin/<program>` in turn, then the next one on PATH.
pub fn pyenv(shim: &Shim<'_>, watched: &mut Vec<PathBuf>) -> Option<Result<Followed, String>> {
    if !(shim.head.contains("pyenv\" exec") || shim.head.contains("pyenv exec")) {
        return None;
    }
    Some(pyenv_follow(shim, watched))
}

fn pyenv_follow(shim: &Shim<'_>, watched: &mut Vec<PathBuf>) -> Result<Followed, String> {
    let input = shim.input;
    let root = pyenv_root_in(shim.head).ok_or("the shim does not name its PYENV_ROOT")?;
    let program = program_name(shim.path)?;
    if let Some(hook) = pyenv_hooks(&root, input, watched) {
        return Err(format!("the pyenv hook {} may change its choice", hook.display()));
    }
    let (names, origin) = match var(input, "PYENV_VERSION") {
        Some(value) => (value.split(':').map(str::to_string).collect::<Vec<_>>(), "PYENV_VERSION".to_string()),
        None => {
            // pyenv looks from PYENV_DIR upward, then from the working folder upward.
            let cwd = physical(&input.cwd);
            let start = var(input, "PYENV_DIR").map(|d| physical(&absolute(&cwd, d))).unwrap_or_else(|| cwd.clone());
            let local = find_upward(&start, ".python-version", watched)
                .or_else(|| if start != cwd { find_upward(&cwd, ".python-version", watched) } else { None });
            let file = local.unwrap_or_else(|| {
                let global = root.join("version");
                watched.push(global.clone());
                global
            });
            let names = std::fs::read_to_string(&file).map(|t| read_pyenv_version_file(&t)).unwrap_or_default();
            (names, file.display().to_string())
        }
    };
    let names: Vec<String> = if names.is_empty() { vec!["system".into()] } else { names };
    let versions = root.join("versions");
    watched.push(versions.clone());
    let mut chosen = Vec::new();
    for name in &names {
        if name == ".." || name.contains('/') {
            return Err(format!("the version name {name:?} is a path"));
        }
        if name == "system" {
            chosen.push(name.clone());
            continue;
        }
        let stripped = name.strip_prefix("python-").unwrap_or(name);
        if versions.join(name).is_dir() {
            chosen.push(name.clone());
        } else if versions.join(stripped).is_dir() {
            chosen.push(stripped.to_string());
        } else {
            return Err(format!("version {name} (from {origin}) is not installed under that exact name"));
        }
    }
    chosen.push("system".into());
    let shims = root.join("shims");
    for version in &chosen {
        let found = if version == "system" {
            system_program(input, &shims, &program, watched)
        } else {
            let file = versions.join(version).join("bin").join(&program);
            watched.push(file.clone());
            is_executable(&file).then_some(file)
        };
        if let Some(interpreter) = found {
            let version = if version == "system" { "system".to_string() } else { version.clone() };
            return Ok(Followed {
                manager: Manager::Pyenv,
                shim: shim.path.to_path_buf(),
                interpreter,
                version,
                origin,
            });
        }
    }
    Err(format!("no version in {} has `{program}`", names.join(":")))
}

// ---------------------------------------------------------------- asdf and mise

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
) -> Result<Followed, String> {
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
            return Err(format!("the version {version:?} (from {origin}) is not a plain version"));
        } else {
            let root = installs.join(version);
            watched.push(root.clone());
            if !root.is_dir() {
                return Err(format!("version {version} (from {origin}) is not installed under that exact name"));
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
    Err(format!("no version in {} has `{program}`", versions.join(" ")))
}

/// asdf: `ASDF_PYTHON_VERSION`, else the first `.tool-versions` naming
/// python from the cwd upward, else `~/.tool-versions`; installs under
/// `$ASDF_DATA_DIR/installs/python/<version>`.
pub fn asdf(shim: &Shim<'_>, watched: &mut Vec<PathBuf>) -> Option<Result<Followed, String>> {
    if !shim.head.contains("asdf exec") && !shim.head.contains("# asdf-plugin:") {
        return None;
    }
    Some(asdf_follow(shim, watched))
}

fn asdf_follow(shim: &Shim<'_>, watched: &mut Vec<PathBuf>) -> Result<Followed, String> {
    let input = shim.input;
    let plugins: Vec<&str> =
        shim.head.lines().filter_map(|l| l.trim().strip_prefix("# asdf-plugin:")?.split_whitespace().next()).collect();
    if plugins.is_empty() || plugins.iter().any(|p| *p != "python") {
        return Err("the shim is not (only) the python plugin's".into());
    }
    let home = input.home.clone().ok_or("no home folder")?;
    let data = var(input, "ASDF_DATA_DIR").map(PathBuf::from).unwrap_or_else(|| home.join(".asdf"));
    let shims = data.join("shims");
    if shim.path.parent() != Some(shims.as_path()) {
        return Err(format!("the shim is not in {}", shims.display()));
    }
    let config = var(input, "ASDF_CONFIG_FILE").map(PathBuf::from).unwrap_or_else(|| home.join(".asdfrc"));
    watched.push(config.clone());
    if std::fs::read_to_string(&config).is_ok_and(|t| {
        t.lines().any(|l| l.split('#').next().unwrap_or("").replace(' ', "").starts_with("legacy_version_file=yes"))
    }) {
        return Err(format!("{} turns legacy version files on", config.display()));
    }
    let plugin_bin = data.join("plugins/python/bin");
    for script in ["exec-path", "list-bin-paths", "exec-env"] {
        let file = plugin_bin.join(script);
        watched.push(file.clone());
        if file.exists() {
            return Err(format!("the python plugin's {script} script may change its choice"));
        }
    }
    let name = var(input, "ASDF_DEFAULT_TOOL_VERSIONS_FILENAME").unwrap_or(".tool-versions");
    let (versions, origin) = match var(input, "ASDF_PYTHON_VERSION") {
        Some(value) => (value.split_whitespace().map(str::to_string).collect(), "ASDF_PYTHON_VERSION".to_string()),
        None => {
            let mut found = None;
            for dir in upward(&physical(&input.cwd)).map(Path::to_path_buf).chain([home.clone()]) {
                let file = dir.join(name);
                watched.push(file.clone());
                if let Some(versions) = std::fs::read_to_string(&file).ok().and_then(|t| tool_versions_python(&t)) {
                    found = Some((versions, file.display().to_string()));
                    break;
                }
            }
            found.ok_or("no .tool-versions names a python version")?
        }
    };
    pick_install(shim, Manager::Asdf, &data.join("installs/python"), &shims, &versions, origin, watched)
}

/// Config files mise reads that this resolver does not: with any of them in
/// a folder on the way up, mise is not followed.
const MISE_UNREAD: &[&str] = &[
    "mise.local.toml",
    ".mise.local.toml",
    ".config/mise.toml",
    ".config/mise/config.toml",
    ".config/mise/mise.toml",
    ".config/mise/conf.d",
    ".mise/config.toml",
    "mise/config.toml",
    ".rtx.toml",
    ".python-version",
];

/// `python` versions in a mise TOML file (`[tools] python = "…"` or a list of strings).
pub fn mise_toml_python(text: &str) -> Result<Option<Vec<String>>, String> {
    let document: toml_edit::DocumentMut = text.parse().map_err(|e| format!("it does not parse: {e}"))?;
    let Some(tools) = document.get("tools").and_then(|t| t.as_table_like()) else { return Ok(None) };
    if tools.iter().any(|(key, _)| key != "python" && key.ends_with("python")) {
        return Err("it names python through a backend".into());
    }
    let Some(item) = tools.get("python") else { return Ok(None) };
    if let Some(version) = item.as_str() {
        return Ok(Some(vec![version.to_string()]));
    }
    match item.as_array() {
        Some(list) if list.iter().all(|v| v.as_str().is_some()) => {
            Ok(Some(list.iter().filter_map(|v| v.as_str().map(str::to_string)).collect()))
        }
        _ => Err("its python entry is not a version or a list of versions".into()),
    }
}

/// mise: `MISE_PYTHON_VERSION`, else the first of `mise.toml`, `.mise.toml`,
/// `.tool-versions` naming python from the cwd upward, else the global
/// config; installs under `<data>/installs/python/<version>`.
pub fn mise(shim: &Shim<'_>, watched: &mut Vec<PathBuf>) -> Option<Result<Followed, String>> {
    if !shim.head.is_empty() {
        return None;
    }
    let target = std::fs::canonicalize(shim.path).ok()?;
    if target.file_name()? != "mise" || shim.path.parent()?.file_name()? != "shims" {
        return None;
    }
    Some(mise_follow(shim, watched))
}

fn mise_follow(shim: &Shim<'_>, watched: &mut Vec<PathBuf>) -> Result<Followed, String> {
    let input = shim.input;
    if let Some(other) = input
        .manager_vars
        .keys()
        .find(|k| k.starts_with("MISE_") && !matches!(k.as_str(), "MISE_PYTHON_VERSION" | "MISE_DATA_DIR"))
    {
        return Err(format!("{other} is set"));
    }
    let home = input.home.clone().ok_or("no home folder")?;
    let data = match (var(input, "MISE_DATA_DIR"), var(input, "XDG_DATA_HOME")) {
        (Some(dir), _) => PathBuf::from(dir),
        (None, Some(xdg)) => Path::new(xdg).join("mise"),
        (None, None) => home.join(".local/share/mise"),
    };
    let shims = data.join("shims");
    if shim.path.parent() != Some(shims.as_path()) {
        return Err(format!("the shim is not in {}", shims.display()));
    }
    let (versions, origin) = match var(input, "MISE_PYTHON_VERSION") {
        Some(value) => (vec![value.to_string()], "MISE_PYTHON_VERSION".to_string()),
        None => mise_config_version(input, &home, watched)?,
    };
    pick_install(shim, Manager::Mise, &data.join("installs/python"), &shims, &versions, origin, watched)
}

fn mise_config_version(
    input: &DiscoveryInput,
    home: &Path,
    watched: &mut Vec<PathBuf>,
) -> Result<(Vec<String>, String), String> {
    let config = var(input, "XDG_CONFIG_HOME").map(PathBuf::from).unwrap_or_else(|| home.join(".config"));
    let global = config.join("mise/config.toml");
    for system in [Path::new("/etc/mise/config.toml"), Path::new("/etc/mise/conf.d")] {
        watched.push(system.to_path_buf());
        if system.exists() {
            return Err(format!("{} exists", system.display()));
        }
    }
    for dir in upward(&physical(&input.cwd)) {
        for name in MISE_UNREAD {
            let file = dir.join(name);
            watched.push(file.clone());
            if file.exists() && !(dir == home && *name == ".config/mise/config.toml") {
                return Err(format!("{} is not read here", file.display()));
            }
        }
        let tomls: Vec<PathBuf> = ["mise.toml", ".mise.toml"].iter().map(|n| dir.join(n)).collect();
        watched.extend(tomls.iter().cloned());
        let present: Vec<&PathBuf> = tomls.iter().filter(|f| f.is_file()).collect();
        if present.len() > 1 {
            return Err(format!("both mise.toml and .mise.toml are in {}", dir.display()));
        }
        if let Some(file) = present.first() {
            let text = std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
            if let Some(versions) = mise_toml_python(&text).map_err(|e| format!("{}: {e}", file.display()))? {
                return Ok((versions, file.display().to_string()));
            }
        }
        let tool_versions = dir.join(".tool-versions");
        watched.push(tool_versions.clone());
        if let Some(versions) = std::fs::read_to_string(&tool_versions).ok().and_then(|t| tool_versions_python(&t)) {
            return Ok((versions, tool_versions.display().to_string()));
        }
    }
    watched.push(global.clone());
    if let Ok(text) = std::fs::read_to_string(&global)
        && let Some(versions) = mise_toml_python(&text).map_err(|e| format!("{}: {e}", global.display()))?
    {
        return Ok((versions, global.display().to_string()));
    }
    Err("no mise config names a python version".into())
}

// ---------------------------------------------------------------- the cache

/// What identifies one state of a file or folder; `None` when it is absent.
fn stamp(path: &Path) -> Option<[i64; 5]> {
    let meta = std::fs::metadata(path).ok()?;
    Some([
        meta.dev() as i64,
        meta.ino() as i64,
        meta.size() as i64,
        meta.mtime().saturating_mul(1_000_000_000).saturating_add(meta.mtime_nsec()),
        meta.ctime().saturating_mul(1_000_000_000).saturating_add(meta.ctime_nsec()),
    ])
}

#[derive(Serialize, Deserialize)]
struct Entry {
    shim: PathBuf,
    cwd: PathBuf,
    home: Option<PathBuf>,
    path: Option<String>,
    vars: BTreeMap<String, String>,
    watched: Vec<(PathBuf, Option<[i64; 5]>)>,
    followed: Followed,
}

impl Entry {
    fn same_question(&self, shim: &Path, input: &DiscoveryInput) -> bool {
        self.shim == shim
            && self.cwd == input.cwd
            && self.home == input.home
            && self.path.as_deref() == input.path.as_ref().and_then(|p| p.to_str())
            && self.vars == input.manager_vars
    }

    fn still_valid(&self) -> bool {
        self.watched.iter().all(|(path, was)| stamp(path) == *was)
    }
}

fn entry_path(root: &Path, shim: &Path, input: &DiscoveryInput) -> PathBuf {
    let mut hasher = Sha256::new();
    for part in [shim.as_os_str(), input.cwd.as_os_str()] {
        hasher.update(part.as_encoded_bytes());
        hasher.update([0]);
    }
    let name: String = hasher.finalize().iter().take(10).map(|b| format!("{b:02x}")).collect();
    root.join("shims").join(format!("{name}.json"))
}

/// [`follow`], answered from `root` when the same shim was followed from the
/// same folder with the same variables and nothing it read has changed
/// since; a new answer is written atomically (best effort).
pub fn follow_cached_in(root: &Path, candidate: &Path, input: &DiscoveryInput) -> Outcome {
    let file = entry_path(root, candidate, input);
    if let Ok(text) = std::fs::read(&file)
        && let Ok(entry) = serde_json::from_slice::<Entry>(&text)
        && entry.same_question(candidate, input)
        && entry.still_valid()
    {
        let watched = entry.watched.into_iter().map(|(path, _)| path).collect();
        return Outcome::Followed(entry.followed, watched);
    }
    let outcome = follow(candidate, input);
    if let Outcome::Followed(followed, watched) = &outcome {
        let mut seen = std::collections::HashSet::new();
        let entry = Entry {
            shim: candidate.to_path_buf(),
            cwd: input.cwd.clone(),
            home: input.home.clone(),
            path: input.path.as_ref().and_then(|p| p.to_str()).map(str::to_string),
            vars: input.manager_vars.clone(),
            watched: watched.iter().filter(|p| seen.insert(p.as_path())).map(|p| (p.clone(), stamp(p))).collect(),
            followed: followed.clone(),
        };
        if let (Some(dir), Ok(text)) = (file.parent(), serde_json::to_vec(&entry))
            && std::fs::create_dir_all(dir).is_ok()
            && let Ok(mut temp) = tempfile::NamedTempFile::new_in(dir)
            && std::io::Write::write_all(&mut temp, &text).is_ok()
        {
            let _ = temp.persist(&file);
            forget_gone(dir);
        }
    }
    outcome
}

/// Drop resolutions for folders or shims that are gone, so the folder does
/// not grow with every temporary cwd. Run only after a fresh resolution.
fn forget_gone(dir: &Path) {
    #[derive(Deserialize)]
    struct Question {
        shim: PathBuf,
        cwd: PathBuf,
    }
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for file in entries.flatten().map(|e| e.path()) {
        let gone = match std::fs::read(&file).map(|text| serde_json::from_slice::<Question>(&text)) {
            Ok(Ok(q)) => !q.cwd.exists() || !q.shim.exists(),
            _ => file.extension().is_some_and(|ext| ext == "json"),
        };
        if gone {
            let _ = std::fs::remove_file(&file);
        }
    }
}

/// [`follow_cached_in`] the default cache root.
pub fn follow_cached(candidate: &Path, input: &DiscoveryInput) -> Outcome {
    follow_cached_in(&super::memo::cache_root(), candidate, input)
}

#[cfg(test)]
mod tests {
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
        assert!(mise_toml_python("[tools]\npython = { version = \"3.12\", virtualenv = \".venv\" }\n").is_err());
        assert!(mise_toml_python("[tools]\n\"asdf:python\" = \"3.12\"\n").is_err());
        assert!(mise_toml_python("[tools\n").is_err());
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
