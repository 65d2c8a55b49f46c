//! `cellbox install` / `uninstall` for every client, on fixture homes
//! (HOME is a temporary folder holding the client's file with other settings).

use crate::common;

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

/// Each client, its file under HOME, and the key its servers live under (`None`: TOML).
const CLIENTS: &[(&str, &str, Option<&str>)] = &[
    ("claude", ".claude.json", Some("mcpServers")),
    ("claude-desktop", ".config/Claude/claude_desktop_config.json", Some("mcpServers")),
    ("codex", ".codex/config.toml", None),
    ("cursor", ".cursor/mcp.json", Some("mcpServers")),
    ("vscode", ".config/Code/User/mcp.json", Some("servers")),
    ("gemini", ".gemini/settings.json", Some("mcpServers")),
    ("windsurf", ".codeium/windsurf/mcp_config.json", Some("mcpServers")),
];

fn cellbox(home: &Path, args: &[&str]) -> Output {
    common::binary::bare(args)
        .env("HOME", home)
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("CODEX_HOME")
        .env_remove("CLAUDE_CONFIG_DIR")
        .output()
        .unwrap()
}

fn ok(output: Output) -> String {
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(output.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    stdout
}

fn json(text: &str) -> Value {
    jsonc_parser::parse_to_serde_value::<Option<Value>>(text, &Default::default()).unwrap().unwrap()
}

/// What a user had before: other settings and another server (with a comment where JSONC allows one).
fn existing(key: Option<&str>) -> String {
    match key {
        Some(key) => format!(
            "{{\n  \"theme\": \"dark\",\n  // keep me\n  \"{key}\": {{\n    \"other\": {{ \"command\": \"other-server\" }}\n  }},\n  \"zz_last\": 1\n}}\n"
        ),
        None => "# my codex settings\nmodel = \"o3\"\n\n[mcp_servers.other]\ncommand = \"other-server\"\n".into(),
    }
}

/// The cellbox entry's (command, args), and whether the other server is still there.
fn entry(text: &str, key: Option<&str>) -> (Option<(String, Vec<String>)>, bool) {
    let servers = match key {
        Some(key) => json(text)[key].clone(),
        None => {
            let doc: toml_edit::DocumentMut = text.parse().unwrap();
            let mut map = serde_json::Map::new();
            if let Some(table) = doc.get("mcp_servers").and_then(|t| t.as_table_like()) {
                for (name, item) in table.iter() {
                    let command = item.get("command").and_then(|c| c.as_str()).unwrap_or_default();
                    let args: Vec<Value> = item
                        .get("args")
                        .and_then(|a| a.as_array())
                        .map(|a| a.iter().map(|v| Value::from(v.as_str().unwrap())).collect())
                        .unwrap_or_default();
                    map.insert(name.to_string(), serde_json::json!({"command": command, "args": args}));
                }
            }
            Value::Object(map)
        }
    };
    let cellbox = servers.get("cellbox").map(|e| {
        let args = e["args"].as_array().unwrap().iter().map(|a| a.as_str().unwrap().to_string()).collect();
        (e["command"].as_str().unwrap().to_string(), args)
    });
    (cellbox, servers.get("other").is_some())
}

#[test]
fn install_is_idempotent_keeps_other_settings_and_uninstall_reverts_it_for_every_client() {
    for &(client, file, key) in CLIENTS {
        let home = tempfile::tempdir().unwrap();
        let path = home.path().join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let before = existing(key);
        std::fs::write(&path, &before).unwrap();

        let out = ok(cellbox(
            home.path(),
            &["install", "--client", client, "--command", "/opt/cellbox", "--args", "--cwd", "/proj"],
        ));
        assert!(out.contains("previous file kept"), "{client}: {out}");
        let after = std::fs::read_to_string(&path).unwrap();
        let (installed, other_kept) = entry(&after, key);
        assert_eq!(
            installed,
            Some(("/opt/cellbox".into(), vec!["mcp".into(), "--cwd".into(), "/proj".into()])),
            "{client}: {after}"
        );
        assert!(other_kept, "{client}: {after}");
        let kept = if key.is_some() {
            ["\"theme\": \"dark\"", "// keep me"]
        } else {
            ["# my codex settings", "model = \"o3\""]
        };
        assert!(kept.iter().all(|k| after.contains(k)), "{client}: {after}");
        if let Some(key) = key {
            assert!(after.find("theme").unwrap() < after.find("zz_last").unwrap(), "{client}: key order kept: {after}");
            assert_eq!(
                json(&after)[key]["cellbox"].get("type").is_some(),
                matches!(client, "claude" | "vscode"),
                "{client}"
            );
        }
        let backup = home.path().join(format!("{file}.cellbox-backup"));
        assert_eq!(std::fs::read_to_string(&backup).unwrap(), before, "{client}");

        // Again: nothing to change, nothing written.
        let out = ok(cellbox(
            home.path(),
            &["install", "--client", client, "--command", "/opt/cellbox", "--args", "--cwd", "/proj"],
        ));
        assert!(out.contains("nothing to change"), "{client}: {out}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), after, "{client}");

        let out = ok(cellbox(home.path(), &["uninstall", "--client", client]));
        assert!(out.contains("updated"), "{client}: {out}");
        let reverted = std::fs::read_to_string(&path).unwrap();
        let (installed, other_kept) = entry(&reverted, key);
        assert!(installed.is_none() && other_kept, "{client}: {reverted}");
        if key.is_none() {
            assert_eq!(reverted, before, "codex: uninstall gives back the file as it was");
        }
        let out = ok(cellbox(home.path(), &["uninstall", "--client", client]));
        assert!(out.contains("nothing to change"), "{client}: {out}");
    }
}

#[test]
fn a_missing_file_is_created_and_dry_run_writes_nothing() {
    let home = tempfile::tempdir().unwrap();
    let all = CLIENTS.iter().map(|c| c.0).collect::<Vec<_>>().join(",");
    let out = ok(cellbox(home.path(), &["install", "--client", &all, "--command", "/opt/cellbox", "--dry-run"]));
    for &(client, file, _) in CLIENTS {
        assert!(!home.path().join(file).exists(), "{client}: dry run wrote {file}");
        assert!(out.contains(&format!("+++ {}", home.path().join(file).display())), "{client}: {out}");
    }
    assert!(out.contains("+[mcp_servers.cellbox]") && out.contains("+    \"cellbox\": {"), "{out}");
    ok(cellbox(home.path(), &["install", "--client", &all, "--command", "/opt/cellbox"]));
    for &(client, file, key) in CLIENTS {
        let text = std::fs::read_to_string(home.path().join(file)).unwrap();
        assert_eq!(entry(&text, key).0, Some(("/opt/cellbox".into(), vec!["mcp".into()])), "{client}: {text}");
        assert!(!home.path().join(format!("{file}.cellbox-backup")).exists(), "{client}: nothing to back up");
    }
}

#[test]
fn settings_that_move_the_files_are_followed() {
    let home = tempfile::tempdir().unwrap();
    let codex_home = home.path().join("elsewhere");
    let output = common::binary::bare(["install", "--client", "codex,vscode", "--command", "/opt/cellbox"])
        .env("HOME", home.path())
        .env("CODEX_HOME", &codex_home)
        .env("XDG_CONFIG_HOME", home.path().join("xdg"))
        .output()
        .unwrap();
    ok(output);
    assert!(codex_home.join("config.toml").is_file());
    assert!(home.path().join("xdg/Code/User/mcp.json").is_file());
}

#[test]
fn bad_input_changes_no_file() {
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join(".cursor")).unwrap();
    std::fs::write(home.path().join(".cursor/mcp.json"), "{ \"mcpServers\": ").unwrap();
    // An unknown client, or one broken file, and no file is written, the good ones included.
    let output = cellbox(home.path(), &["install", "--client", "codex,nope", "--command", "/x"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("choose one of: claude"));
    let output = cellbox(home.path(), &["install", "--client", "codex,cursor", "--command", "/x"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("is not valid JSON"), "{output:?}");
    assert!(!home.path().join(".codex/config.toml").exists());
    assert_eq!(std::fs::read_to_string(home.path().join(".cursor/mcp.json")).unwrap(), "{ \"mcpServers\": ");
}

/// The binary copied to where a channel puts it registers itself the way that channel starts it,
/// and `doctor --json` names the channel.
#[test]
fn each_channel_registers_the_command_it_was_installed_with() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir(&home).unwrap();
    let cargo_root = dir.path().join("cargo");
    std::fs::create_dir(&cargo_root).unwrap();
    std::fs::write(cargo_root.join(".crates2.json"), "{}").unwrap();
    // (where the channel puts the binary, the channel, the command a client runs; None: the binary's path)
    let cases: [(&str, &str, Option<&[&str]>); 5] = [
        ("npm/_npx/0a1b/node_modules/@cellbox/linux-x64/bin", "npx", Some(&["npx", "-y", "cellbox", "mcp"])),
        ("uv/archive-v0/xyz/bin", "uvx", Some(&["uvx", "cellbox", "mcp"])),
        ("lib/node_modules/cellbox/node_modules/@cellbox/linux-x64/bin", "npm", None),
        ("pipx/venvs/cellbox/bin", "pipx", None),
        ("cargo/bin", "cargo", None),
    ];
    for (folder, channel, launch) in cases {
        let bin = dir.path().join(folder);
        std::fs::create_dir_all(&bin).unwrap();
        let exe = bin.join("cellbox");
        // A copy, not a link: the binary finds its own path through /proc/self/exe, which resolves links.
        // The copy is written by a `cp` child: written here, its open fd would be inherited by whatever
        // another test forks meanwhile, and exec would fail with "Text file busy" until that child execs.
        let copied = Command::new("cp").arg(common::binary::BIN).arg(&exe).status().unwrap();
        assert!(copied.success(), "cp {} failed", common::binary::BIN);
        let run = |args: &[&str]| {
            Command::new(&exe).args(args).env("HOME", &home).env_remove("XDG_CONFIG_HOME").output().unwrap()
        };
        let written = ok(run(&["install", "--client", "cursor"]));
        assert!(written.contains("created"), "{written}");
        let config = std::fs::read_to_string(home.join(".cursor/mcp.json")).unwrap();
        let (command, args) = entry(&config, Some("mcpServers")).0.expect("an entry");
        let registered: Vec<String> = std::iter::once(command).chain(args).collect();
        let expected: Vec<String> = match launch {
            Some(launch) => launch.iter().map(|part| part.to_string()).collect(),
            None => vec![exe.to_string_lossy().into_owned(), "mcp".into()],
        };
        assert_eq!(registered, expected, "{channel}");
        std::fs::remove_file(home.join(".cursor/mcp.json")).unwrap();
        let report: Value = serde_json::from_slice(&run(&["doctor", "--json"]).stdout).unwrap();
        assert_eq!(report["installed"]["channel"], channel, "{}", report["installed"]);
    }
}
