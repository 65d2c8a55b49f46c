'use strict';
// Helpers put on every kernel's global object: display, env, read, write,
// log, phase and emitStatus (the same set, and the same status events, as the
// Python kernel's prelude).

const fs = require('fs');
const os = require('os');
const path = require('path');
const { display, emitStatus } = require('./display');
const bridge = require('./bridge');

function expand(file) {
  const text = String(file);
  return text === '~' || text.startsWith('~/') ? path.join(os.homedir(), text.slice(1)) : text;
}

/** env() → all variables; env(key) → its value or undefined; env(key, value) sets it. */
function env(key, value) {
  if (key === undefined) return { ...process.env };
  if (value === undefined) return process.env[key];
  process.env[key] = String(value);
  emitStatus('env', { key: String(key) });
  return process.env[key];
}

/** read(path, offset = 1, limit): the text of a file from line `offset` (1-based), at most `limit` lines. */
function read(file, offset = 1, limit = undefined) {
  const text = fs.readFileSync(expand(file), 'utf8');
  const lines = text.match(/[^\n]*\n|[^\n]+$/g) || [];
  const start = Math.max(Number(offset) || 1, 1) - 1;
  const chosen = limit === undefined || limit === null ? lines.slice(start) : lines.slice(start, start + Number(limit));
  const result = chosen.join('');
  emitStatus('read', { path: String(file), chars: result.length, lines: chosen.length });
  return result;
}

/** write(path, content): write text to a file (parent folders are created); returns the number of characters. */
function write(file, content) {
  const target = expand(file);
  const parent = path.dirname(target);
  if (parent) fs.mkdirSync(parent, { recursive: true });
  const text = String(content);
  fs.writeFileSync(target, text, 'utf8');
  emitStatus('write', { path: String(file), chars: text.length });
  return text.length;
}

/** log(message): a progress message as a status event (shown apart from stdout). */
function log(message) {
  emitStatus('log', { message: String(message) });
}

/** phase(title): mark the start of a named phase of work. */
function phase(title) {
  emitStatus('phase', { title: String(title) });
}

/** Put the helpers on `target` (the global object). */
function install(target) {
  const { completion, agent, tool, parallel, pipeline, BridgeError, SchemaError } = bridge;
  Object.assign(target, { display, env, read, write, log, phase, emitStatus });
  Object.assign(target, { completion, agent, tool, parallel, pipeline, BridgeError, SchemaError });
}

module.exports = { install };
