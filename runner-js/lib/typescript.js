'use strict';
// Type stripping for TypeScript cells: the types are replaced by spaces, so
// the JavaScript left has every line and column where the cell had them (line
// numbers in errors stay right, and transform.js parses the result as any
// JavaScript cell).
//
// Node 22.13 and newer strip types themselves (`module.stripTypeScriptTypes`).
// On an older Node (18 to 22.12) the runner uses its own copy of the stripper
// Node ships, amaro (swc compiled to WebAssembly), vendored unchanged in
// vendor/amaro/ (see VENDOR.json and scripts/update-ts-stripper). It is loaded
// on the first TypeScript cell only: JavaScript cells, and every cell on a
// newer Node, never pay for it.
//
// Both strip only. TypeScript that generates code (enum, namespace, parameter
// properties, `<T>x` casts) is refused with a SyntaxError naming the construct
// and what to write instead, on every Node alike.

const VENDORED = '../vendor/amaro/internal.js';

/** The hint added to a refused construct's message. */
const STRIP_ONLY_HINT =
  'cellbox strips TypeScript types without compiling, as Node does, so TypeScript that generates code ' +
  '(enum, namespace, parameter properties, <T>x casts) cannot run on any Node version: use a const object ' +
  '(`const Color = { Red: 0, Green: 1 } as const`) or a union type instead of an enum, plain fields ' +
  'assigned in the constructor, and `x as T`';

let vendored = null;
let vendoredError = null;

/** Node's own stripper, or null before 22.13. */
function builtin() {
  const { stripTypeScriptTypes } = require('module');
  return typeof stripTypeScriptTypes === 'function' ? stripTypeScriptTypes : null;
}

/** Strip the types of `code`; throws a SyntaxError (with `loc` where known) for TypeScript that cannot run. */
function strip(code) {
  const native = builtin();
  if (!native) return stripVendored(code);
  try {
    return withoutStripWarning(() => native(code, { mode: 'strip' }));
  } catch (error) {
    throw fromBuiltin(error);
  }
}

/**
 * Run `fn` with Node's one-time "stripTypeScriptTypes is an experimental feature" warning
 * dropped: it is not the cell's, and it would be written to the output of the next cell.
 */
function withoutStripWarning(fn) {
  const emit = process.emitWarning;
  process.emitWarning = function (warning, ...rest) {
    const type = typeof rest[0] === 'string' ? rest[0] : rest[0] && rest[0].type;
    const text = warning instanceof Error ? warning.message : String(warning);
    if (type === 'ExperimentalWarning' && /stripTypeScriptTypes|type stripping/i.test(text)) return undefined;
    return emit.call(this, warning, ...rest);
  };
  try {
    return fn();
  } finally {
    process.emitWarning = emit;
  }
}

/** Strip with the vendored amaro (loaded on first use). */
function stripVendored(code) {
  const amaro = loadVendored();
  let output;
  try {
    output = amaro.transformSync(code, { mode: 'strip-only' });
  } catch (error) {
    throw fromSwc(error);
  }
  return output.code;
}

function loadVendored() {
  if (vendored) return vendored;
  if (!vendoredError) {
    try {
      vendored = require(VENDORED);
      return vendored;
    } catch (error) {
      vendoredError = error;
    }
  }
  const reason = vendoredError && vendoredError.message;
  const head =
    `TypeScript cells need type stripping: Node ${process.versions.node} does not have it built in (Node 22.13 or newer does), ` +
    `and the stripper shipped with cellbox could not load here (${reason}). `;
  // An address-space rlimit (--memory-limit without cgroups) leaves WebAssembly no room to reserve its
  // memory; Node's own stripper is WebAssembly too, so a newer Node would not help.
  const rlimit = process.env.CELLBOX_MEMORY_RLIMIT;
  const advice =
    rlimit && /Wasm memory|WebAssembly/.test(String(reason))
      ? `The kernel's memory limit (${rlimit}) is an address-space rlimit here (no cgroups), and WebAssembly on ` +
        'this Node needs more address space than that (Node 22.13\'s own stripper as well): run TypeScript cells ' +
        'without --memory-limit or where cgroups enforce it, use Node 24 or newer (its WebAssembly fits), or use JavaScript.'
      : 'Install Node 22.13 or newer (https://nodejs.org/en/download, or e.g. `nvm install 22`, `fnm install 22`, ' +
        '`brew install node@22`) and name it with --node or CELLBOX_NODE=/path/to/node, or use JavaScript.';
  const error = new Error(head + advice);
  error.name = 'TypeScriptNotSupported';
  throw error;
}

/** Whether the vendored stripper has been loaded (for the tests). */
function vendoredLoaded() {
  return vendored !== null;
}

/** amaro's error (a plain object: code, message, startLine, startColumn, …) as a SyntaxError with `loc`. */
function fromSwc(error) {
  if (!error || typeof error !== 'object' || typeof error.message !== 'string' || !error.code) return error;
  const unsupported = error.code === 'UnsupportedSyntax';
  const syntax = new SyntaxError(unsupported ? `${error.message}: ${STRIP_ONLY_HINT}` : error.message);
  syntax.code = unsupported ? 'ERR_UNSUPPORTED_TYPESCRIPT_SYNTAX' : 'ERR_INVALID_TYPESCRIPT_SYNTAX';
  if (Number.isInteger(error.startLine)) syntax.loc = { line: error.startLine, column: error.startColumn || 0 };
  return syntax;
}

/**
 * Node's error (ERR_INVALID_TYPESCRIPT_SYNTAX or ERR_UNSUPPORTED_TYPESCRIPT_SYNTAX) in the same
 * shape: the message's first line, `loc` read from the lines Node quotes (22.13: swc's report in
 * the message; 24: the stack's first lines).
 */
function fromBuiltin(error) {
  if (!error || !/TYPESCRIPT_SYNTAX$/.test(String(error.code))) return error;
  const text = String(error.message);
  const lines = text.split('\n');
  const first = lines.find((line) => line.trim()) || text;
  let message = first.replace(/^\s*(x|×)\s+/, '').trim();
  let loc = null;
  // swc's snippet: ` 2 | enum E {A}` then `   : ^^^^` under it.
  for (let i = 1; i < lines.length; i++) {
    const caret = /^(\s*:\s)(\s*)\^/.exec(lines[i]);
    const quoted = /^\s*(\d+)\s\|\s?/.exec(lines[i - 1]);
    if (caret && quoted) {
      const codeStart = quoted[0].length;
      const caretAt = caret[1].length + caret[2].length;
      loc = { line: Number(quoted[1]), column: Math.max(0, caretAt - codeStart) };
      break;
    }
  }
  // Newer Node (24): a clean message, and the stack starts `<file>:2` then the lines around it, a
  // caret line under the one at fault.
  if (!loc && typeof error.stack === 'string') {
    const header = /^[^\n]*:(\d+)\n/.exec(error.stack);
    const caret = /^( *)\^+ *$/m.exec(error.stack.slice(0, error.stack.indexOf('SyntaxError')));
    if (header && caret) loc = { line: Number(header[1]), column: caret[1].length };
  }
  const unsupported = error.code === 'ERR_UNSUPPORTED_TYPESCRIPT_SYNTAX' || /not supported in strip-only mode/.test(message);
  if (unsupported) message = `${message}: ${STRIP_ONLY_HINT}`;
  const syntax = new SyntaxError(message);
  syntax.code = unsupported ? 'ERR_UNSUPPORTED_TYPESCRIPT_SYNTAX' : 'ERR_INVALID_TYPESCRIPT_SYNTAX';
  if (loc) syntax.loc = loc;
  return syntax;
}

module.exports = { strip, stripVendored, vendoredLoaded, fromBuiltin, fromSwc };
