"""NDJSON framing: one JSON object per `\\n`-terminated UTF-8 line, both ways.

Frames are written to a private fd of their own (see `channel.py`), so
nothing user code writes to fd 1 can corrupt the channel.
"""
import codecs
import io
import json
import math
import os
import threading

# The wire itself (request and frame shapes, names) lives in wire.py; these
# names are kept here for the modules that read requests through this one.
from .wire import (  # noqa: F401
    PROTOCOL_VERSION,
    BridgeResult,
    CheckRequest,
    CompleteRequest,
    ExitRequest,
    ForkRequest,
    InterruptRequest,
    ProtocolError,
    Request,
    SnapshotRequest,
    parse_request,
)

# Bound before the kernel wraps os.write (to keep fd 1/2 in order): frames
# go to a private fd and need no flushing.
_write = os.write


def _replace_with_fffd(error):
    return ("\ufffd", error.end)


# Lone surrogates (from filenames, `surrogateescape` data, ...) cannot be
# encoded as UTF-8; they become U+FFFD instead of breaking a frame.
codecs.register_error("cellbox.fffd", _replace_with_fffd)


def jsonable(value, depth=0):
    """Return a copy of `value` that strict JSON can carry.

    NaN and infinities become strings, bytes are decoded with replacement,
    anything else unknown becomes its repr. Used when the fast path fails.
    """
    if depth > 100:
        return "<nested too deeply>"
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return repr(value)
        return value
    if isinstance(value, dict):
        return {str(k): jsonable(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v, depth + 1) for v in value]
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).decode("utf-8", "replace")
    try:
        return repr(value)
    except Exception:
        return "<unrepresentable %s>" % type(value).__name__


# json.dumps with keyword arguments builds a new encoder on every call, which
# costs more than encoding a small frame; these are built once (encoding keeps
# no state in the encoder, so threads may share them).
_encode = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode
_encode_string = json.JSONEncoder(ensure_ascii=False).encode


def encode_frame(frame):
    """Serialize one frame to bytes, never raising for odd values."""
    try:
        text = _encode(frame)
    except (TypeError, ValueError, RecursionError):
        text = _encode(jsonable(frame))
    return (text + "\n").encode("utf-8", "cellbox.fffd")


def quote(text):
    """A JSON string literal for `text`, as UTF-8 bytes."""
    return _encode_string(text).encode("utf-8", "cellbox.fffd")


class FrameWriter:
    """Writes whole frames to the protocol fd, one writer at a time.

    `send(frame, hold=True)` keeps a frame back until the next frame that is
    not held, or `flush()`: a quick cell's result and done then leave in one
    write, and the host wakes once for both. The output
    thread calls `flush()` every few milliseconds while a cell runs, so a held
    frame is never late by more than that.

    A frame is never cut by KeyboardInterrupt: while the main thread is in the
    middle of a write, the interrupt gate defers the interrupt until the frame
    is complete (see `interrupts.InterruptGate`).
    """

    def __init__(self, fd):
        self._fd = fd
        self._lock = threading.Lock()
        self._held = []
        self.gate = None  # set by main once the interrupt gate exists
        self._disabled = False

    def disable(self):
        """Drop every frame from now on (in a forked child: only the runner
        itself speaks to the host)."""
        self._disabled = True
        self._held = []
        self._lock = threading.Lock()  # the parent's may have been held at fork

    def after_fork(self):
        """In a kernel the runner forked: a lock of its own (the copy's state
        is whatever another thread left it in; no frame is held at a boundary)."""
        self._lock = threading.Lock()
        self._held = []

    def send(self, frame, hold=False):
        self.send_raw(encode_frame(frame), hold)

    def send_raw(self, data, hold=False):
        """Send an already encoded frame (one line, with its newline)."""
        with self._lock:
            if hold:
                self._held.append(data)
                return
            if self._held:
                self._held.append(data)
                data = b"".join(self._held)
                self._held = []
            self._write(data)

    def flush(self):
        """Write the held frames now."""
        with self._lock:
            if self._held:
                data = b"".join(self._held)
                self._held = []
                self._write(data)

    def _write(self, data):
        if self._disabled:
            return
        gate = self.gate
        if gate is not None:
            gate.enter_critical()
        try:
            view = memoryview(data)
            while view:
                written = _write(self._fd, view)
                view = view[written:]
        finally:
            if gate is not None:
                gate.leave_critical()


class RequestReader:
    """Reads request lines from the private duplicate of the original stdin."""

    def __init__(self, fd):
        self._file = os.fdopen(fd, "rb", buffering=1 << 16)

    def read_line(self):
        """The next raw line, or b'' at end of input (the host went away)."""
        return self._file.readline()

    def drop_buffer(self):
        """Forget what was read ahead: after a fork the fd is a new pipe, and
        what the old one held belongs to the kernel forked from."""
        raw = self._file.detach()
        self._file = io.BufferedReader(raw, 1 << 16)
