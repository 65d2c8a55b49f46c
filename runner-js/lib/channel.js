'use strict';
// The runner's private file descriptors.
//
// The host starts the runner with fd 0 = requests, fd 1/2 = pipes the host
// reads itself (the cell's stdout and stderr), fd 3 = frames to the host and
// fd 4 = the runner's own diagnostics. Node cannot dup() a descriptor, but on
// Linux opening /proc/self/fd/N gives a fresh handle on the same pipe, and Node
// opens files close-on-exec. So the runner reopens fd 0, 3 and 4 that way,
// closes the originals and points fd 0 at /dev/null: child processes started
// by a cell then inherit only fd 0-2 and can never read a request or write a
// frame. Where /proc is missing the original fds are used as they are.
//
// Writes to the frame fd are synchronous. Cell output is written
// synchronously too (see output.js), so every byte written before a frame is
// in the output pipe when the frame is; the host drains the output pipes
// before it routes each frame, which keeps output and frames in order.

const fs = require('fs');

function argValue(argv, name) {
  const index = argv.indexOf(name);
  if (index < 0 || index + 1 >= argv.length) return null;
  const value = Number(argv[index + 1]);
  return Number.isInteger(value) ? value : null;
}

/** A close-on-exec handle on the same pipe as `fd`, or `fd` itself. */
function reopen(fd, flags) {
  try {
    return { fd: fs.openSync(`/proc/self/fd/${fd}`, flags), moved: true };
  } catch {
    return { fd, moved: false };
  }
}

function closeQuietly(fd) {
  try {
    fs.closeSync(fd);
  } catch {
    // already closed
  }
}

class Channel {
  constructor(argv) {
    const framesFd = argValue(argv, '--frames-fd');
    const diagnosticsFd = argValue(argv, '--diagnostics-fd');
    const { O_RDONLY, O_WRONLY } = fs.constants;
    this.hostPipes = framesFd !== null;
    const requests = reopen(0, O_RDONLY);
    this.requests = requests.fd;
    if (this.hostPipes) {
      const frames = reopen(framesFd, O_WRONLY);
      this.frames = frames.fd;
      if (frames.moved) closeQuietly(framesFd);
    } else {
      // Started by hand: frames on stdout, cell output on stderr.
      this.frames = 1;
    }
    if (diagnosticsFd !== null) {
      const diagnostics = reopen(diagnosticsFd, O_WRONLY);
      this.diagnostics = diagnostics.fd;
      if (diagnostics.moved) closeQuietly(diagnosticsFd);
    } else {
      this.diagnostics = 2;
    }
    if (requests.moved) {
      // open() takes the lowest free number: fd 0 becomes /dev/null.
      closeQuietly(0);
      const devnull = fs.openSync('/dev/null', O_RDONLY);
      if (devnull !== 0) closeQuietly(devnull);
    }
    this.outputFds = this.hostPipes ? [1, 2] : [2, 2];
  }

  /** Write one whole frame line (blocking until it is in the pipe). */
  writeFrame(line) {
    writeAll(this.frames, Buffer.from(line, 'utf8'));
  }

  /** The runner's own failure text, where the host keeps it. */
  diagnose(text) {
    try {
      writeAll(this.diagnostics, Buffer.from(text, 'utf8'));
    } catch {
      // nowhere left to say it
    }
  }
}

const sleeper = new Int32Array(new SharedArrayBuffer(4));

/** Write every byte of `buffer` to `fd`, waiting out a full non-blocking pipe. */
function writeAll(fd, buffer) {
  let offset = 0;
  while (offset < buffer.length) {
    try {
      offset += fs.writeSync(fd, buffer, offset, buffer.length - offset);
    } catch (error) {
      if (error.code !== 'EAGAIN') throw error;
      Atomics.wait(sleeper, 0, 0, 1);
    }
  }
}

module.exports = { Channel, writeAll };
