"""The seam between the SDK and an engine: JSON-RPC 2.0 messages, one per line.

`LocalTransport` starts `cellbox sdk-server` (the binary installed with this
package) and owns it: no port is opened, and the engine, with its kernels,
ends when the transport is closed, garbage-collected or the program exits.
A remote transport will speak the same methods to `cellbox serve`.

A reader thread takes every line the engine writes and hands it to the call
that waits for it; `output` notifications of a run are queued for the thread
that called `run_code`, so its callbacks run in that thread, in order.
"""

import asyncio
import inspect
import json
import os
import queue
import shutil
import subprocess
import sys
import sysconfig
import threading
import weakref
from typing import IO, Any, Awaitable, Callable, Dict, Generator, List, Optional, Tuple, Union

from . import _wire
from .exceptions import (
    EngineTooOldException,
    InvalidArgumentException,
    NotFoundException,
    PermissionDeniedException,
    SandboxException,
    SandboxNotRunningException,
)

__all__ = ["EngineGone", "LocalTransport", "Transport", "find_binary"]

#: The exception each of the engine's error codes (`_wire`) becomes.
_EXCEPTIONS = {
    _wire.PARSE_ERROR: SandboxException,
    _wire.INVALID_REQUEST: InvalidArgumentException,
    _wire.METHOD_NOT_FOUND: EngineTooOldException,
    _wire.INVALID_PARAMS: InvalidArgumentException,
    _wire.NOT_FOUND: NotFoundException,
    _wire.FAILED: SandboxException,
    _wire.DENIED: PermissionDeniedException,
}
#: How much of the engine's stderr an error quotes.
_STDERR_TAIL = 4000
#: How long (seconds) the end of the engine's stderr is waited for once it exited.
_STDERR_GRACE = 5.0
#: The calls the engine stops when their caller stops waiting for the answer.
_CANCELLED_WHEN_ABANDONED = (_wire.RUN_CODE, _wire.COMMANDS_WAIT)


class EngineGone(SandboxNotRunningException):
    """The engine process ended (or could not start); its stderr's tail says why."""


def find_binary() -> str:
    """The `cellbox` binary: the one installed beside this interpreter's
    scripts (the wheel puts it there), else the first on PATH."""
    name = "cellbox.exe" if os.name == "nt" else "cellbox"
    beside = os.path.join(sysconfig.get_path("scripts"), name)
    if os.path.isfile(beside) and os.access(beside, os.X_OK):
        return beside
    found = shutil.which("cellbox")
    if found:
        return found
    raise EngineGone(
        "the cellbox binary was not found beside this Python (%s) or on PATH: "
        "install the package with `pip install cellbox`" % sys.executable
    )


class _Call:
    """One request in flight: where its notifications and its answer go.
    `deliver` is called in the reader thread with `(kind, payload)`."""

    __slots__ = ("deliver",)

    def __init__(self, deliver: Callable[[Tuple[str, Any]], None]) -> None:
        self.deliver = deliver


class _OneAnswer:
    """A call's outputs, recorded in the reader thread as they come, and its
    answer, waited for on a lock the reader releases: one wake-up per call."""

    __slots__ = ("_on_output", "_arrived", "_item", "failure")

    def __init__(self, on_output: Optional[Callable[[Dict[str, Any]], None]]) -> None:
        self._on_output = on_output
        self._arrived = threading.Lock()
        self._arrived.acquire()
        self._item: Optional[Tuple[str, Any]] = None
        #: What `on_output` raised first (the outputs after it are dropped).
        self.failure: Optional[BaseException] = None

    def deliver(self, item: Tuple[str, Any]) -> None:
        if item[0] == _OUTPUT:
            if self._on_output is not None and self.failure is None:
                try:
                    self._on_output(item[1])
                except Exception as error:  # the reader thread must go on
                    self.failure = error
        elif self._item is None:  # only the reader thread delivers: no race
            self._item = item
            self._arrived.release()

    def wait(self) -> Tuple[str, Any]:
        self._arrived.acquire()
        assert self._item is not None
        return self._item


_ANSWER = "answer"
_OUTPUT = "output"
_GONE = "gone"


class _Engine:
    """The engine's connection and what its reader threads share with callers:
    the lines it writes (`reader`), the lines it reads (`writer`), and for a
    local engine its process.

    The threads hold this object, never the transport, so a transport nobody
    holds is garbage-collected and its finalizer stops the engine."""

    def __init__(
        self, reader: IO[bytes], writer: IO[bytes], process: "Optional[subprocess.Popen[bytes]]", where: str
    ) -> None:
        self.reader = reader
        self.writer = writer
        self.process = process
        self.where = where
        self.lock = threading.Lock()
        self.calls: Dict[int, _Call] = {}
        self.stderr = ""
        #: Set once all of stderr is read: why the engine stopped is at its end.
        self.stderr_read = threading.Event()
        if process is None:
            self.stderr_read.set()
        self.gone: Optional[str] = None
        #: Set once the engine's output has ended and every waiting call was told.
        self.ended = threading.Event()
        #: The thread that reads the engine's output (set when it starts).
        self.reader_thread: Optional[threading.Thread] = None

    def why_gone(self) -> str:
        if self.process is None:
            return "the connection to the cellbox server at %s was closed" % self.where
        code = self.process.poll()
        what = "the cellbox engine has stopped" if code is None else "the cellbox engine exited (code %s)" % code
        tail = self.stderr.strip()
        return "%s%s" % (what, (": " + tail) if tail else "")


def _read_answers(engine: _Engine) -> None:
    """Hand each line the engine writes to the call it belongs to; at the end
    of its output, tell every waiting call why the engine is gone."""
    stdout = engine.reader
    for line in _lines(stdout):
        try:
            routed = _route(json.loads(line))
        except ValueError:
            continue
        if routed is not None:
            call = engine.calls.get(routed[0])
            if call is not None:
                _deliver(call, routed[1])
    try:
        stdout.close()
    except OSError:
        pass
    if engine.process is not None:
        engine.process.wait()
    # A kernel still holding the pipe must not keep the callers waiting for long.
    engine.stderr_read.wait(timeout=_STDERR_GRACE)
    with engine.lock:
        engine.gone = engine.why_gone()
        calls = list(engine.calls.values())
    for call in calls:
        _deliver(call, (_GONE, engine.gone))
    engine.ended.set()


def _route(message: Any) -> Optional[Tuple[Any, Tuple[str, Any]]]:
    """The call a message from the engine belongs to (its request's id) and
    what it is to that call: its answer, or one of its outputs; `None` for
    anything else."""
    if not isinstance(message, dict):
        return None
    if "id" in message and ("result" in message or "error" in message):
        return message["id"], (_ANSWER, message)
    if message.get("method") == _wire.OUTPUT:
        params = message.get("params") or {}
        return params.get("call"), (_OUTPUT, params)
    return None


def _lines(reader: IO[bytes]) -> Generator[bytes, None, None]:
    """The lines of `reader` until its end; a connection reset ends them too."""
    try:
        for line in reader:
            yield line
    except (OSError, ValueError):
        return


def _deliver(call: _Call, item: Tuple[str, Any]) -> None:
    """Hand `item` to its call; a call whose event loop has closed is past caring."""
    try:
        call.deliver(item)
    except RuntimeError:
        pass


def _read_stderr(engine: _Engine) -> None:
    """Keep the tail of the engine's stderr, for the error that ends a call."""
    stderr = engine.process.stderr
    assert stderr is not None
    read = getattr(stderr, "read1", stderr.read)
    for chunk in iter(lambda: read(4096), b""):
        engine.stderr = (engine.stderr + chunk.decode("utf-8", "replace"))[-_STDERR_TAIL:]
    stderr.close()
    engine.stderr_read.set()


class Transport:
    """Calls to an engine over its connection: requests, their `output`
    notifications and answers. `LocalTransport` and `RemoteTransport` differ
    only in how they connect and what ends the engine."""

    _engine: _Engine
    _finalizer: Any

    def _start(self, engine: _Engine) -> None:
        self._engine = engine
        self._write_lock = threading.Lock()
        self._next_id = 1
        reader = threading.Thread(target=_read_answers, args=(engine,), name="cellbox-sdk-reader", daemon=True)
        engine.reader_thread = reader
        reader.start()

    # -- calls -----------------------------------------------------------

    def request(
        self,
        method: str,
        params: Optional[Dict[str, Any]] = None,
        on_output: Optional[Callable[[Dict[str, Any]], None]] = None,
        output_in_caller: bool = True,
    ) -> Any:
        """Send one request and wait for its answer, handing each `output`
        notification to `on_output` meanwhile, in this thread; or, with
        `output_in_caller=False` (for an `on_output` that only records), in
        the reader thread, so that the caller wakes once, for the answer."""
        if not output_in_caller:
            return self._request_waking_once(method, params, on_output)
        outputs = self.stream(method, params)
        try:
            while True:
                try:
                    payload = next(outputs)
                except StopIteration as end:
                    return end.value
                if on_output is not None:
                    on_output(payload)
        finally:
            outputs.close()  # an on_output that raised: the call is forgotten (and stopped) now

    def _request_waking_once(
        self, method: str, params: Optional[Dict[str, Any]], on_output: Optional[Callable[[Dict[str, Any]], None]]
    ) -> Any:
        # Each wake-up of a waiting thread is CPU the engine's side of a warm
        # call competes for: one instead of two took about 0.03 ms off a
        # 0.6-0.8 ms warm run_code here.
        answer = _OneAnswer(on_output)
        call_id = self._open(method, params, answer.deliver)
        answered = False
        try:
            kind, payload = answer.wait()
            answered = True
            if answer.failure is not None:
                raise answer.failure
            return _answer(kind, payload)
        finally:
            self._close(call_id, method, answered)

    async def request_async(
        self,
        method: str,
        params: Optional[Dict[str, Any]] = None,
        on_output: Optional[Callable[[Dict[str, Any]], Union[None, Awaitable[None]]]] = None,
    ) -> Any:
        """`request` for an event loop: `on_output` runs in the loop and is
        awaited when it returns an awaitable; cancelling the task cancels the call."""
        loop = asyncio.get_running_loop()
        items: "asyncio.Queue[Tuple[str, Any]]" = asyncio.Queue()
        call_id = self._open(method, params, lambda item: loop.call_soon_threadsafe(items.put_nowait, item))
        answered = False
        try:
            while True:
                kind, payload = await items.get()
                if kind == _OUTPUT:
                    if on_output is not None:
                        outcome = on_output(payload)
                        if inspect.isawaitable(outcome):
                            await outcome
                else:
                    answered = True
                    return _answer(kind, payload)
        finally:
            self._close(call_id, method, answered)

    def stream(self, method: str, params: Optional[Dict[str, Any]] = None) -> Generator[Dict[str, Any], None, Any]:
        """`request` for a caller that reads at its own pace: a generator of
        the `output` notifications' params, whose return value (in
        `StopIteration`) is the answer. The request is sent at the first
        `next()`; closing the generator early forgets the call, as `request`
        does when its caller stops waiting."""
        items: "queue.Queue[Tuple[str, Any]]" = queue.Queue()
        call_id = self._open(method, params, items.put)
        answered = False
        try:
            while True:
                kind, payload = items.get()
                if kind == _OUTPUT:
                    yield payload
                else:
                    answered = True
                    return _answer(kind, payload)
        finally:
            self._close(call_id, method, answered)

    def _new_call(self, deliver: Optional[Callable[[Tuple[str, Any]], None]] = None) -> int:
        """The next call's id, its messages registered for `deliver` (if
        given); `EngineGone` once the engine is."""
        engine = self._engine
        with engine.lock:
            if engine.gone is not None:
                raise EngineGone(engine.gone)
            call_id = self._next_id
            self._next_id += 1
            if deliver is not None:
                engine.calls[call_id] = _Call(deliver)
        return call_id

    def _open(self, method: str, params: Optional[Dict[str, Any]], deliver: Callable[[Tuple[str, Any]], None]) -> int:
        """Register a call and send its request; its id."""
        call_id = self._new_call(deliver)
        try:
            self._send(_request(call_id, method, params))
        except BaseException:
            self._close(call_id, method, answered=True)
            raise
        return call_id

    def _close(self, call_id: int, method: str, answered: bool) -> None:
        """Forget a call. A `run_code` whose caller stopped waiting before its
        answer (a callback raised, Ctrl-C, a cancelled task) is stopped in
        the engine too, so its context stays usable; so is a `commands.wait`
        (the command itself goes on)."""
        with self._engine.lock:
            self._engine.calls.pop(call_id, None)
        if not answered and method in _CANCELLED_WHEN_ABANDONED:
            try:
                self._send(_notice(_wire.CANCEL, {"call": call_id}))
            except (EngineGone, OSError):
                pass

    def _send(self, message: Dict[str, Any]) -> None:
        line = _text(message).encode("utf-8") + b"\n"
        with self._write_lock:
            stdin = self._engine.writer
            if stdin.closed:
                raise EngineGone("the cellbox engine was stopped")
            try:
                stdin.write(line)
                stdin.flush()
            except (BrokenPipeError, OSError, ValueError) as error:
                # Why it stopped is at the end of its stderr, which may not be read yet:
                # an engine that refuses its flags exits before the first request arrives.
                self._engine.stderr_read.wait(timeout=_STDERR_GRACE)
                raise EngineGone(self._engine.why_gone()) from error

    # -- lifetime --------------------------------------------------------

    @property
    def stderr(self) -> str:
        """The tail of what a local engine wrote to stderr (a remote one's stays on its server)."""
        return self._engine.stderr

    @property
    def exit_code(self) -> Optional[int]:
        """A local engine's exit status, once it has exited."""
        return None

    @property
    def alive(self) -> bool:
        return self._engine.gone is None

    def close(self) -> None:
        """Stop the engine and its kernels (idempotent)."""
        self._finalizer()


class LocalTransport(Transport):
    """An engine process this program started and owns."""

    def __init__(self, args: List[str], cwd: Optional[str], env: Optional[Dict[str, str]]) -> None:
        # The sandbox's `env` reach the kernels and commands by name (`--env NAME`): their values
        # are in the engine's environment, not on its command line.
        named = [flag for name in sorted(env or {}) for flag in ("--env", name)]
        command = [find_binary(), "sdk-server"] + args + named
        full_env = dict(os.environ)
        full_env.update(env or {})
        try:
            process = subprocess.Popen(
                command,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=cwd,
                env=full_env,
            )
        except OSError as error:
            raise EngineGone("could not start %s: %s" % (command[0], error)) from error
        assert process.stdout is not None and process.stdin is not None
        self._process = process
        self._start(_Engine(process.stdout, process.stdin, process, "local"))
        threading.Thread(target=_read_stderr, args=(self._engine,), name="cellbox-sdk-stderr", daemon=True).start()
        # The engine stops when its stdin closes: however this object ends.
        self._finalizer = weakref.finalize(self, _close_process, process)

    @property
    def pid(self) -> int:
        return self._process.pid

    @property
    def exit_code(self) -> Optional[int]:
        return self._process.poll()

    @property
    def alive(self) -> bool:
        return self._engine.gone is None and self._process.poll() is None


def _close_process(process: "subprocess.Popen[bytes]") -> None:
    """End of input asks the engine to stop its kernels and leave; it is
    killed if it has not within a few seconds."""
    try:
        if process.stdin is not None:
            process.stdin.close()
    except OSError:
        pass
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def _request(call_id: int, method: str, params: Optional[Dict[str, Any]]) -> Dict[str, Any]:
    """A JSON-RPC request of one of the engine's methods (`_wire.METHODS`)."""
    if method not in _wire.METHODS:
        raise ValueError("not a method of the cellbox engine: %r" % (method,))
    return {"jsonrpc": "2.0", "id": call_id, "method": method, "params": params or {}}


def _text(message: Dict[str, Any]) -> str:
    """`message` as one line of JSON. A lone surrogate (say "\\ud800", from
    bytes decoded with `surrogateescape`) is no Unicode text: `json` would
    escape it and the engine refuse the whole line without knowing whose call
    it was, so it is refused here."""
    text = json.dumps(message, ensure_ascii=False)
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as error:
            lone = error.object[error.start]
            try:
                # A high and a low surrogate in a row (a JavaScript-style "\\ud83d\\ude00") are one character.
                return text.encode("utf-16", "surrogatepass").decode("utf-16")
            except UnicodeDecodeError:
                raise InvalidArgumentException(
                    "this call's text holds %r, a lone surrogate, which is not Unicode text and cannot be sent; "
                    "replace it (for example text.encode('utf-8', 'replace').decode('utf-8'))" % lone
                ) from None
    return text


def _notice(method: str, params: Optional[Dict[str, Any]]) -> Dict[str, Any]:
    """A request the engine answers with nothing (no id)."""
    if method not in _wire.METHODS:
        raise ValueError("not a method of the cellbox engine: %r" % (method,))
    return {"jsonrpc": "2.0", "method": method, "params": params or {}}


def _answer(kind: str, payload: Any) -> Any:
    """A call's outcome: its result, or the exception its answer stands for."""
    if kind == _GONE:
        raise EngineGone(payload)
    error = payload.get("error")
    if error is None:
        return payload.get("result")
    raise _failure(error.get("code"), error.get("message", ""))


def _failure(code: Any, text: str) -> Exception:
    """The exception an error answer with `code` and `text` stands for."""
    if code == _wire.METHOD_NOT_FOUND:
        text = "the cellbox engine is older than this SDK (it answered: %s); update cellbox where the engine runs " \
            "(the `cellbox serve` server of a remote sandbox, else this package)" % text
    elif code == _wire.PARSE_ERROR:
        text = "the cellbox engine could not read the SDK's request: %s" % text
    return _EXCEPTIONS.get(code, SandboxException)(text)
