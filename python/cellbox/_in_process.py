"""The engine inside this Python process: `cellbox._engine`, the extension
the wheel carries, speaking the same JSON-RPC lines as a `cellbox sdk-server`
child, through memory instead of pipes.

A local sandbox uses it when it can (it is what makes a warm `run_code`
close to the engine's own speed; docs/benchmarks.md), and the child process
otherwise: `engine="process"` (or `CELLBOX_SDK_ENGINE=process`) asks for the
child, whose crash cannot take this program with it. `CELLBOX_SDK_ENGINE` may
also name an extension file to load (a development build).

A process forked from this one cannot use the engine (its threads stayed in
the parent): there, its sandboxes say so instead of hanging, and new ones run
their engine as a child process.
"""

import importlib.machinery
import importlib.util
import json
import os
import threading
import weakref
from typing import Any, Callable, Dict, Iterator, List, Optional

from ._transport import (
    _ANSWER,
    _OUTPUT,
    EngineGone,
    LocalTransport,
    Transport,
    _answer,
    _Engine,
    _OneAnswer,
    _request,
    _text,
)
from .exceptions import InvalidArgumentException

__all__ = ["InProcessTransport", "open_local"]

#: `engine=` / `CELLBOX_SDK_ENGINE` values.
_PROCESS = "process"
_IN_PROCESS = "in-process"
_ENGINES = (_PROCESS, _IN_PROCESS)

_loaded: Any = None
_load_lock = threading.Lock()
#: The process that started in-process engines: a process forked from it
#: cannot start one (the fork copied locks the engines' threads held there).
_STARTED_IN: Optional[int] = None
#: How long closing an engine waits for its reader thread to come back from it.
_READER_JOIN = 10.0
#: In-process engines alive in this process, told when it forks.
_LIVE: "weakref.WeakSet[_InProcessEngine]" = weakref.WeakSet()


def _extension(required: bool) -> Any:
    """The `_engine` module: the file `CELLBOX_SDK_ENGINE` names, else the
    wheel's; None when neither is there and it is not `required`."""
    global _loaded
    with _load_lock:
        if _loaded is None:
            path = os.environ.get("CELLBOX_SDK_ENGINE", "")
            if path and path not in _ENGINES:
                _loaded = _load_file(path)
            else:
                try:
                    from . import _engine  # type: ignore[attr-defined]
                except ImportError as error:
                    if required:
                        raise EngineGone(
                            "the in-process engine is not in this installation (%s): use engine=%r, "
                            "or install the cellbox wheel for this platform" % (error, _PROCESS)
                        ) from None
                    return None
                _loaded = _engine
        return _loaded


def _load_file(path: str) -> Any:
    """Load the extension from `path` (CELLBOX_SDK_ENGINE)."""
    loader = importlib.machinery.ExtensionFileLoader("cellbox._engine", path)
    spec = importlib.util.spec_from_file_location("cellbox._engine", path, loader=loader)
    if spec is None or not os.path.isfile(path):
        raise EngineGone("CELLBOX_SDK_ENGINE=%s: no such extension file" % path)
    module = importlib.util.module_from_spec(spec)
    try:
        loader.exec_module(module)
    except ImportError as error:
        raise EngineGone("CELLBOX_SDK_ENGINE=%s could not be loaded: %s" % (path, error)) from None
    return module


def open_local(engine: Optional[str], args: List[str], cwd: Optional[str], envs: Optional[Dict[str, str]]) -> Transport:
    """A local sandbox's transport: `engine` (else `CELLBOX_SDK_ENGINE`) chooses;
    without a choice, in this process when the extension is installed."""
    chosen = engine if engine is not None else os.environ.get("CELLBOX_SDK_ENGINE") or None
    if engine is not None and engine not in _ENGINES:
        raise InvalidArgumentException("engine=%r: expected %r or %r" % (engine, _IN_PROCESS, _PROCESS))
    forked = _STARTED_IN is not None and _STARTED_IN != os.getpid()
    if forked and engine == _IN_PROCESS:
        raise InvalidArgumentException(
            "engine=%r: this process was forked from one whose sandboxes run in-process (pid %d), "
            "and cannot start that engine; use engine=%r" % (_IN_PROCESS, _STARTED_IN, _PROCESS)
        )
    if chosen == _PROCESS or forked:
        return LocalTransport(args, cwd=cwd, env=envs)
    extension = _extension(required=chosen is not None)
    if extension is None:
        return LocalTransport(args, cwd=cwd, env=envs)
    return InProcessTransport(extension, args, cwd, envs)


class _Lines:
    """The engine's message lines, read in the reader thread."""

    def __init__(self, engine: Any) -> None:
        self._engine = engine

    def __iter__(self) -> Iterator[str]:
        return iter(self._engine.receive, None)

    def close(self) -> None:
        pass


class _Requests:
    """Where the transport writes its request lines: the engine's input."""

    def __init__(self, engine: Any) -> None:
        self._engine = engine
        self.closed = False

    def write(self, line: bytes) -> None:
        if not self._engine.send(line.decode("utf-8")):
            raise BrokenPipeError("the cellbox engine no longer reads")

    def flush(self) -> None:
        pass


class _InProcessEngine(_Engine):
    """`_Engine` for an engine in this process: why it is gone is its own word."""

    def __init__(self, engine: Any) -> None:
        super().__init__(_Lines(engine), _Requests(engine), None, "in-process")  # type: ignore[arg-type]
        self.native = engine
        #: Set in a forked child: why the engine cannot be used there.
        self.forked: Optional[str] = None

    def why_gone(self) -> str:
        if self.forked is not None:
            return self.forked
        stopped = self.native.stopped()
        return "the cellbox engine has stopped" + (": " + stopped if stopped else "")


class InProcessTransport(Transport):
    """An engine in this process: no port, no pipe, no child of its own (its
    kernels are this process's children). It stops with its sandbox, when
    garbage-collected, or at the end of the program."""

    def __init__(self, extension: Any, args: List[str], cwd: Optional[str], envs: Optional[Dict[str, str]]) -> None:
        flags = list(args) + (["--cwd", cwd] if cwd is not None else [])
        try:
            native = extension.Engine(flags, dict(envs or {}))
        except ValueError as error:
            raise InvalidArgumentException(_first_line(str(error))) from None
        global _STARTED_IN
        _STARTED_IN = os.getpid()
        engine = _InProcessEngine(native)
        _LIVE.add(engine)
        self._start(engine)
        self._finalizer = weakref.finalize(self, _close_engine, engine)

    def _request_waking_once(
        self, method: str, params: Optional[Dict[str, Any]], on_output: Optional[Callable[[Dict[str, Any]], None]]
    ) -> Any:
        # The caller takes its call's messages from the engine itself, without
        # the reader thread: the one wake-up a warm call costs.
        engine = self._engine
        call_id = self._new_call()
        line = _text(_request(call_id, method, params))
        answered = False
        try:
            lines, answered = engine.native.call(line, call_id)
        finally:
            if not answered:
                self._close(call_id, method, answered=False)  # Ctrl-C: the cell stops too
        # The same recording as with the reader thread: the first failure of
        # `on_output` is kept and the outputs after it are dropped.
        answer = _OneAnswer(on_output)
        for text in lines:
            message = json.loads(text)
            answer.deliver((_OUTPUT, message.get("params") or {}) if "method" in message else (_ANSWER, message))
        if answer.failure is not None:
            raise answer.failure
        if not answered:
            raise EngineGone(engine.why_gone())
        return _answer(*answer.wait())


def _close_engine(engine: _InProcessEngine) -> None:
    """Stop the engine and its kernels: the engine's input ends, and its
    reader thread sees the end of its output. The reader is waited for: a
    thread still coming back from the engine (to take the GIL again) while
    the interpreter shuts down is ended by it inside the engine's frames,
    which aborts the whole process."""
    engine.writer.closed = True
    if engine.forked is None:
        engine.native.close()
        reader = engine.reader_thread
        if reader is not None and reader is not threading.current_thread():
            reader.join(timeout=_READER_JOIN)


def _first_line(message: str) -> str:
    """A flag error's first line, without clap's `error: `."""
    lines = [line for line in message.splitlines() if line.strip()]
    first = lines[0] if lines else message
    return first[len("error: ") :] if first.startswith("error: ") else first


def _after_fork_in_child() -> None:
    for engine in list(_LIVE):
        engine.forked = (
            "this sandbox's engine runs in the process that created it (pid %d), not in this forked child: "
            "create a sandbox here (its engine runs as a child process), or use engine=%r" % (os.getppid(), _PROCESS)
        )
        engine.writer.closed = True
        engine.gone = engine.forked


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
