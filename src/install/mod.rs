//! `cellbox install --client …` / `cellbox uninstall --client …`: register
//! cellbox's MCP server in an agent's own configuration file, or take it out.
//!
//! A change is planned first ([`plan_install`], [`plan_uninstall`]): the file's
//! text before and after, so `--dry-run` can show it and a second run can see
//! there is nothing to do. Applying keeps the previous file as
//! `<file>.cellbox-backup` and replaces the file in one rename, keeping its
//! permissions (`~/.claude.json` is private).

pub mod channel;
pub mod clients;
mod json;
mod toml;

use std::ffi::OsString;
use std::path::{Path, PathBuf};

pub use clients::{CLIENTS, Client, Format, find};

/// Why a client's file could not be planned or written, by cause, so the CLI can tell an
/// unknown client from a broken file; each text says what to do. `what` names the file.
#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    #[error("no home folder (HOME is unset): set HOME and run this again")]
    NoHome,
    #[error("unknown client {name:?}; choose one of: {known}")]
    UnknownClient { name: String, known: String },
    #[error("could not read {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("could not create {dir}: {source}")]
    CreateDir { dir: PathBuf, source: std::io::Error },
    #[error("could not back up {path} to {backup}: {source}")]
    Backup { path: PathBuf, backup: PathBuf, source: std::io::Error },
    #[error("could not write {path}: {source}")]
    Write { path: PathBuf, source: std::io::Error },
    #[error("{what} is not valid JSON ({source}); fix or move it, then run this again")]
    InvalidJson { what: String, source: jsonc_parser::errors::ParseError },
    /// The file parsed as a value but not as the tree that is edited.
    #[error("{what} is not valid JSON ({source})")]
    JsonTree { what: String, source: jsonc_parser::errors::ParseError },
    #[error("{what} does not hold a JSON object; fix or move it, then run this again")]
    NotAnObject { what: String },
    /// `found` is the value under `key`, as JSON.
    #[error("{what}: \"{key}\" is {found} where an object of servers was expected; fix it first")]
    ServersNotAnObject { what: String, key: String, found: String },
    #[error("{what}: the \"{name}\" entry is not an object; remove it first")]
    EntryNotAnObject { what: String, name: String },
    #[error("{what} is not valid TOML ({source}); fix it, then run this again")]
    InvalidToml { what: String, source: toml_edit::TomlError },
    #[error("{what}: mcp_servers is not a table; fix it first")]
    ServersNotATable { what: String },
    #[error("{what}: mcp_servers.{name} is not a table; remove it first")]
    EntryNotATable { what: String, name: String },
}

/// The suffix of the copy kept before a file is changed.
pub const BACKUP_SUFFIX: &str = ".cellbox-backup";

/// Where the clients' files are: the home folder and the variables that move them.
#[derive(Debug, Clone)]
pub struct Home {
    pub dir: PathBuf,
    /// Use macOS's folders (`~/Library/Application Support`).
    pub macos: bool,
    vars: Vec<(String, OsString)>,
}

impl Home {
    /// `$HOME` and this process's `XDG_CONFIG_HOME`, `CODEX_HOME`, `CLAUDE_CONFIG_DIR`.
    pub fn from_env() -> Result<Self, InstallError> {
        let dir = std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from)
            .or_else(dirs::home_dir)
            .ok_or(InstallError::NoHome)?;
        let vars = ["XDG_CONFIG_HOME", "CODEX_HOME", "CLAUDE_CONFIG_DIR"]
            .into_iter()
            .filter_map(|name| std::env::var_os(name).filter(|v| !v.is_empty()).map(|v| (name.to_string(), v)))
            .collect();
        Ok(Home { dir, macos: cfg!(target_os = "macos"), vars })
    }

    fn var(&self, name: &str) -> Option<&OsString> {
        self.vars.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }

    /// `$XDG_CONFIG_HOME`, else `~/.config`.
    fn config_dir(&self) -> PathBuf {
        self.var("XDG_CONFIG_HOME").map(PathBuf::from).unwrap_or_else(|| self.dir.join(".config"))
    }
}

/// The server entry to write: its name in the client's list, and how to start it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Server {
    pub name: String,
    pub command: String,
    pub args: Vec<String>,
}

/// A planned edit of one file.
#[derive(Debug, Clone)]
pub struct Change {
    pub client: &'static Client,
    pub path: PathBuf,
    /// The file's text now (`None`: it does not exist).
    pub before: Option<String>,
    /// The text to write (`None`: nothing to do).
    pub after: Option<String>,
}

impl Change {
    /// Whether applying it would write anything.
    pub fn changes(&self) -> bool {
        self.after.is_some()
    }

    /// A unified diff of the change, for `--dry-run`.
    pub fn diff(&self) -> String {
        let Some(after) = &self.after else { return String::new() };
        let before = self.before.as_deref().unwrap_or("");
        let old = if self.before.is_some() { self.path.display().to_string() } else { "/dev/null".into() };
        similar::TextDiff::from_lines(before, after.as_str())
            .unified_diff()
            .context_radius(3)
            .header(&old, &self.path.display().to_string())
            .to_string()
    }

    /// Write the change: back up the old file, then replace it atomically.
    /// Returns the backup's path, if there was a file to back up.
    pub fn apply(&self) -> Result<Option<PathBuf>, InstallError> {
        let Some(after) = &self.after else { return Ok(None) };
        let dir = self.path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).map_err(|source| InstallError::CreateDir { dir: dir.to_path_buf(), source })?;
        let backup = match &self.before {
            Some(_) => {
                let mut name = self.path.as_os_str().to_owned();
                name.push(BACKUP_SUFFIX);
                let backup = PathBuf::from(name);
                if let Err(source) = std::fs::copy(&self.path, &backup) {
                    return Err(InstallError::Backup { path: self.path.clone(), backup, source });
                }
                Some(backup)
            }
            None => None,
        };
        let written = (|| -> std::io::Result<()> {
            let mut file = tempfile::NamedTempFile::new_in(dir)?;
            std::io::Write::write_all(&mut file, after.as_bytes())?;
            if let Some(permissions) = crate::paths::replacement_permissions(&self.path) {
                std::fs::set_permissions(file.path(), permissions)?;
            }
            file.persist(&self.path).map_err(|e| e.error)?;
            Ok(())
        })();
        written.map_err(|source| InstallError::Write { path: self.path.clone(), source })?;
        Ok(backup)
    }
}

fn read(path: &Path) -> Result<Option<String>, InstallError> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(InstallError::Read { path: path.to_path_buf(), source }),
    }
}

/// The edit that registers `server` with `client`.
pub fn plan_install(client: &'static Client, home: &Home, server: &Server) -> Result<Change, InstallError> {
    let path = (client.config)(home);
    let before = read(&path)?;
    let text = before.as_deref().unwrap_or("");
    let what = path.display().to_string();
    let after = match client.format {
        Format::Json { key, stdio_type } => json::install(text, key, stdio_type, server, &what)?,
        Format::Toml => toml::install(text, server, &what)?,
    };
    Ok(Change { client, path, before, after })
}

/// The edit that removes the server called `name` from `client`.
pub fn plan_uninstall(client: &'static Client, home: &Home, name: &str) -> Result<Change, InstallError> {
    let path = (client.config)(home);
    let before = read(&path)?;
    let after = match &before {
        None => None,
        Some(text) => {
            let what = path.display().to_string();
            match client.format {
                Format::Json { key, .. } => json::uninstall(text, key, name, &what)?,
                Format::Toml => toml::uninstall(text, name, &what)?,
            }
        }
    };
    Ok(Change { client, path, before, after })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(args: &[&str]) -> Server {
        Server {
            name: "cellbox".into(),
            command: "/opt/cellbox".into(),
            args: args.iter().map(|a| a.to_string()).collect(),
        }
    }

    #[test]
    fn json_keeps_comments_order_and_other_fields() {
        let text = "{\n  // mine\n  \"zeta\": 1,\n  \"servers\": {\n    \"other\": {\"command\": \"x\"},\n    \"cellbox\": {\"command\": \"old\", \"env\": {\"A\": \"1\"}}\n  },\n  \"alpha\": true\n}\n";
        let out = json::install(text, "servers", true, &server(&["mcp"]), "f").unwrap().unwrap();
        assert!(out.contains("// mine"), "{out}");
        assert!(out.find("zeta").unwrap() < out.find("alpha").unwrap(), "{out}");
        let value: serde_json::Value =
            jsonc_parser::parse_to_serde_value::<Option<serde_json::Value>>(&out, &Default::default())
                .unwrap()
                .unwrap();
        assert_eq!(value["servers"]["cellbox"]["command"], "/opt/cellbox");
        assert_eq!(value["servers"]["cellbox"]["type"], "stdio");
        assert_eq!(value["servers"]["cellbox"]["env"]["A"], "1");
        assert_eq!(value["servers"]["other"]["command"], "x");
        assert_eq!(json::install(&out, "servers", true, &server(&["mcp"]), "f").unwrap(), None);
        let removed = json::uninstall(&out, "servers", "cellbox", "f").unwrap().unwrap();
        assert!(!removed.contains("cellbox") && removed.contains("other") && removed.contains("// mine"), "{removed}");
    }

    #[test]
    fn toml_keeps_comments_and_is_idempotent() {
        let text = "# my settings\nmodel = \"o3\"\n\n[mcp_servers.other]\ncommand = \"x\"\n";
        let out = toml::install(text, &server(&["mcp", "--no-js"]), "f").unwrap().unwrap();
        assert!(out.starts_with("# my settings\nmodel = \"o3\"\n"), "{out}");
        assert!(
            out.contains("[mcp_servers.cellbox]\ncommand = \"/opt/cellbox\"\nargs = [\"mcp\", \"--no-js\"]"),
            "{out}"
        );
        assert!(!out.contains("[mcp_servers]\n"), "{out}");
        assert_eq!(toml::install(&out, &server(&["mcp", "--no-js"]), "f").unwrap(), None);
        let back = toml::uninstall(&out, "cellbox", "f").unwrap().unwrap();
        assert_eq!(back, text);
    }

    #[test]
    fn bad_files_are_refused_with_what_to_do() {
        let error = json::install("{ not json", "mcpServers", false, &server(&[]), "f.json").unwrap_err();
        assert!(matches!(&error, InstallError::InvalidJson { what, .. } if what == "f.json"), "{error:?}");
        let InstallError::InvalidJson { source, .. } = &error else { unreachable!() };
        assert_eq!(
            error.to_string(),
            format!("f.json is not valid JSON ({source}); fix or move it, then run this again")
        );
        let error = json::install("{\"mcpServers\": 3}", "mcpServers", false, &server(&[]), "f.json").unwrap_err();
        assert!(matches!(&error, InstallError::ServersNotAnObject { found, .. } if found == "3"), "{error:?}");
        assert_eq!(
            error.to_string(),
            "f.json: \"mcpServers\" is 3 where an object of servers was expected; fix it first"
        );
        let error = toml::install("a = [", &server(&[]), "c.toml").unwrap_err();
        assert!(matches!(error, InstallError::InvalidToml { .. }), "{error:?}");
        assert!(error.to_string().starts_with("c.toml is not valid TOML ("), "{error}");
        let error = find("emacs").unwrap_err();
        assert!(matches!(&error, InstallError::UnknownClient { name, .. } if name == "emacs"), "{error:?}");
        assert!(error.to_string().starts_with("unknown client \"emacs\"; choose one of: claude, "), "{error}");
    }
}
