//! Kernelspecs: the Jupyter kernels installed on this machine, found where
//! Jupyter itself looks, so a kernel `jupyter kernelspec list` shows is one
//! cellbox can start.
//!
//! The search path, first match wins for a name:
//! 1. every folder in `JUPYTER_PATH`;
//! 2. the user's data folder (`JUPYTER_DATA_DIR`, else `$XDG_DATA_HOME/jupyter`
//!    or `~/.local/share/jupyter` on Linux, `~/Library/Jupyter` on macOS,
//!    `%APPDATA%\jupyter` on Windows);
//! 3. the active environment's `share/jupyter` (`VIRTUAL_ENV`, `CONDA_PREFIX`),
//!    and that of the Python cellbox runs its Python cells on, when known;
//! 4. the system's (`/usr/local/share/jupyter`, `/usr/share/jupyter`; `%PROGRAMDATA%\jupyter`).
//!
//! Each holds `kernels/<name>/kernel.json`. A name is what Jupyter accepts
//! (ASCII letters, digits, `.`, `_`, `-`): anything else, `..` included, is
//! refused before any path is made from it.
//!
//! Kernels can write some of these places (a `.venv` in the workspace), and
//! the host reads them: a kernel.json is opened without following a final
//! symlink and without blocking (a FIFO is refused, not waited on), and read
//! only if it is a regular file of at most a megabyte; a folder's first
//! [`MAX_KERNELS`] entries are looked at. A kernelspec a kernel planted runs
//! as any kernel does, under the sandbox: it gains nothing the kernel had not.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// How a kernel wants to be interrupted (`interrupt_mode` in its kernel.json).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum InterruptMode {
    /// SIGINT to its process group (Jupyter's default).
    #[default]
    Signal,
    /// An `interrupt_request` on the control channel.
    Message,
}

/// One installed kernel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelSpec {
    /// Its folder's name, which is what cells and `jupyter` call it (`ir`, `python3`).
    pub name: String,
    /// The folder holding its kernel.json (the `{resource_dir}` of its argv).
    pub dir: PathBuf,
    /// The command line, with `{connection_file}` (and `{resource_dir}`) still in it.
    pub argv: Vec<String>,
    pub display_name: String,
    /// The language its cells are in, as the kernelspec says it (`R`, `python`).
    pub language: String,
    pub interrupt_mode: InterruptMode,
    /// Variables the kernel starts with, on top of the kernel environment.
    pub env: BTreeMap<String, String>,
}

/// Why no kernelspec could be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpecError {
    #[error("{name:?} is not a kernel name: kernelspec names are ASCII letters, digits, '.', '_' and '-'")]
    BadName { name: String },
    #[error("no Jupyter kernel named {name:?} is installed{}", listed(installed))]
    NotFound { name: String, installed: Vec<String> },
    #[error(
        "no Jupyter kernel for {language} is installed{}; install one (for R: `apt-get install r-cran-irkernel`, or \
         `IRkernel::installspec()` in R), then check with `jupyter kernelspec list`",
        listed(installed)
    )]
    NoneForLanguage { language: String, installed: Vec<String> },
    #[error("the kernelspec {path} cannot be used: {reason}")]
    Unusable { path: PathBuf, reason: String },
}

fn listed(installed: &[String]) -> String {
    if installed.is_empty() {
        " (none is: `jupyter kernelspec list` shows what Jupyter finds; cellbox looks in the same places)".into()
    } else {
        format!(" (installed: {})", installed.join(", "))
    }
}

/// Where kernelspecs are looked for, in order (each folder holds `kernels/`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SearchPath {
    pub dirs: Vec<PathBuf>,
}

impl SearchPath {
    /// Jupyter's own search path, from this process's environment; `python_prefix`
    /// is the prefix of the Python that runs Python cells, when one is known.
    pub fn from_env(python_prefix: Option<&Path>) -> SearchPath {
        let var = |name: &str| std::env::var_os(name).filter(|value| !value.is_empty()).map(PathBuf::from);
        let mut dirs: Vec<PathBuf> = Vec::new();
        if let Some(path) = std::env::var_os("JUPYTER_PATH") {
            dirs.extend(std::env::split_paths(&path).filter(|dir| !dir.as_os_str().is_empty()));
        }
        dirs.extend(var("JUPYTER_DATA_DIR").or_else(user_data_dir));
        for prefix in
            [var("VIRTUAL_ENV"), var("CONDA_PREFIX"), python_prefix.map(Path::to_path_buf)].into_iter().flatten()
        {
            dirs.push(prefix.join("share").join("jupyter"));
        }
        dirs.extend(system_dirs());
        let mut seen = std::collections::HashSet::new();
        dirs.retain(|dir| seen.insert(dir.clone()));
        SearchPath { dirs }
    }

    /// Every installed kernel, by name (a name found twice: the first one).
    pub fn list(&self) -> Vec<KernelSpec> {
        let mut found: BTreeMap<String, KernelSpec> = BTreeMap::new();
        for dir in &self.dirs {
            let Ok(entries) = std::fs::read_dir(dir.join("kernels")) else { continue };
            let mut names: Vec<String> = entries
                .take(MAX_KERNELS)
                .filter_map(Result::ok)
                .filter_map(|entry| entry.file_name().into_string().ok())
                .filter(|name| valid_name(name))
                .collect();
            names.sort();
            for name in names {
                if found.contains_key(&name) {
                    continue;
                }
                match read(&dir.join("kernels").join(&name), &name) {
                    Ok(spec) => {
                        found.insert(name, spec);
                    }
                    Err(error) => tracing::debug!(target: "cellbox::jupyter", "{error}"),
                }
            }
        }
        found.into_values().collect()
    }

    /// The kernel named `name`.
    pub fn find(&self, name: &str) -> Result<KernelSpec, SpecError> {
        if !valid_name(name) {
            return Err(SpecError::BadName { name: name.to_string() });
        }
        let mut last_error = None;
        for dir in &self.dirs {
            let folder = dir.join("kernels").join(name);
            if folder.join("kernel.json").is_file() {
                match read(&folder, name) {
                    Ok(spec) => return Ok(spec),
                    Err(error) => last_error = Some(error),
                }
            }
        }
        Err(last_error.unwrap_or_else(|| SpecError::NotFound { name: name.to_string(), installed: self.names() }))
    }

    /// The kernel for cells in `language` (as kernelspecs name languages, any
    /// case): `preferred` when it is one, else the first such by name.
    pub fn for_language(&self, language: &str, preferred: &str) -> Result<KernelSpec, SpecError> {
        let specs = self.list();
        let mut matching = specs.iter().filter(|spec| spec.language.eq_ignore_ascii_case(language));
        let first = matching.clone().next().cloned();
        match matching.find(|spec| spec.name == preferred).cloned().or(first) {
            Some(spec) => Ok(spec),
            None => Err(SpecError::NoneForLanguage {
                language: language.to_string(),
                installed: specs.into_iter().map(|spec| spec.name).collect(),
            }),
        }
    }

    fn names(&self) -> Vec<String> {
        self.list().into_iter().map(|spec| spec.name).collect()
    }
}

/// Whether `name` is a kernelspec name (and so safe as one path component).
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 128
        && name != "."
        && name != ".."
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// kernel.json as Jupyter writes it (unknown keys ignored).
#[derive(Deserialize)]
struct SpecFile {
    argv: Vec<String>,
    #[serde(default)]
    display_name: String,
    #[serde(default)]
    language: String,
    #[serde(default)]
    interrupt_mode: Option<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
}

/// `text`, cut at 200 characters.
fn short(text: String) -> String {
    if text.chars().count() <= 200 { text } else { text.chars().take(200).collect() }
}

/// The most entries of one `kernels` folder looked at.
pub const MAX_KERNELS: usize = 1000;

/// The largest kernel.json read (real ones are a few hundred bytes).
const MAX_SPEC_BYTES: u64 = 1 << 20;

fn read(folder: &Path, name: &str) -> Result<KernelSpec, SpecError> {
    use std::io::Read;
    let path = folder.join("kernel.json");
    let unusable = |reason: String| SpecError::Unusable { path: path.clone(), reason };
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(&mut options, libc::O_NOFOLLOW | libc::O_NONBLOCK);
    let file = options.open(&path).map_err(|e| unusable(e.to_string()))?;
    if !file.metadata().map(|m| m.is_file()).unwrap_or(false) {
        return Err(unusable("it is not a regular file".into()));
    }
    let mut text = String::new();
    file.take(MAX_SPEC_BYTES + 1).read_to_string(&mut text).map_err(|e| unusable(e.to_string()))?;
    if text.len() as u64 > MAX_SPEC_BYTES {
        return Err(unusable(format!("it is larger than {MAX_SPEC_BYTES} bytes")));
    }
    let spec: SpecFile = serde_json::from_str(&text).map_err(|e| unusable(format!("not a kernelspec: {e}")))?;
    if spec.argv.is_empty() || spec.argv[0].is_empty() {
        return Err(unusable("its argv is empty".into()));
    }
    let interrupt_mode = match spec.interrupt_mode.as_deref() {
        None | Some("signal") => InterruptMode::Signal,
        Some("message") => InterruptMode::Message,
        Some(other) => return Err(unusable(format!("unknown interrupt_mode {other:?} (signal or message)"))),
    };
    Ok(KernelSpec {
        name: name.to_string(),
        dir: folder.to_path_buf(),
        argv: spec.argv,
        // Shown in errors and notebooks: a name, not a file's worth of text.
        display_name: if spec.display_name.is_empty() { name.to_string() } else { short(spec.display_name) },
        language: short(spec.language),
        interrupt_mode,
        env: spec.env,
    })
}

impl KernelSpec {
    /// The kernelspec in `folder` (its name is the folder's).
    pub fn load(folder: &Path) -> Result<KernelSpec, SpecError> {
        let name = folder.file_name().and_then(|name| name.to_str()).unwrap_or_default();
        if !valid_name(name) {
            return Err(SpecError::BadName { name: name.to_string() });
        }
        read(folder, name)
    }

    /// The command line for a kernel whose connection file is `connection_file`.
    /// `python`/`python3` as the program means the Python of the environment
    /// the kernelspec was installed in, when it has one (as Jupyter does for
    /// its own kernels), so a spec in a virtualenv runs that virtualenv's Python.
    pub fn command(&self, connection_file: &Path) -> Vec<String> {
        let mut argv: Vec<String> = self
            .argv
            .iter()
            .map(|arg| {
                arg.replace("{connection_file}", &connection_file.to_string_lossy())
                    .replace("{resource_dir}", &self.dir.to_string_lossy())
            })
            .collect();
        argv[0] = self.program().to_string_lossy().into_owned();
        argv
    }

    /// Whether its kernel binds only TCP ports, never Unix sockets: kernels
    /// on the JVM (JeroMQ's `ipc` works within one process only) and Deno's.
    pub fn speaks_only_tcp(&self) -> bool {
        let program = Path::new(&self.argv[0]).file_name().and_then(|name| name.to_str()).unwrap_or_default();
        matches!(program, "java" | "deno")
    }

    /// The program its command line starts (see [`KernelSpec::command`]).
    pub fn program(&self) -> PathBuf {
        match self.argv[0].as_str() {
            "python" | "python3" => self.environment_python().unwrap_or_else(|| PathBuf::from(&self.argv[0])),
            program => PathBuf::from(program),
        }
    }

    /// `<prefix>/bin/python` when the spec lies in `<prefix>/share/jupyter/kernels/<name>`.
    fn environment_python(&self) -> Option<PathBuf> {
        let kernels = self.dir.parent()?;
        let jupyter = kernels.parent()?;
        let share = jupyter.parent()?;
        if kernels.file_name()? != "kernels" || jupyter.file_name()? != "jupyter" || share.file_name()? != "share" {
            return None;
        }
        let prefix = share.parent()?;
        let python = if cfg!(windows) { prefix.join("python.exe") } else { prefix.join("bin").join("python") };
        python.is_file().then_some(python)
    }
}

#[cfg(target_os = "linux")]
fn user_data_dir() -> Option<PathBuf> {
    match std::env::var_os("XDG_DATA_HOME").filter(|v| !v.is_empty()) {
        Some(data) => Some(PathBuf::from(data).join("jupyter")),
        None => dirs::home_dir().map(|home| home.join(".local/share/jupyter")),
    }
}

#[cfg(target_os = "macos")]
fn user_data_dir() -> Option<PathBuf> {
    dirs::home_dir().map(|home| home.join("Library/Jupyter"))
}

#[cfg(windows)]
fn user_data_dir() -> Option<PathBuf> {
    std::env::var_os("APPDATA").map(|appdata| PathBuf::from(appdata).join("jupyter"))
}

#[cfg(not(any(target_os = "linux", target_os = "macos", windows)))]
fn user_data_dir() -> Option<PathBuf> {
    dirs::home_dir().map(|home| home.join(".local/share/jupyter"))
}

fn system_dirs() -> Vec<PathBuf> {
    if cfg!(windows) {
        std::env::var_os("PROGRAMDATA").map(|data| PathBuf::from(data).join("jupyter")).into_iter().collect()
    } else {
        vec![PathBuf::from("/usr/local/share/jupyter"), PathBuf::from("/usr/share/jupyter")]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn install(root: &Path, name: &str, json: &str) {
        let folder = root.join("kernels").join(name);
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::write(folder.join("kernel.json"), json).unwrap();
    }

    #[test]
    fn names_that_are_not_one_path_component_are_refused() {
        for bad in ["", ".", "..", "../ir", "/usr", "a/b", "ir\0", "é", "a b"] {
            assert!(!valid_name(bad), "{bad:?}");
        }
        for good in ["ir", "python3", "deno", "julia-1.10", "my_kernel.v2"] {
            assert!(valid_name(good), "{good:?}");
        }
        let search = SearchPath { dirs: vec![] };
        assert_eq!(search.find("../../etc"), Err(SpecError::BadName { name: "../../etc".into() }));
    }

    #[test]
    fn the_first_folder_wins_and_languages_match_in_any_case() {
        let (first, second) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        install(first.path(), "ir", r#"{"argv": ["R", "{connection_file}"], "language": "R"}"#);
        install(second.path(), "ir", r#"{"argv": ["other"], "language": "R"}"#);
        install(second.path(), "ark", r#"{"argv": ["ark"], "language": "R", "interrupt_mode": "message"}"#);
        install(second.path(), "broken", "{not json");
        let search = SearchPath { dirs: vec![first.path().into(), second.path().into()] };
        let names: Vec<_> = search.list().into_iter().map(|s| s.name).collect();
        assert_eq!(names, ["ark", "ir"]);
        let ir = search.find("ir").unwrap();
        assert_eq!(ir.command(Path::new("/c.json")), ["R", "/c.json"]);
        assert_eq!(search.for_language("r", "ir").unwrap().name, "ir");
        assert_eq!(search.for_language("R", "none").unwrap().name, "ark");
        assert_eq!(search.find("ark").unwrap().interrupt_mode, InterruptMode::Message);
        assert!(matches!(search.find("broken"), Err(SpecError::Unusable { .. })));
        let missing = search.find("julia").unwrap_err().to_string();
        assert!(missing.contains("installed: ark, ir"), "{missing}");
        let none = search.for_language("julia", "julia").unwrap_err().to_string();
        assert!(none.starts_with("no Jupyter kernel for julia is installed (installed: ark, ir)"), "{none}");
    }

    #[cfg(unix)]
    #[test]
    fn planted_fifos_and_symlinks_are_refused_without_blocking() {
        let (root, secret) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let secret_json = secret.path().join("secret.json");
        std::fs::write(&secret_json, r#"{"argv": ["x"], "display_name": "sk-secret"}"#).unwrap();
        let linked = root.path().join("kernels/linked");
        std::fs::create_dir_all(&linked).unwrap();
        std::os::unix::fs::symlink(&secret_json, linked.join("kernel.json")).unwrap();
        let fifo = root.path().join("kernels/fifo");
        std::fs::create_dir_all(&fifo).unwrap();
        let path = std::ffi::CString::new(fifo.join("kernel.json").to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o600) }, 0);
        let search = SearchPath { dirs: vec![root.path().into()] };
        // Neither blocks nor reads through the link.
        assert!(search.list().is_empty());
        assert!(matches!(search.find("fifo"), Err(SpecError::NotFound { .. } | SpecError::Unusable { .. })));
        let linked = search.find("linked").unwrap_err().to_string();
        assert!(!linked.contains("sk-secret"), "{linked}");
        install(root.path(), "ir", r#"{"argv": ["R"], "language": "R"}"#);
        assert_eq!(search.find("ir").unwrap().name, "ir");
    }

    #[cfg(unix)]
    #[test]
    fn a_python_spec_in_an_environment_runs_that_environments_python() {
        let prefix = tempfile::tempdir().unwrap();
        let share = prefix.path().join("share/jupyter");
        install(&share, "python3", r#"{"argv": ["python", "-m", "ipykernel_launcher", "-f", "{connection_file}"]}"#);
        std::fs::create_dir_all(prefix.path().join("bin")).unwrap();
        std::fs::write(prefix.path().join("bin/python"), "").unwrap();
        let spec = SearchPath { dirs: vec![share] }.find("python3").unwrap();
        let argv = spec.command(Path::new("/k.json"));
        assert_eq!(argv[0], prefix.path().join("bin/python").to_string_lossy());
        assert_eq!(&argv[1..], ["-m", "ipykernel_launcher", "-f", "/k.json"]);
    }
}
