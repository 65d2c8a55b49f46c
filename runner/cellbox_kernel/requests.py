"""Who reads the request pipe, and when.

Between cells the main thread reads the next request itself: handing each
request from a reader thread to the main thread costs a thread wake-up and a
GIL hand-off, about as much as the rest of a quick cell. While a cell runs,
only bridge answers are needed from the pipe, and only while a bridge call
waits for one; then a helper thread reads. Whatever else it reads on the way
(the next request, sent early) waits in a queue for the main thread.

One thread reads at a time (`_reading`); the pipe's buffer is shared.

Where the host cannot send SIGINT (Windows), interrupts come as `interrupt`
lines, which must be read while a cell runs: there a thread reads every line
from the start (`always_read`), interrupts the main thread for an `interrupt`
line, and queues the rest; the main thread only takes from the queue.
"""
import _thread
import collections
import threading

from . import protocol
from .interrupts import block_interrupts_in_this_thread


class Requests:
    def __init__(self, reader, bridge, always_read=False):
        self._reader = reader
        self._bridge = bridge
        self._reading = threading.Lock()
        self._queued = collections.deque()
        # Tells the helper a bridge call waits, and the main thread that the
        # helper queued a request or stopped reading.
        self._changed = threading.Condition()
        self._helper = None
        self._always = always_read
        bridge.on_call = self._bridge_call_started
        if always_read:
            self._helper = threading.Thread(target=self._read_always, name="cellbox-requests", daemon=True)
            self._helper.start()

    def next(self):
        """The next request for the main loop (a ProtocolError for a bad
        line, None at end of input); bridge answers read on the way go to
        their callers."""
        if self._always:
            with self._changed:
                while not self._queued:
                    self._changed.wait()
                return self._queued.popleft()
        while True:
            if self._queued:
                return self._queued.popleft()
            if not self._reading.acquire(blocking=False):
                # The helper reads for a bridge call still waiting (from a
                # thread the last cell left running): it queues what else it reads.
                with self._changed:
                    while not self._queued and self._reading.locked():
                        self._changed.wait()
                continue
            try:
                if self._queued:
                    continue
                item = self._read_one()
            finally:
                self._reading.release()
            if item is not _DELIVERED:
                return item

    def _read_one(self):
        """Read and route one line (the caller holds `_reading`)."""
        line = self._reader.read_line()
        if not line:
            return None
        try:
            request = protocol.parse_request(line)
        except protocol.ProtocolError as error:
            return error
        if isinstance(request, protocol.BridgeResult):
            self._bridge.deliver(request)
            return _DELIVERED
        if isinstance(request, protocol.InterruptRequest):
            # As if SIGINT arrived: the interrupt gate decides (a cell runs, or it is dropped).
            _thread.interrupt_main()
            return _DELIVERED
        return request

    def _bridge_call_started(self):
        """A bridge call is about to wait for its answer: make sure a thread reads."""
        with self._changed:
            if self._helper is None:
                self._helper = threading.Thread(target=self._read_for_bridge, name="cellbox-requests", daemon=True)
                self._helper.start()
            self._changed.notify_all()

    def _read_for_bridge(self):
        block_interrupts_in_this_thread()
        while True:
            with self._changed:
                while not self._bridge.in_flight():
                    self._changed.wait()
            with self._reading:
                # A call given up meanwhile (interrupted) needs no answer: the
                # loop ends at the next line instead of waiting for another.
                while self._bridge.in_flight():
                    item = self._read_one()
                    if item is _DELIVERED:
                        continue
                    with self._changed:
                        self._queued.append(item)
                        self._changed.notify_all()
                    if item is None:
                        return
            with self._changed:
                self._changed.notify_all()

    def _read_always(self):
        block_interrupts_in_this_thread()
        while True:
            with self._reading:
                item = self._read_one()
            if item is _DELIVERED:
                continue
            with self._changed:
                self._queued.append(item)
                self._changed.notify_all()
            if item is None:
                return


_DELIVERED = object()
