'use strict';
// The JavaScript runner on its own, driven over its pipes like the host does.
// Run with: node --test tests/runner-js/

const test = require('node:test');
const assert = require('node:assert');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { Runner } = require('./harness');

async function withRunner(body) {
  const runner = new Runner();
  await runner.ready();
  try {
    await body(runner);
  } finally {
    await runner.close();
  }
}

test('declarations persist across cells and can be declared again', () =>
  withRunner(async (r) => {
    await r.run('const a = 1; let b = 2\nfunction f(x) { return x * 2 }\nclass K { m() { return 7 } }');
    assert.deepStrictEqual((await r.run('f(a + b) + new K().m()')).results, ['13']);
    const again = await r.run('const a = 10; a');
    assert.deepStrictEqual(again.results, ['10']);
    assert.deepStrictEqual((await r.run('let [x, {y}] = [1, {y: 2}]; var z; x + y')).results, ['3']);
  }));

test('top-level await and a promise as the last value', () =>
  withRunner(async (r) => {
    const out = await r.run('const v = await new Promise((ok) => setTimeout(() => ok(21), 5));\nv * 2');
    assert.deepStrictEqual(out.results, ['42']);
    assert.deepStrictEqual((await r.run('Promise.resolve("p")')).results, ["'p'"]);
  }));

test('the last value: undefined, statements and object literals', () =>
  withRunner(async (r) => {
    assert.deepStrictEqual((await r.run('console.log("x")')).results, []);
    assert.deepStrictEqual((await r.run('if (true) { 1 }')).results, []);
    assert.deepStrictEqual((await r.run('{ a: 1 }')).results, ['{ a: 1 }']);
    assert.deepStrictEqual((await r.run('"s";')).results, ["'s'"]);
  }));

test('errors point at the cell lines, runner frames hidden', () =>
  withRunner(async (r) => {
    const out = await r.run('const x = null;\n\nx.foo');
    assert.strictEqual(out.done.status, 'error');
    const [error] = out.errors;
    assert.strictEqual(error.ename, 'TypeError');
    const text = error.traceback.join('');
    assert.match(text, /<cell-1>:3:3/);
    assert.match(text, /x\.foo/);
    assert.doesNotMatch(text, /runner-js|node:vm|node:internal/);
    const syntax = await r.run('let ok = 1\nfoo bar');
    assert.strictEqual(syntax.errors[0].ename, 'SyntaxError');
    assert.match(syntax.errors[0].traceback.join(''), /<cell-2>:2:5/);
    const later = await r.run('await 1\nconst o = {};\n  o.f()');
    assert.match(later.errors[0].traceback.join(''), /<cell-3>:3:5\n\s+o\.f\(\)/);
  }));

test('output and displays arrive in order', () =>
  withRunner(async (r) => {
    const out = await r.run('console.log("one"); display({a: 1}); process.stderr.write("two\\n"); emitStatus("phase", {title: "t"})');
    // Output written before a frame is in its pipe when the frame is written
    // (the host reads the pipes before routing each frame).
    const kinds = out.events.filter((e) => e.type !== 'started').map((e) => e.type);
    assert.strictEqual(kinds[0], 'stdout');
    assert.strictEqual(kinds[kinds.length - 1], 'done');
    assert.deepStrictEqual(out.displays[0]['application/json'], { a: 1 });
    assert.deepStrictEqual(out.displays[1]['application/x-cellbox-status'], { op: 'phase', title: 't' });
  }));

test('images from buffers, html and markdown', () =>
  withRunner(async (r) => {
    const png = '"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="';
    const out = await r.run(`const png = Buffer.from(${png}, "base64"); display(png); display.html("<b>x</b>")`);
    assert.ok(out.displays[0]['image/png'].startsWith('iVBOR'));
    assert.deepStrictEqual(out.events.find((e) => e.type === 'result').bundle['text/html'], '<b>x</b>');
    const md = await r.run('display("# T", "text/markdown"); new Uint8Array(png)');
    assert.strictEqual(md.displays[0]['text/markdown'], '# T');
    assert.ok(md.events.find((e) => e.type === 'result').bundle['image/png']);
  }));

test('__dirname is the working directory', () =>
  withRunner(async (r) => {
    assert.deepStrictEqual((await r.run('__dirname === process.cwd()')).results, ['true']);
  }));

test('stdin reads fail fast', () =>
  withRunner(async (r) => {
    const out = await r.run('require("fs").readFileSync(0)');
    assert.strictEqual(out.errors[0].ename, 'StdinNotSupportedError');
  }));

test('errors thrown later by timers never crash the kernel', () =>
  withRunner(async (r) => {
    // The timer says (with a file) that it runs, then throws: the next cell is
    // sent once it has, not after a guess at how long that takes. (Node reports
    // the error before it reads another request.)
    const fired = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'cellbox-runner-')), 'fired');
    const timer = `setTimeout(() => { require("fs").writeFileSync(${JSON.stringify(fired)}, ""); throw new Error("later") }, 1)`;
    await r.run(`${timer}; Promise.reject(new Error("nobody"))\n1`);
    while (!fs.existsSync(fired)) await new Promise((ok) => setTimeout(ok, 10));
    fs.rmSync(path.dirname(fired), { recursive: true });
    const next = await r.run('2');
    assert.match(next.stderr, /later/);
    assert.deepStrictEqual(next.results, ['2']);
    const running = await r.run('setTimeout(() => { throw new RangeError("while awaiting") }, 1);\nawait new Promise((ok) => setTimeout(ok, 2000))');
    assert.strictEqual(running.errors[0].ename, 'RangeError');
  }));

test('SIGINT breaks a synchronous loop and abandons an await; state is kept', () =>
  withRunner(async (r) => {
    await r.run('let kept = 5');
    // Each SIGINT comes once the cell is where the test wants it (it printed;
    // console.log writes at once), not after a guess: one sent between cells
    // would be ignored.
    const loop = r.run('console.log("spinning"); while (true) {}');
    await r.waitUntil((e) => e.type === 'stdout' && e.data.includes('spinning'));
    r.interrupt();
    const out = await loop;
    assert.strictEqual(out.done.cancelled, true);
    // Printed a turn of the event loop after the synchronous part, so the cell awaits.
    const pending = r.run('await new Promise((ok) => setTimeout(ok, 0)); console.log("awaiting"); await new Promise(() => {})');
    await r.waitUntil((e) => e.type === 'stdout' && e.data.includes('awaiting'));
    r.interrupt();
    assert.strictEqual((await pending).done.cancelled, true);
    assert.deepStrictEqual((await r.run('kept')).results, ['5']);
  }));

test('completeness like the Node REPL', () =>
  withRunner(async (r) => {
    assert.strictEqual((await r.complete('function f() {')).status, 'incomplete');
    assert.strictEqual((await r.complete('`abc')).status, 'incomplete');
    assert.strictEqual((await r.complete('1 + 1')).status, 'complete');
    assert.strictEqual((await r.complete('a b')).status, 'invalid');
  }));

test('child processes write to the cell output', () =>
  withRunner(async (r) => {
    const out = await r.run('require("child_process").execSync("echo child", {stdio: "inherit"}); 3');
    assert.strictEqual(out.stdout, 'child\n');
  }));

test('a write stopped half-way by an interrupt does not hold back later output', () =>
  withRunner(async (r) => {
    // A SIGINT terminates the cell's script wherever it is, Node's stream code
    // included. A vm timeout terminates the same way, at a point that is
    // almost always inside a write here.
    const code =
      'const vm = require("vm");\n' +
      'for (let i = 0; i < 20; i++) {\n' +
      '  try { vm.runInThisContext("for (;;) process.stdout.write(\\"x\\")", { timeout: 5 }); } catch (e) {}\n' +
      '}\n' +
      'console.log("\\nstill writing")';
    const out = await r.run(code);
    assert.strictEqual(out.done.status, 'ok', JSON.stringify(out.errors));
    assert.ok(out.stdout.endsWith('\nstill writing\n'), out.stdout.slice(-80));
    assert.strictEqual((await r.run('console.log("next cell"); 1')).stdout, 'next cell\n');
  }));
