'use strict';
// From a cell's source to a script that keeps its declarations.
//
// Every cell runs as one function in the kernel's global scope, so that top-
// level `await` works (an async function) and the last expression can be
// returned. Declarations inside a function would die with it, so top-level
// ones are rewritten into assignments to globals, on the same lines (line
// numbers in errors stay right):
//
//   const a = 1, {b} = o   →  void (a = 1, {b} = o)
//   let c                  →  void (c = undefined)
//   class K {}             →  K = class K {};
//   function f() {}        →  kept (hoisted in the cell), plus `globalThis.f = f`
//   import x, {y} from 'm' →  void (x = (await import('m')).default, {y} = …)
//   import('m')            →  the runner's import(), resolved from the cwd
//
// so a later cell sees them, and running a cell again re-declares nothing
// (`const` therefore behaves like `let` across cells). A cell without
// top-level `await` then runs as a plain script: its completion value (the
// last expression statement's) is the result. A cell with `await` runs as an
// async function whose last expression statement becomes `return (…)`.
// Positions in errors are mapped back to the cell's own lines and columns. The source is parsed with acorn, the parser Node ships for its own
// REPL (reached through --expose-internals, so the runner has no dependency).

let acorn = null;
try {
  acorn = require('internal/deps/acorn/acorn/dist/acorn');
} catch {
  acorn = null;
}

const PARSE_OPTIONS = { ecmaVersion: 'latest', allowHashBang: true, allowReturnOutsideFunction: false };

/** Parse as a script, or as a module when the cell uses `import`/`export`. */
function parse(code, allowAwait) {
  const options = { ...PARSE_OPTIONS, sourceType: 'script', allowAwaitOutsideFunction: allowAwait };
  try {
    return acorn.parse(code, options);
  } catch (error) {
    if (!/sourceType: module/.test(String(error.message))) throw error;
    return acorn.parse(code, { ...options, sourceType: 'module', allowAwaitOutsideFunction: true });
  }
}

/** Every identifier a binding pattern declares. */
function patternNames(pattern, names = []) {
  if (!pattern) return names;
  switch (pattern.type) {
    case 'Identifier':
      names.push(pattern.name);
      break;
    case 'ObjectPattern':
      for (const property of pattern.properties) patternNames(property.type === 'RestElement' ? property.argument : property.value, names);
      break;
    case 'ArrayPattern':
      for (const element of pattern.elements) patternNames(element, names);
      break;
    case 'RestElement':
      patternNames(pattern.argument, names);
      break;
    case 'AssignmentPattern':
      patternNames(pattern.left, names);
      break;
    default:
      break;
  }
  return names;
}

/** Call `visit` on every node below `node` (functions included). */
function walk(node, visit) {
  if (!node || typeof node.type !== 'string') return;
  visit(node);
  for (const key of Object.keys(node)) {
    const child = node[key];
    if (Array.isArray(child)) {
      for (const item of child) if (item && typeof item.type === 'string') walk(item, visit);
    } else if (child && typeof child.type === 'string') {
      walk(child, visit);
    }
  }
}

/** True when `await` appears at the cell's top level (outside any function). */
function usesTopLevelAwait(code) {
  try {
    parse(code, false);
    return false;
  } catch {
    return true;
  }
}

const IMPORT_FUNCTION = '__cellbox_import';

function importAssignments(statement, temp) {
  const source = JSON.stringify(statement.source.value);
  const parts = [`${temp} = await ${IMPORT_FUNCTION}(${source})`];
  for (const specifier of statement.specifiers) {
    const local = specifier.local.name;
    if (specifier.type === 'ImportDefaultSpecifier') parts.push(`${local} = ${temp}.default`);
    else if (specifier.type === 'ImportNamespaceSpecifier') parts.push(`${local} = ${temp}`);
    else {
      const imported = specifier.imported.type === 'Literal' ? specifier.imported.value : specifier.imported.name;
      parts.push(`${local} = ${temp}[${JSON.stringify(imported)}]`);
    }
  }
  return `void (${parts.join(', ')});`;
}

/**
 * Rewrite a cell. Returns { body, isAsync, globals, functions, hasResult }:
 * `body` keeps the cell's lines; `globals` are the names to create on
 * globalThis before it runs; `functions` the hoisted function names to export.
 * Throws acorn's SyntaxError (with `loc`) for code that does not parse.
 */
function rewrite(code) {
  if (!acorn) return { body: code, original: (line, column) => ({ line, column }), isAsync: false, globals: [], functions: [], hasResult: true };
  let program;
  let objectLiteral = false;
  // A cell that is only `{ a: 1 }` is an object, as in Node's REPL.
  if (/^\s*\{/.test(code) && /\}\s*;?\s*$/.test(code)) {
    try {
      acorn.parseExpressionAt(`(${code.replace(/;\s*$/, '')})`, 0, PARSE_OPTIONS);
      objectLiteral = true;
    } catch {
      objectLiteral = false;
    }
  }
  if (objectLiteral) {
    return { body: `(${code.replace(/;\s*$/, '')}\n)`, original: (line, column) => ({ line, column: line === 1 ? column - 1 : column }), isAsync: false, globals: [], functions: [], hasResult: true };
  }
  program = parse(code, true);
  const isAsync = usesTopLevelAwait(code) || program.sourceType === 'module';
  const edits = []; // [position, deleteCount, text]
  const globals = [];
  const functions = [];
  let temps = 0;
  for (const statement of program.body) {
    switch (statement.type) {
      case 'VariableDeclaration': {
        edits.push([statement.start, statement.kind.length, 'void (']);
        for (const declarator of statement.declarations) {
          patternNames(declarator.id, globals);
          if (!declarator.init) {
            const name = declarator.id.name;
            const value = statement.kind === 'var' ? `globalThis[${JSON.stringify(name)}]` : 'undefined';
            edits.push([declarator.id.end, 0, ` = ${value}`]);
          }
        }
        const last = statement.declarations[statement.declarations.length - 1];
        edits.push([last.end, 0, ')']);
        break;
      }
      case 'ClassDeclaration':
        globals.push(statement.id.name);
        edits.push([statement.start, 0, `${statement.id.name} = `]);
        edits.push([statement.end, 0, ';']);
        break;
      case 'FunctionDeclaration':
        functions.push(statement.id.name);
        break;
      case 'ImportDeclaration': {
        const temp = `__cellbox_module_${temps++}`;
        globals.push(temp);
        for (const specifier of statement.specifiers) globals.push(specifier.local.name);
        const lines = code.slice(statement.start, statement.end).split('\n').length - 1;
        edits.push([statement.start, statement.end - statement.start, importAssignments(statement, temp) + '\n'.repeat(lines)]);
        break;
      }
      case 'ExportNamedDeclaration':
      case 'ExportDefaultDeclaration':
      case 'ExportAllDeclaration': {
        const error = new SyntaxError('export is not supported in a cell (declare the name instead; it is kept for later cells)');
        error.loc = locate(code, statement.start);
        error.pos = statement.start;
        throw error;
      }
      default:
        break;
    }
  }
  walk(program, (node) => {
    if (node.type === 'ImportExpression') edits.push([node.start, 'import'.length, IMPORT_FUNCTION]);
  });
  const last = program.body[program.body.length - 1];
  const directive = last && last.directive && /^use (strict|asm)$/.test(last.directive);
  const hasResult = Boolean(last && last.type === 'ExpressionStatement' && !directive);
  // A synchronous cell runs as a plain script, whose completion value is the
  // last expression's; an async one is a function that returns it.
  if (hasResult && isAsync) {
    edits.push([last.start, 0, 'return (']);
    edits.push([last.expression.end, 0, ')']);
  }
  const { text, original } = applyEdits(code, edits);
  return { body: text, original, isAsync, globals, functions: isAsync ? functions : [], hasResult };
}

/**
 * Apply [position, deleteCount, text] edits; also return `original(line,
 * column)`, which maps a 1-based line and column in the result back to the
 * cell's own source (inserted text maps to where it was inserted).
 */
function applyEdits(code, edits) {
  const ordered = edits.map((edit, index) => [...edit, index]).sort((a, b) => a[0] - b[0] || a[3] - b[3]);
  let out = '';
  let from = 0;
  const spans = []; // [start in out, start in code, length]
  for (const [position, remove, text] of ordered) {
    spans.push([out.length, from, position - from]);
    out += code.slice(from, position);
    spans.push([out.length, position, -text.length]); // inserted: maps to `position`
    out += text;
    from = position + remove;
  }
  spans.push([out.length, from, code.length - from]);
  out += code.slice(from);
  const outLines = lineStarts(out);
  const codeLines = lineStarts(code);
  const original = (line, column) => {
    const offset = (outLines[line - 1] ?? out.length) + column - 1;
    let mapped = offset;
    for (const [start, source, length] of spans) {
      if (offset < start) break;
      mapped = length >= 0 ? source + Math.min(offset - start, length) : source;
    }
    let index = codeLines.length - 1;
    while (index > 0 && codeLines[index] > mapped) index -= 1;
    return { line: index + 1, column: mapped - codeLines[index] + 1 };
  };
  return { text: out, original };
}

function lineStarts(text) {
  const starts = [0];
  for (let i = 0; i < text.length; i += 1) if (text[i] === '\n') starts.push(i + 1);
  return starts;
}

function locate(code, position) {
  const before = code.slice(0, position).split('\n');
  return { line: before.length, column: before[before.length - 1].length };
}

/**
 * Is `code` a whole cell yet? "complete", "incomplete" (an open bracket,
 * string, template or comment at the end, as Node's REPL decides) or "invalid".
 */
function completeness(code) {
  if (!acorn) return { status: 'complete', indent: '' };
  if (!code.trim()) return { status: 'complete', indent: '' };
  try {
    parse(code, true);
    return { status: 'complete', indent: '' };
  } catch (error) {
    const message = String(error.message);
    const atEnd = typeof error.pos === 'number' && error.pos >= code.trimEnd().length;
    if (atEnd || /^Unterminated/.test(message)) return { status: 'incomplete', indent: nextIndent(code) };
    return { status: 'invalid', indent: '' };
  }
}

function nextIndent(code) {
  const lines = code.replace(/\n$/, '').split('\n');
  const last = lines[lines.length - 1];
  const indent = /^\s*/.exec(last)[0];
  return /[{([]\s*$/.test(last) ? indent + '  ' : indent;
}

module.exports = { rewrite, completeness, IMPORT_FUNCTION, available: () => acorn !== null };
