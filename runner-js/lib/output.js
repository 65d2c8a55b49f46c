'use strict';
// Cell output: `process.stdout`, `process.stderr` and `console` write straight
// to fd 1 and fd 2 with blocking writes.
//
// Node's own stdout on a pipe would switch the shared pipe to non-blocking
// mode (child processes then fail with EAGAIN) and may queue writes; these
// streams never do either, so a write has reached the host's pipe when it
// returns and output stays in order with frames. Child processes inherit
// fd 1/2 and write there directly.

const fs = require('fs');
const { Writable, Readable } = require('stream');
const { Console } = require('console');
const { writeAll } = require('./channel');

function toBytes(chunk, encoding) {
  if (typeof chunk !== 'string') return chunk;
  return Buffer.from(chunk, !encoding || encoding === 'buffer' ? 'utf8' : encoding);
}

class FdWriter extends Writable {
  constructor(fd) {
    super({ decodeStrings: false });
    this.fd = fd;
    this.isTTY = false;
  }

  // `write` goes straight to the fd instead of through Writable's queue. A
  // SIGINT stops the cell's script wherever it is, Node's stream code
  // included: a queue stopped half-way stays marked busy and holds back every
  // later write for the kernel's life. A direct write has no such state.
  write(chunk, encoding, callback) {
    if (typeof encoding === 'function') {
      callback = encoding;
      encoding = undefined;
    }
    try {
      writeAll(this.fd, toBytes(chunk, encoding));
    } catch (error) {
      if (callback) process.nextTick(callback, error);
      else process.nextTick(() => this.emit('error', error));
      return false;
    }
    if (callback) process.nextTick(callback, null);
    return true;
  }

  // Only `end(chunk)` still comes through the queue.
  _write(chunk, encoding, callback) {
    try {
      writeAll(this.fd, toBytes(chunk, encoding));
      callback();
    } catch (error) {
      callback(error);
    }
  }

  hasColors() {
    return false;
  }

  getColorDepth() {
    return 1;
  }
}

/** Raised by every read of stdin: cells have no interactive input. */
class StdinNotSupportedError extends Error {
  constructor() {
    super(
      'stdin is not supported: cellbox cells have no interactive input. ' +
        'Pass the data in the code instead (a variable, a file, or an argument).',
    );
    this.name = 'StdinNotSupportedError';
  }
}

function failingStdin() {
  const stream = new Readable({
    read() {
      this.destroy(new StdinNotSupportedError());
    },
  });
  stream.fd = 0;
  stream.isTTY = false;
  stream.setRawMode = () => {
    throw new StdinNotSupportedError();
  };
  return stream;
}

/** Point process.stdout/stderr/stdin and the global console at the cell's pipes. */
function install(outputFds) {
  const stdout = new FdWriter(outputFds[0]);
  const stderr = new FdWriter(outputFds[1]);
  const define = (name, value) =>
    Object.defineProperty(process, name, { value, configurable: true, writable: true, enumerable: true });
  define('stdout', stdout);
  define('stderr', stderr);
  define('stdin', failingStdin());
  globalThis.console = new Console({ stdout, stderr, colorMode: false });
  // Synchronous reads of fd 0 fail the same way instead of returning nothing.
  const readFileSync = fs.readFileSync;
  fs.readFileSync = function (file, ...rest) {
    if (file === 0 || file === '/dev/stdin') throw new StdinNotSupportedError();
    return readFileSync.call(this, file, ...rest);
  };
  const readSync = fs.readSync;
  fs.readSync = function (fd, ...rest) {
    if (fd === 0) throw new StdinNotSupportedError();
    return readSync.call(this, fd, ...rest);
  };
  return { stdout, stderr };
}

module.exports = { install, StdinNotSupportedError };
