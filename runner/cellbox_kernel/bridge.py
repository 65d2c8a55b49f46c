"""The way back to the host: a cell's `bridge_call` frames and their answers.

A cell asks the host for work (a model completion, a sub-agent, a host tool)
by writing a `bridge_call` frame on the frames fd; the host answers with a
`bridge_result` on the request pipe, which a helper thread reads while any
call waits (requests.py) and hands to `deliver()`. Many calls may be in flight
at once (threads, asyncio, `parallel`); each caller waits for the answer with
its own id. No port is opened and no secret is handed to the kernel.
"""
import itertools
import threading

from . import wire


class BridgeError(RuntimeError):
    """A bridge call failed on the host; the message is the host's.

    `kind` says why: `unavailable` (no bridge configured, or no model),
    `limit` (a cap was reached), `cancelled`, `invalid` or `host`.
    """

    def __init__(self, message, kind="host"):
        RuntimeError.__init__(self, message)
        self.kind = kind


BridgeError.__module__ = "builtins"  # tracebacks show the bare name


class _Waiter:
    """One call waiting for its answer, from a thread or an event loop."""

    __slots__ = ("event", "answer", "loop", "future")

    def __init__(self, loop=None, future=None):
        self.event = threading.Event() if loop is None else None
        self.answer = None
        self.loop = loop
        self.future = future


class Bridge:
    """Sends calls and routes answers to whoever waits for them."""

    def __init__(self):
        self._lock = threading.Lock()
        self._pending = {}
        self._ids = itertools.count(1)
        self._send = None
        self._cell = lambda: None
        self._flush = lambda: None
        # Called once a call waits for its answer, so that someone reads the
        # request pipe while the cell runs (see requests.py).
        self.on_call = lambda: None

    def connect(self, send_frame, current_cell, flush_output):
        """Wire the bridge to the runner: how to write a frame, which request
        runs now, and how to flush buffered output before a call."""
        self._send = send_frame
        self._cell = current_cell
        self._flush = flush_output

    def _start(self, op, args, waiter):
        cell = self._cell()
        if self._send is None or cell is None:
            raise BridgeError("bridge calls work only inside a running cell", "unavailable")
        with self._lock:
            call_id = "b%d" % next(self._ids)
            self._pending[call_id] = waiter
        self.on_call()
        self._flush()
        try:
            self._send(wire.bridge_call(call_id, cell, op, args))
        except BaseException:
            self._forget(call_id)
            raise
        return call_id

    def _forget(self, call_id):
        with self._lock:
            self._pending.pop(call_id, None)

    def call(self, op, args):
        """Ask the host and wait for its answer (an interrupt stops the wait;
        the host then cancels the call)."""
        waiter = _Waiter()
        call_id = self._start(op, args, waiter)
        try:
            waiter.event.wait()
        finally:
            self._forget(call_id)
        return _unwrap(waiter.answer)

    async def call_async(self, op, args):
        """`call` for coroutines: many may wait at once on one event loop."""
        import asyncio

        loop = asyncio.get_running_loop()
        future = loop.create_future()
        call_id = self._start(op, args, _Waiter(loop, future))
        try:
            answer = await future
        finally:
            self._forget(call_id)
        return _unwrap(answer)

    def deliver(self, result):
        """Hand the host's answer to its caller (called by whichever thread
        reads the request pipe)."""
        with self._lock:
            waiter = self._pending.pop(result.id, None)
        if waiter is None:
            return  # its caller gave up (interrupted) already
        waiter.answer = result
        if waiter.event is not None:
            waiter.event.set()
        else:
            waiter.loop.call_soon_threadsafe(_settle, waiter.future, result)

    def in_flight(self):
        """How many calls wait for an answer (for tests and diagnostics)."""
        with self._lock:
            return len(self._pending)


def _settle(future, result):
    if not future.done():
        future.set_result(result)


def _unwrap(result):
    if result.ok:
        return result.value
    error = result.error or {}
    raise BridgeError(str(error.get("message") or "the host reported an error"), str(error.get("kind") or "host"))


BRIDGE = Bridge()
