'use strict';
// Checks a model's structured answer against the JSON Schema the cell asked
// for: the same subset as the Python kernel's schema_check.py (type, enum,
// const, string/array/number bounds, properties/required/
// additionalProperties, items, allOf/anyOf/oneOf), so a schema behaves alike
// in both languages. A failure names the path of the offending value.

class SchemaError extends Error {
  constructor(message, path = '$') {
    super(`${path}: ${message}`);
    this.name = 'SchemaError';
    this.path = path;
  }
}

function kind(value) {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}

function typeOk(value, name) {
  if (name === 'integer') return Number.isInteger(value);
  if (['null', 'boolean', 'number', 'string', 'array', 'object'].includes(name)) return kind(value) === name;
  return true; // an unknown type name constrains nothing, as in Python
}

const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
const show = (value) => JSON.stringify(value);

/** Throw SchemaError unless `value` matches `schema`; return `value`. */
function validate(value, schema, path = '$') {
  if (schema === true || !schema || typeof schema !== 'object' || Array.isArray(schema)) return value;
  if (schema.type !== undefined) {
    const names = Array.isArray(schema.type) ? schema.type : [schema.type];
    if (!names.some((name) => typeOk(value, name))) throw new SchemaError(`expected ${names.join(' or ')}, got ${kind(value)}`, path);
  }
  if (Array.isArray(schema.enum) && !schema.enum.some((option) => same(option, value))) {
    throw new SchemaError(`${show(value)} is not one of ${show(schema.enum)}`, path);
  }
  if ('const' in schema && !same(schema.const, value)) throw new SchemaError(`expected ${show(schema.const)}, got ${show(value)}`, path);
  checkBounds(value, schema, path);
  if (kind(value) === 'object') checkObject(value, schema, path);
  if (Array.isArray(value) && schema.items && typeof schema.items === 'object' && !Array.isArray(schema.items)) {
    value.forEach((item, index) => validate(item, schema.items, `${path}[${index}]`));
  }
  checkCombinators(value, schema, path);
  return value;
}

function checkBounds(value, schema, path) {
  if (typeof value === 'string') {
    // Characters as Python counts them (code points), not UTF-16 units.
    const length = [...value].length;
    if (length < (schema.minLength || 0)) throw new SchemaError(`shorter than ${schema.minLength} characters`, path);
    if ('maxLength' in schema && length > schema.maxLength) throw new SchemaError(`longer than ${schema.maxLength} characters`, path);
  }
  if (Array.isArray(value)) {
    if (value.length < (schema.minItems || 0)) throw new SchemaError(`fewer than ${schema.minItems} items`, path);
    if ('maxItems' in schema && value.length > schema.maxItems) throw new SchemaError(`more than ${schema.maxItems} items`, path);
  }
  if (typeof value === 'number') {
    if ('minimum' in schema && value < schema.minimum) throw new SchemaError(`${value} is below the minimum ${schema.minimum}`, path);
    if ('maximum' in schema && value > schema.maximum) throw new SchemaError(`${value} is above the maximum ${schema.maximum}`, path);
  }
}

function checkObject(value, schema, path) {
  const properties = schema.properties || {};
  for (const name of schema.required || []) {
    if (!Object.prototype.hasOwnProperty.call(value, name)) throw new SchemaError(`missing required property '${name}'`, path);
  }
  const extra = 'additionalProperties' in schema ? schema.additionalProperties : true;
  for (const [name, item] of Object.entries(value)) {
    const where = `${path}.${name}`;
    if (Object.prototype.hasOwnProperty.call(properties, name)) validate(item, properties[name], where);
    else if (extra === false) throw new SchemaError(`unexpected property '${name}'`, path);
    else if (extra && typeof extra === 'object') validate(item, extra, where);
  }
}

function checkCombinators(value, schema, path) {
  for (const sub of schema.allOf || []) validate(value, sub, path);
  for (const keyword of ['anyOf', 'oneOf']) {
    const options = schema[keyword];
    if (!Array.isArray(options) || options.length === 0) continue;
    const errors = [];
    const matched = options.some((sub) => {
      try {
        validate(value, sub, path);
        return true;
      } catch (error) {
        if (!(error instanceof SchemaError)) throw error;
        errors.push(error.message);
        return false;
      }
    });
    if (!matched) throw new SchemaError(`matches none of the ${keyword} options (${errors.join('; ')})`, path);
  }
}

module.exports = { SchemaError, validate };
