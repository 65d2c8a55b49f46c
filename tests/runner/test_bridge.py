"""Unit tests of the bridge's Python side: the answer routing between many
waiters (threads and coroutines), the bridge_result parser and the JSON
Schema subset used for `schema=` answers.

Run as `python -m unittest` with runner/ on sys.path.
"""
import asyncio
import os
import sys
import threading
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "runner"))

from cellbox_kernel import protocol  # noqa: E402
from cellbox_kernel.bridge import Bridge, BridgeError  # noqa: E402
from cellbox_kernel.schema_check import SchemaError, parse_json, validate  # noqa: E402


class FakeHost:
    """Collects the frames a bridge sends; answers them on demand."""

    def __init__(self):
        self.frames = []
        self.sent = threading.Condition()

    def send(self, frame):
        with self.sent:
            self.frames.append(frame)
            self.sent.notify_all()

    def wait_for(self, count):
        with self.sent:
            if not self.sent.wait_for(lambda: len(self.frames) >= count, 10):
                raise AssertionError("only %d of %d frames arrived" % (len(self.frames), count))

    def answer(self, bridge, frame, value=None, error=None):
        line = {"type": "bridge_result", "id": frame["id"], "ok": error is None}
        if error is None:
            line["value"] = value
        else:
            line["error"] = error
        import json

        bridge.deliver(protocol.parse_request(json.dumps(line).encode()))


def connected(cell="r1"):
    host = FakeHost()
    bridge = Bridge()
    bridge.connect(host.send, lambda: cell, lambda: None)
    return bridge, host


class RoutingTests(unittest.TestCase):
    def test_each_waiting_thread_gets_its_own_answer(self):
        bridge, host = connected()
        results = {}

        def ask(n):
            results[n] = bridge.call("completion", {"prompt": str(n)})

        threads = [threading.Thread(target=ask, args=(n,)) for n in range(5)]
        for thread in threads:
            thread.start()
        host.wait_for(5)
        self.assertEqual(bridge.in_flight(), 5)
        # Answer in reverse order: each caller still gets its own.
        for frame in reversed(host.frames):
            self.assertEqual(frame["type"], "bridge_call")
            self.assertEqual(frame["cell"], "r1")
            host.answer(bridge, frame, "answer " + frame["args"]["prompt"])
        for thread in threads:
            thread.join(5)
        self.assertEqual(results, {n: "answer %d" % n for n in range(5)})
        self.assertEqual(bridge.in_flight(), 0)

    def test_errors_raise_with_the_hosts_message_and_kind(self):
        bridge, host = connected()
        outcome = []

        def ask():
            try:
                bridge.call("tool", {"name": "x"})
            except BridgeError as error:
                outcome.append((error.kind, str(error)))

        thread = threading.Thread(target=ask)
        thread.start()
        host.wait_for(1)
        host.answer(bridge, host.frames[0], error={"kind": "limit", "message": "too many"})
        thread.join(5)
        self.assertEqual(outcome, [("limit", "too many")])

    def test_coroutines_wait_together_on_one_loop(self):
        bridge, host = connected()

        async def main():
            tasks = [asyncio.ensure_future(bridge.call_async("completion", {"prompt": str(n)})) for n in range(3)]
            await asyncio.sleep(0)
            threading.Thread(target=lambda: [host.answer(bridge, f, f["args"]["prompt"] * 2) for f in host.frames]).start()
            return await asyncio.gather(*tasks)

        self.assertEqual(asyncio.run(main()), ["00", "11", "22"])

    def test_calls_outside_a_cell_fail_at_once(self):
        bridge, host = connected(cell=None)
        with self.assertRaises(BridgeError) as caught:
            bridge.call("completion", {"prompt": "x"})
        self.assertEqual(caught.exception.kind, "unavailable")
        self.assertEqual(host.frames, [])

    def test_late_answers_for_gone_callers_are_dropped(self):
        bridge, _ = connected()
        bridge.deliver(protocol.BridgeResult("b99", True, 1, None))  # no waiter: nothing happens

    def test_bad_bridge_results_are_protocol_errors(self):
        with self.assertRaises(protocol.ProtocolError):
            protocol.parse_request(b'{"type": "bridge_result", "id": "b1"}')


class SchemaTests(unittest.TestCase):
    SCHEMA = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "minLength": 1},
            "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}},
            "score": {"type": ["number", "null"], "minimum": 0},
        },
        "required": ["name"],
        "additionalProperties": False,
    }

    def check(self, value):
        return validate(value, self.SCHEMA)

    def failure(self, value):
        with self.assertRaises(SchemaError) as caught:
            self.check(value)
        return str(caught.exception)

    def test_matching_values_pass(self):
        value = {"name": "x", "tags": ["a", "b"], "score": None}
        self.assertIs(self.check(value), value)
        self.check({"name": "y", "score": 1.5})

    def test_failures_name_the_path(self):
        self.assertEqual(self.failure({"tags": []}), "$: missing required property 'name'")
        self.assertEqual(self.failure({"name": 3}), "$.name: expected string, got number")
        self.assertEqual(self.failure({"name": "x", "tags": ["a", "c"]}), "$.tags[1]: 'c' is not one of ['a', 'b']")
        self.assertEqual(self.failure({"name": "x", "extra": 1}), "$: unexpected property 'extra'")
        self.assertEqual(self.failure({"name": "x", "score": -1}), "$.score: -1 is below the minimum 0")
        self.assertEqual(self.failure([]), "$: expected object, got array")
        self.assertEqual(self.failure({"name": ""}), "$.name: shorter than 1 characters")

    def test_booleans_are_not_numbers_and_integers_are_whole(self):
        with self.assertRaises(SchemaError):
            validate(True, {"type": "integer"})
        validate(3, {"type": "integer"})
        with self.assertRaises(SchemaError):
            validate(3.5, {"type": "integer"})

    def test_any_of(self):
        schema = {"anyOf": [{"type": "string"}, {"type": "integer"}]}
        validate("x", schema)
        validate(1, schema)
        with self.assertRaises(SchemaError):
            validate([], schema)

    def test_json_is_parsed_even_in_a_fence(self):
        self.assertEqual(parse_json('{"a": 1}'), {"a": 1})
        self.assertEqual(parse_json('```json\n{"a": [1]}\n```'), {"a": [1]})
        with self.assertRaises(SchemaError) as caught:
            parse_json("nope")
        self.assertIn("not valid JSON", str(caught.exception))


if __name__ == "__main__":
    unittest.main()
