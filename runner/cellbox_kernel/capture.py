"""Cell output: how it reaches the host, in order with the frames.

fd 1 and fd 2 are pipes the host created and reads itself, so `print`,
`os.write(1, ...)`, C extensions and child processes all land there, and what
was written survives the runner dying. The runner only keeps the order:

- before a frame is written, Python's buffered sys.stdout/sys.stderr are
  flushed and the runner waits until the host has read everything in the
  pipes (`sync()`), so output written before a frame arrives before it;
- after a frame that user code continues from (a display), the runner waits
  until the host has read the frame, so output written after it arrives after it.

While a cell runs a helper thread flushes Python's buffers (and held frames)
every 20 ms so output streams live. `%%capture` diverts fd 1/2 into a local
pipe for its duration (`set_divert`).
"""
import codecs
import os
import select
import sys
import threading
import time

from .channel import OWN_STREAMS
from .interrupts import block_interrupts_in_this_thread

_CHUNK = 1 << 16
# While a cell runs, Python's buffered stdout/stderr (and held frames) are
# flushed this often, so output streams live without a syscall per line.
_FLUSH_INTERVAL = 0.02
# Between cells the thread ticks more slowly. A new cell is noticed on the
# next tick rather than by waking the thread: a wake-up per cell costs more
# than the cell itself for quick ones.
_IDLE_INTERVAL = 0.1


def flush_python_streams():
    """Flush sys.stdout/sys.stderr, and the runner's own streams when user
    code replaced them (text printed before the switch still goes out)."""
    out, err = sys.stdout, sys.stderr
    for stream in (out, err):
        try:
            stream.flush()
        except Exception:
            pass  # user code may have replaced or closed them
    for stream in OWN_STREAMS:
        if stream is not out and stream is not err:
            try:
                stream.flush()
            except Exception:
                pass


class OutputCapture:
    def __init__(self, writer, channel):
        self._writer = writer
        self._channel = channel
        self._running = False
        self._diversions = []
        self.start_output_thread()

    def start_output_thread(self):
        """Start the output thread (at start, and again in a forked kernel,
        which has no thread but the one that forked)."""
        thread = threading.Thread(target=self._tick, name="cellbox-output", daemon=True)
        thread.start()

    def begin(self, request_id):
        """A cell starts: give back sys.stdout/sys.stderr if an earlier cell
        broke them (fd 1/2 were already repaired when it ended)."""
        channel = self._channel
        channel.note(channel.repair_streams())
        self._running = True

    def sync(self):
        """Make every byte written to fd 1/2 so far reach the host before the
        next frame."""
        flush_python_streams()
        self._channel.wait_output_read()

    def end(self):
        """The cell is over: its output (even what went to a broken fd 1/2,
        now repaired) reaches the host before `done`."""
        flush_python_streams()
        channel = self._channel
        notes = channel.repair_fds()
        if notes:
            channel.note(notes)
            flush_python_streams()  # what failed to flush on the broken fd
        channel.wait_output_read()
        self._running = False

    def _tick(self):
        block_interrupts_in_this_thread()
        while True:
            if self._running:
                time.sleep(_FLUSH_INTERVAL)
                if self._running:
                    flush_python_streams()
                    self._writer.flush()
            else:
                time.sleep(_IDLE_INTERVAL)

    def set_divert(self, divert):
        """Offer the fd-level output to divert(stream, text) (`%%capture`);
        `None` ends the latest diversion. A stream divert declines (it returns
        False for empty text) keeps going to the cell."""
        self.sync()
        if divert is not None:
            self._diversions.append(_Diversion(divert))
        elif self._diversions:
            self._diversions.pop().stop()


class _Diversion:
    """fd 1/2 pointed at local pipes that a thread reads into `divert`."""

    def __init__(self, divert):
        self._divert = divert
        self._streams = []  # (name, fd, saved fd, read fd, decoder)
        for name, fd in (("stdout", 1), ("stderr", 2)):
            if not divert(name, ""):
                continue
            read_fd, write_fd = os.pipe()
            saved = os.dup(fd)
            os.set_inheritable(saved, False)
            os.dup2(write_fd, fd)
            os.close(write_fd)
            os.set_blocking(read_fd, False)
            decoder = codecs.getincrementaldecoder("utf-8")("replace")
            self._streams.append((name, fd, saved, read_fd, decoder))
        self._stop = threading.Event()
        self._thread = None
        if self._streams:
            self._thread = threading.Thread(target=self._pump, name="cellbox-capture", daemon=True)
            self._thread.start()

    def _pump(self):
        block_interrupts_in_this_thread()
        fds = [stream[3] for stream in self._streams]
        while not self._stop.is_set():
            try:
                ready, _, _ = select.select(fds, [], [], 0.05)
            except (InterruptedError, OSError, ValueError):
                continue
            for stream in self._streams:
                if stream[3] in ready:
                    self._drain(stream)

    def _drain(self, stream):
        name, _, _, read_fd, decoder = stream
        while True:
            try:
                chunk = os.read(read_fd, _CHUNK)
            except BlockingIOError:
                return
            except InterruptedError:
                continue
            except OSError:
                return
            if not chunk:
                return
            text = decoder.decode(chunk)
            if text:
                self._divert(name, text)

    def stop(self):
        """Put fd 1/2 back, then hand over everything written to the pipes."""
        flush_python_streams()
        for _, fd, saved, _, _ in self._streams:
            os.dup2(saved, fd)
            os.close(saved)
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
        for stream in self._streams:
            self._drain(stream)
            tail = stream[4].decode(b"", True)
            if tail:
                self._divert(stream[0], tail)
            os.close(stream[3])
