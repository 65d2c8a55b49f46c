'use strict';
// Errors as the host shows them: `ename`, `evalue` and a traceback whose
// frames point at the cell's own lines (`<cell-N>:line:col`, with the line's
// code below), the runner's and Node's internal frames left out.

const path = require('path');
const { inspect } = require('./display');

const RUNNER_DIR = path.dirname(__dirname);

/** Sources of the cells run so far, to quote their lines in tracebacks. */
const sources = new Map();

/** Keep a cell's lines, and how to map positions in the code that ran back to them. */
function rememberSource(filename, code, original, ranLines = null) {
  sources.set(filename, { lines: code.split('\n'), original, ranLines });
}

/** `<cell-N>:line:col` positions of the code that ran, as the cell's own. */
function mapPositions(frame) {
  return frame.replace(/(<cell-\d+>|<cellbox>):(\d+):(\d+)/g, (whole, name, line, column) => {
    const source = sources.get(name);
    if (!source || !source.original) return whole;
    const mapped = source.original(Number(line), Number(column));
    return `${name}:${mapped.line}:${mapped.column}`;
  });
}

function isHidden(frame) {
  return frame.includes(RUNNER_DIR) || /\(?node:(internal|vm)[/:]/.test(frame) || /\bnode:vm\b/.test(frame);
}

function cellLine(frame) {
  const match = /(<cell-\d+>|<cellbox>):(\d+):(\d+)/.exec(frame);
  if (!match) return null;
  const source = sources.get(match[1]);
  return source ? { text: source.lines[Number(match[2]) - 1] } : null;
}

/** The cell's code on the frame's line, indented below it. */
function quote(frame) {
  const found = cellLine(frame);
  return found && found.text !== undefined ? `        ${found.text.trim()}\n` : '';
}

/** A frame in the runner's wrapper around a cell (its first or last line). */
function isWrapper(frame) {
  if (/\((<cell-\d+>|<cellbox>)\)$|at (<cell-\d+>|<cellbox>)$/.test(frame.trim())) return true;
  const match = /(<cell-\d+>|<cellbox>):(\d+):\d+/.exec(frame);
  const source = match && sources.get(match[1]);
  if (!source) return false;
  const line = Number(match[2]);
  return line < 1 || line > (source.ranLines || source.lines.length);
}

/** { ename, evalue, traceback } for anything a cell threw. */
function describe(error) {
  if (!(error instanceof Error) && !(error && typeof error.stack === 'string' && typeof error.message === 'string')) {
    const text = inspect(error);
    return { ename: 'Uncaught', evalue: text, traceback: [`Uncaught ${text}\n`] };
  }
  const ename = error.name || (error.constructor && error.constructor.name) || 'Error';
  const evalue = String(error.message);
  const stack = typeof error.stack === 'string' ? error.stack : `${ename}: ${evalue}`;
  const lines = stack.split('\n');
  const firstFrame = lines.findIndex((line) => /^\s+at /.test(line));
  const header = firstFrame < 0 ? lines : lines.slice(0, firstFrame);
  const frames = firstFrame < 0 ? [] : lines.slice(firstFrame);
  const shown = [];
  for (const raw of frames) {
    if (!/^\s+at /.test(raw) || isWrapper(raw)) continue;
    const frame = mapPositions(raw);
    if (isHidden(frame)) {
      if (frame.includes(RUNNER_DIR)) break; // everything below is the runner's
      continue;
    }
    shown.push(`${frame.trimEnd()}\n` + quote(frame));
  }
  const traceback = [header.join('\n') + '\n', ...shown];
  const extra = ownProperties(error);
  if (extra) traceback.push(extra);
  return { ename, evalue, traceback };
}

/** Properties an error carries beyond its message (`code`, `errno`, …). */
function ownProperties(error) {
  const keys = Object.keys(error).filter((key) => key !== 'stack' && key !== 'message');
  if (!keys.length) return '';
  const fields = {};
  for (const key of keys) fields[key] = error[key];
  return inspect(fields) + '\n';
}

/** A syntax error found by the parser, shown with the line and a caret. */
function describeSyntax(error, filename, code) {
  const message = String(error.message).replace(/\s*\(\d+:\d+\)$/, '');
  const loc = error.loc || { line: 1, column: 0 };
  const line = code.split('\n')[loc.line - 1] || '';
  return {
    ename: 'SyntaxError',
    evalue: message,
    traceback: [`${filename}:${loc.line}:${loc.column + 1}\n`, `${line}\n`, `${' '.repeat(loc.column)}^\n`, `\nSyntaxError: ${message}\n`],
  };
}

module.exports = { describe, describeSyntax, rememberSource };
