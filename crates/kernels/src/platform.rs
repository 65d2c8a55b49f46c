//! The platforms cellbox is published for and what works on each: declared
//! once here, printed as the table in docs/platforms.md (`cellbox docs
//! platforms --write`), and checked against the npm packages, the release
//! workflow and the cross-target check (tests/it/platforms.rs), so the page,
//! the builds and the code cannot disagree unnoticed.

use std::fmt::Write as _;

/// One published build: its npm platform package and Rust target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Platform {
    /// The npm package's suffix (`@cellbox/<name>`), also the release artifact's.
    pub name: &'static str,
    /// The Rust target it is built for.
    pub target: &'static str,
    /// How far it is checked before a release.
    pub checked: &'static str,
}

/// Every platform a release builds, in the order the docs list them.
pub const PLATFORMS: &[Platform] = &[
    Platform { name: "linux-x64", target: "x86_64-unknown-linux-gnu", checked: "the whole test command, on every run" },
    Platform {
        name: "linux-arm64",
        target: "aarch64-unknown-linux-gnu",
        checked: "built by the release workflow on a hosted arm64 runner",
    },
    Platform {
        name: "darwin-x64",
        target: "x86_64-apple-darwin",
        checked: "type-checked and linted by the test command (scripts/cross-check); tested on hosted runners",
    },
    Platform {
        name: "darwin-arm64",
        target: "aarch64-apple-darwin",
        checked: "type-checked and linted by the test command (scripts/cross-check); tested on hosted runners",
    },
    Platform {
        name: "win32-x64",
        target: "x86_64-pc-windows-msvc",
        checked: "type-checked and linted by the test command (scripts/cross-check); the hosted Windows runner's \
                  test job does not pass yet (the test command and most test fixtures are Unix-only)",
    },
];

/// One capability and how each OS provides it (or why not).
#[derive(Debug, Clone, Copy)]
pub struct Capability {
    pub name: &'static str,
    pub linux: &'static str,
    pub macos: &'static str,
    pub windows: &'static str,
}

/// What works where. Each cell names the mechanism, or what happens instead.
pub const CAPABILITIES: &[Capability] = &[
    Capability {
        name: "Python and JavaScript kernels",
        linux: "yes",
        macos: "built and linted here; run by the hosted macOS runners only",
        windows: "Python: pipes, a Job Object per kernel, interrupts sent over the request pipe (a blocking call \
                  is interrupted when it returns); JavaScript: not yet (a clear error)",
    },
    Capability {
        name: "preloading fork server (`--preload`)",
        linux: "yes",
        macos: "no: kernels are spawned (a fork of a process that touched system frameworks is unsafe)",
        windows: "no (no `fork()`): kernels are spawned, said once",
    },
    Capability {
        name: "sandbox: `workspace-write`, `read-only`",
        linux: "enforced: Landlock ABI 3+ (Linux 6.2+); without it, a warning and no file rules",
        macos: "enforced: a Seatbelt profile (`sandbox-exec`), whose text is tested on every OS",
        windows: "not enforced (one warning)",
    },
    Capability {
        name: "sandbox: `--network off`",
        linux: "enforced: a network namespace",
        macos: "enforced: the Seatbelt profile (IP denied, UNIX sockets kept)",
        windows: "refused",
    },
    Capability {
        name: "sandbox: `--network localhost`",
        linux: "enforced: a namespace with its own loopback",
        macos: "refused (no private loopback)",
        windows: "refused",
    },
    Capability {
        name: "sandbox: `--memory-limit`, `--max-processes`",
        linux: "enforced: cgroups (v2 or v1), else rlimits",
        macos: "refused",
        windows: "refused",
    },
    Capability {
        name: "Jupyter gateway kernels",
        linux: "yes (outside the sandbox)",
        macos: "yes (outside the sandbox)",
        windows: "built (remote gateways, and the local one started as a detached process); untested",
    },
    Capability {
        name: "host bridge agent commands (`CELLBOX_AGENT_COMMAND`)",
        linux: "yes",
        macos: "yes",
        windows: "not yet (they run through `sh -c`): a clear error",
    },
];

/// The Markdown tables of docs/platforms.md: the builds, then the capabilities.
pub fn markdown_table() -> String {
    let mut out = String::from("| package | Rust target | checked |\n| --- | --- | --- |\n");
    for p in PLATFORMS {
        let _ = writeln!(out, "| `@cellbox/{}` | `{}` | {} |", p.name, p.target, p.checked);
    }
    out.push_str("\n| | Linux | macOS | Windows |\n| --- | --- | --- | --- |\n");
    for c in CAPABILITIES {
        let _ = writeln!(out, "| {} | {} | {} | {} |", c.name, c.linux, c.macos, c.windows);
    }
    out
}
