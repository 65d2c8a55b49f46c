'use strict';
// The runner's main loop: set up the process, answer requests one at a time
// until told to exit.
//
// Set-up, in order: take the protocol fds private (channel.js), point
// process.stdout/stderr/console at the cell's pipes and make stdin reads fail
// (output.js), put the prelude on the global object, ignore SIGINT between
// cells, catch errors thrown later by timers or unawaited promises, watch for
// the host's death, then send the `ready` handshake.

const fs = require('fs');
const net = require('net');
const readline = require('readline');
const { Channel } = require('./channel');
const output = require('./output');
const display = require('./display');
const prelude = require('./prelude');
const bridge = require('./bridge');
const errors = require('./errors');
const transform = require('./transform');
const modules = require('./modules');
const { Executor, IMPORT_FUNCTION } = require('./execute');
const wire = require('./wire');

const PARENT_POLL_MS = 1000;

function hostPid(argv) {
  const index = argv.indexOf('--host-pid');
  const value = index >= 0 ? Number(argv[index + 1]) : NaN;
  return Number.isInteger(value) ? value : null;
}

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return error.code === 'EPERM';
  }
}

/** Exit, taking the process group along, once the host has died. */
function watchHost(argv) {
  const parent = process.ppid;
  const host = hostPid(argv);
  const timer = setInterval(() => {
    if (process.ppid !== parent || (host !== null && !alive(host))) {
      try {
        process.kill(-process.pid, 'SIGKILL');
      } catch {
        // not a group leader: only this process goes
      }
      process.exit(1);
    }
  }, PARENT_POLL_MS);
  timer.unref();
}

class Kernel {
  constructor(channel) {
    this.channel = channel;
    this.requestId = null;
    this.background = []; // errors thrown while no cell awaited
    this.held = []; // frame lines kept back by send(frame, true)
    this.executor = new Executor((frame) => this.send(frame, frame.type === 'result'));
    bridge.connect((frame) => this.send(frame), () => this.requestId);
    display.setSink((kind, bundle, metadata) => {
      this.send(wire.bundleFrame(kind, this.requestId, bundle, metadata));
    });
  }

  /**
   * Write a frame. `hold` keeps it back until the next frame that is not held,
   * so a quick cell's result and done leave in one write and the host wakes
   * once for them.
   */
  send(frame, hold = false) {
    let line;
    try {
      line = JSON.stringify(frame);
    } catch {
      line = JSON.stringify({ ...frame, bundle: { 'text/plain': String(frame.bundle && frame.bundle['text/plain']) } });
    }
    this.held.push(line + '\n');
    if (!hold) this.channel.writeFrame(this.held.splice(0).join(''));
  }

  /** A timer or an unawaited promise threw: fail the awaiting cell, or keep it for the next one. */
  uncaught(error, origin) {
    if (this.executor.failRunning(error)) return;
    this.background.push({ error, origin });
  }

  reportBackground() {
    const pending = this.background.splice(0);
    for (const { error, origin } of pending) {
      const { traceback } = errors.describe(error);
      const what = origin === 'unhandledRejection' ? 'an unhandled promise rejection' : 'an uncaught exception';
      process.stderr.write(`[cellbox: ${what} happened between cells]\n${traceback.join('')}`);
    }
  }

  async handle(request) {
    this.requestId = request.id;
    this.executor.requestId = request.id;
    // Written at once, before any of the cell runs: the host blames a
    // kernel's death on this cell only once it has read this frame.
    this.send(wire.started(request.id));
    let outcome = { status: 'error', cancelled: false };
    // Variables set for this request only are put back after it.
    const savedEnv = request.restoreEnv && request.env
      ? Object.fromEntries(Object.keys(request.env).map((key) => [key, process.env[key]]))
      : null;
    try {
      if (this.applyContext(request)) {
        this.reportBackground();
        outcome = await this.executor.run(request);
      }
    } catch (error) {
      this.executor.error(errors.describe(error));
    } finally {
      for (const [key, value] of Object.entries(savedEnv || {})) {
        if (value === undefined) delete process.env[key];
        else process.env[key] = value;
      }
      this.send(wire.done(request.id, outcome.status, this.executor.executionCount, outcome.cancelled));
      this.requestId = null;
    }
  }

  applyContext(request) {
    try {
      for (const [key, value] of Object.entries(request.env || {})) {
        if (value === null) delete process.env[key];
        else process.env[key] = value;
      }
      if (typeof request.cwd === 'string') process.chdir(request.cwd);
      return true;
    } catch (error) {
      const name = error.code || error.name;
      this.executor.error({ ename: name, evalue: error.message, traceback: [`${name}: ${error.message}\n`] });
      return false;
    }
  }

  complete(request) {
    const answer = transform.completeness(request.code);
    this.send(wire.completeness(request.id, answer.status, answer.indent));
  }

  /** The pre-run check: parse each cell without running it (no linter for JavaScript). */
  check(request) {
    const cells = request.cells;
    const notes = [];
    if (!transform.available()) {
      notes.push('Syntax check: this Node does not expose its parser (acorn), so JavaScript cells were not checked.');
    }
    const results = cells.map(({ number, code, typescript }) => {
      const error = transform.available() ? this.executor.syntaxError(code, number, Boolean(typescript)) : null;
      return { error, findings: [] };
    });
    if (request.lint === true && cells.length) notes.push('Lint: JavaScript/TypeScript cells are not linted.');
    this.send(wire.checked(request.id, results, notes));
  }

  protocolError(message, id) {
    this.send(wire.error(id, 'ProtocolError', message, []));
    if (id !== null) this.send(wire.done(id, 'error', this.executor.executionCount, false));
  }
}

let activeChannel = null;

async function serve(argv) {
  const channel = new Channel(argv);
  activeChannel = channel;
  output.install(channel.outputFds);
  prelude.install(globalThis);
  globalThis.require = modules.cellRequire;
  // Scripts often locate files from their own folder; a cell's folder is the cwd.
  Object.defineProperty(globalThis, '__dirname', { get: () => process.cwd(), configurable: true });
  globalThis[IMPORT_FUNCTION] = modules.cellImport;
  const kernel = new Kernel(channel);
  process.on('SIGINT', () => kernel.executor.interrupt());
  process.on('uncaughtException', (error) => kernel.uncaught(error, 'uncaughtException'));
  process.on('unhandledRejection', (error) => kernel.uncaught(error, 'unhandledRejection'));
  watchHost(argv);

  // A socket handle, not a file stream: reads wait in the event loop, not in a
  // worker thread that exiting would have to wait for.
  const input = new net.Socket({ fd: channel.requests, readable: true, writable: false });
  const lines = readline.createInterface({ input, crlfDelay: Infinity });
  kernel.send(wire.ready(process.pid, process.versions.node, process.execPath, transform.available()));
  // Bridge answers and interrupts are handled as they arrive, even while a
  // cell runs; every other request waits its turn.
  const queue = [];
  let wake = null;
  let closed = false;
  lines.on('line', (line) => {
    if (!line.trim()) return;
    let request;
    try {
      request = wire.parseRequest(line);
    } catch (error) {
      if (!(error instanceof wire.ProtocolError)) throw error;
      request = error;
    }
    if (request.type === 'bridge_result') {
      bridge.deliver(request);
      return;
    }
    if (request.type === 'interrupt') {
      // As SIGINT would (the host sends this line where it has no signals).
      kernel.executor.interrupt();
      return;
    }
    queue.push(request);
    if (wake) wake();
  });
  lines.on('close', () => {
    closed = true;
    if (wake) wake();
  });
  for (;;) {
    if (!queue.length) {
      if (closed) break;
      await new Promise((resolve) => {
        wake = resolve;
      });
      wake = null;
      continue;
    }
    const request = queue.shift();
    if (request instanceof wire.ProtocolError) {
      kernel.protocolError(request.message, request.requestId);
    } else if (request.type === 'exit') {
      // Not `break`: closing the request stream would wait for its pending read.
      process.exit(0);
    } else if (request.type === 'complete') {
      kernel.complete(request);
    } else if (request.type === 'check') {
      kernel.check(request);
    } else if (request.type === 'execute') {
      await kernel.handle(request);
    } else {
      // snapshot, restore, fork: Python kernels only.
      kernel.protocolError(`the JavaScript runner does not take ${request.type} requests`, request.id);
    }
  }
  process.exit(0);
}

/** Run the kernel; a failure of the runner itself goes to the diagnostics fd, exit status 70. */
function main(argv) {
  serve(argv).catch((error) => {
    const text = `cellbox runner failed: ${error && error.stack}\n`;
    if (activeChannel) activeChannel.diagnose(text);
    else fs.writeSync(2, text);
    process.exit(70);
  });
}

module.exports = { main };
