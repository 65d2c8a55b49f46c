"""Unit tests of the stdin transport gateway kernels use for bridge calls:
calls are batched into one input_request at a time, answers reach their
callers whatever order they come in, and a channel that fails (or a host
that does not speak the bridge) wakes every caller with a clear error.

Run as `python -m unittest` with runner/ on sys.path.
"""
import json
import os
import sys
import threading
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "runner"))

from cellbox_kernel.bridge import Bridge, BridgeError  # noqa: E402
from cellbox_kernel.bridge_stdin import MARKER, StdinTransport  # noqa: E402


class FakeStdinHost:
    """Plays ipykernel's raw_input and the host: answers each request with
    the calls it has seen so far, minus the ones held back by `hold`."""

    def __init__(self, answer=None, hold=()):
        self.lock = threading.Lock()
        self.active = 0
        self.most_at_once = 0
        self.requests = []
        self.seen = {}
        self.answered = set()
        self.hold = set(hold)
        self.answer = answer or (lambda call: {"ok": True, "value": "echo %s" % call["args"]["n"]})
        self.released = threading.Event()

    def ask(self, prompt):
        assert prompt.startswith(MARKER), prompt
        request = json.loads(prompt[len(MARKER) :])
        with self.lock:
            self.active += 1
            self.most_at_once = max(self.most_at_once, self.active)
            self.requests.append(request)
            for call in request["calls"]:
                self.seen[call["id"]] = call
        with self.lock:
            results = []
            for call_id in request["waiting"]:
                held = call_id in self.hold and not self.released.is_set()
                if call_id in self.seen and call_id not in self.answered and not held:
                    self.answered.add(call_id)
                    results.append(dict(self.answer(self.seen[call_id]), id=call_id))
            self.active -= 1
        if not results:
            self.released.wait(0.05)  # the host holds a request with nothing to answer
        return json.dumps({"results": results})


def connected(ask):
    bridge = Bridge()
    transport = StdinTransport(bridge, ask)
    bridge.connect(transport.send, lambda: "cell", lambda: None)
    return bridge


class StdinTransportTest(unittest.TestCase):
    def test_a_call_is_one_round_trip(self):
        host = FakeStdinHost()
        bridge = connected(host.ask)
        self.assertEqual(bridge.call("completion", {"n": 1}), "echo 1")
        self.assertEqual(len(host.requests), 1)
        self.assertEqual(host.requests[0]["calls"], [{"id": "b1", "op": "completion", "args": {"n": 1}}])

    def test_many_threads_share_one_request_at_a_time(self):
        host = FakeStdinHost()
        bridge = connected(host.ask)
        results = {}

        def worker(n):
            results[n] = bridge.call("completion", {"n": n})

        threads = [threading.Thread(target=worker, args=(n,)) for n in range(20)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(10)
        self.assertEqual(results, {n: "echo %d" % n for n in range(20)})
        self.assertEqual(host.most_at_once, 1, "ipykernel serves one input_request at a time")
        self.assertEqual(bridge.in_flight(), 0)

    def test_a_slow_answer_does_not_hold_up_the_others(self):
        host = FakeStdinHost(hold={"b1"})
        bridge = connected(host.ask)
        first = {}
        slow = threading.Thread(target=lambda: first.setdefault("value", bridge.call("completion", {"n": 1})))
        slow.start()
        while not host.requests:
            threading.Event().wait(0.01)
        self.assertEqual(bridge.call("completion", {"n": 2}), "echo 2")
        self.assertEqual(first, {}, "the held call is still waiting")
        host.released.set()
        slow.join(10)
        self.assertEqual(first["value"], "echo 1")

    def test_host_errors_raise_with_their_kind(self):
        failing = {"ok": False, "error": {"kind": "cancelled", "message": "the cell was interrupted"}}
        bridge = connected(FakeStdinHost(answer=lambda call: failing).ask)
        with self.assertRaises(BridgeError) as raised:
            bridge.call("completion", {"n": 1})
        self.assertEqual((raised.exception.kind, str(raised.exception)), ("cancelled", "the cell was interrupted"))

    def test_a_host_that_does_not_speak_the_bridge_fails_clearly(self):
        bridge = connected(lambda prompt: "")
        with self.assertRaises(BridgeError) as raised:
            bridge.call("completion", {"n": 1})
        self.assertEqual(raised.exception.kind, "unavailable")
        self.assertIn("does not answer bridge calls over the Jupyter stdin channel", str(raised.exception))

    def test_a_refused_stdin_fails_the_waiting_calls_and_later_calls_try_again(self):
        host = FakeStdinHost()
        prompts = []

        def flaky(prompt):
            prompts.append(prompt)
            if len(prompts) == 1:
                raise NotImplementedError("raw_input was called, but this frontend does not support input requests.")
            return host.ask(prompt)

        bridge = connected(flaky)
        with self.assertRaises(BridgeError) as raised:
            bridge.call("tool", {"n": 1})
        self.assertIn("could not reach the host: NotImplementedError", str(raised.exception))
        self.assertEqual(bridge.call("completion", {"n": 3}), "echo 3")


if __name__ == "__main__":
    unittest.main()
