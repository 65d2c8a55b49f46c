'use strict';
// The JavaScript runner's bridge: calls go out as bridge_call frames while the
// cell runs, answers come back on the request pipe in any order.
// Run with: node --test tests/runner-js/

const test = require('node:test');
const assert = require('node:assert');
const { Runner } = require('./harness');

function answer(runner, frame, value, error) {
  const line = error ? { type: 'bridge_result', id: frame.id, ok: false, error } : { type: 'bridge_result', id: frame.id, ok: true, value };
  runner.child.stdin.write(JSON.stringify(line) + '\n');
}

test('each caller gets its own answer, whatever the order', async () => {
  const r = new Runner();
  await r.ready();
  try {
    const running = r.run("await Promise.all([completion('a'), completion('b'), tool('t', {x: 1})])");
    const calls = [];
    while (calls.length < 3) {
      const [frame] = (await r.waitFor((e) => e.type === 'bridge_call')).slice(-1);
      calls.push(frame);
    }
    assert.deepStrictEqual(calls.map((c) => c.op), ['completion', 'completion', 'tool']);
    assert.ok(calls.every((c) => c.cell === 'r1'));
    for (const call of calls.slice().reverse()) answer(r, call, call.op === 'tool' ? call.args : { text: call.args.prompt + '!' });
    const out = await running;
    assert.deepStrictEqual(out.results, ["[ 'a!', 'b!', { name: 't', args: { x: 1 } } ]"]);
  } finally {
    await r.close();
  }
});

test('host errors reject with BridgeError and the kernel goes on', async () => {
  const r = new Runner();
  await r.ready();
  try {
    const running = r.run("try { await completion('x') } catch (e) { console.log(e.name, e.kind, e.message) }");
    const [frame] = (await r.waitFor((e) => e.type === 'bridge_call')).slice(-1);
    answer(r, frame, null, { kind: 'limit', message: 'too many calls' });
    assert.strictEqual((await running).stdout, 'BridgeError limit too many calls\n');
    assert.deepStrictEqual((await r.run('1 + 1')).results, ['2']);
  } finally {
    await r.close();
  }
});
