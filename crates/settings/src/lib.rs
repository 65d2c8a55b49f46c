//! Every `CELLBOX_*` environment variable, declared once: its name, the kind
//! of value it takes, its default and a one-line description.
//!
//! The configuration page's table (`cellbox docs env-vars`) and the docs check
//! are generated from [`ENV_VARS`], and a test fails when the code names a
//! `CELLBOX_` variable this list does not declare, so the docs cannot drift
//! from what the binary reads. The rest of the crate reads a variable only
//! through its constant here (`settings::PYTHON.get()`), never by name.

mod dev_vars;
mod vars;

use std::collections::BTreeMap;
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

/// What a variable takes; [`Environment`] checks every value against it, so a bad one is an
/// error naming the variable and what it takes before anything runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Any text: a path, a URL, a name, a list.
    Text,
    /// A boolean, read by [`parse_bool`]: [`BOOL_VALUES`].
    Bool,
    /// One of these words, any case (the docs show the main ones, the rest are old spellings).
    Choice(&'static [&'static str]),
    /// A whole number, at least this much.
    Count(u64),
    /// A number of seconds above zero (a fraction allowed).
    Seconds,
    /// A size: a number with an optional unit, `512M`, `4G` (at least 16 MiB).
    Size,
    /// Which languages: `on`, `off` or `only` ([`parse_languages`]).
    Languages,
}

/// What a boolean variable takes, as errors and the docs show it.
pub const BOOL_VALUES: &str = "1|0, true|false, yes|no or on|off (any case)";

/// The one reading of a boolean variable's value: `1`/`true`/`yes`/`on` and `0`/`false`/`no`/`off`,
/// any case; anything else is an error naming the variable and [`BOOL_VALUES`].
pub fn parse_bool(var: &EnvVar, value: &str) -> Result<bool, SettingError> {
    match value.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Ok(true),
        "0" | "false" | "no" | "off" => Ok(false),
        _ => Err(var.bad(value, BOOL_VALUES)),
    }
}

/// A `CELLBOX_PY` or `CELLBOX_JS` value: the language on, off, or the only one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Offer {
    On,
    Off,
    Only,
}

/// What `CELLBOX_PY` and `CELLBOX_JS` take, as errors and the docs show it.
pub const LANGUAGE_VALUES: &str = "on, off (or a boolean: 1|0 for JS, true|false, yes|no) or only";

/// A `CELLBOX_PY` / `CELLBOX_JS` value: `on`, `off` or `only`, with the booleans of
/// [`parse_bool`] for on and off. The old spellings that meant one thing are still read
/// (`mix`/`both`: on; `bash`: Python off; `py`/`python`: Python only); `CELLBOX_PY=1`, which
/// once meant "Python only" and reads as "on", is refused with the two words to choose from.
pub fn parse_languages(var: &EnvVar, value: &str) -> Result<Offer, SettingError> {
    let word = value.trim().to_ascii_lowercase();
    let python = var.name == PY.name;
    match word.as_str() {
        "only" => Ok(Offer::Only),
        "1" if python => Err(var.bad(
            value,
            "on, off or only (`1` is ambiguous: it meant Python only; say `only` for that, or `on` for Python beside JavaScript)",
        )),
        "mix" | "both" if python => Ok(Offer::On),
        "bash" if python => Ok(Offer::Off),
        "py" | "python" if python => Ok(Offer::Only),
        _ => match parse_bool(var, &word) {
            Ok(true) => Ok(Offer::On),
            Ok(false) => Ok(Offer::Off),
            Err(_) => Err(var.bad(value, LANGUAGE_VALUES)),
        },
    }
}

/// Why a text is not a size [`parse_size`] takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SizeError {
    /// No number first.
    NotANumber,
    /// A unit other than k, m, g, t (with or without `b`/`ib`).
    UnknownUnit,
    /// Under 16 MiB: too little for a kernel.
    TooSmall,
}

/// `4G`, `4GiB`, `512M`, `1.5G`, `1048576`: a memory size in bytes, binary units as memory is
/// counted, at least 16 MiB ([`Kind::Size`], and the sandbox's memory limit).
pub fn parse_size(text: &str) -> Result<u64, SizeError> {
    let t = text.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let value: f64 = number.parse().map_err(|_| SizeError::NotANumber)?;
    let scale: u64 = match unit.trim().to_ascii_lowercase().trim_end_matches("ib").trim_end_matches('b') {
        "" => 1,
        "k" => 1 << 10,
        "m" => 1 << 20,
        "g" => 1 << 30,
        "t" => 1 << 40,
        _ => return Err(SizeError::UnknownUnit),
    };
    let bytes = (value * scale as f64) as u64;
    if bytes < (16 << 20) {
        return Err(SizeError::TooSmall);
    }
    Ok(bytes)
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
    /// The command-line flag that sets the same thing (`--python`), if any: the flag is bound to
    /// the variable (clap's `env`), so a flag given wins over the variable, which wins over the
    /// default. The docs' table shows it.
    pub flag: Option<&'static str>,
    /// What it takes, checked when the environment is read ([`Environment`]).
    pub kind: Kind,
}

impl EnvVar {
    /// This variable, set by `flag` too.
    pub const fn with_flag(self, flag: &'static str) -> EnvVar {
        EnvVar { flag: Some(flag), ..self }
    }

    /// This variable, taking values of `kind`.
    pub const fn with_kind(self, kind: Kind) -> EnvVar {
        EnvVar { kind, ..self }
    }

    /// The value this process was started with, trimmed; `None` when the
    /// variable is unset, blank or not UTF-8 (all three mean "not given").
    ///
    /// For what is read deep inside (folders, tracing, tests); settings that change what the
    /// engine does are read once, by the front end, through [`Environment`].
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

    /// A boolean variable's value by [`parse_bool`]: `false` when unset or not a boolean (the
    /// front ends refuse a bad value before anything reads this).
    pub fn is_on(&self) -> bool {
        self.get().is_some_and(|value| parse_bool(self, &value).unwrap_or(false))
    }

    /// The value parsed; `Ok(None)` when not given, an error naming the
    /// variable and what it takes when the value does not parse.
    pub fn parse<T: FromStr>(&self) -> Result<Option<T>, SettingError> {
        match self.get() {
            None => Ok(None),
            Some(value) => value.parse().map(Some).map_err(|_| self.bad(&value, self.value)),
        }
    }

    /// The error for `value`, which this variable does not take.
    pub fn bad(&self, value: &str, expected: &'static str) -> SettingError {
        SettingError { name: self.name, value: value.to_string(), expected }
    }

    /// Whether `value` is one this variable takes ([`Kind`]).
    pub fn check(&self, value: &str) -> Result<(), SettingError> {
        let ok = match self.kind {
            Kind::Text => true,
            Kind::Bool => return parse_bool(self, value).map(drop),
            Kind::Languages => return parse_languages(self, value).map(drop),
            Kind::Choice(words) => words.iter().any(|word| word.eq_ignore_ascii_case(value.trim())),
            Kind::Count(least) => value.trim().parse::<u64>().is_ok_and(|n| n >= least),
            Kind::Seconds => value.trim().parse::<f64>().is_ok_and(|s| s.is_finite() && s > 0.0),
            Kind::Size => parse_size(value).is_ok(),
        };
        if ok { Ok(()) } else { Err(self.bad(value, self.value)) }
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

/// The declared variables as one process was started with them, read once and checked: the
/// front ends make one and hand the values it holds down to the engine, which reads no
/// variable that changes what it does. Blank values are "not given"; values are trimmed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Environment {
    values: BTreeMap<&'static str, String>,
}

impl Environment {
    /// The process's environment; the first value a variable does not take is an error.
    pub fn from_process() -> Result<Environment, SettingError> {
        Environment::from_pairs(ENV_VARS.iter().filter_map(|var| Some((var.name, std::env::var(var.name).ok()?))))
    }

    /// An environment of these pairs (names that are not declared are left out), for tests and
    /// hosts that keep their settings elsewhere; checked as [`Environment::from_process`] is.
    pub fn from_pairs<K: AsRef<str>, V: AsRef<str>>(
        pairs: impl IntoIterator<Item = (K, V)>,
    ) -> Result<Environment, SettingError> {
        let mut values = BTreeMap::new();
        for (name, value) in pairs {
            let (Some(var), value) = (env_var(name.as_ref()), value.as_ref().trim()) else { continue };
            if value.is_empty() {
                continue;
            }
            var.check(value)?;
            values.insert(var.name, value.to_string());
        }
        Ok(Environment { values })
    }

    /// The variable's value, if given.
    pub fn get(&self, var: &EnvVar) -> Option<&str> {
        self.values.get(var.name).map(String::as_str)
    }

    /// The names of the variables given, blank ones left out (they mean "not given").
    pub fn names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.values.keys().copied()
    }

    /// A boolean variable's value ([`parse_bool`]); `None` when not given.
    pub fn bool(&self, var: &EnvVar) -> Result<Option<bool>, SettingError> {
        self.get(var).map(|value| parse_bool(var, value)).transpose()
    }

    /// A `CELLBOX_PY` / `CELLBOX_JS` value ([`parse_languages`]); `None` when not given.
    pub fn languages(&self, var: &EnvVar) -> Result<Option<Offer>, SettingError> {
        self.get(var).map(|value| parse_languages(var, value)).transpose()
    }

    /// The value parsed; `Ok(None)` when not given, an error naming the variable and what it
    /// takes when the value does not parse.
    pub fn parse<T: FromStr>(&self, var: &EnvVar) -> Result<Option<T>, SettingError> {
        self.get(var).map(|value| value.parse().map_err(|_| var.bad(value, var.value))).transpose()
    }
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
        let vars: Vec<_> = ENV_VARS.iter().filter(|var| var.audience == audience).collect();
        // Only the settings have flags: the other tables keep their four columns.
        let flags = vars.iter().any(|var| var.flag.is_some());
        let (flag_head, flag_rule) = if flags { (" flag |", " --- |") } else { ("", "") };
        let _ = write!(
            out,
            "\n**{title}**\n\n| variable |{flag_head} value | default | what it does |\n| --- |{flag_rule} --- | --- | --- |\n"
        );
        for var in vars {
            let default = if var.default.is_empty() { "—" } else { var.default };
            let flag = match (flags, var.flag) {
                (false, _) => String::new(),
                (true, Some(flag)) => format!(" `{flag}` |"),
                (true, None) => " — |".to_string(),
            };
            let value = var.value.replace('|', "\\|");
            let _ = writeln!(out, "| `{}` |{flag} {value} | {default} | {} |", var.name, var.doc);
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
        for dir in ["src", "crates", "runner", "runner-js", "bench", "benches", "tests"] {
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
        assert!(
            missing.is_empty(),
            "declare these in crates/settings/src/vars.rs (dev_vars.rs for the tests' own): {missing:?}"
        );
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
    fn one_boolean_reading_for_every_boolean() {
        for (value, on) in [("1", true), ("TRUE", true), (" yes ", true), ("On", true)] {
            assert_eq!(parse_bool(&PYTHON_SKIP_CHECK, value), Ok(on));
        }
        for value in ["0", "false", "No", "OFF"] {
            assert_eq!(parse_bool(&PYTHON_SKIP_CHECK, value), Ok(false));
        }
        let error = parse_bool(&PYTHON_IPC_TRACE, "maybe").unwrap_err();
        assert_eq!(
            error.to_string(),
            "CELLBOX_PYTHON_IPC_TRACE=\"maybe\" is not a valid value: it takes 1|0, true|false, yes|no or on|off (any case)"
        );
        for var in ENV_VARS.iter().filter(|var| var.kind == Kind::Bool) {
            assert_eq!(var.value, "boolean", "{} shows its values as the docs explain booleans", var.name);
        }
    }

    #[test]
    fn languages_take_on_off_or_only_and_refuse_what_meant_two_things() {
        let py = |value| parse_languages(&PY, value);
        assert_eq!(py("only"), Ok(Offer::Only));
        assert_eq!(py("on"), Ok(Offer::On));
        assert_eq!(py("mix"), Ok(Offer::On), "an old spelling that meant one thing is still read");
        assert_eq!(py("0"), Ok(Offer::Off), "`0` always meant Python off");
        assert_eq!(py("bash"), Ok(Offer::Off));
        assert_eq!(py("python"), Ok(Offer::Only));
        let error = py("1").unwrap_err();
        assert!(error.to_string().contains("CELLBOX_PY=\"1\"") && error.to_string().contains("only"), "{error}");
        assert_eq!(parse_languages(&JS, "1"), Ok(Offer::On), "CELLBOX_JS=1 always meant on");
        assert_eq!(parse_languages(&JS, "ONLY"), Ok(Offer::Only));
        assert!(parse_languages(&JS, "mix").is_err(), "mix was never a CELLBOX_JS value");
    }

    #[test]
    fn the_environment_is_read_once_and_checked() {
        let env = Environment::from_pairs([
            ("CELLBOX_BACKEND", " Gateway "),
            ("CELLBOX_PYTHON", ""),
            ("PATH", "/bin"),
            ("CELLBOX_CHECKPOINTS", "3"),
        ])
        .unwrap();
        assert_eq!(env.get(&BACKEND), Some("Gateway"));
        assert_eq!(env.get(&PYTHON), None, "blank is not given");
        assert_eq!(env.parse::<usize>(&CHECKPOINTS), Ok(Some(3)));
        assert_eq!(env.names().collect::<Vec<_>>(), ["CELLBOX_BACKEND", "CELLBOX_CHECKPOINTS"]);
        let bad = |name: &str, value: &str| Environment::from_pairs([(name, value)]).unwrap_err().to_string();
        assert_eq!(
            bad("CELLBOX_BACKEND", "docker"),
            "CELLBOX_BACKEND=\"docker\" is not a valid value: it takes process|gateway"
        );
        assert!(bad("CELLBOX_MAX_PROCESSES", "4").contains("CELLBOX_MAX_PROCESSES"));
        assert!(bad("CELLBOX_MEMORY_LIMIT", "lots").contains("size"));
        assert!(bad("CELLBOX_GATEWAY_STARTUP_TIMEOUT", "-1").contains("seconds"));
        assert!(bad("CELLBOX_PYTHON_SKIP_CHECK", "sure").contains("yes|no"));
        assert!(Environment::from_pairs([("CELLBOX_MEMORY_LIMIT", "1.5G"), ("CELLBOX_NETWORK", "LOCALHOST")]).is_ok());
    }

    #[test]
    fn flags_are_declared_as_data_and_shown_in_the_table() {
        assert_eq!(PYTHON.flag, Some("--python"));
        assert_eq!(SERVE_TOKENS.flag, Some("--tokens"));
        for var in ENV_VARS {
            assert!(!var.doc.contains("(as `--"), "{}: the flag is the `flag` field, not prose", var.name);
            assert!(var.flag.is_none_or(|flag| flag.starts_with("--")), "{var:?}");
        }
        assert!(markdown_table().contains("| `CELLBOX_PYTHON` | `--python` |"), "{}", markdown_table());
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
