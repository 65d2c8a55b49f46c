"""The golden corpus (tests/protocol/*.jsonl) round-trips through wire.py:
requests are parsed and written back, frames and fork-server messages are
rebuilt by the builders from their fields. A field named differently in
wire.py than in the corpus (which the Rust host and the JS runner also
round-trip) fails here.

Run as `python -m unittest` with runner/ on sys.path.
"""
import json
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "runner"))

from cellbox_kernel import protocol, wire  # noqa: E402

CORPUS = os.path.join(os.path.dirname(__file__), "..", "protocol")


def corpus(name):
    with open(os.path.join(CORPUS, name), encoding="utf-8") as file:
        return [(line, json.loads(line)) for line in file.read().splitlines() if line.strip()]


def rebuild_frame(f):
    """The frame `f` made again by wire.py's builder for its type."""
    kind = f["type"]
    if kind == "ready":
        frame = wire.ready(f["pid"], f["python"], f["executable"], f.get("lostThreads"))
        # The JavaScript runner's own fields (wire.js builds them).
        frame.update({key: f[key] for key in ("language", "parser") if key in f})
        return frame
    if kind == "started":
        return wire.started(f["id"])
    if kind in ("stdout", "stderr"):
        return wire.output(kind, f["id"], f["data"])
    if kind in ("display", "result"):
        return wire.bundle_frame(kind, f["id"], f["bundle"], f.get("metadata"))
    if kind == "error":
        return wire.error(f["id"], f["ename"], f["evalue"], f["traceback"])
    if kind == "done":
        return wire.done(f["id"], f["status"], f["executionCount"], f["cancelled"])
    if kind == "completeness":
        return wire.completeness(f["id"], f["status"], f["indent"])
    if kind == "checked":
        return wire.checked(f["id"], f["cells"], f["notes"])
    if kind == "snapshot":
        return wire.snapshot(f["id"], f.get("report"), f.get("error"))
    if kind == "bridge_call":
        return wire.bridge_call(f["id"], f["cell"], f["op"], f["args"])
    raise AssertionError("no builder for %r" % kind)


def rebuild_fork_server(m):
    kind = m["type"]
    if kind == "fork":
        request = wire.parse_fork_request(json.dumps(m).encode("utf-8"))
        return wire.fork_request(request["id"], request.get("cwd"), request.get("env"), request.get("argv"))
    if kind == "file":
        return wire.file_message(wire.parse_file_message(json.dumps(m).encode("utf-8")))
    if kind == "ready":
        return wire.fork_server_ready(m["pid"], m["python"])
    if kind == "failed":
        return wire.fork_server_failed(m["message"])
    if kind == "forked":
        return wire.forked(m["id"], m["pid"], m.get("lostThreads"))
    if kind == "fork_failed":
        return wire.fork_failed(m["id"], m["message"])
    if kind == "exit":
        return wire.exited(m["pid"], m["code"], m["signal"])
    raise AssertionError("no builder for %r" % kind)


class CorpusTests(unittest.TestCase):
    def test_requests_round_trip(self):
        seen = set()
        for line, value in corpus("runner_requests.jsonl"):
            request = protocol.parse_request(line.encode("utf-8"))
            self.assertEqual(wire.encode_request(request), value, line)
            seen.add(value["type"])
        self.assertEqual(seen, set(wire.REQUEST_TYPES))

    def test_frames_round_trip(self):
        seen = set()
        for line, value in corpus("runner_frames.jsonl"):
            frame = rebuild_frame(value)
            self.assertEqual(json.loads(protocol.encode_frame(frame).decode("utf-8")), value, line)
            seen.add(value["type"])
        self.assertEqual(seen, set(wire.FRAME_TYPES))

    def test_fork_server_messages_round_trip(self):
        seen = set()
        for line, value in corpus("fork_server.jsonl"):
            self.assertEqual(rebuild_fork_server(value), value, line)
            seen.add(value["type"])
        self.assertEqual(seen, set(wire.FORK_SERVER_TYPES))


class FastPathTests(unittest.TestCase):
    """The byte templates write what the builders do."""

    def check(self, line, frame):
        self.assertTrue(line.endswith(b"\n") and line.count(b"\n") == 1)
        self.assertEqual(json.loads(line.decode("utf-8")), frame)
        self.assertEqual(line, protocol.encode_frame(frame))

    def test_templates_match_the_builders(self):
        for request_id in ("r1", 'a"b\\c\n', "é😀"):
            quoted = protocol.quote(request_id)
            self.check(wire.started_line(quoted), wire.started(request_id))
            for status, count, cancelled in (("ok", 3, False), ("error", 0, True)):
                self.check(wire.done_line(quoted, status, count, cancelled), wire.done(request_id, status, count, cancelled))
            text = "[1, 'x\"']\n"
            self.check(wire.text_result_line(quoted, protocol.quote(text)), wire.bundle_frame("result", request_id, {"text/plain": text}))


class RequestTests(unittest.TestCase):
    def test_integer_ids_are_taken_as_strings(self):
        request = protocol.parse_request(b'{"id": 7, "code": "1"}')
        self.assertEqual((request.id, request.code), ("7", "1"))
        self.assertIsInstance(protocol.parse_request(b'{"type": "check", "id": 8, "cells": []}'), wire.CheckRequest)

    def test_a_line_without_type_is_an_execute_request(self):
        request = protocol.parse_request(b'{"id": "r1", "code": "1"}')
        self.assertEqual(wire.encode_request(request)["type"], "execute")


if __name__ == "__main__":
    unittest.main()
