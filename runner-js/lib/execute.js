'use strict';
// Running one cell: rewrite (transform.js), compile, run in the kernel's
// global scope, then report the last value or the error.
//
// Interrupts: while the cell's synchronous part runs, `breakOnSigint` turns
// SIGINT into an exception (an endless `while (true) {}` ends). Once the cell
// awaits, SIGINT abandons it: the cell ends as cancelled at once and its
// pending promises are left to settle unobserved. Code spinning after an
// `await` cannot be broken by a signal; the host's interrupt → kill ladder
// ends it.

const vm = require('vm');
const transform = require('./transform');
const typescript = require('./typescript');
const errors = require('./errors');
const { bundleFor } = require('./display');
const wire = require('./wire');
const { IMPORT_FUNCTION } = transform;

class Interrupted extends Error {
  constructor() {
    super('the cell was interrupted (SIGINT)');
    this.name = 'Interrupted';
  }
}

class Executor {
  constructor(send) {
    this.send = send; // (frame) => void
    this.executionCount = 0;
    this.abandon = null; // rejects the running cell's wait (interrupt, uncaught error)
  }

  /**
   * The pre-run check of one cell: parse it (types stripped first for
   * TypeScript) exactly as `run` would, without running it. Returns null, or
   * the error with its line and caret ({ ename, evalue, traceback, line }).
   */
  syntaxError(code, number, isTypeScript) {
    const where = `Cell ${number}`;
    let source = code;
    if (isTypeScript) {
      try {
        source = typescript.strip(code);
      } catch (error) {
        if (!(error instanceof SyntaxError)) return null; // no type stripping here: run reports it
        const described = describeStripError(error, where, code);
        const line = error.loc ? error.loc.line : null;
        if (line) described.traceback[0] = `  ${where}, line ${line}\n`;
        return { ...described, line };
      }
    }
    try {
      transform.rewrite(source);
      return null;
    } catch (error) {
      if (!(error instanceof SyntaxError)) return null;
      const described = errors.describeSyntax(error, where, code);
      const line = error.loc ? error.loc.line : null;
      // "Cell 2, line 3" as the Python check says it.
      described.traceback[0] = `  ${where}, line ${line || 1}\n`;
      return { ...described, line };
    }
  }

  /** Run `code`; returns { status, cancelled }. */
  async run(request) {
    const { code, silent } = request;
    const storeHistory = request.storeHistory !== false;
    if (storeHistory) this.executionCount += 1;
    if (!code.trim()) return { status: 'ok', cancelled: false };
    const filename = storeHistory ? `<cell-${this.executionCount}>` : '<cellbox>';
    let source = code;
    if (request.typescript) {
      try {
        source = typescript.strip(code);
      } catch (error) {
        this.error(error instanceof SyntaxError ? describeStripError(error, filename, code) : { ename: error.name, evalue: error.message, traceback: [`${error.name}: ${error.message}\n`] });
        return { status: 'error', cancelled: false };
      }
    }
    // Stripping keeps every position, so errors quote the cell's own lines (types and all).
    errors.rememberSource(filename, code, null);
    let plan;
    try {
      plan = transform.rewrite(source);
    } catch (error) {
      if (!(error instanceof SyntaxError)) throw error;
      this.error(errors.describeSyntax(error, filename, code));
      return { status: 'error', cancelled: false };
    }
    errors.rememberSource(filename, code, plan.original, plan.body.split('\n').length);
    for (const name of plan.globals) if (!(name in globalThis)) globalThis[name] = undefined;
    let value;
    try {
      value = await this.evaluate(plan, filename);
    } catch (error) {
      if (error instanceof Interrupted || (error && error.code === 'ERR_SCRIPT_EXECUTION_INTERRUPTED')) {
        const described = errors.describe(new Interrupted());
        described.traceback = [`Interrupted: ${described.evalue}\n`];
        this.error(described);
        return { status: 'error', cancelled: true };
      }
      this.error(errors.describe(error));
      return { status: 'error', cancelled: false };
    }
    if (!silent && plan.hasResult && value !== undefined) {
      const { bundle, metadata } = bundleFor(value, false);
      this.send(wire.bundleFrame('result', request.id, bundle, metadata));
    }
    return { status: 'ok', cancelled: false };
  }

  async evaluate(plan, filename) {
    let script;
    if (plan.isAsync) {
      const exports = plan.functions.map((name) => `globalThis[${JSON.stringify(name)}] = ${name}; `).join('');
      const wrapped = `(async function () { ${exports}\n${plan.body}\n}).call(globalThis)`;
      script = new vm.Script(wrapped, { filename, lineOffset: -1 });
    } else {
      script = new vm.Script(plan.body, { filename });
    }
    const abandoned = new Promise((_, reject) => {
      this.abandon = reject;
    });
    abandoned.catch(() => {});
    try {
      let value = script.runInThisContext({ breakOnSigint: true, displayErrors: false });
      // A promise as the last value is awaited (async cells do so anyway).
      if (value && typeof value.then === 'function') value = await Promise.race([value, abandoned]);
      return value;
    } finally {
      this.abandon = null;
    }
  }

  /** SIGINT while the cell awaits: give up on it. */
  interrupt() {
    if (this.abandon) this.abandon(new Interrupted());
  }

  /** An uncaught error (timer, unawaited promise) while the cell awaits: the cell fails with it. */
  failRunning(error) {
    if (!this.abandon) return false;
    this.abandon(error);
    return true;
  }

  error(described) {
    this.send(wire.error(this.requestId, described.ename, described.evalue, described.traceback));
  }
}

/** A TypeScript cell's stripping error: with its line and caret where its position is known. */
function describeStripError(error, filename, code) {
  if (error.loc) return errors.describeSyntax(error, filename, code);
  return { ename: 'SyntaxError', evalue: error.message, traceback: [`${filename}\n`, `\nSyntaxError: ${error.message}\n`] };
}

module.exports = { Executor, IMPORT_FUNCTION };
