'use strict';
// TypeScript cells: types stripped by Node (22.13+) or, on an older Node, by
// the vendored stripper (runner-js/vendor/amaro), positions kept either way.
// Run with: node --test tests/runner-js/

const test = require('node:test');
const assert = require('node:assert');
const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');
const { Runner } = require('./harness');

const VENDOR = path.join(__dirname, '..', '..', 'runner-js', 'vendor', 'amaro');

async function withRunner(body) {
  const runner = new Runner();
  await runner.ready();
  try {
    await body(runner);
  } finally {
    await runner.close();
  }
}

const ts = (r, code) => r.run(code, { typescript: true });

test('TypeScript cells run on this Node: annotations, interfaces, aliases, generics, casts, state across cells', () =>
  withRunner(async (r) => {
    const first = await ts(
      r,
      [
        'interface Point { x: number; y: number }',
        'type Pair<T> = [T, T];',
        'function swap<T>(pair: Pair<T>): Pair<T> { return [pair[1], pair[0]] }',
        'const origin: Point = { x: 1, y: 2 } as Point;',
        'let label: string = "p";',
        'class Box<T> { private value: T; constructor(value: T) { this.value = value } get(): T { return this.value } }',
        'import type { Stats } from "fs";',
        'declare const ambient: string;',
        'origin satisfies Point;',
      ].join('\n'),
    );
    assert.deepStrictEqual(first.errors, [], JSON.stringify(first.errors));
    const second = await ts(r, 'const p: Point = { ...origin, x: 5 };\nswap<number>([p.x, p.y]).join(",") + " " + new Box<string>(label).get()');
    assert.deepStrictEqual(second.errors, [], JSON.stringify(second.errors));
    assert.deepStrictEqual(second.results, ["'2,5 p'"]);
    // A TypeScript cell's declarations are seen by a JavaScript cell, and the other way round.
    assert.deepStrictEqual((await r.run('origin.x + 10')).results, ['11']);
    await r.run('const fromJs = 4');
    assert.deepStrictEqual((await ts(r, 'const n: number = fromJs * 2; n')).results, ['8']);
  }));

test('no warning about type stripping reaches a cell (Node 22.13+ warns once that it is experimental)', () =>
  withRunner(async (r) => {
    const first = await ts(r, 'const a: number = 1; a');
    const second = await ts(r, 'await new Promise((ok) => setTimeout(ok, 20)); const b: number = 2; b');
    for (const out of [first, second]) assert.doesNotMatch(out.stderr, /Warning/);
    assert.strictEqual(second.results[0], '2');
    // A cell's own warnings still show.
    const own = await ts(r, 'process.emitWarning("the cell\'s own", "ExperimentalWarning");\nawait new Promise((ok) => setTimeout(ok, 50))');
    assert.match(own.stderr, /ExperimentalWarning: the cell's own/);
  }));

test('top-level await in a TypeScript cell', () =>
  withRunner(async (r) => {
    const out = await ts(r, 'const v: number = await new Promise<number>((ok) => setTimeout(() => ok(21), 5));\nv * 2');
    assert.deepStrictEqual(out.errors, [], JSON.stringify(out.errors));
    assert.deepStrictEqual(out.results, ['42']);
  }));

test('errors in a TypeScript cell point at its own lines and columns', () =>
  withRunner(async (r) => {
    const thrown = await ts(r, 'interface Q {\n  a: string;\n}\nconst q: Q | null = null as Q | null;\nq!.a.length');
    assert.strictEqual(thrown.errors[0].ename, 'TypeError');
    assert.match(thrown.errors[0].traceback.join(''), /<cell-1>:5:4\n\s+q!\.a\.length/);
    const deep = await ts(r, 'function boom(n: number): never {\n  throw new Error(`n=${n}`);\n}\nboom(3 as number)');
    const text = deep.errors[0].traceback.join('');
    assert.match(text, /at boom \(<cell-2>:2:9\)/);
    assert.match(text, /<cell-2>:4:1/);
    const syntax = await ts(r, 'const a: number = 1;\nlet b: = 2');
    assert.strictEqual(syntax.errors[0].ename, 'SyntaxError');
    assert.match(syntax.errors[0].traceback.join(''), /<cell-3>:2:8/);
  }));

test('an enum is refused with the construct named and what to use instead', () =>
  withRunner(async (r) => {
    const out = await ts(r, 'const before = 1;\nenum Color { Red, Green }');
    assert.strictEqual(out.done.status, 'error');
    const [error] = out.errors;
    assert.strictEqual(error.ename, 'SyntaxError');
    assert.match(error.evalue, /TypeScript enum is not supported/);
    assert.match(error.evalue, /const object/);
    assert.match(error.traceback.join(''), /<cell-1>:2:1\nenum Color/);
    // The kernel goes on.
    assert.deepStrictEqual((await ts(r, 'const ok: string = "yes"; ok')).results, ["'yes'"]);
  }));

test('the pre-run check reports TypeScript syntax errors and refused constructs', () =>
  withRunner(async (r) => {
    r.child.stdin.write(
      JSON.stringify({
        type: 'check',
        id: 'k1',
        cells: [
          { number: 1, code: 'const a: number = 1', typescript: true },
          { number: 2, code: 'let b: = 2', typescript: true },
          { number: 3, code: '\nenum E { A }', typescript: true },
        ],
      }) + '\n',
    );
    const events = await r.waitFor((e) => e.type === 'checked' && e.id === 'k1');
    const results = events[events.length - 1].cells;
    assert.strictEqual(results[0].error, null);
    assert.strictEqual(results[1].error.ename, 'SyntaxError');
    assert.strictEqual(results[1].error.line, 1);
    assert.strictEqual(results[2].error.ename, 'SyntaxError');
    assert.strictEqual(results[2].error.line, 2);
  }));

test('the vendored stripper: positions kept, enum refused, loaded only when asked for', () => {
  const typescript = require('../../runner-js/lib/typescript');
  assert.strictEqual(typescript.vendoredLoaded(), false, 'requiring the module does not load the stripper');
  const code = 'let a: number = 1;\nfunction f<T>(x: T): T { return x }\nconst b = a as unknown as string;';
  const stripped = typescript.stripVendored(code);
  assert.strictEqual(stripped.length, code.length);
  assert.deepStrictEqual(
    stripped.split('\n').map((line) => line.length),
    code.split('\n').map((line) => line.length),
  );
  assert.match(stripped, /^let a {9}= 1;/);
  assert.strictEqual(typescript.vendoredLoaded(), true);
  assert.throws(
    () => typescript.stripVendored('\n  enum E { A }'),
    (error) => error.name === 'SyntaxError' && error.code === 'ERR_UNSUPPORTED_TYPESCRIPT_SYNTAX' && error.loc.line === 2 && error.loc.column === 2,
  );
  assert.throws(
    () => typescript.stripVendored('let x: = 1'),
    (error) => error.name === 'SyntaxError' && error.code === 'ERR_INVALID_TYPESCRIPT_SYNTAX' && error.loc.line === 1 && error.loc.column === 7,
  );
});

test('JavaScript cells never load the vendored stripper', () =>
  withRunner(async (r) => {
    // `require` in a cell resolves from the cwd, but its cache is the process's.
    const probe = 'Object.keys(require.cache).some((file) => file.includes("amaro"))';
    await r.run('const a = [1, 2].map((n) => n * 2); a');
    assert.deepStrictEqual((await r.run(probe)).results, ['false']);
    await ts(r, 'const b: number = 1');
    const builtin = typeof require('node:module').stripTypeScriptTypes === 'function';
    assert.deepStrictEqual((await r.run(probe)).results, [builtin ? 'false' : 'true']);
  }));

test('a stripper that cannot load says how to get a Node that strips types, or why none would help', { skip: process.platform !== 'linux' }, () => {
  const { spawnSync } = require('node:child_process');
  const lib = path.join(__dirname, '..', '..', 'runner-js', 'lib', 'typescript.js');
  const script = `try { require(${JSON.stringify(lib)}).stripVendored('let a: number = 1') } catch (e) { process.stdout.write(e.name + ': ' + e.message) }`;
  // WebAssembly cannot reserve its memory under a small address-space rlimit (--memory-limit without cgroups).
  const run = (env) =>
    spawnSync('/bin/sh', ['-c', 'ulimit -v 1500000 && exec "$0" -e "$1"', process.execPath, script], { env: { ...process.env, ...env }, encoding: 'utf8' }).stdout;
  const plain = run({});
  if (plain === '') return; // this Node's WebAssembly fits under the limit (Node 24 does)
  assert.match(plain, /^TypeScriptNotSupported: .*Node 22\.13 or newer.*nvm install 22.*CELLBOX_NODE/);
  const limited = run({ CELLBOX_MEMORY_RLIMIT: '1.4 GiB' });
  assert.match(limited, /^TypeScriptNotSupported: .*memory limit \(1\.4 GiB\) is an address-space rlimit/);
  assert.doesNotMatch(limited, /nvm install/);
});

test('the vendored files are the recorded upstream ones (scripts/update-ts-stripper)', () => {
  const manifest = JSON.parse(fs.readFileSync(path.join(VENDOR, 'VENDOR.json'), 'utf8'));
  assert.strictEqual(manifest.package, 'amaro');
  assert.match(manifest.integrity, /^sha512-/);
  assert.deepStrictEqual(Object.keys(manifest.files).sort(), ['LICENSE', 'LICENSE.md', 'internal.js']);
  for (const [file, sha256] of Object.entries(manifest.files)) {
    const actual = crypto.createHash('sha256').update(fs.readFileSync(path.join(VENDOR, file))).digest('hex');
    assert.strictEqual(actual, sha256, `${file} differs from amaro@${manifest.version}: run scripts/update-ts-stripper`);
  }
});
