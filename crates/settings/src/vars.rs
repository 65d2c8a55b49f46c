//! The declarations: one constant per variable, and [`ENV_VARS`], every
//! one of them in the order the docs show them.

use super::{Audience, EnvVar, Kind};
// The tests' and the benchmark's own, declared beside these (`ENV_VARS` lists them last).
pub use super::dev_vars::*;

const fn user(name: &'static str, value: &'static str, default: &'static str, doc: &'static str) -> EnvVar {
    EnvVar { name, value, default, doc, audience: Audience::User, flag: None, kind: Kind::Text }
}

const fn set_by_cellbox(name: &'static str, value: &'static str, doc: &'static str) -> EnvVar {
    EnvVar { name, value, default: "", doc, audience: Audience::SetByCellbox, flag: None, kind: Kind::Text }
}

pub(crate) const fn development(
    name: &'static str,
    value: &'static str,
    default: &'static str,
    doc: &'static str,
) -> EnvVar {
    EnvVar { name, value, default, doc, audience: Audience::Development, flag: None, kind: Kind::Text }
}

// Interpreters and languages.
/// `CELLBOX_PYTHON`.
pub const PYTHON: EnvVar =
    user("CELLBOX_PYTHON", "path or command", "discovered", "The Python interpreter for kernels; skips discovery.")
        .with_flag("--python");
/// `CELLBOX_PYTHON_SKIP_CHECK`.
pub const PYTHON_SKIP_CHECK: EnvVar = user(
    "CELLBOX_PYTHON_SKIP_CHECK",
    "boolean",
    "",
    "Skip the interpreter probe: use the first existing candidate as it is.",
)
.with_kind(Kind::Bool);
/// `CELLBOX_NODE`.
pub const NODE: EnvVar =
    user("CELLBOX_NODE", "path or command", "`node` on PATH", "The Node.js that runs JavaScript and TypeScript cells.")
        .with_flag("--node");
/// `CELLBOX_PY`.
pub const PY: EnvVar = user(
    "CELLBOX_PY",
    "on|off|only",
    "on",
    "Python cells: on, off, or the only language (JavaScript off); `1` is refused: it once meant `only`.",
)
.with_kind(Kind::Languages);
/// `CELLBOX_JS`.
pub const JS: EnvVar = user(
    "CELLBOX_JS",
    "on|off|only",
    "on",
    "JavaScript and TypeScript cells: on, off, or the only language (Python off).",
)
.with_kind(Kind::Languages);
/// `CELLBOX_PRELOAD`.
pub const PRELOAD: EnvVar = user(
    "CELLBOX_PRELOAD",
    "module,…",
    "",
    "Modules Python kernels start with already imported, through a fork server (Linux, process kernels).",
)
.with_flag("--preload");
/// `CELLBOX_CHECK`.
pub const CHECK: EnvVar = user(
    "CELLBOX_CHECK",
    "off|syntax|lint",
    "off",
    "Check each call's cells before running any (the eval tool's `check` overrides it): `syntax` runs none if a cell does not parse, `lint` also adds `ruff check` findings on Python cells as notes.",
).with_flag("--check").with_kind(Kind::Choice(&["off", "syntax", "lint", "none", "ruff", "0", "1", "false", "true", "no", "yes", "on"]));

// Where kernels run.
/// `CELLBOX_BACKEND`.
pub const BACKEND: EnvVar = user(
    "CELLBOX_BACKEND",
    "process|gateway",
    "process",
    "Where Python kernels run: runner processes, or a Jupyter gateway.",
)
.with_flag("--backend")
.with_kind(Kind::Choice(&["process", "gateway", "local"]));
/// `CELLBOX_GATEWAY_URL`.
pub const GATEWAY_URL: EnvVar = user(
    "CELLBOX_GATEWAY_URL",
    "URL",
    "",
    "An external Jupyter Kernel or Enterprise Gateway; setting it selects the gateway backend.",
);
/// `CELLBOX_GATEWAY_TOKEN`.
pub const GATEWAY_TOKEN: EnvVar = user(
    "CELLBOX_GATEWAY_TOKEN",
    "token",
    "",
    "The gateway's token, sent as `Authorization: token …` (never printed).",
);
/// `CELLBOX_GATEWAY_KERNEL`.
pub const GATEWAY_KERNEL: EnvVar =
    user("CELLBOX_GATEWAY_KERNEL", "kernelspec name", "python3", "The kernelspec started on the gateway.");
/// `CELLBOX_GATEWAY_USERNAME`.
pub const GATEWAY_USERNAME: EnvVar = user(
    "CELLBOX_GATEWAY_USERNAME",
    "name",
    "the local user",
    "`KERNEL_USERNAME` sent to the gateway (`root` is sent as `cellbox`).",
);
/// `CELLBOX_GATEWAY_STARTUP_TIMEOUT`.
pub const GATEWAY_STARTUP_TIMEOUT: EnvVar = user(
    "CELLBOX_GATEWAY_STARTUP_TIMEOUT",
    "seconds",
    "30",
    "How long a gateway kernel may take to start, from `POST /api/kernels` to the end of its setup.",
)
.with_kind(Kind::Seconds);
/// `CELLBOX_GATEWAY_DIR`.
pub const GATEWAY_DIR: EnvVar = user(
    "CELLBOX_GATEWAY_DIR",
    "path",
    "`~/.cellbox/gateway`",
    "The shared local gateway's folder (its lock, metadata and log).",
);

// The sandbox.
/// `CELLBOX_CHECKPOINTS`.
pub const CHECKPOINTS: EnvVar = user(
    "CELLBOX_CHECKPOINTS",
    "count",
    "0",
    "Checkpoints each session keeps for undo: its Python kernel is forked before every call (0: off).",
)
.with_flag("--checkpoints")
.with_kind(Kind::Count(0));
/// `CELLBOX_CHECKPOINT_MEMORY`.
pub const CHECKPOINT_MEMORY: EnvVar = user(
    "CELLBOX_CHECKPOINT_MEMORY",
    "size, e.g. 2G",
    "1G",
    "Private memory a session's checkpoints may hold together; the oldest go first.",
)
.with_flag("--checkpoint-memory")
.with_kind(Kind::Size);
/// `CELLBOX_HIBERNATE`.
pub const HIBERNATE: EnvVar = user(
    "CELLBOX_HIBERNATE",
    "boolean",
    "on",
    "Hibernate an idle or evicted session's Python kernel (its variables saved to disk, brought back at its next \
     call) instead of losing its state; off stops it as before.",
)
.with_flag("--hibernate")
.with_kind(Kind::Bool);
/// `CELLBOX_HIBERNATE_AFTER`.
pub const HIBERNATE_AFTER: EnvVar = user(
    "CELLBOX_HIBERNATE_AFTER",
    "seconds",
    "",
    "Hibernate a session's Python kernel unused this long (default: at the idle timeout, `--idle-minutes`).",
)
.with_flag("--hibernate-after")
.with_kind(Kind::Seconds);
/// `CELLBOX_STATE_DIR`.
pub const STATE_DIR: EnvVar = user(
    "CELLBOX_STATE_DIR",
    "path",
    "",
    "`cellbox mcp` and `cellbox serve`: keep hibernated sessions in this folder, so that they survive a restart: \
     every session's Python kernel is hibernated at exit and found again at the next start on the folder (one \
     process at a time; not inside the workspace).",
)
.with_flag("--state-dir");
/// `CELLBOX_SANDBOX`.
pub const SANDBOX: EnvVar = user(
    "CELLBOX_SANDBOX",
    "workspace-write|read-only|off",
    "workspace-write",
    "What kernels may read and write; `off` gives them the user's full rights.",
)
.with_flag("--sandbox")
.with_kind(Kind::Choice(&[
    "workspace-write",
    "read-only",
    "off",
    "workspace",
    "readonly",
    "none",
    "full-access",
    "on",
    "0",
    "1",
    "false",
    "true",
]));
/// `CELLBOX_NETWORK`.
pub const NETWORK: EnvVar = user(
    "CELLBOX_NETWORK",
    "on|off|localhost|allow:HOST,…[;deny:HOST,…]",
    "on",
    "The kernels' network: the host's, none, their own loopback, or the hosts of an `allow:`/`deny:` list (names, \
     `*.domain`, addresses, ranges, presets pypi, npm, github, huggingface, conda) through a proxy.",
)
.with_flag("--network");
/// `CELLBOX_NETWORK_CA`.
pub const NETWORK_CA: EnvVar = user(
    "CELLBOX_NETWORK_CA",
    "path",
    "",
    "A PEM file of roots the kernels' network proxy trusts, besides the system's, when it opens TLS to a host a \
     --secret goes to (an internal CA).",
);
/// `CELLBOX_NETWORK_HOSTS`.
pub const NETWORK_HOSTS: EnvVar = user(
    "CELLBOX_NETWORK_HOSTS",
    "path",
    "",
    "A file in /etc/hosts form whose names the kernels' network proxy resolves to its addresses before asking DNS \
     (a mirror on the LAN, tests).",
);
/// `CELLBOX_ALLOW_WRITE`.
pub const ALLOW_WRITE: EnvVar = user(
    "CELLBOX_ALLOW_WRITE",
    "paths, `:`-separated",
    "",
    "More folders kernels may write in `workspace-write` mode (added to those of the flag).",
)
.with_flag("--allow-write");
/// `CELLBOX_DENY_READ`.
pub const DENY_READ: EnvVar = user(
    "CELLBOX_DENY_READ",
    "paths, `:`-separated",
    "",
    "More paths kernels may not read, besides the secret locations (added to those of the flag).",
)
.with_flag("--deny-read");
/// `CELLBOX_MEMORY_LIMIT`.
pub const MEMORY_LIMIT: EnvVar =
    user("CELLBOX_MEMORY_LIMIT", "size, e.g. 4G", "", "Memory for each kernel and everything it starts.")
        .with_flag("--memory-limit")
        .with_kind(Kind::Size);
/// `CELLBOX_MAX_PROCESSES`.
pub const MAX_PROCESSES: EnvVar =
    user("CELLBOX_MAX_PROCESSES", "count", "", "Processes and threads for each kernel and everything it starts.")
        .with_flag("--max-processes")
        .with_kind(Kind::Count(8));

// The server.
/// `CELLBOX_SERVE_TOKENS`.
pub const SERVE_TOKENS: EnvVar = user(
    "CELLBOX_SERVE_TOKENS",
    "path",
    "`$XDG_CONFIG_HOME/cellbox/serve-tokens.json`",
    "The tokens file of `cellbox serve` and `cellbox serve token …`: names and SHA-256 hashes.",
)
.with_flag("--tokens");
/// `CELLBOX_SERVE_TOKEN`.
pub const SERVE_TOKEN: EnvVar = user(
    "CELLBOX_SERVE_TOKEN",
    "token",
    "",
    "One more bearer token `cellbox serve` accepts, as principal `env` (for containers and CI secrets).",
);

// The Python SDK.
/// `CELLBOX_SDK_ENGINE`.
pub const SDK_ENGINE: EnvVar = user(
    "CELLBOX_SDK_ENGINE",
    "in-process|process|path",
    "in-process when installed",
    "Where a local `Sandbox()` runs its engine (as its `engine=`): in the program's process (the wheel's \
     `cellbox._engine`), in a child process, or in-process from the extension file at this path.",
);

// Folders.
/// `CELLBOX_CACHE_DIR`.
pub const CACHE_DIR: EnvVar = user(
    "CELLBOX_CACHE_DIR",
    "path",
    "`$XDG_CACHE_HOME/cellbox`",
    "Where the runner's files and probe answers are kept.",
);
/// `CELLBOX_ARTIFACTS_DIR`.
pub const ARTIFACTS_DIR: EnvVar = user(
    "CELLBOX_ARTIFACTS_DIR",
    "path",
    "`$XDG_CACHE_HOME/cellbox/artifacts`",
    "Where full outputs (`artifact://…`) are kept.",
);
/// `CELLBOX_MODULES_DIR`.
pub const MODULES_DIR: EnvVar = user(
    "CELLBOX_MODULES_DIR",
    "path",
    "`~/.cellbox/modules`",
    "The user's extension modules, importable in every kernel.",
);

// The host bridge.
/// `CELLBOX_LLM_BASE_URL`.
pub const LLM_BASE_URL: EnvVar = user(
    "CELLBOX_LLM_BASE_URL",
    "URL",
    "",
    "The OpenAI-compatible endpoint `completion()` calls (command line; host only, never in the kernel).",
);
/// `CELLBOX_LLM_API_KEY`.
pub const LLM_API_KEY: EnvVar =
    user("CELLBOX_LLM_API_KEY", "key", "", "That endpoint's key (host only, never in the kernel).");
/// `CELLBOX_LLM_MODEL`.
pub const LLM_MODEL: EnvVar =
    user("CELLBOX_LLM_MODEL", "model name", "", "The model `completion()` uses when the cell names none.");
/// `CELLBOX_AGENT_COMMAND`.
pub const AGENT_COMMAND: EnvVar = user(
    "CELLBOX_AGENT_COMMAND",
    "command line",
    "",
    "The command `agent()` runs, e.g. `claude -p --output-format json` (`{prompt}` passes the prompt as an argument).",
);
/// `CELLBOX_BRIDGE_MAX_CALLS`.
pub const BRIDGE_MAX_CALLS: EnvVar =
    user("CELLBOX_BRIDGE_MAX_CALLS", "count", "256", "Bridge calls one cell may make.").with_kind(Kind::Count(0));
/// `CELLBOX_BRIDGE_CONCURRENCY`.
pub const BRIDGE_CONCURRENCY: EnvVar =
    user("CELLBOX_BRIDGE_CONCURRENCY", "count", "8", "Bridge calls served at once.").with_kind(Kind::Count(1));
/// `CELLBOX_BRIDGE_CALL_TIMEOUT`.
pub const BRIDGE_CALL_TIMEOUT: EnvVar =
    user("CELLBOX_BRIDGE_CALL_TIMEOUT", "seconds", "600", "How long one bridge call may take.")
        .with_kind(Kind::Count(1));
/// `CELLBOX_BRIDGE_MAX_DEPTH`.
pub const BRIDGE_MAX_DEPTH: EnvVar = user(
    "CELLBOX_BRIDGE_MAX_DEPTH",
    "count",
    "2",
    "How deep bridges may nest (an agent running cellbox running an agent…).",
)
.with_kind(Kind::Count(0));

// The terminal and logs.
/// `CELLBOX_IMAGES`.
pub const IMAGES: EnvVar =
    user("CELLBOX_IMAGES", "kitty|iterm|sixel|none", "detected", "How the terminal renderer shows images.");
/// `CELLBOX_LOG`.
pub const LOG: EnvVar =
    user("CELLBOX_LOG", "filter", "warn", "The log filter for stderr, e.g. `debug` (`RUST_LOG` also works).");
/// `CELLBOX_PYTHON_IPC_TRACE`.
pub const PYTHON_IPC_TRACE: EnvVar = user(
    "CELLBOX_PYTHON_IPC_TRACE",
    "boolean",
    "",
    "Log every runner protocol frame both ways to stderr (environment values redacted).",
)
.with_kind(Kind::Bool);

// Set by cellbox for the processes it starts.
/// `CELLBOX_BRIDGE_DEPTH`.
pub const BRIDGE_DEPTH: EnvVar =
    set_by_cellbox("CELLBOX_BRIDGE_DEPTH", "count", "This host's bridge depth, set for agent commands (0 at the top).")
        .with_kind(Kind::Count(0));
/// `CELLBOX_AGENT_KIND`.
pub const AGENT_KIND: EnvVar =
    set_by_cellbox("CELLBOX_AGENT_KIND", "name", "The agent an `agent()` call asked for, set for the agent command.");
/// `CELLBOX_AGENT_MODEL`.
pub const AGENT_MODEL: EnvVar = set_by_cellbox(
    "CELLBOX_AGENT_MODEL",
    "model name",
    "The model an `agent()` call asked for, set for the agent command.",
);
/// `CELLBOX_MEMORY_RLIMIT`.
pub const MEMORY_RLIMIT: EnvVar =
    set_by_cellbox("CELLBOX_MEMORY_RLIMIT", "size", "The kernel's memory limit, set so a `MemoryError` can name it.");
/// `CELLBOX_STORE_DIR`.
pub const STORE_DIR: EnvVar = set_by_cellbox(
    "CELLBOX_STORE_DIR",
    "path",
    "Where a sandboxed kernel's `%store` keeps variables: a folder of its principal's own caches.",
);

// Build.
/// `CELLBOX_GIT_REVISION`.
pub const GIT_REVISION: EnvVar = EnvVar {
    name: "CELLBOX_GIT_REVISION",
    value: "revision",
    default: "from git, or the packaged crate's `.cargo_vcs_info.json`",
    doc: "The revision `--version` and `cellbox doctor` show.",
    audience: Audience::Build,
    flag: None,
    kind: Kind::Text,
};

/// `CELLBOX_WHEEL_ENGINE`.
pub const WHEEL_ENGINE: EnvVar = EnvVar {
    name: "CELLBOX_WHEEL_ENGINE",
    value: "`1` or `placed`",
    default: "unset (pyproject.toml sets `1` for maturin's builds)",
    doc: "Whether build.rs builds the Python SDK's in-process engine and puts it in the package for the wheel (`1`), or checks that scripts/build-wheel already did (`placed`); any other value but `0` is an error.",
    audience: Audience::Build,
    flag: None,
    kind: Kind::Text,
};

/// Every variable, grouped by topic in the order the docs show them.
pub const ENV_VARS: &[EnvVar] = &[
    // Interpreters and languages.
    PYTHON,
    PYTHON_SKIP_CHECK,
    NODE,
    PY,
    JS,
    PRELOAD,
    CHECK,
    CHECKPOINTS,
    CHECKPOINT_MEMORY,
    HIBERNATE,
    HIBERNATE_AFTER,
    STATE_DIR,
    // Where kernels run.
    BACKEND,
    GATEWAY_URL,
    GATEWAY_TOKEN,
    GATEWAY_KERNEL,
    GATEWAY_USERNAME,
    GATEWAY_STARTUP_TIMEOUT,
    GATEWAY_DIR,
    // The sandbox.
    SANDBOX,
    NETWORK,
    NETWORK_HOSTS,
    NETWORK_CA,
    ALLOW_WRITE,
    DENY_READ,
    MEMORY_LIMIT,
    MAX_PROCESSES,
    // The server.
    SERVE_TOKENS,
    SERVE_TOKEN,
    SDK_ENGINE,
    // Folders.
    CACHE_DIR,
    ARTIFACTS_DIR,
    MODULES_DIR,
    // The host bridge.
    LLM_BASE_URL,
    LLM_API_KEY,
    LLM_MODEL,
    AGENT_COMMAND,
    BRIDGE_MAX_CALLS,
    BRIDGE_CONCURRENCY,
    BRIDGE_CALL_TIMEOUT,
    BRIDGE_MAX_DEPTH,
    // The terminal and logs.
    IMAGES,
    LOG,
    PYTHON_IPC_TRACE,
    // Set by cellbox for the processes it starts.
    BRIDGE_DEPTH,
    AGENT_KIND,
    AGENT_MODEL,
    MEMORY_RLIMIT,
    STORE_DIR,
    // Build.
    GIT_REVISION,
    WHEEL_ENGINE,
    // Tests and the benchmark.
    TEST_PYTHON,
    TEST_NODE,
    TEST_NODE_FETCH,
    TEST_IRKERNEL,
    TEST_JJAVA,
    TEST_CHROMIUM,
    TEST_BASE_PYTHON,
    TEST_EG_BASE_PYTHON,
    TEST_EG_PYTHON,
    TEST_MCP_URL,
    TEST_MCP_TOKEN,
    TEST_VENV,
    GATEWAY_NOFILE_FOR_TEST,
    CHAOS_SECS,
    CHAOS_SEED,
    FUZZ_CASES,
    PARITY_FULL,
    PARITY_ONLY,
    PARITY_PYTHON,
    BINARY,
    BENCH_OUT,
    BENCH_JUPYTER_PYTHON,
];
