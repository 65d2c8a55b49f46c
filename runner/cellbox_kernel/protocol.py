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

PROTOCOL_VERSION = 1

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


class Request:
    """One execute request from the host."""

    __slots__ = ("id", "code", "silent", "store_history", "cwd", "env", "restore_env", "json_results")

    def __init__(self, id, code, silent, store_history, cwd, env, restore_env=False, json_results=False):
        self.id = id
        self.code = code
        self.silent = silent
        self.store_history = store_history
        self.cwd = cwd
        self.env = env
        # The env is for this request only: the variables it names are put back after it.
        self.restore_env = restore_env
        # A list or dict value also goes as application/json (for SDK clients).
        self.json_results = json_results


class ExitRequest:
    """The host asks the runner to exit."""


class InterruptRequest:
    """The host asks to interrupt the running cell: how it does so where it
    cannot send SIGINT (Windows). Read by the request thread, never queued."""


class CompleteRequest:
    """The host asks whether `code` is a whole cell yet (for a REPL)."""

    __slots__ = ("id", "code")

    def __init__(self, id, code):
        self.id = id
        self.code = code


class CheckRequest:
    """The host asks to check cells before any of them runs: compile each
    (after the magic transform) without running it, and lint it when `lint`."""

    __slots__ = ("id", "cells", "lint")

    def __init__(self, id, cells, lint):
        self.id = id
        self.cells = cells  # [(number, code)], number 1-based in the call
        self.lint = lint


class ForkRequest:
    """Fork the kernel here (see `fork.py`); `fork_id` matches the fds sent on the control socket."""

    __slots__ = ("id", "fork_id")

    def __init__(self, id, fork_id):
        self.id = id
        self.fork_id = fork_id


class SnapshotRequest:
    """Save the user namespace to `path`, or restore one from it (`restore`); see `snapshot.py`."""

    __slots__ = ("id", "path", "restore", "version")

    def __init__(self, id, path, restore, version):
        self.id = id
        self.path = path
        self.restore = restore
        self.version = version


class BridgeResult:
    """The host's answer to a `bridge_call` (read while a cell runs)."""

    __slots__ = ("id", "ok", "value", "error")

    def __init__(self, id, ok, value, error):
        self.id = id
        self.ok = ok
        self.value = value
        self.error = error


class ProtocolError(Exception):
    """A line from the host that is not a valid request.

    `request_id` is set when the line named an id, so the host can still
    resolve the request it was waiting for.
    """

    def __init__(self, message, request_id=None):
        Exception.__init__(self, message)
        self.request_id = request_id


def _field(message, name, kinds, default, request_id):
    value = message.get(name, default)
    if value is None and default is None:
        return None
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        raise ProtocolError("field %r has the wrong type (%s)" % (name, type(value).__name__), request_id)
    return value


def parse_request(line):
    """Parse one line into a Request or ExitRequest, or raise ProtocolError."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ProtocolError("line is not valid UTF-8: %s" % error)
    if not text.strip():
        raise ProtocolError("empty line")
    try:
        message = json.loads(text)
    except ValueError as error:
        raise ProtocolError("line is not valid JSON: %s" % error)
    except RecursionError:
        # Deep nesting would otherwise escape and end the main loop.
        raise ProtocolError("line is nested too deeply to be a request")
    if not isinstance(message, dict):
        raise ProtocolError("expected a JSON object, got %s" % type(message).__name__)
    kind = message.get("type", "execute")
    raw_id = message.get("id")
    request_id = str(raw_id) if isinstance(raw_id, (str, int)) and not isinstance(raw_id, bool) else None
    if kind == "exit":
        return ExitRequest()
    if kind == "interrupt":
        return InterruptRequest()
    if kind == "complete":
        if request_id is None or not isinstance(message.get("code"), str):
            raise ProtocolError("complete request needs an 'id' and 'code' as a string", request_id)
        return CompleteRequest(request_id, message["code"])
    if kind == "check":
        cells = message.get("cells")
        if request_id is None or not isinstance(cells, list):
            raise ProtocolError("check request needs an 'id' and 'cells' as a list", request_id)
        parsed = []
        for cell in cells:
            if not isinstance(cell, dict) or not isinstance(cell.get("code"), str):
                raise ProtocolError("each checked cell needs 'code' as a string", request_id)
            number = cell.get("number")
            if not isinstance(number, int) or isinstance(number, bool):
                number = len(parsed) + 1
            parsed.append((number, cell["code"]))
        return CheckRequest(request_id, parsed, message.get("lint") is True)
    if kind in ("snapshot", "restore"):
        path = message.get("path")
        if request_id is None or not isinstance(path, str) or not path:
            raise ProtocolError("%s request needs an 'id' and 'path' as a string" % kind, request_id)
        version = message.get("version")
        return SnapshotRequest(request_id, path, kind == "restore", version if isinstance(version, str) else "")
    if kind == "fork":
        fork_id = message.get("fork")
        if request_id is None or not isinstance(fork_id, int) or isinstance(fork_id, bool):
            raise ProtocolError("fork request needs an 'id' and 'fork' as an integer", request_id)
        return ForkRequest(request_id, fork_id)
    if kind == "bridge_result":
        if request_id is None or not isinstance(message.get("ok"), bool):
            raise ProtocolError("bridge_result needs an 'id' and 'ok' as a boolean")
        error = message.get("error")
        if not isinstance(error, dict):
            error = {"kind": "host", "message": str(error)}
        return BridgeResult(request_id, message["ok"], message.get("value"), error)
    if kind != "execute":
        raise ProtocolError("unknown request type %r" % (kind,), request_id)
    if request_id is None:
        raise ProtocolError("execute request needs an 'id' (string or integer)")
    code = message.get("code")
    if not isinstance(code, str):
        raise ProtocolError("execute request needs 'code' as a string", request_id)
    silent = _field(message, "silent", (bool,), False, request_id)
    store_history = _field(message, "storeHistory", (bool,), True, request_id)
    cwd = _field(message, "cwd", (str,), None, request_id)
    env = _field(message, "env", (dict,), None, request_id)
    if env is not None:
        for key, value in env.items():
            if not isinstance(value, str) and value is not None:
                raise ProtocolError("env value for %r must be a string or null" % key, request_id)
    restore_env = _field(message, "restoreEnv", (bool,), False, request_id)
    json_results = _field(message, "jsonResults", (bool,), False, request_id)
    return Request(request_id, code, silent, store_history, cwd, env, restore_env, json_results)


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
