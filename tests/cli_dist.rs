//! The distribution's small commands: `--version` with the git revision,
//! shell completions and the man page, generated from the CLI definition.

use std::io::Write;
use std::process::{Command, Stdio};

fn evalkit(args: &[&str]) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_evalkit")).args(args).output().unwrap();
    assert!(output.status.success(), "{args:?}: {output:?}");
    String::from_utf8(output.stdout).unwrap()
}

#[test]
fn version_names_the_revision() {
    let version = evalkit(&["--version"]);
    let revision = version.trim().strip_prefix(concat!("evalkit ", env!("CARGO_PKG_VERSION"), " (")).unwrap();
    let revision = revision.strip_suffix(')').unwrap();
    let from_checkout = revision.len() == 12 && revision.chars().all(|c| c.is_ascii_hexdigit());
    assert!(from_checkout || revision == "unknown", "{version}");
}

#[test]
fn bash_completions_parse_and_know_every_command() {
    let script = evalkit(&["completions", "bash"]);
    for command in ["install", "uninstall", "doctor", "completions", "man", "mcp", "run"] {
        assert!(script.contains(command), "{command} missing");
    }
    let mut bash = Command::new("bash").arg("-n").stdin(Stdio::piped()).spawn().unwrap();
    bash.stdin.take().unwrap().write_all(script.as_bytes()).unwrap();
    assert!(bash.wait().unwrap().success(), "bash -n rejected the completion script");
    assert!(evalkit(&["completions", "zsh"]).starts_with("#compdef evalkit"));
    assert!(evalkit(&["completions", "fish"]).contains("complete -c evalkit"));
}

#[test]
fn the_man_page_covers_every_subcommand() {
    let page = evalkit(&["man"]);
    assert!(page.contains(".TH evalkit 1"), "{}", &page[..200]);
    for command in ["install", "doctor", "mcp", "completions"] {
        assert!(page.contains(&format!(".TH evalkit-{command} 1")), "{command} missing");
    }
    assert!(page.contains("\\-\\-dry\\-run"), "options are listed");
}
