"""The SDK's side of the wire: `cellbox._wire` (generated from the protocol
crate) names every method the SDK sends, every error code becomes its
exception, and each line of the shared corpus (tests/protocol/sdk.jsonl)
goes through the SDK's own decoding and encoding unchanged. No engine runs."""
import json
import os
import re
import unittest

import fixture  # noqa: F401 - puts python/ first on sys.path

from cellbox import _wire
from cellbox._transport import _ANSWER, _OUTPUT, _answer, _failure, _notice, _request, _route
from cellbox.exceptions import (
    EngineTooOldException,
    InvalidArgumentException,
    NotFoundException,
    PermissionDeniedException,
    SandboxException,
)

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
CORPUS = os.path.join(ROOT, "tests", "protocol", "sdk.jsonl")
PACKAGE = os.path.join(ROOT, "python", "cellbox")

#: The exception each error code must become.
EXPECTED = {
    "PARSE_ERROR": SandboxException,
    "INVALID_REQUEST": InvalidArgumentException,
    "METHOD_NOT_FOUND": EngineTooOldException,
    "INVALID_PARAMS": InvalidArgumentException,
    "NOT_FOUND": NotFoundException,
    "FAILED": SandboxException,
    "DENIED": PermissionDeniedException,
}


def corpus():
    with open(CORPUS, encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            if line.strip():
                yield "sdk.jsonl:%d" % number, json.loads(line)


def roundtrip(message):
    """`message` as the SDK would put it on the wire."""
    return json.loads(json.dumps(message))


class WireModuleTest(unittest.TestCase):
    def test_every_error_code_becomes_its_exception(self):
        self.assertEqual(set(_wire.ERROR_NAMES.values()), set(EXPECTED))
        for code, name in _wire.ERROR_NAMES.items():
            error = _failure(code, "what went wrong")
            self.assertIs(type(error), EXPECTED[name], name)
            self.assertIn("what went wrong", str(error))
        self.assertIn("older than this SDK", str(_failure(_wire.METHOD_NOT_FOUND, 'no method "x"')))
        self.assertIsInstance(_failure(_wire.DENIED, "refused"), PermissionError)
        # A code this SDK does not know still raises the base class.
        self.assertIs(type(_failure(-1, "new")), SandboxException)

    def test_the_sdk_names_methods_only_through_the_wire_module(self):
        used = set()
        for name in sorted(os.listdir(PACKAGE)):
            if not name.endswith(".py") or name == "_wire.py":
                continue
            with open(os.path.join(PACKAGE, name), encoding="utf-8") as source:
                text = source.read()
            for constant in re.findall(r"\b_wire\.([A-Z_]+)\b", text):
                self.assertTrue(hasattr(_wire, constant), "%s uses _wire.%s, which does not exist" % (name, constant))
                used.add(getattr(_wire, constant))
            literal = re.findall(r"(?:request(?:_async)?|stream|_notice)\(\s*[\"']", text)
            self.assertEqual(literal, [], "%s names a method with a string, not a _wire constant" % name)
        # Everything the SDK sends is a method the engine declares.
        sent = {value for value in used if isinstance(value, str)} - {_wire.OUTPUT}
        self.assertLessEqual(sent, _wire.METHODS)
        with self.assertRaises(ValueError):
            _request(1, "commands.run", {})

    def test_the_remote_transport_adds_the_sandbox_s_envs_to_methods_that_take_them(self):
        from cellbox._remote import _WITH_ENVS

        self.assertLessEqual(set(_WITH_ENVS), _wire.METHODS)
        with open(os.path.join(ROOT, "schema", "sdk.json"), encoding="utf-8") as schema:
            methods = json.load(schema)["methods"]
        for method in _WITH_ENVS:
            reference = methods[method]["params"]["$ref"].rsplit("/", 1)[1]
            with open(os.path.join(ROOT, "schema", "sdk.json"), encoding="utf-8") as schema:
                params = json.load(schema)["$defs"][reference]
            self.assertIn("envs", params["properties"], method)


class CorpusTest(unittest.TestCase):
    def test_each_line_decodes_and_encodes_unchanged(self):
        seen = set()
        for at, entry in corpus():
            kind, message = entry["kind"], entry["message"]
            with self.subTest(at=at):
                if kind == "request":
                    method, params = message["method"], message["params"]
                    self.assertIn(method, _wire.METHODS)
                    seen.add(method)
                    encoded = _request(message["id"], method, params) if "id" in message else _notice(method, params)
                    self.assertEqual(roundtrip(encoded), message)
                    continue
                routed = _route(message)
                self.assertIsNotNone(routed, "the SDK does not know what this line is")
                call, (item_kind, payload) = routed
                if kind == "notification":
                    self.assertEqual(item_kind, _OUTPUT)
                    self.assertEqual(message["method"], _wire.OUTPUT)
                    self.assertEqual(call, payload["call"])
                    self.assertEqual(roundtrip({"jsonrpc": "2.0", "method": _wire.OUTPUT, "params": payload}), message)
                elif kind == "response":
                    self.assertEqual(item_kind, _ANSWER)
                    result = _answer(item_kind, payload)
                    self.assertEqual(roundtrip({"jsonrpc": "2.0", "id": call, "result": result}), message)
                elif kind == "error":
                    self.assertEqual(item_kind, _ANSWER)
                    code = message["error"]["code"]
                    with self.assertRaises(EXPECTED[_wire.ERROR_NAMES[code]]) as raised:
                        _answer(item_kind, payload)
                    self.assertIn(message["error"]["message"], str(raised.exception))
                    error = {"code": code, "message": message["error"]["message"]}
                    self.assertEqual(roundtrip({"jsonrpc": "2.0", "id": call, "error": error}), message)
                else:
                    self.fail("unknown kind %r" % kind)
        self.assertEqual(seen, set(_wire.METHODS), "the corpus has a request of every method")


if __name__ == "__main__":
    unittest.main()
