#!/usr/bin/env node
// The npm packages' versions, which must be Cargo.toml's (the launcher pins
// each platform package to its own version).
//   node npm/version.js VERSION          set every package.json to VERSION
//   node npm/version.js --check VERSION  exit 1, naming the files, unless they all say VERSION
"use strict";

const fs = require("fs");
const path = require("path");

const args = process.argv.slice(2);
const check = args[0] === "--check";
const version = check ? args[1] : args[0];
if (!version) {
  process.stderr.write("usage: node npm/version.js [--check] VERSION\n");
  process.exit(2);
}

const launcher = path.join(__dirname, "cellbox", "package.json");
const platforms = Object.keys(JSON.parse(fs.readFileSync(launcher, "utf8")).optionalDependencies);
const wrong = [];
for (const file of [launcher, ...platforms.map((name) => path.join(__dirname, name.split("/")[1], "package.json"))]) {
  const text = fs.readFileSync(file, "utf8");
  const pkg = JSON.parse(text);
  const pins = pkg.optionalDependencies || {};
  const stale = pkg.version !== version || Object.values(pins).some((pin) => pin !== version);
  if (!stale) continue;
  if (check) {
    wrong.push(`${path.relative(process.cwd(), file)}: ${pkg.version}`);
    continue;
  }
  pkg.version = version;
  for (const name of Object.keys(pins)) pins[name] = version;
  fs.writeFileSync(file, JSON.stringify(pkg, null, 2) + "\n");
  console.log(`${path.relative(process.cwd(), file)}: ${version}`);
}
if (wrong.length) {
  process.stderr.write(`npm packages not at ${version}:\n  ${wrong.join("\n  ")}\n`);
  process.exit(1);
}
