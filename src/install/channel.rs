//! Which channel put this binary here (npx, npm, uvx, uv tool, pipx, pip,
//! cargo, a source build), told from where the binary lives, and how an agent
//! should start it: the installed binary by its path where that path lasts,
//! the channel's own runner (`npx -y cellbox`, `uvx cellbox`) where the
//! binary sits in a cache that may be emptied at any time.
//!
//! The rules are an ordered list, each testable alone; the first that
//! matches wins.

use std::path::{Component, Path};

use serde::Serialize;

/// An install channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Channel {
    /// `npx cellbox`: npm's run-once cache (`…/_npx/…`).
    Npx,
    /// `npm install cellbox` (global or a project's `node_modules`).
    Npm,
    /// `uvx cellbox`: uv's cache.
    Uvx,
    /// `uv tool install cellbox`.
    UvTool,
    /// `pipx install cellbox`.
    Pipx,
    /// `pip install cellbox` into a virtual environment.
    Pip,
    /// `cargo install cellbox` (or `--path .`).
    Cargo,
    /// `cargo build` in a clone (`target/debug`, `target/release`).
    Source,
    /// None of the above: a binary copied somewhere by hand.
    Binary,
}

impl Channel {
    /// The channel as the user would name it.
    pub fn title(self) -> &'static str {
        match self {
            Channel::Npx => "npx",
            Channel::Npm => "npm",
            Channel::Uvx => "uvx",
            Channel::UvTool => "uv tool",
            Channel::Pipx => "pipx",
            Channel::Pip => "pip (a virtual environment)",
            Channel::Cargo => "cargo install",
            Channel::Source => "a source build",
            Channel::Binary => "a standalone binary",
        }
    }
}

/// What was found: the channel, and the command an agent should run (before `mcp`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Installed {
    pub channel: Channel,
    pub command: String,
    pub args: Vec<String>,
}

/// One rule: does this binary path belong to the channel?
type Rule = (Channel, fn(&Path) -> bool);

/// The rules, most specific first (an npx cache folder also holds `node_modules`).
const RULES: &[Rule] = &[
    (Channel::Npx, in_npx_cache),
    (Channel::Npm, in_node_modules),
    (Channel::Uvx, in_uv_cache),
    (Channel::UvTool, in_uv_tools),
    (Channel::Pipx, in_pipx_venv),
    (Channel::Cargo, in_cargo_root),
    (Channel::Pip, in_python_venv),
    (Channel::Source, in_cargo_target),
];

fn has_component(path: &Path, name: &str) -> bool {
    path.components().any(|c| matches!(c, Component::Normal(part) if part == name))
}

/// Two components in a row, e.g. `uv/tools`.
fn has_pair(path: &Path, first: &str, second: &str) -> bool {
    let parts: Vec<_> = path.components().collect();
    parts.windows(2).any(
        |pair| matches!((pair[0], pair[1]), (Component::Normal(a), Component::Normal(b)) if a == first && b == second),
    )
}

fn in_npx_cache(exe: &Path) -> bool {
    has_component(exe, "_npx")
}

fn in_node_modules(exe: &Path) -> bool {
    has_component(exe, "node_modules")
}

fn in_uv_cache(exe: &Path) -> bool {
    let text = exe.to_string_lossy();
    text.contains("/uv/archive-v") || text.contains("/.cache/uv/") || has_pair(exe, "uv", "cache")
}

fn in_uv_tools(exe: &Path) -> bool {
    has_pair(exe, "uv", "tools")
}

fn in_pipx_venv(exe: &Path) -> bool {
    has_pair(exe, "pipx", "venvs")
}

/// `cargo install` writes its records (`.crates.toml`, `.crates2.json`) in the root above `bin/`.
fn in_cargo_root(exe: &Path) -> bool {
    let Some(bin) = exe.parent() else { return false };
    let Some(root) = bin.parent() else { return false };
    bin.file_name().is_some_and(|name| name == "bin")
        && (root.join(".crates2.json").is_file() || root.join(".crates.toml").is_file())
}

/// A virtual environment has `pyvenv.cfg` beside its `bin/` (`Scripts\` on Windows).
fn in_python_venv(exe: &Path) -> bool {
    exe.parent().and_then(Path::parent).is_some_and(|root| root.join("pyvenv.cfg").is_file())
}

fn in_cargo_target(exe: &Path) -> bool {
    let Some(profile) = exe.parent() else { return false };
    let is_profile = profile.file_name().is_some_and(|name| name == "debug" || name == "release");
    is_profile && profile.parent().and_then(Path::file_name).is_some_and(|name| name == "target")
}

/// The channel of the binary at `exe`, and how an agent should start it.
pub fn detect(exe: &Path) -> Installed {
    let channel = RULES.iter().find(|(_, rule)| rule(exe)).map_or(Channel::Binary, |(channel, _)| *channel);
    let (command, args) = match channel {
        // Both caches may be emptied at any time: the runner fetches the binary again.
        Channel::Npx => ("npx".to_string(), vec!["-y".to_string(), "cellbox".to_string()]),
        Channel::Uvx => ("uvx".to_string(), vec!["cellbox".to_string()]),
        _ => (exe.to_string_lossy().into_owned(), Vec::new()),
    };
    Installed { channel, command, args }
}

/// [`detect`] for the running binary.
pub fn current() -> std::io::Result<Installed> {
    Ok(detect(&std::env::current_exe()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn channel(path: &str) -> Channel {
        detect(Path::new(path)).channel
    }

    #[test]
    fn caches_are_started_through_their_runner() {
        let npx = detect(Path::new("/home/u/.npm/_npx/1a2b/node_modules/@cellbox/linux-x64/bin/cellbox"));
        assert_eq!(
            (npx.channel, npx.command.as_str(), npx.args),
            (Channel::Npx, "npx", vec!["-y".into(), "cellbox".into()])
        );
        let uvx = detect(Path::new("/home/u/.cache/uv/archive-v0/abc/bin/cellbox"));
        assert_eq!((uvx.channel, uvx.command.as_str(), uvx.args), (Channel::Uvx, "uvx", vec!["cellbox".into()]));
        assert_eq!(channel("/tmp/x/uv/cache/archive-v0/abc/bin/cellbox"), Channel::Uvx);
    }

    #[test]
    fn lasting_installs_are_started_by_path() {
        let exe = "/usr/lib/node_modules/cellbox/node_modules/@cellbox/linux-x64/bin/cellbox";
        let npm = detect(Path::new(exe));
        assert_eq!((npm.channel, npm.command.as_str(), npm.args.len()), (Channel::Npm, exe, 0));
        assert_eq!(channel("/home/u/.local/share/uv/tools/cellbox/bin/cellbox"), Channel::UvTool);
        assert_eq!(channel("/home/u/.local/share/pipx/venvs/cellbox/bin/cellbox"), Channel::Pipx);
        assert_eq!(channel("/home/u/src/cellbox/target/release/cellbox"), Channel::Source);
        assert_eq!(channel("/opt/tools/cellbox"), Channel::Binary);
    }

    #[test]
    fn cargo_and_venv_installs_are_told_by_their_records() {
        let dir = tempfile::tempdir().unwrap();
        let cargo_root = dir.path().join("cargo");
        std::fs::create_dir_all(cargo_root.join("bin")).unwrap();
        std::fs::write(cargo_root.join(".crates2.json"), "{}").unwrap();
        assert_eq!(detect(&cargo_root.join("bin/cellbox")).channel, Channel::Cargo);
        let venv = dir.path().join("venv");
        std::fs::create_dir_all(venv.join("bin")).unwrap();
        std::fs::write(venv.join("pyvenv.cfg"), "home = /usr/bin\n").unwrap();
        assert_eq!(detect(&venv.join("bin/cellbox")).channel, Channel::Pip);
        assert_eq!(detect(&dir.path().join("bin/cellbox")).channel, Channel::Binary);
    }
}
