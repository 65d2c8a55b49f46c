'use strict';
// The JavaScript schema check agrees with the Python kernel's on every case
// below: same verdict, same path. Python's schema_check.py is the reference.
// Run with: node --test tests/runner-js/

const test = require('node:test');
const assert = require('node:assert');
const path = require('node:path');
const { execFileSync } = require('node:child_process');
const { validate, SchemaError } = require('../../runner-js/lib/schema');

const person = {
  type: 'object',
  required: ['name'],
  properties: { name: { type: 'string', minLength: 1 }, age: { type: 'integer', minimum: 0, maximum: 150 } },
  additionalProperties: false,
};

const cases = [
  [person, { name: 'Ada', age: 36 }],
  [person, { name: 'Ada', age: 36.5 }],
  [person, { name: '' }],
  [person, { age: 3 }],
  [person, { name: 'Ada', extra: 1 }],
  [person, { name: 'Ada', age: -1 }],
  [person, { name: 'Ada', age: 200 }],
  [{ type: 'object', additionalProperties: { type: 'number' } }, { a: 1, b: 'x' }],
  [{ type: 'array', items: person, minItems: 1, maxItems: 2 }, [{ name: 'a' }, { name: 'b' }]],
  [{ type: 'array', items: person, minItems: 1, maxItems: 2 }, []],
  [{ type: 'array', items: person, minItems: 1, maxItems: 2 }, [{ name: 'a' }, { name: 'b' }, { name: 'c' }]],
  [{ type: 'array', items: person }, [{ name: 'a' }, { name: 1 }]],
  [{ enum: ['red', 'green', 1] }, 'green'],
  [{ enum: ['red', 'green', 1] }, 'blue'],
  [{ const: { a: [1, 2] } }, { a: [1, 2] }],
  [{ const: 'x' }, 'y'],
  [{ type: ['string', 'null'] }, null],
  [{ type: ['string', 'null'] }, 3],
  [{ type: 'string', maxLength: 3 }, 'abcd'],
  [{ type: 'string', maxLength: 3 }, 'ééé'],
  [{ type: 'integer' }, 3.0],
  [{ type: 'integer' }, true],
  [{ type: 'number' }, false],
  [{ type: 'boolean' }, 0],
  [{ anyOf: [{ type: 'string' }, { type: 'integer' }] }, 3],
  [{ anyOf: [{ type: 'string' }, { type: 'integer' }] }, 3.5],
  [{ oneOf: [{ type: 'string' }, { minimum: 10 }] }, 5],
  [{ allOf: [{ type: 'number' }, { minimum: 1 }] }, 0],
  [{ type: 'object', properties: { inner: { type: 'object', required: ['x'] } } }, { inner: {} }],
  [{ type: 'whatever' }, 1],
  [true, { anything: 1 }],
];

function pythonVerdicts() {
  const script = `
import json, sys
sys.path.insert(0, ${JSON.stringify(path.join(__dirname, '../../runner'))})
from cellbox_kernel.schema_check import SchemaError, validate
out = []
for schema, value in json.load(sys.stdin):
    try:
        validate(value, schema)
        out.append(None)
    except SchemaError as error:
        out.append(error.path)
print(json.dumps(out))
`;
  const python = process.env.CELLBOX_TEST_PYTHON || 'python3';
  return JSON.parse(execFileSync(python, ['-c', script], { input: JSON.stringify(cases) }).toString());
}

test('the JavaScript check gives the Python verdict and path for every case', () => {
  const expected = pythonVerdicts();
  cases.forEach(([schema, value], index) => {
    let got = null;
    try {
      validate(value, schema);
    } catch (error) {
      assert.ok(error instanceof SchemaError, `case ${index}: ${error}`);
      got = error.path;
    }
    assert.strictEqual(got, expected[index], `case ${index}: ${JSON.stringify(cases[index])}`);
  });
  // The cases are not all of one kind.
  assert.ok(expected.filter((p) => p === null).length >= 8);
  assert.ok(expected.filter((p) => p !== null).length >= 15);
});

test('a failure names the path and the reason', () => {
  assert.throws(() => validate({ rows: [{ name: 'a' }, { name: 2 }] }, { properties: { rows: { items: person } } }), {
    name: 'SchemaError',
    message: '$.rows[1].name: expected string, got number',
  });
});
