"""The runner wire, in one place: every request the runner accepts, every
frame it sends, the fork server's messages, and the names they share.

The host declares the same wire in `crates/protocol` (Rust); its JSON Schemas
are in `schema/`, and docs/kernels.md describes it. The golden corpus in
`tests/protocol/` is round-tripped through this module by
tests/runner/test_wire.py, so a field named differently here fails there.

Every frame the runner writes is built here: the builders return dicts for
`protocol.FrameWriter.send`, and the few frames every cell sends (`started`,
`done`, a plain text `result`) also come as precomputed byte templates,
because `json` costs more than the rest of a trivial cell.

Standard library only (Python 3.8+).
"""
import json

PROTOCOL_VERSION = 1
# On the command line, with an fd: where the runner writes the id of each
# request it begins (`id\n` at offset 0) instead of sending `started`.
STARTED_FD_FLAG = "--started-fd"

# Shared names.
STATUS_MIME = "application/x-cellbox-status"
DATA_MIME = "application/vnd.cellbox.data+json"
CHART_MIME = "application/vnd.cellbox.chart+json"

# Host -> runner, by "type" (a line without one is an execute request).
EXECUTE = "execute"
INTERRUPT = "interrupt"
EXIT = "exit"
COMPLETE = "complete"
CHECK = "check"
SNAPSHOT = "snapshot"
RESTORE = "restore"
FORK = "fork"
BRIDGE_RESULT = "bridge_result"
REQUEST_TYPES = (EXECUTE, INTERRUPT, EXIT, COMPLETE, CHECK, SNAPSHOT, RESTORE, FORK, BRIDGE_RESULT)

# Runner -> host, by "type".
READY = "ready"
STARTED = "started"
STDOUT = "stdout"
STDERR = "stderr"
DISPLAY = "display"
RESULT = "result"
ERROR = "error"
DONE = "done"
COMPLETENESS = "completeness"
CHECKED = "checked"
SNAPSHOT_FRAME = "snapshot"
BRIDGE_CALL = "bridge_call"
FRAME_TYPES = (READY, STARTED, STDOUT, STDERR, DISPLAY, RESULT, ERROR, DONE, COMPLETENESS, CHECKED, SNAPSHOT_FRAME, BRIDGE_CALL)

# The fork server's socket, and a kernel's control socket (see zygote.py, fork.py).
FS_FORK = "fork"
FS_FILE = "file"
FS_READY = "ready"
FS_FAILED = "failed"
FS_FORKED = "forked"
FS_FORK_FAILED = "fork_failed"
FS_EXIT = "exit"
FORK_SERVER_TYPES = (FS_FORK, FS_FILE, FS_READY, FS_FAILED, FS_FORKED, FS_FORK_FAILED, FS_EXIT)


# ---------------------------------------------------------------- requests


class Request:
    """One execute request from the host."""

    __slots__ = ("id", "code", "silent", "store_history", "cwd", "env", "restore_env", "json_results", "typescript")

    def __init__(self, id, code, silent, store_history, cwd, env, restore_env=False, json_results=False, typescript=False):
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
        # For the Node runner; Python cells ignore it.
        self.typescript = typescript


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

    __slots__ = ("id", "cells", "lint", "typescript")

    def __init__(self, id, cells, lint, typescript=None):
        self.id = id
        self.cells = cells  # [(number, code)], number 1-based in the call
        self.lint = lint
        # The numbers of the cells marked TypeScript (for the Node runner).
        self.typescript = typescript or set()


class ForkRequest:
    """Fork the kernel here (see `fork.py`); `fork_id` matches the fds sent on the control socket."""

    __slots__ = ("id", "fork_id")

    def __init__(self, id, fork_id):
        self.id = id
        self.fork_id = fork_id


class SnapshotRequest:
    """Save the user namespace to `path`, or restore one from it (`restore`); see `snapshot.py`.

    With `file` (an int), the file comes open on the control socket as the
    `file` message with that id, and `path` only names it in messages."""

    __slots__ = ("id", "path", "restore", "version", "file")

    def __init__(self, id, path, restore, version, file=None):
        self.id = id
        self.path = path
        self.restore = restore
        self.version = version
        self.file = file


class BridgeResult:
    """The host's answer to a `bridge_call` (read while a cell runs)."""

    __slots__ = ("id", "ok", "value", "error", "has_value")

    def __init__(self, id, ok, value, error, has_value=True):
        self.id = id
        self.ok = ok
        self.value = value
        self.error = error
        self.has_value = has_value


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


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


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
    kind = message.get("type", EXECUTE)
    raw_id = message.get("id")
    request_id = str(raw_id) if isinstance(raw_id, str) or _is_int(raw_id) else None
    if kind == EXIT:
        return ExitRequest()
    if kind == INTERRUPT:
        return InterruptRequest()
    if kind == COMPLETE:
        if request_id is None or not isinstance(message.get("code"), str):
            raise ProtocolError("complete request needs an 'id' and 'code' as a string", request_id)
        return CompleteRequest(request_id, message["code"])
    if kind == CHECK:
        cells = message.get("cells")
        if request_id is None or not isinstance(cells, list):
            raise ProtocolError("check request needs an 'id' and 'cells' as a list", request_id)
        parsed = []
        typescript = set()
        for cell in cells:
            if not isinstance(cell, dict) or not isinstance(cell.get("code"), str):
                raise ProtocolError("each checked cell needs 'code' as a string", request_id)
            number = cell.get("number")
            if not _is_int(number):
                number = len(parsed) + 1
            parsed.append((number, cell["code"]))
            if cell.get("typescript") is True:
                typescript.add(number)
        return CheckRequest(request_id, parsed, message.get("lint") is True, typescript)
    if kind in (SNAPSHOT, RESTORE):
        path = message.get("path")
        if request_id is None or not isinstance(path, str) or not path:
            raise ProtocolError("%s request needs an 'id' and 'path' as a string" % kind, request_id)
        version = message.get("version")
        handed = message.get("file")
        if handed is not None and not _is_int(handed):
            raise ProtocolError("%s request's 'file' must be an integer" % kind, request_id)
        return SnapshotRequest(request_id, path, kind == RESTORE, version if isinstance(version, str) else "", handed)
    if kind == FORK:
        fork_id = message.get("fork")
        if request_id is None or not _is_int(fork_id):
            raise ProtocolError("fork request needs an 'id' and 'fork' as an integer", request_id)
        return ForkRequest(request_id, fork_id)
    if kind == BRIDGE_RESULT:
        if request_id is None or not isinstance(message.get("ok"), bool):
            raise ProtocolError("bridge_result needs an 'id' and 'ok' as a boolean")
        error = message.get("error")
        if error is not None and not isinstance(error, dict):
            error = {"kind": "host", "message": str(error)}
        return BridgeResult(request_id, message["ok"], message.get("value"), error, "value" in message)
    if kind != EXECUTE:
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
    typescript = message.get("typescript") is True
    return Request(request_id, code, silent, store_history, cwd, env, restore_env, json_results, typescript)



def encode_request(request):
    """The request as the host sent it (a dict): the inverse of `parse_request`,
    for tests and tools that play the host's part."""
    kind = type(request)
    if kind is Request:
        message = {"type": EXECUTE, "id": request.id, "code": request.code, "silent": request.silent, "storeHistory": request.store_history}
        if request.cwd is not None:
            message["cwd"] = request.cwd
        if request.env is not None:
            message["env"] = request.env
        if request.typescript:
            message["typescript"] = True
        if request.restore_env:
            message["restoreEnv"] = True
        if request.json_results:
            message["jsonResults"] = True
        return message
    if kind is ExitRequest:
        return {"type": EXIT}
    if kind is InterruptRequest:
        return {"type": INTERRUPT}
    if kind is CompleteRequest:
        return {"type": COMPLETE, "id": request.id, "code": request.code}
    if kind is CheckRequest:
        cells = []
        for number, code in request.cells:
            cell = {"number": number, "code": code}
            if number in request.typescript:
                cell["typescript"] = True
            cells.append(cell)
        return {"type": CHECK, "id": request.id, "cells": cells, "lint": request.lint}
    if kind is SnapshotRequest:
        message = {"type": RESTORE if request.restore else SNAPSHOT, "id": request.id, "path": request.path, "version": request.version}
        if request.file is not None:
            message["file"] = request.file
        return message
    if kind is ForkRequest:
        return {"type": FORK, "id": request.id, "fork": request.fork_id}
    if kind is BridgeResult:
        message = {"type": BRIDGE_RESULT, "id": request.id, "ok": request.ok}
        if request.has_value:
            message["value"] = request.value
        if request.error is not None:
            message["error"] = request.error
        return message
    raise TypeError("not a request: %r" % (request,))


# ------------------------------------------------------------------ frames


def ready(pid, python, executable, lost_threads=None):
    """The handshake; `lost_threads` only in a kernel forked from another."""
    frame = {"type": READY, "protocol": PROTOCOL_VERSION, "python": python, "pid": pid, "executable": executable}
    if lost_threads:
        frame["lostThreads"] = lost_threads
    return frame


def started(request_id):
    return {"type": STARTED, "id": request_id}


def output(stream, request_id, data):
    """A `stdout` or `stderr` frame (the runner writes output on fd 1/2 instead)."""
    return {"type": stream, "id": request_id, "data": data}


def bundle_frame(kind, request_id, bundle, metadata=None):
    """A `display` or `result` frame; empty metadata is left out."""
    frame = {"type": kind, "id": request_id, "bundle": bundle}
    if metadata:
        frame["metadata"] = metadata
    return frame


def error(request_id, ename, evalue, traceback):
    return {"type": ERROR, "id": request_id, "ename": ename, "evalue": evalue, "traceback": traceback}


def done(request_id, status, execution_count, cancelled=False):
    return {"type": DONE, "id": request_id, "status": status, "executionCount": execution_count, "cancelled": cancelled}


def completeness(request_id, status, indent):
    return {"type": COMPLETENESS, "id": request_id, "status": status, "indent": indent}


def checked(request_id, cells, notes):
    """`cells`: one {"error", "findings"} per checked cell (see precheck.py)."""
    return {"type": CHECKED, "id": request_id, "cells": cells, "notes": notes}


def snapshot(request_id, report=None, error=None):
    """The answer to `snapshot`/`restore`: the report, or the reason in words."""
    frame = {"type": SNAPSHOT_FRAME, "id": request_id}
    if error is not None:
        frame["error"] = error
    else:
        frame["report"] = report
    return frame


def bridge_call(call_id, cell, op, args):
    return {"type": BRIDGE_CALL, "id": call_id, "cell": cell, "op": op, "args": args}


# Byte templates for the frames every cell sends, filled with JSON-quoted
# values (`protocol.quote`); tests/runner/test_wire.py checks them against
# the builders above.
_STARTED = b'{"type":"started","id":%s}\n'
_DONE = b'{"type":"done","id":%s,"status":"%s","executionCount":%d,"cancelled":%s}\n'
_TEXT_RESULT = b'{"type":"result","id":%s,"bundle":{"text/plain":%s}}\n'


def started_line(quoted_id):
    return _STARTED % quoted_id


def done_line(quoted_id, status, execution_count, cancelled):
    return _DONE % (quoted_id, status.encode("ascii"), execution_count, b"true" if cancelled else b"false")


def text_result_line(quoted_id, quoted_text):
    """A `result` whose bundle is only text/plain (the common repr)."""
    return _TEXT_RESULT % (quoted_id, quoted_text)


# ------------------------------------------------------------- fork server


def fork_server_ready(pid, python):
    return {"type": FS_READY, "pid": pid, "python": python}


def fork_server_failed(message):
    return {"type": FS_FAILED, "message": message}


def forked(fork_id, pid, lost_threads=None):
    """`lost_threads` from a kernel being forked (the fork server has none)."""
    message = {"type": FS_FORKED, "id": fork_id, "pid": pid}
    if lost_threads is not None:
        message["lostThreads"] = lost_threads
    return message


def fork_failed(fork_id, message):
    return {"type": FS_FORK_FAILED, "id": fork_id, "message": message}


def exited(pid, code, signal):
    """A forked kernel ended: its exit code or signal (both None: unknown)."""
    return {"type": FS_EXIT, "pid": pid, "code": code, "signal": signal}


def parse_fork_request(data):
    """A `fork` message from the host: a dict with "id" (an int) and, to the
    fork server, "cwd", "env" and "argv"; ValueError when it is not one."""
    message = json.loads(data.decode("utf-8"))
    if not isinstance(message, dict) or message.get("type") != FS_FORK or not _is_int(message.get("id")):
        raise ValueError("not a fork request with an integer id")
    for name, kinds in (("cwd", str), ("env", dict), ("argv", list)):
        if name in message and not isinstance(message[name], kinds):
            raise ValueError("field %r has the wrong type" % name)
    return message


def parse_file_message(data):
    """A `file` message from the host (one fd comes with it): its id; ValueError when it is not one."""
    message = json.loads(data.decode("utf-8"))
    if not isinstance(message, dict) or message.get("type") != FS_FILE or not _is_int(message.get("id")):
        raise ValueError("not a file message with an integer id")
    return message["id"]


def file_message(file_id):
    """The host's `file` message (for tests and tools that play the host's part)."""
    return {"type": FS_FILE, "id": file_id}


def fork_request(fork_id, cwd=None, env=None, argv=None):
    """The host's `fork` message (for tests and tools that play the host's part)."""
    message = {"type": FS_FORK, "id": fork_id}
    for name, value in (("cwd", cwd), ("env", env), ("argv", argv)):
        if value is not None:
            message[name] = value
    return message
