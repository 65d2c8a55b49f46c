"""File-descriptor-level capture of stdout and stderr.

fd 1 and fd 2 are pointed at pipes, so `print`, `os.write(1, ...)`, C
extensions and child processes all land in the same place. A background
thread forwards what arrives as `stdout`/`stderr` frames while a cell runs;
`sync()` delivers everything written so far before the runner sends a frame
of its own (display, result, error, done), so frames keep the order in which
things happened and nothing written during a cell arrives after its `done`.
"""
import codecs
import os
import select
import sys
import threading

from .interrupts import block_interrupts_in_this_thread

_CHUNK = 1 << 16
_WANTED_PIPE_SIZE = 1 << 20
_F_SETPIPE_SZ = 1031  # Linux only; elsewhere the default size stays
_F_GETPIPE_SZ = 1032
# While a cell runs, Python's buffered stdout/stderr (and held frames) are
# flushed this often, so output streams live without a syscall per line.
_FLUSH_INTERVAL = 0.02
# Between cells the thread ticks more slowly. A new cell is noticed on the
# next tick rather than by waking the thread: a wake-up per cell costs more
# than the cell itself for quick ones.
_IDLE_INTERVAL = 0.1
# Output written while no request is running (a background child, a thread)
# is held and delivered at the start of the next request, up to this much.
_MAX_PENDING = 1 << 20


def _grow_pipe(fd):
    """Enlarge a pipe so bursts of output block the writer less; return its size."""
    if not sys.platform.startswith("linux"):
        return _CHUNK
    try:
        import fcntl

        fcntl.fcntl(fd, _F_SETPIPE_SZ, _WANTED_PIPE_SIZE)
        return fcntl.fcntl(fd, _F_GETPIPE_SZ)
    except OSError:
        return _CHUNK


class _Stream:
    __slots__ = ("name", "fd", "decoder", "capacity")

    def __init__(self, name, fd, capacity):
        self.name = name
        self.fd = fd
        self.capacity = capacity
        self.decoder = codecs.getincrementaldecoder("utf-8")("replace")


class OutputCapture:
    def __init__(self, writer):
        self._writer = writer
        self._lock = threading.Lock()
        self._request_id = None
        self._pending = []
        self._pending_size = 0
        self._pending_dropped = 0
        self._streams = []
        self._divert = None
        for target, name in ((1, "stdout"), (2, "stderr")):
            read_fd, write_fd = os.pipe()
            capacity = _grow_pipe(write_fd)
            os.dup2(write_fd, target)  # the new fd 1/2 is inheritable: children share it
            os.close(write_fd)
            os.set_blocking(read_fd, False)
            self._streams.append(_Stream(name, read_fd, capacity))
        self._fds = [stream.fd for stream in self._streams]
        self._by_fd = {stream.fd: stream for stream in self._streams}
        # poll(0) is the cheapest "is anything unread?" for the sync points.
        self._poller = select.poll()
        for fd in self._fds:
            self._poller.register(fd, select.POLLIN)
        thread = threading.Thread(target=self._pump, name="evalkit-output", daemon=True)
        thread.start()

    def begin(self, request_id):
        """Attribute output to `request_id`, first delivering what was held."""
        with self._lock:
            self._drain_all()
            self._request_id = request_id
            pending, self._pending = self._pending, []
            dropped, self._pending_dropped = self._pending_dropped, 0
            self._pending_size = 0
            if dropped:
                pending.append(("stderr", "[evalkit: %d bytes of background output were dropped]\n" % dropped))
            for name, text in pending:
                self._writer.send({"type": name, "id": request_id, "data": text})

    def sync(self):
        """Deliver every byte written to fd 1/2 before this call."""
        self._flush_python_streams()
        with self._lock:
            self._drain_all()

    def end(self):
        """Deliver the rest of the cell's output and stop attributing to it."""
        self._flush_python_streams()
        with self._lock:
            self._drain_all()
            for stream in self._streams:
                tail = stream.decoder.decode(b"", True)
                if tail:
                    self._deliver(stream.name, tail)
            self._request_id = None

    @staticmethod
    def _flush_python_streams():
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass  # user code may have replaced or closed them

    def _pump(self):
        block_interrupts_in_this_thread()
        fds = [stream.fd for stream in self._streams]
        while True:
            running = self._request_id is not None
            try:
                ready, _, _ = select.select(fds, [], [], _FLUSH_INTERVAL if running else _IDLE_INTERVAL)
            except InterruptedError:
                continue
            if not ready:
                if running:
                    self._flush_python_streams()
                    self._writer.flush()
                continue
            with self._lock:
                for stream in self._streams:
                    if stream.fd in ready:
                        self._drain(stream)

    def _drain_all(self):
        for fd, _ in self._poller.poll(0):
            self._drain(self._by_fd[fd])

    def _drain(self, stream):
        # Whatever was written before now is at most one pipe's worth of data
        # still unread; the bound keeps a child that writes without pause from
        # holding the lock forever.
        limit = stream.capacity + _CHUNK
        total = 0
        while total < limit:
            try:
                chunk = os.read(stream.fd, _CHUNK)
            except BlockingIOError:
                return
            except InterruptedError:
                continue
            if not chunk:
                return
            total += len(chunk)
            text = stream.decoder.decode(chunk)
            if text:
                self._deliver(stream.name, text)

    def set_divert(self, divert):
        """Offer output to divert(stream, text) first (`%%capture`); None stops it."""
        self.sync()
        with self._lock:
            self._divert = divert

    def _deliver(self, name, text):
        if self._divert is not None and self._divert(name, text):
            return
        if self._request_id is not None:
            self._writer.send({"type": name, "id": self._request_id, "data": text})
            return
        if self._pending_size + len(text) > _MAX_PENDING:
            self._pending_dropped += len(text.encode("utf-8", "replace"))
            return
        self._pending.append((name, text))
        self._pending_size += len(text)
