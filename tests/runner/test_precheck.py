"""Unit tests of the runner's pre-run check (precheck.py): syntax errors with
their caret, magics that pass, the check request's parsing, and the names
the lint pass does not report as undefined.

Run by tests/it/runner_python.rs as `python -m unittest` with runner/ on sys.path.
The lint pass itself, with the real ruff, is tested end to end in tests/it/precheck.rs.
"""
import json
import unittest

from cellbox_kernel import precheck, protocol


class SyntaxCheck(unittest.TestCase):
    def check(self, *codes):
        cells, notes = precheck.check_cells(list(enumerate(codes, 1)), False, {})
        self.assertEqual(notes, [])
        return [cell["error"] for cell in cells]

    def test_an_error_names_the_cell_and_line_and_shows_the_caret(self):
        first, second = self.check("x = 1", "a = 1\nb = (2,\n")
        self.assertIsNone(first)
        self.assertEqual(second["ename"], "SyntaxError")
        self.assertEqual(second["line"], 2)
        text = "".join(second["traceback"])
        self.assertTrue(text.startswith("  Cell 2, line 2\n"), text)
        self.assertIn("^", text)
        self.assertNotIn("<cell 2>", second["evalue"])

    def test_magics_shell_lines_and_top_level_await_pass(self):
        codes = ["%time x = 1", "!ls -la", "files = !ls", "%%bash\necho ((", "obj?", "await thing()"]
        self.assertEqual(self.check(*codes), [None] * len(codes))

    def test_compiler_errors_count_too(self):
        (error,) = self.check("return 1")
        self.assertIn("outside function", error["evalue"])

    def test_nothing_runs(self):
        namespace = {}
        precheck.check_cells([(1, "import os\nnamespace['ran'] = True")], False, namespace)
        self.assertEqual(namespace, {})


class LintHelpers(unittest.TestCase):
    def test_bound_names(self):
        names = precheck._bound_names("import os.path as p, sys\nfrom m import a as b\nx, *y = 1, 2\ndef f(): pass\n")
        self.assertTrue({"p", "sys", "b", "x", "y", "f"} <= names, names)

    def test_undefined_names_known_elsewhere_are_dropped(self):
        finding = {"code": "F821", "message": "Undefined name `df`", "line": 1, "column": 1}
        self.assertTrue(precheck._defined_elsewhere(finding, {"df"}))
        self.assertFalse(precheck._defined_elsewhere(finding, {"other"}))
        self.assertFalse(precheck._defined_elsewhere(dict(finding, code="F401"), {"df"}))


class CheckRequest(unittest.TestCase):
    def parse(self, message):
        return protocol.parse_request(json.dumps(message).encode("utf-8"))

    def test_parses(self):
        request = self.parse({"type": "check", "id": "k1", "cells": [{"number": 2, "code": "x"}], "lint": True})
        self.assertIsInstance(request, protocol.CheckRequest)
        self.assertEqual((request.id, request.cells, request.lint), ("k1", [(2, "x")], True))

    def test_malformed_is_a_protocol_error(self):
        for message in ({"type": "check", "id": "k1"}, {"type": "check", "id": "k1", "cells": [{"code": 3}]}):
            with self.assertRaises(protocol.ProtocolError) as raised:
                self.parse(message)
            self.assertEqual(raised.exception.request_id, "k1")


if __name__ == "__main__":
    unittest.main()
