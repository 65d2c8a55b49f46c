//! Every `CELLBOX_*` environment variable, declared once: its name, the kind
//! of value it takes, its default and a one-line description.
//!
//! The configuration page's table (`cellbox docs env-vars`) and the docs check
//! are generated from [`ENV_VARS`], and a test fails when the code names a
//! `CELLBOX_` variable this list does not declare, so the docs cannot drift
//! from what the binary reads.

use std::fmt::Write as _;

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

const fn user(name: &'static str, value: &'static str, default: &'static str, doc: &'static str) -> EnvVar {
    EnvVar { name, value, default, doc, audience: Audience::User }
}

const fn set_by_cellbox(name: &'static str, value: &'static str, doc: &'static str) -> EnvVar {
    EnvVar { name, value, default: "", doc, audience: Audience::SetByCellbox }
}

const fn development(name: &'static str, value: &'static str, default: &'static str, doc: &'static str) -> EnvVar {
    EnvVar { name, value, default, doc, audience: Audience::Development }
}

/// Every variable, grouped by topic in the order the docs show them.
pub const ENV_VARS: &[EnvVar] = &[
    // Interpreters and languages.
    user(
        "CELLBOX_PYTHON",
        "path or command",
        "discovered",
        "The Python interpreter for kernels (as `--python`); skips discovery.",
    ),
    user(
        "CELLBOX_PYTHON_SKIP_CHECK",
        "1",
        "",
        "Skip the interpreter probe: use the first existing candidate as it is.",
    ),
    user(
        "CELLBOX_NODE",
        "path or command",
        "`node` on PATH",
        "The Node.js that runs JavaScript and TypeScript cells (as `--node`).",
    ),
    user(
        "CELLBOX_PY",
        "0|bash, 1|py, mix|both, true|false",
        "mix",
        "Which languages are offered: JavaScript only, Python only, or both; `true`/`false` turn Python alone on or off.",
    ),
    user("CELLBOX_JS", "0|1|false|true", "1", "Turn JavaScript cells off or on (applied after `CELLBOX_PY`)."),
    user(
        "CELLBOX_PRELOAD",
        "module,…",
        "",
        "Modules Python kernels start with already imported (as `--preload`), through a fork server (Linux, process kernels).",
    ),
    user(
        "CELLBOX_CHECK",
        "off|syntax|lint",
        "off",
        "Check each call's cells before running any (as `--check`; the eval tool's `check` overrides it): `syntax` runs none if a cell does not parse, `lint` also adds `ruff check` findings on Python cells as notes.",
    ),
    // Where kernels run.
    user(
        "CELLBOX_BACKEND",
        "process|gateway",
        "process",
        "Where Python kernels run: runner processes, or a Jupyter gateway (as `--backend`).",
    ),
    user(
        "CELLBOX_GATEWAY_URL",
        "URL",
        "",
        "An external Jupyter Kernel or Enterprise Gateway; setting it selects the gateway backend.",
    ),
    user(
        "CELLBOX_GATEWAY_TOKEN",
        "token",
        "",
        "The gateway's token, sent as `Authorization: token …` (never printed).",
    ),
    user("CELLBOX_GATEWAY_KERNEL", "kernelspec name", "python3", "The kernelspec started on the gateway."),
    user(
        "CELLBOX_GATEWAY_USERNAME",
        "name",
        "the local user",
        "`KERNEL_USERNAME` sent to the gateway (`root` is sent as `cellbox`).",
    ),
    user(
        "CELLBOX_GATEWAY_STARTUP_TIMEOUT",
        "seconds",
        "30",
        "How long a gateway kernel may take to start, from `POST /api/kernels` to the end of its setup.",
    ),
    user(
        "CELLBOX_GATEWAY_DIR",
        "path",
        "`~/.cellbox/gateway`",
        "The shared local gateway's folder (its lock, metadata and log).",
    ),
    // The sandbox.
    user(
        "CELLBOX_SANDBOX",
        "off|workspace-write|read-only",
        "off",
        "What kernels may read and write (as `--sandbox`).",
    ),
    user("CELLBOX_NETWORK", "on|off|localhost", "on", "The kernels' network (as `--network`)."),
    user(
        "CELLBOX_ALLOW_WRITE",
        "paths, `:`-separated",
        "",
        "More folders kernels may write in `workspace-write` mode (as `--allow-write`).",
    ),
    user(
        "CELLBOX_DENY_READ",
        "paths, `:`-separated",
        "",
        "More paths kernels may not read, besides the secret locations (as `--deny-read`).",
    ),
    user(
        "CELLBOX_MEMORY_LIMIT",
        "size, e.g. 4G",
        "",
        "Memory for each kernel and everything it starts (as `--memory-limit`).",
    ),
    user(
        "CELLBOX_MAX_PROCESSES",
        "count",
        "",
        "Processes and threads for each kernel and everything it starts (as `--max-processes`).",
    ),
    // Folders.
    user(
        "CELLBOX_CACHE_DIR",
        "path",
        "`$XDG_CACHE_HOME/cellbox`",
        "Where the runner's files and probe answers are kept.",
    ),
    user(
        "CELLBOX_ARTIFACTS_DIR",
        "path",
        "`$XDG_CACHE_HOME/cellbox/artifacts`",
        "Where full outputs (`artifact://…`) are kept.",
    ),
    user(
        "CELLBOX_MODULES_DIR",
        "path",
        "`~/.cellbox/modules`",
        "The user's extension modules, importable in every kernel.",
    ),
    // The host bridge.
    user(
        "CELLBOX_LLM_BASE_URL",
        "URL",
        "",
        "The OpenAI-compatible endpoint `completion()` calls (command line; host only, never in the kernel).",
    ),
    user("CELLBOX_LLM_API_KEY", "key", "", "That endpoint's key (host only, never in the kernel)."),
    user("CELLBOX_LLM_MODEL", "model name", "", "The model `completion()` uses when the cell names none."),
    user(
        "CELLBOX_AGENT_COMMAND",
        "command line",
        "",
        "The command `agent()` runs, e.g. `claude -p --output-format json` (`{prompt}` passes the prompt as an argument).",
    ),
    user("CELLBOX_BRIDGE_MAX_CALLS", "count", "256", "Bridge calls one cell may make."),
    user("CELLBOX_BRIDGE_CONCURRENCY", "count", "8", "Bridge calls served at once."),
    user("CELLBOX_BRIDGE_CALL_TIMEOUT", "seconds", "600", "How long one bridge call may take."),
    user(
        "CELLBOX_BRIDGE_MAX_DEPTH",
        "count",
        "2",
        "How deep bridges may nest (an agent running cellbox running an agent…).",
    ),
    // The terminal and logs.
    user("CELLBOX_IMAGES", "kitty|iterm|sixel|none", "detected", "How the terminal renderer shows images."),
    user("CELLBOX_LOG", "filter", "warn", "The log filter for stderr, e.g. `debug` (`RUST_LOG` also works)."),
    user(
        "CELLBOX_PYTHON_IPC_TRACE",
        "1",
        "",
        "Log every runner protocol frame both ways to stderr (environment values redacted).",
    ),
    // Set by cellbox for the processes it starts.
    set_by_cellbox("CELLBOX_BRIDGE_DEPTH", "count", "This host's bridge depth, set for agent commands (0 at the top)."),
    set_by_cellbox("CELLBOX_AGENT_KIND", "name", "The agent an `agent()` call asked for, set for the agent command."),
    set_by_cellbox(
        "CELLBOX_AGENT_MODEL",
        "model name",
        "The model an `agent()` call asked for, set for the agent command.",
    ),
    set_by_cellbox("CELLBOX_MEMORY_RLIMIT", "size", "The kernel's memory limit, set so a `MemoryError` can name it."),
    // Build.
    EnvVar {
        name: "CELLBOX_GIT_REVISION",
        value: "revision",
        default: "from git, or the packaged crate's `.cargo_vcs_info.json`",
        doc: "The revision `--version` and `cellbox doctor` show.",
        audience: Audience::Build,
    },
    // Tests and the benchmark.
    development("CELLBOX_TEST_PYTHON", "path", "`python3`", "The interpreter the test suite runs kernels with."),
    development("CELLBOX_TEST_NODE", "path", "`node` on PATH", "The Node.js the JavaScript tests use."),
    development(
        "CELLBOX_TEST_BASE_PYTHON",
        "path",
        "`python3`",
        "`scripts/test`: the Python `.venv-test` is made from.",
    ),
    development(
        "CELLBOX_TEST_EG_BASE_PYTHON",
        "path",
        "as above",
        "`scripts/test`: the Python `.venv-eg` is made from.",
    ),
    development(
        "CELLBOX_TEST_EG_PYTHON",
        "path",
        "`.venv-eg/bin/python`",
        "The Enterprise Gateway interpreter the gateway tests use.",
    ),
    development("CELLBOX_TEST_VENV", "path", "`.venv-test`", "The venv the packaging test takes its tools from."),
    development(
        "CELLBOX_GATEWAY_NOFILE_FOR_TEST",
        "count",
        "",
        "An open-file limit for the shared local gateway (the EMFILE test).",
    ),
    development("CELLBOX_CHAOS_SECS", "seconds", "20", "How long the chaos test runs."),
    development("CELLBOX_CHAOS_SEED", "number", "random", "The chaos test's seed, to replay a run."),
    development("CELLBOX_FUZZ_CASES", "count", "200 (Rust), 100 (Python)", "Examples per fuzzing property."),
    development("CELLBOX_PARITY_FULL", "1", "", "Run the whole notebook-parity corpus instead of its short form."),
    development("CELLBOX_PARITY_ONLY", "name,…", "", "Run only the named parity notebooks."),
    development(
        "CELLBOX_PARITY_PYTHON",
        "path",
        "the test Python",
        "The interpreter the parity harness runs ipykernel with.",
    ),
    development("CELLBOX_BINARY", "path", "the built binary", "The cellbox binary the benchmark drives."),
    development("CELLBOX_BENCH_OUT", "path", "`bench/results`", "Where the benchmark writes its results."),
    development(
        "CELLBOX_BENCH_JUPYTER_PYTHON",
        "path",
        "`bench/.venv`",
        "The interpreter of the benchmark's Jupyter baselines.",
    ),
];

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

    #[test]
    fn every_variable_the_code_reads_is_declared() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut paths = Vec::new();
        for dir in ["src", "runner", "runner-js", "bench", "benches", "tests"] {
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
        assert!(missing.is_empty(), "declare these in src/settings.rs: {missing:?}");
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
        let page = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/configuration.md");
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
