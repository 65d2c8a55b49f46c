'use strict';
// Rich output: MIME bundles from JavaScript values, and the `display()` helper.
//
// A bundle has `text/plain`, except HTML (the host turns HTML into text
// itself, which reads better than a placeholder). Binary data (Buffer, typed arrays,
// ArrayBuffer) is base64 and recognised by its signature as PNG, JPEG or GIF;
// plain objects and arrays given to display() also carry `application/json`.
// `display.html(s)`, `.markdown(s)`, `.svg(s)`, `.json(v)`, `.image(bytes,
// mime)` build values that show as that type, whether displayed or left as
// a cell's last value.

const util = require('util');

const { STATUS_MIME } = require('./wire');
const INSPECT_OPTIONS = { depth: 4, colors: false, maxArrayLength: 100, maxStringLength: 10000, breakLength: 100 };

let publish = () => {};

/** Where display frames go (set by the kernel). */
function setSink(sink) {
  publish = sink;
}

/** A value that shows as a given bundle. */
class MimeData {
  constructor(bundle, metadata = {}) {
    this.bundle = bundle;
    this.metadata = metadata;
  }

  [util.inspect.custom]() {
    return this.bundle['text/plain'] || `<${Object.keys(this.bundle)[0]}>`;
  }
}

function inspect(value) {
  return util.inspect(value, INSPECT_OPTIONS);
}

function asBytes(value) {
  if (Buffer.isBuffer(value)) return value;
  if (ArrayBuffer.isView(value)) return Buffer.from(value.buffer, value.byteOffset, value.byteLength);
  if (value instanceof ArrayBuffer) return Buffer.from(value);
  return null;
}

function sniffImage(bytes) {
  if (bytes.length >= 8 && bytes.readUInt32BE(0) === 0x89504e47) return 'image/png';
  if (bytes.length >= 3 && bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) return 'image/jpeg';
  if (bytes.length >= 6 && bytes.toString('latin1', 0, 4) === 'GIF8') return 'image/gif';
  return null;
}

function toJson(value) {
  try {
    const text = JSON.stringify(value);
    return text === undefined ? null : JSON.parse(text);
  } catch {
    return null;
  }
}

/** The bundle for `value` shown as `mime` (a MIME type given by the caller). */
function bundleAs(value, mime) {
  const bytes = asBytes(value);
  if (mime === 'application/json') {
    return { 'application/json': toJson(value), 'text/plain': inspect(value) };
  }
  if (bytes) {
    return { [mime]: bytes.toString('base64'), 'text/plain': `<${mime}, ${bytes.length} bytes>` };
  }
  const text = typeof value === 'string' ? value : String(value);
  if (mime === 'text/html') return { [mime]: text };
  return { [mime]: text, 'text/plain': mime.startsWith('text/') ? text : `<${mime}>` };
}

/**
 * The bundle a value shows as. `forDisplay` adds `application/json` to plain
 * objects and arrays and shows strings as they are (not quoted).
 */
function bundleFor(value, forDisplay) {
  if (value instanceof MimeData) return { bundle: value.bundle, metadata: value.metadata };
  const bytes = asBytes(value);
  if (bytes) {
    const image = sniffImage(bytes);
    if (image) return { bundle: bundleAs(bytes, image), metadata: {} };
  }
  if (forDisplay && typeof value === 'string') return { bundle: { 'text/plain': value }, metadata: {} };
  const bundle = { 'text/plain': inspect(value) };
  const plain = value !== null && typeof value === 'object' && (Array.isArray(value) || Object.getPrototypeOf(value) === Object.prototype || Object.getPrototypeOf(value) === null);
  if (forDisplay && plain) {
    const json = toJson(value);
    if (json !== null) bundle['application/json'] = json;
  }
  return { bundle, metadata: {} };
}

/** display(value, mime?): show a value in the cell's output now. */
function display(value, mime) {
  const { bundle, metadata } = typeof mime === 'string' ? { bundle: bundleAs(value, mime), metadata: {} } : bundleFor(value, true);
  publish('display', bundle, metadata);
}

display.html = (html) => new MimeData({ 'text/html': String(html) });
display.markdown = (markdown) => new MimeData({ 'text/markdown': String(markdown), 'text/plain': String(markdown) });
display.svg = (svg) => new MimeData({ 'image/svg+xml': String(svg), 'text/plain': '<SVG image>' });
display.json = (value) => new MimeData(bundleAs(value, 'application/json'));
display.image = (bytes, mime) => {
  const data = asBytes(bytes);
  if (!data) throw new TypeError('display.image() takes a Buffer, a typed array or an ArrayBuffer');
  return new MimeData(bundleAs(data, mime || sniffImage(data) || 'image/png'));
};

/** emitStatus(op, fields): a structured status event (application/x-cellbox-status). */
function emitStatus(op, fields = {}) {
  publish('display', { [STATUS_MIME]: { op: String(op), ...fields }, 'text/plain': `[${op}]` }, {});
}

module.exports = { display, emitStatus, bundleFor, inspect, setSink, MimeData, STATUS_MIME };
