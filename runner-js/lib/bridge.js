'use strict';
// The way back to the host: completion(), agent(), tool(), parallel() and
// pipeline() for JavaScript cells. A call is a `bridge_call` frame; the host's
// `bridge_result` arrives on the request pipe, which main.js reads all the
// time and hands to deliver(). Every helper returns a promise; many calls may
// be in flight at once. While one is, the host pauses the cell's time budget.

class BridgeError extends Error {
  constructor(message, kind = 'host') {
    super(message);
    this.name = 'BridgeError';
    this.kind = kind;
  }
}

const { SchemaError, validate } = require('./schema');
const wire = require('./wire');

const pending = new Map();
let nextId = 1;
let sendFrame = null;
let currentCell = () => null;

/** Wire the bridge to the runner: how to write a frame and which request runs now. */
function connect(send, cell) {
  sendFrame = send;
  currentCell = cell;
}

function call(op, args) {
  const cell = currentCell();
  if (!sendFrame || cell === null) {
    return Promise.reject(new BridgeError('bridge calls work only inside a running cell', 'unavailable'));
  }
  const id = `b${nextId++}`;
  return new Promise((resolve, reject) => {
    pending.set(id, { resolve, reject });
    sendFrame(wire.bridgeCall(id, cell, op, args));
  });
}

/** Hand the host's answer to its caller. */
function deliver(result) {
  const waiter = pending.get(String(result.id));
  if (!waiter) return;
  pending.delete(String(result.id));
  if (result.ok) waiter.resolve(result.value);
  else {
    const error = result.error || {};
    waiter.reject(new BridgeError(String(error.message || 'the host reported an error'), String(error.kind || 'host')));
  }
}

function shaped(text, schema) {
  if (schema === undefined || schema === null) return text;
  let value;
  try {
    value = typeof text === 'string' ? JSON.parse(text.replace(/^\s*```(?:json)?\s*\n([\s\S]*?)\n\s*```\s*$/, '$1')) : text;
  } catch (error) {
    throw new SchemaError(`the answer is not valid JSON (${error.message})`);
  }
  return validate(value, schema);
}

function defined(fields) {
  return Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined && value !== null));
}

/** completion(prompt, {model, system, schema, maxTokens, temperature}) → Promise of the text (the object with schema). */
async function completion(prompt, options = {}) {
  const { model, system, schema, maxTokens, temperature } = options;
  const value = await call('completion', defined({ prompt: String(prompt), model, system, schema, max_tokens: maxTokens, temperature }));
  return shaped(value && typeof value === 'object' ? value.text : value, schema);
}

/** agent(prompt, {agent, model, label, schema, handle}) → Promise of the sub-agent's final text (or node with handle). */
async function agent(prompt, options = {}) {
  const { agent: name = 'task', model, label, schema, handle = false } = options;
  const value = (await call('agent', defined({ prompt: String(prompt), agent: name, model, label, schema, handle }))) || {};
  const data = shaped(value.text, schema);
  if (!handle) return data;
  const node = { text: value.text, output: value.output ?? value.text, handle: value.handle ?? null, id: value.id ?? null, agent: value.agent ?? name };
  if (schema !== undefined && schema !== null) node.data = data;
  return node;
}

/** tool(name, args) → Promise of the host tool's result. */
function tool(name, args = {}) {
  return call('tool', { name: String(name), args });
}

/** parallel(thunks, {maxConcurrency}) → results in input order; the lowest-index error is thrown. */
async function parallel(thunks, options = {}) {
  const list = Array.from(thunks);
  const limit = Math.max(1, Number(options.maxConcurrency) || 8);
  const outcomes = new Array(list.length);
  let next = 0;
  async function worker() {
    while (next < list.length) {
      const index = next++;
      try {
        outcomes[index] = { ok: true, value: await list[index]() };
      } catch (error) {
        outcomes[index] = { ok: false, error };
      }
    }
  }
  await Promise.all(Array.from({ length: Math.min(limit, list.length) }, worker));
  const failed = outcomes.find((outcome) => !outcome.ok);
  if (failed) throw failed.error;
  return outcomes.map((outcome) => outcome.value);
}

/** pipeline(items, ...stages): each stage over all items in parallel, one stage after the other. */
async function pipeline(items, ...stages) {
  let current = Array.from(items);
  for (const stage of stages) current = await parallel(current.map((item) => () => stage(item)));
  return current;
}

module.exports = { connect, deliver, completion, agent, tool, parallel, pipeline, BridgeError, SchemaError, validate };
