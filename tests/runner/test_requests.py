"""Unit tests of who reads the request pipe: the main thread between cells,
a helper thread only while a bridge call waits, and nothing read by one is
lost to the other.

Run as `python -m unittest` with runner/ on sys.path.
"""
import json
import os
import signal
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "runner"))

from cellbox_kernel import protocol  # noqa: E402
from cellbox_kernel.bridge import Bridge  # noqa: E402
from cellbox_kernel.interrupts import InterruptGate  # noqa: E402
from cellbox_kernel.requests import Requests  # noqa: E402


class Pipe:
    """The host's end of a request pipe, and the runner's Requests over it."""

    def __init__(self, test, always_read=False):
        read_fd, self.write_fd = os.pipe()
        self.calls = []
        self.sent = threading.Condition()
        self.bridge = Bridge()
        self.bridge.connect(self._call_sent, lambda: "r1", lambda: None)
        self.requests = Requests(protocol.RequestReader(read_fd), self.bridge, always_read=always_read)
        test.addCleanup(self.close)

    def _call_sent(self, frame):
        with self.sent:
            self.calls.append(frame)
            self.sent.notify_all()

    def wait_for_calls(self, count):
        with self.sent:
            if not self.sent.wait_for(lambda: len(self.calls) >= count, 10):
                raise AssertionError("only %d of %d bridge calls were sent" % (len(self.calls), count))

    def write(self, *frames):
        os.write(self.write_fd, b"".join(json.dumps(frame).encode() + b"\n" for frame in frames))

    def answer(self, call, value):
        self.write({"type": "bridge_result", "id": call["id"], "ok": True, "value": value})

    def close(self):
        if self.write_fd is not None:
            os.close(self.write_fd)
            self.write_fd = None


def execute(request_id):
    return {"id": request_id, "code": "1+1"}


def call_in_thread(pipe):
    """A bridge call from a thread; returns the thread and where its answer lands."""
    answers = []
    thread = threading.Thread(target=lambda: answers.append(pipe.bridge.call("tool", {})), daemon=True)
    thread.start()
    return thread, answers


class RequestsTests(unittest.TestCase):
    def test_between_cells_requests_come_in_order_and_end_with_none(self):
        pipe = Pipe(self)
        pipe.write(execute("a"), {"type": "complete", "id": "c", "code": "x"}, execute("b"))
        self.assertEqual(pipe.requests.next().id, "a")
        self.assertEqual(pipe.requests.next().id, "c")
        self.assertEqual(pipe.requests.next().id, "b")
        pipe.close()
        self.assertIsNone(pipe.requests.next())

    def test_a_bad_line_is_a_protocol_error_and_reading_goes_on(self):
        pipe = Pipe(self)
        os.write(pipe.write_fd, b"not json\n")
        pipe.write(execute("a"))
        self.assertIsInstance(pipe.requests.next(), protocol.ProtocolError)
        self.assertEqual(pipe.requests.next().id, "a")

    def test_a_waiting_call_is_answered_while_the_main_thread_runs_a_cell(self):
        pipe = Pipe(self)
        thread, answers = call_in_thread(pipe)
        pipe.wait_for_calls(1)
        # The next request arrives before the answer: it waits for the main thread.
        pipe.write(execute("next"))
        pipe.answer(pipe.calls[0], 42)
        thread.join(10)
        self.assertEqual(answers, [42])
        self.assertEqual(pipe.requests.next().id, "next")

    def test_the_main_thread_gets_requests_while_a_call_from_an_old_cell_still_waits(self):
        pipe = Pipe(self)
        thread, answers = call_in_thread(pipe)
        pipe.wait_for_calls(1)
        got = []
        main = threading.Thread(target=lambda: got.append(pipe.requests.next()), daemon=True)
        main.start()
        pipe.write(execute("next"))
        main.join(10)
        self.assertEqual([request.id for request in got], ["next"])
        pipe.answer(pipe.calls[0], "late")
        thread.join(10)
        self.assertEqual(answers, ["late"])

    def test_an_answer_read_between_cells_reaches_its_caller(self):
        pipe = Pipe(self)
        thread, answers = call_in_thread(pipe)
        pipe.wait_for_calls(1)
        pipe.answer(pipe.calls[0], 7)
        thread.join(10)
        pipe.write(execute("a"))
        self.assertEqual(pipe.requests.next().id, "a")
        self.assertEqual(answers, [7])

    def test_end_of_input_during_a_call_reaches_the_main_thread(self):
        pipe = Pipe(self)
        call_in_thread(pipe)
        pipe.wait_for_calls(1)
        pipe.close()
        self.assertIsNone(pipe.requests.next())



def busy_cell(seconds):
    """Pure bytecode in the main thread, as a cell that never blocks."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        pass


class ProtocolInterruptTests(unittest.TestCase):
    """Where the host cannot send SIGINT (Windows) it sends `interrupt` lines,
    read by a thread of their own even while a cell runs."""

    def setUp(self):
        self.addCleanup(signal.signal, signal.SIGINT, signal.getsignal(signal.SIGINT))
        self.gate = InterruptGate()

    def test_an_interrupt_line_interrupts_the_running_cell(self):
        pipe = Pipe(self, always_read=True)
        pipe.write(execute("a"))
        self.assertEqual(pipe.requests.next().id, "a")
        self.gate.arm()
        try:
            with self.assertRaises(KeyboardInterrupt):
                pipe.write({"type": "interrupt"})
                busy_cell(60)
        finally:
            self.gate.disarm()
        self.assertTrue(self.gate.received)
        pipe.write(execute("b"))
        self.assertEqual(pipe.requests.next().id, "b", "requests after an interrupt are read as before")

    def test_an_interrupt_between_cells_is_dropped(self):
        pipe = Pipe(self, always_read=True)
        pipe.write({"type": "interrupt"}, execute("a"))
        # Read in order: the interrupt was handled before "a" was queued, and
        # its handler runs in this thread before the next bytecodes.
        self.assertEqual(pipe.requests.next().id, "a")
        busy_cell(0.05)
        self.assertFalse(self.gate.received)

    def test_requests_and_bridge_answers_are_routed_as_without_the_thread(self):
        pipe = Pipe(self, always_read=True)
        thread, answers = call_in_thread(pipe)
        pipe.wait_for_calls(1)
        pipe.write(execute("a"))
        pipe.answer(pipe.calls[0], 42)
        thread.join(10)
        self.assertFalse(thread.is_alive())
        self.assertEqual(answers, [42])
        self.assertEqual(pipe.requests.next().id, "a")
        pipe.close()
        self.assertIsNone(pipe.requests.next())


if __name__ == "__main__":
    unittest.main()
