"""Unit tests of the runner's pure-Python parts: the magic transformer,
shell-line expansion and SList. Where IPython is installed, its own
transformer is the oracle for every form both support.

Run by tests/it/runner_python.rs as `python -m unittest` with runner/ on sys.path.
"""
import ast
import os
import sys
import tempfile
import unittest

from cellbox_kernel.expansion import expand
from cellbox_kernel.slist import SList
from cellbox_kernel.transform import transform_cell

M = "__cellbox_magic__"

CASES = [
    ("%ls -la", M + ".line('ls', '-la')\n"),
    ("%pwd", M + ".line('pwd', '')\n"),
    ("files = !ls", "files = " + M + ".getoutput('ls')\n"),
    ("!!ls -1", M + ".getoutput('ls -1')\n"),
    ("!echo hi", M + ".system('echo hi')\n"),
    ("a, *rest = !echo a b", "a, *rest = " + M + ".getoutput('echo a b')\n"),
    ('d["k"] = %pwd', 'd["k"] = ' + M + ".line('pwd', '')\n"),
    ("obj.attr = %env HOME", "obj.attr = " + M + ".line('env', 'HOME')\n"),
    ("(a, b) = !echo x", "(a, b) = " + M + ".getoutput('echo x')\n"),
    ("x =!echo tight", "x = " + M + ".getoutput('echo tight')\n"),
    ("if x:\n    !echo hi\n    %cd /tmp\n", "if x:\n    " + M + ".system('echo hi')\n    " + M + ".line('cd', '/tmp')\n"),
    ("for i in y:\n\tv = !echo $i\n", "for i in y:\n\tv = " + M + ".getoutput('echo $i')\n"),
    ('s = """\n!not\n%not\n"""\n!yes', 's = """\n!not\n%not\n"""\n' + M + ".system('yes')\n"),
    ("s = '''%a\n!b'''", "s = '''%a\n!b'''"),
    ('x = f"{a!r}" # %not', 'x = f"{a!r}" # %not'),
    ("# %ls\n# !rm -rf /", "# %ls\n# !rm -rf /"),
    ("x = (1,\n%2)", "x = (1,\n%2)"),
    ("x = 5 % 3\ny = x != 2", "x = 5 % 3\ny = x != 2"),
    ("x = 1 + \\\n%2", "x = 1 + \\\n%2"),
    ("!echo don't", M + ".system(\"echo don't\")\n"),
    ("!ls \\\n  -la\nprint(1)", M + ".system('ls -la')\n\nprint(1)\n"),
    ("%%bash -x\necho hi\n", M + ".cell('bash', '-x', 'echo hi\\n')\n\n"),
    ("\n%%writefile f.txt\nline\n", "\n" + M + ".cell('writefile', 'f.txt', 'line\\n')\n\n"),
    ("%ls\r\nx = 1\r\n", M + ".line('ls', '')\nx = 1\n"),
    ("x += !echo no", "x += !echo no"),
    ("print('%s' % x)", "print('%s' % x)"),
    ("x?", M + ".line('pinfo', 'x')\n"),
    ("x??", M + ".line('pinfo2', 'x')\n"),
    ("?x", M + ".line('pinfo', 'x')\n"),
    ("??os.path", M + ".line('pinfo2', 'os.path')\n"),
    ("%time?", M + ".line('pinfo', '%time')\n"),
    ("%%time?", M + ".line('pinfo', '%%time')\n"),
    ("a*?", M + ".line('psearch', 'a*')\n"),
    ("if 1:\n    len?\n", "if 1:\n    " + M + ".line('pinfo', 'len')\n"),
    ("x = 1\nx?", "x = 1\n" + M + ".line('pinfo', 'x')\n"),
    ("x ?", "x ?"),
    ('s = """\nwhy?\n"""', 's = """\nwhy?\n"""'),
    ("x = 1  # why?", "x = 1  # why?"),
]


def line_count(text):
    """Lines as the compiler counts them: only \\n, \\r\\n and \\r end one."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)


class TransformTests(unittest.TestCase):
    def test_cases(self):
        for source, expected in CASES:
            with self.subTest(source=source):
                self.assertEqual(transform_cell(source), expected)

    def test_plain_python_is_returned_as_is(self):
        source = "def f(x):\n    return x * 2\n"
        self.assertIs(transform_cell(source), source)

    def test_line_numbers_are_kept(self):
        for source, _ in CASES:
            with self.subTest(source=source):
                self.assertEqual(line_count(transform_cell(source)), line_count(source))

    def test_form_feeds_do_not_split_lines(self):
        source = "x = 1\x0c\n!echo hi\ny = 2\x1c\n"
        out = transform_cell(source)
        self.assertEqual(line_count(out), 3)
        self.assertEqual(out.split("\n")[1], M + ".system('echo hi')")
        cell = "%%bash\necho a\x0cb\u2028c\n"
        self.assertEqual(transform_cell(cell), M + ".cell('bash', '', 'echo a\\x0cb\\u2028c\\n')\n\n")

    def test_transformed_cells_parse(self):
        for source, _ in CASES:
            if source.startswith("x += !") or "%2" in source or source == "x ?":
                continue  # not magics, and not valid Python either
            with self.subTest(source=source):
                ast.parse(transform_cell(source))


def _calls(source, owner):
    """(method, first args...) of each call on `owner` in the code, whitespace-normalized."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        target = node.func.value
        is_owner = (owner == "ipython" and isinstance(target, ast.Call) and getattr(target.func, "id", "") == "get_ipython") or (
            owner == "cellbox" and getattr(target, "id", "") == M
        )
        if not is_owner:
            continue
        args = tuple(" ".join(arg.value.split()) for arg in node.args if isinstance(arg, ast.Constant))
        found.append((node.func.attr, args))
    return sorted(found)


_METHOD_NAMES = {"run_line_magic": "line", "run_cell_magic": "cell", "system": "system", "getoutput": "getoutput"}


@unittest.skipUnless(__import__("importlib").util.find_spec("IPython"), "IPython is not installed")
class IPythonOracleTests(unittest.TestCase):
    def test_same_calls_as_ipython(self):
        from IPython.core.inputtransformer2 import TransformerManager

        manager = TransformerManager()
        for source, _ in CASES:
            if source.startswith("x += !") or "%2" in source or source == "x ?":
                continue
            theirs = [(_METHOD_NAMES[m], args) for m, args in _calls(manager.transform_cell(source), "ipython")]
            ours = _calls(transform_cell(source), "cellbox")
            with self.subTest(source=source):
                self.assertEqual(ours, sorted(theirs))


class CheckCompleteTests(unittest.TestCase):
    def test_interactive_rules(self):
        from cellbox_kernel.transform import check_complete

        self.assertEqual(check_complete("x = 1\n"), ("complete", ""))
        self.assertEqual(check_complete("for i in range(3):\n"), ("incomplete", "    "))
        self.assertEqual(check_complete("for i in range(3):\n    print(i)\n"), ("incomplete", "    "))
        self.assertEqual(check_complete("for i in range(3):\n    print(i)\n\n"), ("complete", ""))
        self.assertEqual(check_complete("x = (1,\n"), ("incomplete", ""))
        self.assertEqual(check_complete("%%bash\necho hi\n"), ("incomplete", ""))
        self.assertEqual(check_complete("%%bash\necho hi\n\n"), ("complete", ""))
        self.assertEqual(check_complete("!ls \\\n"), ("incomplete", ""))
        self.assertEqual(check_complete("%time x = 1\n"), ("complete", ""))
        self.assertEqual(check_complete("x = )\n"), ("invalid", ""))
        self.assertEqual(check_complete("await thing()\n"), ("complete", ""))


class _Frame:
    def __init__(self, global_ns, local_ns=None):
        self.f_globals = global_ns
        self.f_locals = local_ns if local_ns is not None else global_ns


class ExpandTests(unittest.TestCase):
    def test_ipython_expansion_rules(self):
        frame = _Frame({"name": "world", "n": 3, "obj": type("O", (), {"attr": "A"})()})
        self.assertEqual(expand("echo {name} $name", frame), "echo world world")
        self.assertEqual(expand("echo {n * 2}", frame), "echo 6")
        self.assertEqual(expand("echo $$HOME $HOME", frame), "echo $HOME $HOME")
        self.assertEqual(expand("echo $obj.attr.", frame), "echo A.")
        self.assertEqual(expand("awk '{print $1}'", frame), "awk '{print $1}'")
        self.assertEqual(expand("echo {{literal}}", frame), "echo {literal}")
        self.assertEqual(expand("echo {undefined_name}", frame), "echo {undefined_name}")

    def test_same_expansion_as_ipython(self):
        """Where every piece evaluates, IPython's own formatter is the oracle,
        including its rule for `$name` inside single quotes."""
        try:
            from IPython.utils.text import DollarFormatter
        except ImportError:
            self.skipTest("IPython is not installed")
        namespace = {"n": 3, "name": "world", "items": [1, 2, 3], "obj": type("O", (), {"attr": "A"})()}
        cases = [
            "echo '$n'",
            'echo "$n"',
            "echo '$n' $n",
            "echo $n '$name' $name",
            "echo {n} '$n'",
            "echo '{n}' $n",
            "echo '$n' {n} '$n'",
            "echo '$n' {n} $n'",
            "echo \'$n",
            "echo $$name $name",
            "echo $obj.attr",
            "echo {items[1:]}",
            "echo {name!r}",
            "echo {{n}} $n",
            "echo '$n'\"$n\"'$n'",
        ]
        for case in cases:
            with self.subTest(case=case):
                theirs = DollarFormatter().vformat(case, args=[], kwargs=dict(namespace))
                self.assertEqual(expand(case, _Frame(dict(namespace))), theirs)

    def test_locals_win(self):
        frame = _Frame({"v": "global"}, {"v": "local"})
        self.assertEqual(expand("$v", frame), "local")


class SListTests(unittest.TestCase):
    def setUp(self):
        self.lines = SList(["b 20 x.py", "a 3 y.txt", "C 100 z.py"])

    def test_joins(self):
        self.assertEqual(self.lines.s, "b 20 x.py a 3 y.txt C 100 z.py")
        self.assertEqual(self.lines.spstr, self.lines.s)
        self.assertEqual(self.lines.n, "b 20 x.py\na 3 y.txt\nC 100 z.py")
        self.assertEqual(self.lines.nlstr, self.lines.n)
        self.assertEqual(self.lines.l, list(self.lines))
        self.assertIs(type(self.lines.list), list)

    def test_grep(self):
        self.assertEqual(self.lines.grep(r"\.PY$"), ["b 20 x.py", "C 100 z.py"])
        self.assertEqual(self.lines.grep("py", prune=True), ["a 3 y.txt"])
        self.assertEqual(self.lines.grep("^c$", field=0), ["C 100 z.py"])
        self.assertEqual(self.lines.grep(lambda line: "3" in line), ["a 3 y.txt"])
        self.assertIsInstance(self.lines.grep("x"), SList)

    def test_fields(self):
        self.assertEqual(self.lines.fields(0), ["b", "a", "C"])
        self.assertEqual(self.lines.fields(2, 0), ["x.py b", "y.txt a", "z.py C"])
        self.assertEqual(self.lines.fields(-1), ["x.py", "y.txt", "z.py"])
        self.assertEqual(self.lines.fields(), [["b", "20", "x.py"], ["a", "3", "y.txt"], ["C", "100", "z.py"]])
        self.assertEqual(SList(["one", "two words"]).fields(1), ["words"])

    def test_sort(self):
        self.assertEqual(self.lines.sort(), ["C 100 z.py", "a 3 y.txt", "b 20 x.py"])
        self.assertEqual(self.lines.sort(1), ["C 100 z.py", "b 20 x.py", "a 3 y.txt"])
        self.assertEqual(self.lines.sort(1, nums=True), ["a 3 y.txt", "b 20 x.py", "C 100 z.py"])

    def test_paths(self):
        with tempfile.TemporaryDirectory() as folder:
            real = os.path.join(folder, "real.txt")
            open(real, "w").close()
            found = SList([real, os.path.join(folder, "missing")]).p
            self.assertEqual([str(p) for p in found], [real])
            self.assertEqual(SList([real]).paths, found)


if __name__ == "__main__":
    sys.exit(unittest.main())
