//! Every `CELLBOX_*` environment variable, declared once: its name, the kind
//! of value it takes, its default and a one-line description.
//!
//! The configuration page's table (`cellbox docs env-vars`) and the docs check
//! are generated from [`ENV_VARS`], and a test fails when the code names a
//! `CELLBOX_` variable this list does not declare, so the docs cannot drift
//! from what the binary reads. The rest of the crate reads a variable only
//! through its constant here (`settings::PYTHON.get()`), never by name.

mod vars;

use std::fmt::Write as _;
use std::path::PathBuf;
use std::str::FromStr;

/// What every variable's name starts with.
pub const PREFIX: &str = "CELLBOX_";

/// Who sets a variable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Audience {
    /// The user, to configure cellbox.
    User,
    /// cellbox itself, in the environment of a process it starts (kernels, agent commands).
    SetByCellbox,
    /// The build of the binary (read by `build.rs`).
    Build,
    /// The test suite and the benchmark.
    Development,
}

/// One environment variable.
#[derive(Debug, Clone, Copy)]
pub struct EnvVar {
    pub name: &'static str,
    /// The kind of value, as the docs show it (`path`, `on|off|localhost`, …).
    pub value: &'static str,
    /// The default, as the docs show it (empty: unset means off or "not given").
    pub default: &'static str,
    pub doc: &'static str,
    pub audience: Audience,
}

impl EnvVar {
    /// The value this process was started with, trimmed; `None` when the
    /// variable is unset, blank or not UTF-8 (all three mean "not given").
    pub fn get(&self) -> Option<String> {
        let value = std::env::var(self.name).ok()?;
        let value = value.trim();
        (!value.is_empty()).then(|| value.to_string())
    }

    /// The value as a path, untrimmed (a path may end in a space); `None` when
    /// unset or empty.
    pub fn path(&self) -> Option<PathBuf> {
        std::env::var_os(self.name).filter(|value| !value.is_empty()).map(PathBuf::from)
    }

    /// Whether the variable is set to something not empty, without reading
    /// the value into a string (for secrets such as a token).
    pub fn is_present(&self) -> bool {
        std::env::var_os(self.name).is_some_and(|value| !value.is_empty())
    }

    /// The command-line flag that sets the same thing, as the description
    /// names it ("… (as `--python`) …"); the CLI's help shows the variable
    /// beside that flag.
    pub fn flag(&self) -> Option<&'static str> {
        let doc: &'static str = self.doc;
        let start = doc.find("(as `--")? + "(as `".len();
        let len = doc[start..].find('`')?;
        Some(&doc[start..start + len])
    }

    /// Whether it is set to `1`, `true` or `yes` (any case).
    pub fn is_on(&self) -> bool {
        self.get().is_some_and(|value| matches!(value.to_ascii_lowercase().as_str(), "1" | "true" | "yes"))
    }

    /// The value parsed; `Ok(None)` when not given, an error naming the
    /// variable and what it takes when the value does not parse.
    pub fn parse<T: FromStr>(&self) -> Result<Option<T>, SettingError> {
        match self.get() {
            None => Ok(None),
            Some(value) => {
                value.parse().map(Some).map_err(|_| SettingError { name: self.name, value, expected: self.value })
            }
        }
    }
}

/// A variable set to a value it does not take.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{name}={value:?} is not a valid value: it takes {expected}")]
pub struct SettingError {
    pub name: &'static str,
    pub value: String,
    /// What the variable takes, as the docs show it.
    pub expected: &'static str,
}

pub use vars::*;

/// The declaration of `name`, if it is one of ours.
pub fn env_var(name: &str) -> Option<&'static EnvVar> {
    ENV_VARS.iter().find(|var| var.name == name)
}

/// The configuration page's table: one section per audience, a row per variable.
pub fn markdown_table() -> String {
    let sections = [
        (Audience::User, "Settings"),
        (Audience::SetByCellbox, "Set by cellbox for the processes it starts"),
        (Audience::Build, "Build"),
        (Audience::Development, "Tests and benchmark"),
    ];
    let mut out = String::new();
    for (audience, title) in sections {
        let _ =
            write!(out, "\n**{title}**\n\n| variable | value | default | what it does |\n| --- | --- | --- | --- |\n");
        for var in ENV_VARS.iter().filter(|var| var.audience == audience) {
            let default = if var.default.is_empty() { "—" } else { var.default };
            let _ = writeln!(out, "| `{}` | {} | {} | {} |", var.name, var.value.replace('|', "\\|"), default, var.doc);
        }
    }
    out.trim_start().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every `CELLBOX_…` name the product's code mentions (Rust, the runners,
    /// scripts, tests and bench), as whole words.
    fn names_in(text: &str) -> Vec<String> {
        let bytes = text.as_bytes();
        let mut names = Vec::new();
        let mut at = 0;
        while let Some(found) = text[at..].find("CELLBOX_") {
            let start = at + found;
            let end = start
                + bytes[start..]
                    .iter()
                    .take_while(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || **b == b'_')
                    .count();
            let before = start.checked_sub(1).map(|i| bytes[i]);
            if !before.is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_') {
                names.push(text[start..end].to_string());
            }
            at = end;
        }
        names
    }

    fn files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            // Installed packages (a venv, node_modules) are not the product's code.
            let name = entry.file_name();
            let installed = name.to_string_lossy().starts_with('.') || name == "node_modules";
            if path.is_dir() && !installed {
                files(&path, out);
            } else if path.extension().is_some_and(|e| ["rs", "py", "js"].iter().any(|x| e == *x)) {
                out.push(path);
            }
        }
    }

    /// Made-up names the environment filter's tests plant in a kernel's environment on purpose.
    const FILTER_FIXTURES: &[&str] = &[
        "CELLBOX_TEST_VALUE",
        "CELLBOX_FOO_API_KEY",
        "CELLBOX_SERVICE_TOKEN",
        "CELLBOX_MODE",
        "CELLBOX_OPENAI_API_KEY",
    ];

    /// The repository: this crate is `crates/settings`.
    fn repo_root() -> std::path::PathBuf {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
    }

    #[test]
    fn every_variable_the_code_reads_is_declared() {
        let root = &repo_root();
        let mut paths = Vec::new();
        for dir in ["src", "crates", "runner", "runner-js", "bench", "benches", "tests", "sdk-engine/src"] {
            files(&root.join(dir), &mut paths);
        }
        paths.push(root.join("build.rs"));
        paths.push(root.join("scripts/test"));
        let mut missing = Vec::new();
        for path in paths {
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            for name in names_in(&text) {
                // A bare prefix (`CELLBOX_`, `CELLBOX_LLM_`) names a family, not a variable.
                let family = name.ends_with('_') || ENV_VARS.iter().any(|v| v.name.starts_with(&format!("{name}_")));
                if !family && env_var(&name).is_none() && !FILTER_FIXTURES.contains(&name.as_str()) {
                    missing.push(format!("{name} ({})", path.strip_prefix(root).unwrap().display()));
                }
            }
        }
        missing.sort();
        missing.dedup();
        assert!(missing.is_empty(), "declare these in crates/settings/src/vars.rs: {missing:?}");
    }

    /// Every other crate reads and names the variables only through this one: no other file
    /// spells a `"CELLBOX_…"` literal in its code (its unit tests may, as inputs). The one
    /// exception is `env!` of the build's revision, which only takes a literal.
    #[test]
    fn only_this_module_spells_the_names() {
        let root = &repo_root();
        let mut paths = Vec::new();
        files(&root.join("src"), &mut paths);
        files(&root.join("crates"), &mut paths);
        files(&root.join("sdk-engine/src"), &mut paths);
        let mut found = Vec::new();
        for path in paths
            .iter()
            .filter(|p| p.extension().is_some_and(|e| e == "rs") && !p.starts_with(root.join("crates/settings")))
        {
            let text = std::fs::read_to_string(path).unwrap();
            let code = text.split("#[cfg(test)]\nmod tests").next().unwrap_or_default();
            for (number, line) in code.lines().enumerate() {
                if line.trim_start().starts_with("//") {
                    continue;
                }
                let spelled = line.match_indices(&format!("\"{PREFIX}")).any(|(at, _)| !line[..at].ends_with("env!("));
                if spelled {
                    found.push(format!("{}:{}", path.strip_prefix(root).unwrap().display(), number + 1));
                }
            }
        }
        assert!(found.is_empty(), "read these through crate::settings (e.g. settings::PYTHON.get()): {found:?}");
    }

    #[test]
    fn names_are_unique_and_documented() {
        let mut names: Vec<_> = ENV_VARS.iter().map(|v| v.name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), ENV_VARS.len(), "a variable is declared twice");
        for var in ENV_VARS {
            assert!(var.name.starts_with("CELLBOX_") && !var.doc.is_empty() && var.doc.ends_with('.'), "{var:?}");
        }
    }

    #[test]
    fn the_configuration_page_holds_the_generated_table() {
        let page = repo_root().join("docs/configuration.md");
        let Ok(text) = std::fs::read_to_string(&page) else { panic!("{} is missing", page.display()) };
        let (begin, end) = ("<!-- BEGIN generated by: cellbox docs env-vars -->", "<!-- END generated -->");
        let start = text.find(begin).expect("the page has the BEGIN marker") + begin.len();
        let stop = text[start..].find(end).expect("the page has the END marker") + start;
        assert_eq!(
            text[start..stop].trim(),
            markdown_table().trim(),
            "docs/configuration.md's table is stale: regenerate it with `cargo run -- docs env-vars --write`"
        );
    }
}
