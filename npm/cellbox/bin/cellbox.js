#!/usr/bin/env node
// The npm launcher: finds the cellbox binary in the platform package npm
// installed alongside (one optionalDependency per platform, picked by its
// os/cpu/libc fields) and runs it with this process's arguments and stdio.
// The exit code and a terminating signal are passed back to the caller.
"use strict";

const { spawn } = require("child_process");
const path = require("path");

const PLATFORMS = {
  "linux-x64": "@cellbox/linux-x64",
  "linux-arm64": "@cellbox/linux-arm64",
  "darwin-x64": "@cellbox/darwin-x64",
  "darwin-arm64": "@cellbox/darwin-arm64",
  "win32-x64": "@cellbox/win32-x64",
};

function isMusl() {
  if (process.platform !== "linux") return false;
  try {
    const header = process.report.getReport().header;
    return !header.glibcVersionRuntime;
  } catch (_) {
    return false;
  }
}

function fail(message) {
  process.stderr.write(`cellbox: ${message}\n`);
  process.exit(1);
}

function binaryPath() {
  const key = `${process.platform}-${process.arch}`;
  const pkg = PLATFORMS[key];
  const exe = process.platform === "win32" ? "cellbox.exe" : "cellbox";
  const other =
    "Other ways to install it: `uvx cellbox mcp` or `pipx install cellbox` (PyPI), `cargo install cellbox` (crates.io).";
  if (!pkg || isMusl()) {
    const what = isMusl() ? `${key} with musl libc` : key;
    fail(`no prebuilt binary for ${what} on npm (there are: ${Object.keys(PLATFORMS).join(", ")}, Linux with glibc). ${other}`);
  }
  try {
    return require.resolve(`${pkg}/${exe}`);
  } catch (_) {
    fail(
      `the platform package ${pkg} (the binary for ${key}) is not installed next to ${path.dirname(__dirname)}. ` +
        "npm skips it when optional dependencies are turned off (--omit=optional, --no-optional) or when the " +
        "lockfile was made on another platform: reinstall cellbox without those (`npm install cellbox`, " +
        `or \`npx -y cellbox@latest\`), or install ${pkg} itself. ${other}`,
    );
  }
}

const child = spawn(binaryPath(), process.argv.slice(2), { stdio: "inherit", windowsHide: true });

// Ctrl-C and Ctrl-\ at a terminal reach the whole foreground process group, the binary included:
// relaying them too would deliver each twice (a second Ctrl-C means more than the first to
// `cellbox run`), so the launcher only outlives them. Signals sent to the launcher alone (a client
// stopping its MCP server) are relayed.
const TERMINAL = ["SIGINT", "SIGQUIT"];
const forwarded = [...TERMINAL, "SIGTERM", "SIGHUP", "SIGBREAK"].filter((signal) => {
  try {
    process.on(signal, () => {
      if (!TERMINAL.includes(signal)) child.kill(signal);
    });
    return true;
  } catch (_) {
    return false; // not a signal on this platform
  }
});

child.on("error", (error) => fail(`cannot run ${child.spawnfile}: ${error.message}`));
child.on("exit", (code, signal) => {
  if (signal) {
    // Die of the same signal, so the caller sees what the binary saw.
    for (const name of forwarded) process.removeAllListeners(name);
    process.kill(process.pid, signal);
    setTimeout(() => process.exit(1), 1000).unref(); // a signal Node ignores
    return;
  }
  process.exit(code === null ? 1 : code);
});
