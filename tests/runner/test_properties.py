"""Property tests (Hypothesis) of the runner's two parsers of untrusted text:
the request parser, which reads whatever arrives on the protocol channel, and
the magic transformer, which reads whatever a user types.

The contracts checked:
- `protocol.parse_request(any bytes)` returns a Request, ExitRequest or
  CompleteRequest, or raises ProtocolError; nothing else escapes (an escape
  would end the runner's main loop).
- `transform.transform_cell(any str)` returns a str and never raises (text
  that is not Python is left for the compiler to report); it keeps the number
  of lines as the compiler counts them; valid Python without magics comes back
  byte for byte.

`CELLBOX_FUZZ_CASES=N` runs N examples per property (default 100, a few
seconds). Without Hypothesis installed (a bare interpreter) the tests are
skipped and say why.
"""
import json
import os
import unittest

from cellbox_kernel import protocol
from cellbox_kernel.transform import transform_cell

try:
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st
except ImportError:  # bare Python: nothing to run
    HAVE_HYPOTHESIS = False
else:
    HAVE_HYPOTHESIS = True
    # No example database: runs leave no files behind in the work tree.
    FUZZ = settings(
        max_examples=int(os.environ.get("CELLBOX_FUZZ_CASES", "100")),
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )

SKIP_REASON = "Hypothesis is not installed for this interpreter (pip install hypothesis to run the property tests)"

REQUEST_KINDS = (protocol.Request, protocol.ExitRequest, protocol.CompleteRequest, protocol.CheckRequest)


def line_count(text):
    """Lines as the compiler counts them: only \\n, \\r\\n and \\r end one."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)


def parse_outcome(line):
    """The request, or the ProtocolError; anything else propagates."""
    try:
        return protocol.parse_request(line)
    except protocol.ProtocolError as error:
        return error


# Valid Python full of `%` and `!` that is not a magic anywhere.
PLAIN_SNIPPETS = [
    "x = 5 % 3",
    "y = x != 2",
    "s = '%d items' % 4",
    "t = '!not a shell'",
    "# %ls and !rm are comments here",
    "u = f'{s!r}'",
    "v = (1,\n     2 % 3)",
    "w = '''\n%not\n!not\n'''",
    "if x != 2:\n    z = x % 2",
    "a = [i % 2 for i in range(3)]",
    "b = 7 \\\n    % 3",
    "c = {'k': '%', '!': 1}",
    'd = "!" * 2',
    "e = 5%3!=1",
    "x %= 2",
    "def f(p='%', q='!'):\n    return p % () if q != '!' else q",
    "",
]

MAGIC_ALPHABET = "%!= \t\n\r\\'\"#()[]{}:abcx01.$" + "\x0c\u2028\x85"


class ProtocolEdgeCases(unittest.TestCase):
    """Found by the properties below; kept as plain tests so bare interpreters run them too."""

    def test_deep_nesting_is_a_protocol_error(self):
        for line in (b"[" * 100000 + b"]" * 100000, b'{"id": "a", "code": ' + b"[" * 50000 + b"]" * 50000 + b"}"):
            self.assertIsInstance(parse_outcome(line), protocol.ProtocolError)


@unittest.skipUnless(HAVE_HYPOTHESIS, SKIP_REASON)
class ProtocolProperties(unittest.TestCase):
    if HAVE_HYPOTHESIS:

        @FUZZ
        @given(st.binary(max_size=512))
        def test_any_bytes_give_a_request_or_a_protocol_error(self, line):
            self.assertIsInstance(parse_outcome(line), REQUEST_KINDS + (protocol.ProtocolError,))

        json_values = st.recursive(
            st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
            lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
            max_leaves=12,
        )
        fields = st.sampled_from(["type", "id", "code", "silent", "storeHistory", "cwd", "env", "cells", "lint"])
        kinds = st.sampled_from(["execute", "exit", "complete", "check", "bogus"]) | json_values

        @FUZZ
        @given(st.dictionaries(fields, json_values, max_size=7), kinds)
        def test_json_objects_give_a_request_or_a_protocol_error(self, message, kind):
            message = dict(message)
            message.setdefault("type", kind)
            line = json.dumps(message).encode("utf-8") + b"\n"
            outcome = parse_outcome(line)
            self.assertIsInstance(outcome, REQUEST_KINDS + (protocol.ProtocolError,))
            if isinstance(outcome, protocol.Request):
                self.assertIsInstance(outcome.code, str)
                self.assertIsInstance(outcome.id, str)

        @FUZZ
        @given(st.text(max_size=40), st.text(max_size=200), st.booleans())
        def test_valid_requests_round_trip(self, request_id, code, silent):
            line = json.dumps({"id": request_id, "code": code, "silent": silent}).encode("utf-8")
            request = protocol.parse_request(line)
            self.assertEqual((request.id, request.code, request.silent), (request_id, code, silent))

    else:

        def test_request_properties(self):
            """Reported as skipped, with the reason, where Hypothesis is missing."""


@unittest.skipUnless(HAVE_HYPOTHESIS, SKIP_REASON)
class TransformProperties(unittest.TestCase):
    if HAVE_HYPOTHESIS:

        @FUZZ
        @given(st.text(max_size=300) | st.text(alphabet=MAGIC_ALPHABET, max_size=300))
        def test_any_text_is_returned_with_its_line_count(self, source):
            out = transform_cell(source)
            self.assertIsInstance(out, str)
            self.assertEqual(line_count(out), line_count(source))

        @FUZZ
        @given(
            st.lists(st.sampled_from(PLAIN_SNIPPETS), min_size=1, max_size=8),
            st.sampled_from(["\n", "\r\n"]),
            st.booleans(),
        )
        def test_python_without_magics_is_left_byte_identical(self, snippets, newline, trailing):
            source = "\n".join(snippets).replace("\n", newline) + (newline if trailing else "")
            compile(source, "<cell>", "exec")  # the generator only makes valid Python
            self.assertEqual(transform_cell(source), source)

        @FUZZ
        @given(
            st.lists(st.sampled_from(PLAIN_SNIPPETS), max_size=4),
            st.sampled_from(["%pwd", "!echo hi", "files = !ls", "v = %env HOME", "%cd /tmp"]),
            st.lists(st.sampled_from(PLAIN_SNIPPETS), max_size=4),
        )
        def test_magics_between_python_become_valid_python(self, before, magic, after):
            source = "\n".join(before + [magic] + after)
            out = transform_cell(source)
            compile(out, "<cell>", "exec")
            self.assertEqual(line_count(out), line_count(source))
            self.assertIn("__cellbox_magic__", out)

    else:

        def test_transform_properties(self):
            """Reported as skipped, with the reason, where Hypothesis is missing."""


if __name__ == "__main__":
    unittest.main()
