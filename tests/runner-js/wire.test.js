'use strict';
// The golden corpus (tests/protocol/*.jsonl) round-trips through wire.js:
// requests are parsed and compared with the line, frames are rebuilt by the
// builders from their fields. A field named differently in wire.js than in
// the corpus (which the Rust host and the Python runner also round-trip)
// fails here.

const test = require('node:test');
const assert = require('node:assert');
const fs = require('fs');
const path = require('path');
const wire = require('../../runner-js/lib/wire');
const { Runner } = require('./harness');

function corpus(name) {
  const text = fs.readFileSync(path.join(__dirname, '..', 'protocol', name), 'utf8');
  return text.split('\n').filter((line) => line.trim()).map((line) => [line, JSON.parse(line)]);
}

function rebuild(f) {
  switch (f.type) {
    case 'ready': {
      const frame = wire.ready(f.pid, f.python, f.executable, f.parser);
      // The Python runner's own field, and what it leaves out (wire.py builds them).
      if (f.lostThreads) frame.lostThreads = f.lostThreads;
      if (!('language' in f)) delete frame.language;
      if (!('parser' in f)) delete frame.parser;
      return frame;
    }
    case 'started':
      return wire.started(f.id);
    case 'stdout':
    case 'stderr':
      return wire.output(f.type, f.id, f.data);
    case 'display':
    case 'result':
      return wire.bundleFrame(f.type, f.id, f.bundle, f.metadata);
    case 'error':
      return wire.error(f.id, f.ename, f.evalue, f.traceback);
    case 'done':
      return wire.done(f.id, f.status, f.executionCount, f.cancelled);
    case 'completeness':
      return wire.completeness(f.id, f.status, f.indent);
    case 'checked':
      return wire.checked(f.id, f.cells, f.notes);
    case 'snapshot':
      return wire.snapshot(f.id, f.report, f.error);
    case 'bridge_call':
      return wire.bridgeCall(f.id, f.cell, f.op, f.args);
    default:
      throw new Error(`no builder for ${f.type}`);
  }
}

test('every request in the corpus round-trips', () => {
  const seen = new Set();
  for (const [line, value] of corpus('runner_requests.jsonl')) {
    assert.deepStrictEqual(JSON.parse(JSON.stringify(wire.parseRequest(line))), value, line);
    seen.add(value.type);
  }
  assert.deepStrictEqual([...seen].sort(), [...wire.REQUEST_TYPES].sort());
});

test('every frame in the corpus is rebuilt by its builder', () => {
  const seen = new Set();
  for (const [line, value] of corpus('runner_frames.jsonl')) {
    assert.deepStrictEqual(JSON.parse(JSON.stringify(rebuild(value))), value, line);
    seen.add(value.type);
  }
  assert.deepStrictEqual([...seen].sort(), [...wire.FRAME_TYPES].sort());
});

test('integer ids are taken as strings, as the Python runner takes them', () => {
  assert.deepStrictEqual(wire.parseRequest('{"id": 7, "code": "1"}'), { type: 'execute', id: '7', code: '1', silent: false, storeHistory: true });
  assert.strictEqual(wire.parseRequest('{"type": "check", "id": 8, "cells": []}').id, '8');
  assert.throws(() => wire.parseRequest('{"id": true, "code": "1"}'), wire.ProtocolError);
  assert.throws(() => wire.parseRequest('{"id": "r", "code": "1", "silent": "no"}'), (error) => error.requestId === 'r');
});

test('the runner answers a request with an integer id', async () => {
  const runner = new Runner();
  try {
    await runner.ready();
    runner.child.stdin.write('{"id": 41, "code": "40 + 2"}\n');
    const events = await runner.waitFor((event) => event.type === 'done');
    const result = events.find((event) => event.type === 'result');
    assert.strictEqual(result.id, '41');
    assert.strictEqual(result.bundle['text/plain'], '42');
    assert.strictEqual(events[events.length - 1].status, 'ok');
  } finally {
    await runner.close();
  }
});
