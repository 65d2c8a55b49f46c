//! The agents cellbox can register itself with: where each keeps its MCP
//! servers and in which shape. Each entry cites the client's documentation.

use std::path::PathBuf;

use super::{Home, InstallError};

/// How a client's file lists its servers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// JSON (comments allowed) with the servers under `key`; `stdio_type`
    /// adds `"type": "stdio"` to the entry, for clients that ask for it.
    Json { key: &'static str, stdio_type: bool },
    /// TOML with a `[mcp_servers.<name>]` table (Codex).
    Toml,
}

/// One agent's MCP configuration.
#[derive(Debug, Clone, Copy)]
pub struct Client {
    /// The name given to `--client`.
    pub name: &'static str,
    /// What people call it.
    pub title: &'static str,
    pub format: Format,
    /// The user-level file, from the home folder and environment.
    pub config: fn(&Home) -> PathBuf,
}

/// Every supported client.
pub const CLIENTS: &[Client] = &[
    // Claude Code, "Connect Claude Code to tools via MCP" (docs.anthropic.com/en/docs/claude-code/mcp):
    // user-scope servers live in ~/.claude.json under "mcpServers", each {"type": "stdio", "command", "args", "env"};
    // CLAUDE_CONFIG_DIR moves the file ("Claude Code settings", environment variables).
    Client {
        name: "claude",
        title: "Claude Code",
        format: Format::Json { key: "mcpServers", stdio_type: true },
        config: claude,
    },
    // Claude Desktop, "Connect to local MCP servers" (modelcontextprotocol.io/quickstart/user):
    // claude_desktop_config.json in ~/Library/Application Support/Claude (macOS); on Linux the
    // community builds read ~/.config/Claude. Servers under "mcpServers" as {"command", "args"}.
    Client {
        name: "claude-desktop",
        title: "Claude Desktop",
        format: Format::Json { key: "mcpServers", stdio_type: false },
        config: claude_desktop,
    },
    // Codex, "Configuration: MCP servers" (github.com/openai/codex/blob/main/docs/config.md#mcp_servers and
    // developers.openai.com/codex/mcp): $CODEX_HOME/config.toml (default ~/.codex), one
    // [mcp_servers.<name>] table with command = "…" and args = […].
    Client { name: "codex", title: "Codex", format: Format::Toml, config: codex },
    // Cursor, "Model Context Protocol" (docs.cursor.com/context/model-context-protocol): the global
    // file is ~/.cursor/mcp.json, servers under "mcpServers" as {"command", "args", "env"}.
    Client {
        name: "cursor",
        title: "Cursor",
        format: Format::Json { key: "mcpServers", stdio_type: false },
        config: |home| home.dir.join(".cursor/mcp.json"),
    },
    // VS Code, "MCP configuration reference" (code.visualstudio.com/docs/copilot/reference/mcp-configuration):
    // mcp.json in the user profile (Code/User in the user config folder), servers under "servers",
    // a stdio one as {"type": "stdio", "command", "args"}; the file may hold comments.
    Client {
        name: "vscode",
        title: "VS Code",
        format: Format::Json { key: "servers", stdio_type: true },
        config: vscode,
    },
    // Gemini CLI, "MCP servers with the Gemini CLI" (github.com/google-gemini/gemini-cli/blob/main/docs/tools/mcp-server.md):
    // ~/.gemini/settings.json, servers under "mcpServers" as {"command", "args", "env", "cwd"}.
    Client {
        name: "gemini",
        title: "Gemini CLI",
        format: Format::Json { key: "mcpServers", stdio_type: false },
        config: |home| home.dir.join(".gemini/settings.json"),
    },
    // Windsurf, "Cascade MCP integration" (docs.windsurf.com/windsurf/cascade/mcp):
    // ~/.codeium/windsurf/mcp_config.json, servers under "mcpServers" as {"command", "args"}.
    Client {
        name: "windsurf",
        title: "Windsurf",
        format: Format::Json { key: "mcpServers", stdio_type: false },
        config: |home| home.dir.join(".codeium/windsurf/mcp_config.json"),
    },
];

/// The client called `name`, or an error listing the known ones.
pub fn find(name: &str) -> Result<&'static Client, InstallError> {
    let wanted = name.trim().to_ascii_lowercase();
    let wanted = match wanted.as_str() {
        "claude-code" => "claude",
        "code" | "vs-code" => "vscode",
        "gemini-cli" => "gemini",
        other => other,
    };
    CLIENTS.iter().find(|client| client.name == wanted).ok_or_else(|| {
        let names: Vec<&str> = CLIENTS.iter().map(|c| c.name).collect();
        InstallError::UnknownClient { name: name.to_string(), known: names.join(", ") }
    })
}

fn claude(home: &Home) -> PathBuf {
    match home.var("CLAUDE_CONFIG_DIR") {
        Some(dir) => PathBuf::from(dir).join(".claude.json"),
        None => home.dir.join(".claude.json"),
    }
}

fn claude_desktop(home: &Home) -> PathBuf {
    if home.macos {
        home.dir.join("Library/Application Support/Claude/claude_desktop_config.json")
    } else {
        home.config_dir().join("Claude/claude_desktop_config.json")
    }
}

fn codex(home: &Home) -> PathBuf {
    match home.var("CODEX_HOME") {
        Some(dir) => PathBuf::from(dir).join("config.toml"),
        None => home.dir.join(".codex/config.toml"),
    }
}

fn vscode(home: &Home) -> PathBuf {
    if home.macos {
        home.dir.join("Library/Application Support/Code/User/mcp.json")
    } else {
        home.config_dir().join("Code/User/mcp.json")
    }
}
