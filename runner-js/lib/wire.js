'use strict';
// The runner wire, in one place: every request the runner accepts, every
// frame it sends, and the names they share.
//
// The host declares the same wire in crates/protocol (Rust); its JSON Schemas
// are in schema/, and docs/kernels.md describes it. The golden corpus in
// tests/protocol/ is round-tripped through this module by
// tests/runner-js/wire.test.js, so a field named differently here fails there.

const PROTOCOL_VERSION = 1;

// Shared names.
const STATUS_MIME = 'application/x-cellbox-status';
const DATA_MIME = 'application/vnd.cellbox.data+json';
const CHART_MIME = 'application/vnd.cellbox.chart+json';

// Host -> runner, by "type" (a line without one is an execute request).
const REQUEST_TYPES = ['execute', 'interrupt', 'exit', 'complete', 'check', 'snapshot', 'restore', 'fork', 'bridge_result'];
// Runner -> host, by "type".
const FRAME_TYPES = ['ready', 'started', 'stdout', 'stderr', 'display', 'result', 'error', 'done', 'completeness', 'checked', 'snapshot', 'bridge_call'];

/** A line from the host that is not a valid request; `requestId` when it named one. */
class ProtocolError extends Error {
  constructor(message, requestId = null) {
    super(message);
    this.requestId = requestId;
  }
}

/** An id as the runner keeps it: a string, or an integer taken as one (as the Python runner does). */
function requestId(value) {
  if (typeof value === 'string') return value;
  if (Number.isInteger(value)) return String(value);
  return null;
}

function optional(message, name, kind, fallback, id) {
  const value = message[name];
  if (value === undefined || (value === null && fallback === null)) return fallback;
  if (typeof value !== kind || value === null) throw new ProtocolError(`field '${name}' has the wrong type (${value === null ? 'null' : typeof value})`, id);
  return value;
}

/**
 * Parse one request line into `{ type, ... }` with the fields the host sent
 * (ids as strings), or throw a ProtocolError.
 */
function parseRequest(line) {
  let message;
  try {
    message = JSON.parse(line);
  } catch (error) {
    throw new ProtocolError(`a request line is not JSON: ${error.message}`);
  }
  if (message === null || typeof message !== 'object' || Array.isArray(message)) throw new ProtocolError('a request must be a JSON object');
  const type = message.type === undefined ? 'execute' : message.type;
  const id = requestId(message.id);
  switch (type) {
    case 'exit':
    case 'interrupt':
      return { type };
    case 'complete':
      if (id === null || typeof message.code !== 'string') throw new ProtocolError("complete request needs an 'id' and 'code' as a string", id);
      return { type, id, code: message.code };
    case 'check': {
      if (id === null || !Array.isArray(message.cells)) throw new ProtocolError("check request needs an 'id' and 'cells' as a list", id);
      const cells = message.cells.map((cell, index) => {
        if (cell === null || typeof cell !== 'object' || typeof cell.code !== 'string') throw new ProtocolError("each checked cell needs 'code' as a string", id);
        const checked = { number: Number.isInteger(cell.number) ? cell.number : index + 1, code: cell.code };
        if (cell.typescript === true) checked.typescript = true;
        return checked;
      });
      return { type, id, cells, lint: message.lint === true };
    }
    case 'snapshot':
    case 'restore': {
      if (id === null || typeof message.path !== 'string' || !message.path) throw new ProtocolError(`${type} request needs an 'id' and 'path' as a string`, id);
      const request = { type, id, path: message.path, version: typeof message.version === 'string' ? message.version : '' };
      if (message.file !== undefined && message.file !== null) {
        if (!Number.isInteger(message.file)) throw new ProtocolError(`${type} request's 'file' must be an integer`, id);
        request.file = message.file;
      }
      return request;
    }
    case 'fork':
      if (id === null || !Number.isInteger(message.fork)) throw new ProtocolError("fork request needs an 'id' and 'fork' as an integer", id);
      return { type, id, fork: message.fork };
    case 'bridge_result': {
      if (id === null || typeof message.ok !== 'boolean') throw new ProtocolError("bridge_result needs an 'id' and 'ok' as a boolean");
      const result = { type, id, ok: message.ok };
      if ('value' in message) result.value = message.value;
      if (message.error !== undefined && message.error !== null) {
        result.error = typeof message.error === 'object' ? message.error : { kind: 'host', message: String(message.error) };
      }
      return result;
    }
    case 'execute': {
      if (id === null) throw new ProtocolError("execute request needs an 'id' (string or integer)");
      if (typeof message.code !== 'string') throw new ProtocolError("execute request needs 'code' as a string", id);
      const request = {
        type,
        id,
        code: message.code,
        silent: optional(message, 'silent', 'boolean', false, id),
        storeHistory: optional(message, 'storeHistory', 'boolean', true, id),
      };
      const cwd = optional(message, 'cwd', 'string', null, id);
      if (cwd !== null) request.cwd = cwd;
      const env = optional(message, 'env', 'object', null, id);
      if (env !== null) {
        for (const [key, value] of Object.entries(env)) {
          if (typeof value !== 'string' && value !== null) throw new ProtocolError(`env value for '${key}' must be a string or null`, id);
        }
        request.env = env;
      }
      for (const name of ['typescript', 'restoreEnv', 'jsonResults']) {
        if (optional(message, name, 'boolean', false, id)) request[name] = true;
      }
      return request;
    }
    default:
      throw new ProtocolError(`unknown request type ${JSON.stringify(type)}`, id);
  }
}

// Frames. Each builder returns the frame object the runner writes as one line.

function ready(pid, version, executable, parser) {
  return { type: 'ready', protocol: PROTOCOL_VERSION, python: version, pid, executable, language: 'js', parser };
}

function started(id) {
  return { type: 'started', id };
}

/** A `stdout` or `stderr` frame (the runner writes output on fd 1/2 instead). */
function output(stream, id, data) {
  return { type: stream, id, data };
}

/** A `display` or `result` frame; empty metadata is left out. */
function bundleFrame(kind, id, bundle, metadata) {
  const frame = { type: kind, id, bundle };
  if (metadata && Object.keys(metadata).length) frame.metadata = metadata;
  return frame;
}

function error(id, ename, evalue, traceback) {
  return { type: 'error', id, ename, evalue, traceback };
}

function done(id, status, executionCount, cancelled) {
  return { type: 'done', id, status, executionCount, cancelled };
}

function completeness(id, status, indent) {
  return { type: 'completeness', id, status, indent };
}

function checked(id, cells, notes) {
  return { type: 'checked', id, cells, notes };
}

/** The answer to `snapshot`/`restore`: the report, or the reason in words. */
function snapshot(id, report, reason) {
  return reason !== undefined && reason !== null ? { type: 'snapshot', id, error: reason } : { type: 'snapshot', id, report };
}

function bridgeCall(id, cell, op, args) {
  return { type: 'bridge_call', id, cell, op, args };
}

module.exports = {
  PROTOCOL_VERSION,
  STATUS_MIME,
  DATA_MIME,
  CHART_MIME,
  REQUEST_TYPES,
  FRAME_TYPES,
  ProtocolError,
  parseRequest,
  ready,
  started,
  output,
  bundleFrame,
  error,
  done,
  completeness,
  checked,
  snapshot,
  bridgeCall,
};
