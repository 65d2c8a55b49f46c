'use strict';
// Drives the JavaScript runner the way the host does: requests on fd 0, the
// cell's stdout/stderr on fd 1/2, frames on fd 3, diagnostics on fd 4.

const { spawn } = require('child_process');
const path = require('path');
const readline = require('readline');

const RUNNER = path.join(__dirname, '..', '..', 'runner-js', 'runner.js');

class Runner {
  constructor(options = {}) {
    this.child = spawn(process.execPath, ['--expose-internals', RUNNER, '--host-pid', String(process.pid), '--frames-fd', '3', '--diagnostics-fd', '4'], {
      cwd: options.cwd || process.cwd(),
      stdio: ['pipe', 'pipe', 'pipe', 'pipe', 'pipe'],
      detached: true,
    });
    this.events = [];
    this.waiters = [];
    this.diagnostics = '';
    this.exited = new Promise((resolve) => this.child.on('exit', (code, signal) => resolve({ code, signal })));
    const push = (event) => {
      this.events.push(event);
      for (const waiter of this.waiters.splice(0)) waiter();
    };
    // Output is read before each frame is handled, as the host does.
    this.child.stdout.on('data', (data) => push({ type: 'stdout', data: data.toString() }));
    this.child.stderr.on('data', (data) => push({ type: 'stderr', data: data.toString() }));
    this.child.stdio[4].on('data', (data) => (this.diagnostics += data.toString()));
    readline.createInterface({ input: this.child.stdio[3] }).on('line', (line) => {
      setImmediate(() => push(JSON.parse(line)));
    });
    this.next = 1;
  }

  async waitFor(predicate) {
    for (;;) {
      const index = this.events.findIndex(predicate);
      if (index >= 0) return this.events.splice(0, index + 1);
      await new Promise((resolve) => this.waiters.push(resolve));
    }
  }

  /** Wait until an event `predicate` picks has arrived, leaving it for the next run() to collect. */
  async waitUntil(predicate) {
    while (!this.events.some(predicate)) {
      await new Promise((resolve) => this.waiters.push(resolve));
    }
  }

  async ready() {
    const [ready] = (await this.waitFor((e) => e.type === 'ready')).slice(-1);
    return ready;
  }

  /** Run code; resolves to { stdout, stderr, results, errors, displays, done }. */
  async run(code, extra = {}) {
    const id = `r${this.next++}`;
    this.child.stdin.write(JSON.stringify({ id, code, silent: false, storeHistory: true, ...extra }) + '\n');
    const events = await this.waitFor((e) => e.type === 'done' && e.id === id);
    return summarize(events);
  }

  async complete(code) {
    const id = `c${this.next++}`;
    this.child.stdin.write(JSON.stringify({ type: 'complete', id, code }) + '\n');
    const events = await this.waitFor((e) => e.type === 'completeness' && e.id === id);
    return events[events.length - 1];
  }

  interrupt() {
    process.kill(-this.child.pid, 'SIGINT');
  }

  async close() {
    this.child.stdin.write('{"type":"exit"}\n');
    return this.exited;
  }
}

function summarize(events) {
  const text = (type) => events.filter((e) => e.type === type).map((e) => e.data).join('');
  return {
    events,
    stdout: text('stdout'),
    stderr: text('stderr'),
    results: events.filter((e) => e.type === 'result').map((e) => e.bundle['text/plain']),
    errors: events.filter((e) => e.type === 'error'),
    displays: events.filter((e) => e.type === 'display').map((e) => e.bundle),
    done: events[events.length - 1],
  };
}

module.exports = { Runner };
