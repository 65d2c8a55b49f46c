"""Cells indented as a whole (code from a triple-quoted string) run as in
IPython, whose `leading_indent` transform removes that indentation. The
transform, the completeness check, the pre-run check and the executor all
see the same cell. Where IPython is installed it is the oracle.

Run by tests/it/runner_python.rs as `python -m unittest` with runner/ on sys.path.
"""
import ast
import builtins
import contextlib
import importlib.util
import io
import unittest

from cellbox_kernel import display, precheck
from cellbox_kernel.execute import Executor
from cellbox_kernel.magics.dispatch import Magics
from cellbox_kernel.transform import check_complete, transform_cell

M = "__cellbox_magic__"
HAVE_IPYTHON = importlib.util.find_spec("IPython") is not None

# Cells that stay invalid: only the first statement's indentation comes off.
INVALID = [
    ("x = 1\n    y = 2\n", "x = 1\n    y = 2\n"),
    ("    x = 1\n  y = 2\n", "x = 1\n  y = 2\n"),
    (" \t x = 1\n \t y = 2\n\ty = 3\n", "x = 1\ny = 2\n\ty = 3\n"),
]
INVALID_CELLS = [source for source, _ in INVALID]

# (cell, what it becomes): plain Python.
PLAIN = [
    ("\n    x = 1\n    print(x)\n", "\nx = 1\nprint(x)\n"),
    ("    x = 1\n    if x:\n        y = 2\n", "x = 1\nif x:\n    y = 2\n"),
    ("\tx = 1\n\tif x:\n\t\ty = 2\n", "x = 1\nif x:\n\ty = 2\n"),
    ("    x = 1\n\n    y = 2", "x = 1\n\ny = 2"),
    # Whitespace-only lines shorter than the indentation stay as they are.
    ("    x = 1\n  \n          \n    y = 2\n", "x = 1\n  \n      \ny = 2\n"),
    # A string's continuation lines without the indentation are left alone.
    ("    s = '''a\nb\n  c'''\n    print(s)\n", "s = '''a\nb\n  c'''\nprint(s)\n"),
    ('    s = """a\n    b"""\n    s\n', 's = """a\nb"""\ns\n'),
    ("  \n    x = 1\r\n    y = 2\r\n", "  \nx = 1\ny = 2\n"),
    ("        def f():\n            return 1\n        f()\n", "def f():\n    return 1\nf()\n"),
    # Comments in front do not count (the first statement's indentation does).
    ("    # note\n    x = 1", "# note\nx = 1"),
    ("        # note\n    x = 1\n", "    # note\nx = 1\n"),
    ("  # note\n    x = 1\n    y = 2\n", "  # note\nx = 1\ny = 2\n"),
    ('    # note\nx = """\n    a\n"""\n', '    # note\nx = """\n    a\n"""\n'),
] + INVALID

# Magics, shell lines and help on indented lines.
MAGICS = [
    ("    %time x = 1\n    print(x)\n", M + ".line('time', 'x = 1')\nprint(x)\n"),
    ("\n    !echo hi\n    files = !ls\n", "\n" + M + ".system('echo hi')\nfiles = " + M + ".getoutput('ls')\n"),
    ("\n    %%bash\n    echo hi\n      echo there\n", "\n" + M + ".cell('bash', '', 'echo hi\\n  echo there\\n')\n\n\n"),
    ("    x = 1\n    x?\n", "x = 1\n" + M + ".line('pinfo', 'x')\n"),
    ("    if x:\n        %cd /tmp\n", "if x:\n    " + M + ".line('cd', '/tmp')\n"),
]


def line_count(text):
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)


def _calls(source, owner):
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            target = node.func.value
            if (owner == "ipython" and isinstance(target, ast.Call) and getattr(target.func, "id", "") == "get_ipython") or (
                owner == "cellbox" and getattr(target, "id", "") == M
            ):
                found.append(tuple(" ".join(arg.value.split()) for arg in node.args if isinstance(arg, ast.Constant)))
    return sorted(found)


class TransformTests(unittest.TestCase):
    def test_cases(self):
        for source, expected in PLAIN + MAGICS:
            with self.subTest(source=source):
                self.assertEqual(transform_cell(source), expected)

    def test_line_numbers_are_kept(self):
        for source, _ in PLAIN + MAGICS:
            with self.subTest(source=source):
                self.assertEqual(line_count(transform_cell(source)), line_count(source))

    def test_indented_cells_parse(self):
        for source, _ in PLAIN[: -len(INVALID)] + MAGICS:
            with self.subTest(source=source):
                ast.parse(transform_cell(source))

    def test_unindented_cells_are_returned_as_is(self):
        for source in ("x = 1\n    ", "# a\n    # b\nx = 1", "    \n\n", ""):
            with self.subTest(source=source):
                self.assertIs(transform_cell(source), source)

    @unittest.skipUnless(HAVE_IPYTHON, "IPython is not installed")
    def test_same_as_ipython_where_ipython_runs_the_cell(self):
        """IPython 9.1+ removes the indentation all lines share (textwrap.dedent),
        up to 9.0 the first line's: a cell either one runs comes out the same
        here; some that neither runs (an unindented string continuation under
        9.1+, a comment in front) run here too."""
        from IPython.core.inputtransformer2 import TransformerManager

        manager = TransformerManager()

        def normalized(text):
            # IPython drops the blank lines in front (cellbox keeps them, for
            # line numbers), empties whitespace-only ones and ends with "\n".
            lines = [line if line.strip() else "" for line in text.replace("\r\n", "\n").split("\n")]
            while lines and not lines[0]:
                lines.pop(0)
            return "\n".join(lines).rstrip("\n") + "\n"

        compared = 0
        for source, _ in PLAIN:
            ours = transform_cell(source)
            try:
                theirs = manager.transform_cell(source)
                compile(theirs, "<ipython>", "exec")
            except SyntaxError:
                if source not in INVALID_CELLS:
                    with self.subTest(source=source, ipython="fails"):
                        compile(ours, "<cellbox>", "exec")
                continue
            compared += 1
            with self.subTest(source=source):
                self.assertEqual(normalized(ours), normalized(theirs))
        self.assertGreater(compared, len(PLAIN) // 2)
        for source, _ in MAGICS:
            with self.subTest(source=source):
                self.assertEqual(_calls(transform_cell(source), "cellbox"), _calls(manager.transform_cell(source), "ipython"))


class CheckCompleteTests(unittest.TestCase):
    # The indent is for the next line as typed, so it keeps the cell's own.
    CASES = [
        ("    x = 1\n", ("complete", "")),
        ("\n    x = 1\n    print(x)\n", ("complete", "")),
        ("    for i in range(3):\n", ("incomplete", "        ")),
        ("    for i in range(3):\n        print(i)\n", ("incomplete", "        ")),
        ("    for i in range(3):\n        print(i)\n\n", ("complete", "")),
        ("    x = (1,\n", ("incomplete", "    ")),
        ("    %time x = 1\n", ("complete", "")),
        ("    x = 1\n  y = 2\n", ("invalid", "")),
    ]

    def test_indented_cells(self):
        for code, expected in self.CASES:
            with self.subTest(code=code):
                self.assertEqual(check_complete(code), expected)

    @unittest.skipUnless(HAVE_IPYTHON, "IPython is not installed")
    def test_same_status_as_ipython(self):
        from IPython.core.inputtransformer2 import TransformerManager

        manager = TransformerManager()
        for code, (status, _) in self.CASES:
            if code == "    for i in range(3):\n        print(i)\n":
                continue  # cellbox's REPL rule: a block goes on until a blank line
            with self.subTest(code=code):
                self.assertEqual(status, manager.check_complete(code)[0])


class PrecheckTests(unittest.TestCase):
    def test_indented_cells_compile(self):
        cells = [(1, "\n    x = 1\n    print(x)\n"), (2, "    %time y = 2\n    y\n"), (3, "    x = 1\n  y = 2\n")]
        results, notes = precheck.check_cells(cells, False, {})
        self.assertEqual(notes, [])
        self.assertEqual([r["error"] for r in results[:2]], [None, None])
        self.assertEqual((results[2]["error"]["ename"], results[2]["error"]["line"]), ("IndentationError", 2))


class _Capture:
    def sync(self):
        pass


class _Gate:
    received = False

    def arm(self):
        pass

    def disarm(self):
        pass


class ExecutorTests(unittest.TestCase):
    def setUp(self):
        self.errors = []
        self.displays = []
        self.executor = Executor(_Gate(), lambda *error: self.errors.append(error), _Capture())
        builtins.__cellbox_magic__ = Magics(self.executor)
        display.set_sink(lambda kind, data, metadata: self.displays.append((kind, data)))

    def run_cell(self, code):
        self.errors, self.displays = [], []
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            self.executor.run(code, False, True)
        results = [data.get("text/plain") for kind, data in self.displays if kind == "result"]
        return out.getvalue(), results, self.errors

    def test_an_indented_cell_runs_and_shows_its_value(self):
        out, results, errors = self.run_cell("\n    x = 1\n    print(x)\n    x + 1\n")
        self.assertEqual((out, results, errors), ("1\n", ["2"], []))

    def test_indented_magics_and_suppressed_value(self):
        out, results, errors = self.run_cell("    %time y = 2\n    y * 3;\n    y * 4\n")
        self.assertEqual((results, errors), (["8"], []))
        self.assertIn("Wall time", out)

    def test_tracebacks_keep_line_numbers(self):
        _, _, errors = self.run_cell("\n    x = 1\n\n    1 / x0\n")
        ((ename, _, traceback),) = errors
        self.assertEqual(ename, "NameError")
        self.assertIn("line 4, in <module>\n    1 / x0\n", "".join(traceback))
        _, _, errors = self.run_cell("\n    x = 1\n    y = (\n")
        ((ename, _, traceback),) = errors
        self.assertEqual(ename, "SyntaxError")
        self.assertIn("line 3", "".join(traceback))


if __name__ == "__main__":
    unittest.main()
