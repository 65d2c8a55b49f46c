//! The distribution's small commands: `--version` with the git revision,
//! shell completions and the man page, generated from the CLI definition.

use crate::common;

use std::io::Write;
use std::process::{Command, Stdio};

fn cellbox(args: &[&str]) -> String {
    let output = common::binary::bare(args).output().unwrap();
    assert!(output.status.success(), "{args:?}: {output:?}");
    String::from_utf8(output.stdout).unwrap()
}

#[test]
fn version_names_the_revision() {
    let version = cellbox(&["--version"]);
    let revision = version.trim().strip_prefix(concat!("cellbox ", env!("CARGO_PKG_VERSION"), " (")).unwrap();
    let revision = revision.strip_suffix(')').unwrap();
    let from_checkout = revision.len() == 12 && revision.chars().all(|c| c.is_ascii_hexdigit());
    assert!(from_checkout || revision == "unknown", "{version}");
}

#[test]
fn bash_completions_parse_and_know_every_command() {
    let script = cellbox(&["completions", "bash"]);
    for command in ["install", "uninstall", "doctor", "completions", "man", "mcp", "run"] {
        assert!(script.contains(command), "{command} missing");
    }
    let mut bash = Command::new("bash").arg("-n").stdin(Stdio::piped()).spawn().unwrap();
    bash.stdin.take().unwrap().write_all(script.as_bytes()).unwrap();
    assert!(bash.wait().unwrap().success(), "bash -n rejected the completion script");
    assert!(cellbox(&["completions", "zsh"]).starts_with("#compdef cellbox"));
    assert!(cellbox(&["completions", "fish"]).contains("complete -c cellbox"));
}

#[test]
fn the_man_page_covers_every_subcommand() {
    let page = cellbox(&["man"]);
    assert!(page.contains(".TH cellbox 1"), "{}", &page[..200]);
    for command in ["install", "doctor", "mcp", "completions"] {
        assert!(page.contains(&format!(".TH cellbox-{command} 1")), "{command} missing");
    }
    assert!(page.contains("\\-\\-dry\\-run"), "options are listed");
}
