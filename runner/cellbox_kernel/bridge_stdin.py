"""Bridge calls over the Jupyter stdin channel, for kernels cellbox drives
through a Jupyter gateway.

Such a kernel has no pipe to the host: the only way back is the protocol's
own `input_request`, whose `input_reply` the host writes. So calls travel as
the prompt of an input_request (a marker, then JSON), and answers come back
as the reply's value. ipykernel serves one input_request at a time (it
empties the stdin socket before each), so one pump thread per kernel makes
every round trip: each request carries all calls queued since the last one,
and each reply all answers ready by then. The host holds a request until an
answer is ready or a short while has passed, so calls made meanwhile leave
soon. The pump runs in an empty context, where ipykernel finds the running
cell's parent message.

Standard library only and no relative imports: the gateway backend sends
this file's source to the kernel.
"""
import contextvars
import json
import sys
import threading

MARKER = "cellbox-bridge/1 "
"""How an input_request carrying bridge calls begins (the host answers those)."""

_NOT_ANSWERED = (
    "this kernel's host does not answer bridge calls over the Jupyter stdin channel "
    "(its reply was not an cellbox bridge answer: %r)"
)


class Answer:
    """The host's answer to one call, as `Bridge.deliver` reads it."""

    __slots__ = ("id", "ok", "value", "error")

    def __init__(self, fields):
        self.id = str(fields.get("id"))
        self.ok = fields.get("ok") is True
        self.value = fields.get("value")
        self.error = fields.get("error")


def _failed(call_id, kind, message):
    return Answer({"id": call_id, "ok": False, "error": {"kind": kind, "message": message}})


class StdinTransport:
    """Carries a Bridge's calls as input_requests made by `ask(prompt)`."""

    def __init__(self, bridge, ask):
        self._bridge = bridge
        self._ask = ask
        self._lock = threading.Lock()
        self._queue = []
        self._waiting = set()
        self._pumping = False

    def send(self, frame):
        """Queue one `bridge_call` frame; start the pump unless it runs."""
        with self._lock:
            self._queue.append({"id": frame["id"], "op": frame["op"], "args": frame["args"]})
            if self._pumping:
                return
            self._pumping = True
        pump = threading.Thread(target=contextvars.Context().run, args=(self._pump,), name="cellbox-bridge")
        pump.daemon = True
        pump.start()

    def _next_request(self):
        """The prompt of the next round trip, or None when nothing is left to do."""
        with self._lock:
            calls, self._queue = self._queue, []
            self._waiting.update(call["id"] for call in calls)
            if not self._waiting:
                self._pumping = False
                return None
            return MARKER + json.dumps({"calls": calls, "waiting": sorted(self._waiting)})

    def _pump(self):
        while True:
            prompt = self._next_request()
            if prompt is None:
                return
            for answer in self._round_trip(prompt):
                with self._lock:
                    self._waiting.discard(answer.id)
                self._bridge.deliver(answer)

    def _round_trip(self, prompt):
        """One input_request; a failure of the channel fails every waiting call."""
        reply = None
        try:
            reply = self._ask(prompt)
            answers = json.loads(reply)["results"]
            return [Answer(fields) for fields in answers if isinstance(fields, dict)]
        except Exception as error:  # no answer will come: wake every caller
            if reply is None:
                message = "the bridge call could not reach the host: %s: %s" % (type(error).__name__, error)
            else:
                message = _NOT_ANSWERED % (str(reply)[:80],)
            with self._lock:
                waiting, self._waiting = sorted(self._waiting), set()
            return [_failed(call_id, "unavailable", message) for call_id in waiting]


def _flush_output():
    for stream in (sys.stdout, sys.stderr):
        if stream is not None:
            stream.flush()


def connect(bridge, kernel):
    """Wire `bridge` (the runner's Bridge) to the IPython kernel `kernel`."""
    transport = StdinTransport(bridge, kernel.raw_input)
    bridge.connect(transport.send, lambda: "cell", _flush_output)
    return transport
