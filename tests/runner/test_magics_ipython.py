"""The IPython magics notebooks use out of habit, run by the real executor
in-process: history variables, %history, help (`obj?`), %xmode/%tb/%debug/%pdb,
%prun, %precision/%pprint, %matplotlib/%config figure formats, get_ipython()
with events and extensions, autoreload, and the %lsmagic coverage.

Where IPython is installed it is the oracle for formats (a skipped test says
why); everything else also runs on bare Python 3.8+.
"""
import ast
import builtins
import contextlib
import importlib.util
import io
import os
import re
import sys
import tempfile
import textwrap
import unittest

from cellbox_kernel import display, mpl
from cellbox_kernel.execute import Executor
from cellbox_kernel.magics import dispatch
from cellbox_kernel.magics.dispatch import Magics
from cellbox_kernel.magics.framework import UsageError

HAVE_IPYTHON = importlib.util.find_spec("IPython") is not None
HAVE_MATPLOTLIB = importlib.util.find_spec("matplotlib") is not None

# IPython's `%%!` is `%%sx` under another spelling; cellbox cells write `!!cmd` (or `%sx`) instead.
SPELLED_OTHERWISE = frozenset(("!",))


class _Capture:
    def sync(self):
        pass


class _Gate:
    received = False

    def arm(self):
        pass

    def disarm(self):
        pass


class Kernel:
    """An executor with the magics installed; run() returns what a cell showed."""

    def __init__(self):
        self.errors = []
        self.displays = []
        self.executor = Executor(_Gate(), self._error, _Capture())
        self.magics = Magics(self.executor)
        builtins.__cellbox_magic__ = self.magics
        display.set_sink(lambda kind, data, metadata: self.displays.append((kind, data, metadata)))

    def _error(self, ename, evalue, traceback):
        self.errors.append((ename, evalue, "".join(traceback)))

    def run(self, code):
        """(stdout, results' text/plain, error or None) of one cell."""
        self.errors, self.displays = [], []
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            self.executor.run(code, False, True)
        self.stderr = err.getvalue()
        results = [data.get("text/plain") for kind, data, _ in self.displays if kind == "result"]
        return out.getvalue(), results, (self.errors[0] if self.errors else None)

    def stdout(self, code):
        out, _, error = self.run(code)
        if error is not None:
            raise AssertionError("cell %r failed: %s" % (code, error[2]))
        return out

    def value(self, code):
        out, results, error = self.run(code)
        if error is not None:
            raise AssertionError("cell %r failed: %s" % (code, error[2]))
        return results[-1] if results else None


def _ipython():
    """A fresh IPython shell with history in memory and no colours."""
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    config = Config()
    config.HistoryManager.hist_file = ":memory:"
    InteractiveShell.clear_instance()
    shell = InteractiveShell.instance(config=config)
    shell.run_line_magic("colors", "nocolor")
    return shell


def _ipython_out(shell, code=None, magic=None, args=""):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        if magic is not None:
            shell.run_line_magic(magic, args)
        else:
            shell.run_cell(code, store_history=True)
    return out.getvalue()


HISTORY_CELLS = ["a = 1", "a + 1", "for i in range(2):\n    print(i)", "b = a * 10\nb"]
HISTORY_PROBE = "_i, _ii, _iii, _i2, len(In), In[0], _, __, ___, _4, Out[2], _ih is In, _oh is Out"


class HistoryTests(unittest.TestCase):
    def test_history_names_follow_ipython(self):
        kernel = Kernel()
        for cell in HISTORY_CELLS:
            kernel.run(cell)
        ours = kernel.value(HISTORY_PROBE)
        # Longer than 79 columns: one item per line, as IPython prints it.
        items = ["'b = a * 10\\nb'", "'for i in range(2):\\n    print(i)'", "'a + 1'", "'a + 1'", "6", "''", "10", "2"]
        items += ["''", "10", "2", "True", "True"]
        expected = "(" + ",\n ".join(items) + ")"
        self.assertEqual(ours, expected)
        kernel.run("_ = 'mine'")
        kernel.run("3")
        self.assertEqual(kernel.value("_"), "'mine'", "a `_` the user assigned is left alone, as in IPython")
        self.assertEqual(kernel.value("Out[7]"), "3")

    def test_history_magic(self):
        kernel = Kernel()
        for cell in HISTORY_CELLS:
            kernel.run(cell)
        self.assertEqual(kernel.stdout("%history -n 1-2 4"), "   1: a = 1\n   2: a + 1\n   4:\nb = a * 10\nb\n")
        self.assertEqual(kernel.stdout("%hist -l 1"), "%history -n 1-2 4\n")
        self.assertEqual(kernel.stdout("%history -g range"), "   3:\nfor i in range(2):\n    print(i)\n")
        _, _, error = kernel.run("%history ~1/2")
        self.assertIn("Only this kernel's history", error[1])

    @unittest.skipUnless(HAVE_IPYTHON, "IPython is not installed: no oracle for %history")
    def test_history_matches_ipython(self):
        ipython = _ipython()
        kernel = Kernel()
        for cell in HISTORY_CELLS:
            _ipython_out(ipython, cell)
            kernel.run(cell)
        shell = builtins.get_ipython()
        # (-l is left out: outside a cell IPython drops the latest entry, taking it for the %history line.)
        for args in ["", "-n", "-n 1-3 4", "-o -n", "-p 2-3", "-n 2:4", "~0/1-2"]:
            with self.subTest(args=args):
                theirs = _ipython_out(ipython, magic="history", args=args)
                ours = io.StringIO()
                with contextlib.redirect_stdout(ours):
                    shell.run_line_magic("history", args)  # as IPython's: not a cell of its own
                self.assertEqual(ours.getvalue(), theirs)
        self.assertEqual(repr(ipython.user_ns["In"][:5]), kernel.value("In[:5]"))

    def test_rerun_recall_save(self):
        kernel = Kernel()
        kernel.run("counter = 0")
        kernel.run("counter += 1\ncounter")
        out, results, _ = kernel.run("%rerun 2")
        self.assertEqual(out, "=== Executing: ===\ncounter += 1\ncounter\n=== Output: ===\n")
        self.assertEqual(results, ["2"])
        self.assertEqual(kernel.stdout("%recall 1"), "counter = 0\n")
        with tempfile.TemporaryDirectory() as folder:
            target = os.path.join(folder, "session")
            out = kernel.stdout("%save " + target + " 1-2")
            self.assertEqual(out, "The following commands were written to file `%s.py`:\ncounter = 0\ncounter += 1\ncounter\n" % target)
            with open(target + ".py") as handle:
                self.assertEqual(handle.read(), "# coding: utf-8\ncounter = 0\ncounter += 1\ncounter\n")
            _, _, error = kernel.run("%save " + target + " 1")
            self.assertIn("pass -f to overwrite", error[1])
            kernel.stdout("%save -a " + target + " 1")
            with open(target + ".py") as handle:
                self.assertTrue(handle.read().endswith("counter\ncounter = 0\n"))

    def test_reset_who_ls_and_selective(self):
        kernel = Kernel()
        kernel.run("aa = 1\nab = 2\nb2 = 3")
        kernel.run("aa")
        self.assertEqual(kernel.value("%who_ls"), "['aa', 'ab', 'b2']")
        kernel.run("%reset_selective -f ^a")
        self.assertEqual(kernel.value("%who_ls"), "['b2']")
        kernel.run("%reset -f")
        self.assertEqual(kernel.value("%who_ls"), "[]")
        self.assertEqual(kernel.value("len(In), sorted(Out)"), "(9, [7])", "inputs stay, outputs go, as IPython's %reset")
        kernel.run("keep = 5\nkeep")
        kernel.run("%reset -s")
        self.assertEqual(kernel.value("'keep' in dir(), Out[9]"), "(False, 5)", "-s keeps the output history")


class HelpTests(unittest.TestCase):
    SETUP = textwrap.dedent(
        """\
        class K:
            'doc of K'
            def __init__(self, a, b=2):
                'init doc'
                self.a = a
        def f(x, y=1):
            'Add things.'
            return x + y
        k = K(1)
        s = 'hello'
        """
    )

    def _fields(self, text):
        """[(title, first line of value)] of a %pinfo page."""
        fields = []
        for line in text.splitlines():
            match = re.match(r"^([A-Z][A-Za-z ]+):(?: +(.*))?$", line)
            if match:
                fields.append((match.group(1), (match.group(2) or "").strip()))
        return [(title, value) for title, value in fields if title not in ("File", "String form")]

    def test_pinfo_fields(self):
        kernel = Kernel()
        kernel.run(self.SETUP)
        self.assertEqual(kernel.stdout("f?"), "Signature: f(x, y=1)\nDocstring: Add things.\nType:      function\n")
        self.assertIn("Source:", kernel.stdout("f??"))
        self.assertIn("return x + y", kernel.stdout("f??"))
        self.assertEqual(kernel.stdout("nothing_here?"), "Object `nothing_here` not found.\n")
        self.assertEqual(kernel.stdout("%pdef f"), "f(x, y=1)\n")
        self.assertEqual(kernel.stdout("%psource f").splitlines()[0], "def f(x, y=1):")
        self.assertEqual(kernel.stdout("%pdoc K"), "Class docstring:\n    doc of K\nInit docstring:\n    init doc\n")
        self.assertIn("Docstring:", kernel.stdout("%pinfo %time"))
        self.assertEqual(kernel.stdout("%psearch k*"), "k\n")

    @unittest.skipUnless(HAVE_IPYTHON, "IPython is not installed: no oracle for %pinfo")
    def test_pinfo_matches_ipython(self):
        ipython = _ipython()
        _ipython_out(ipython, self.SETUP)
        kernel = Kernel()
        kernel.run(self.SETUP)
        for name in ("f", "K", "k", "s", "len", "os.path.join"):
            if name.startswith("os"):
                _ipython_out(ipython, "import os")
                kernel.run("import os")
            with self.subTest(name=name):
                theirs = self._fields(_ipython_out(ipython, magic="pinfo", args=name))
                ours = self._fields(kernel.stdout("%pinfo " + name))
                self.assertEqual(ours, theirs)


class TracebackTests(unittest.TestCase):
    FUNCTION = "def f(x):\n    y = x + 1\n    return y / 0\n"

    def test_modes(self):
        kernel = Kernel()
        kernel.run(self.FUNCTION)
        self.assertEqual(kernel.stdout("%xmode Minimal"), "Exception reporting mode: Minimal\n")
        self.assertEqual(kernel.run("f(2)")[2][2], "ZeroDivisionError: division by zero\n")
        kernel.run("%xmode Verbose")
        verbose = kernel.run("f(2)")[2][2]
        self.assertIn("Cell In[1], line 3, in f(x=2)\n", verbose)
        self.assertIn("----> 3     return y / 0\n        y = 3\n", verbose)
        self.assertEqual(kernel.stdout("%tb Minimal"), "ZeroDivisionError: division by zero\n")
        self.assertEqual(kernel.stdout("%xmode"), "Exception reporting mode: Minimal\n", "no argument: the next mode")
        _, _, error = kernel.run("%xmode Fancy")
        self.assertEqual(error[0], "UsageError")

    @unittest.skipUnless(HAVE_IPYTHON, "IPython is not installed: no oracle for tracebacks")
    def test_context_minimal_docs_match_ipython(self):
        ipython = _ipython()
        kernel = Kernel()
        _ipython_out(ipython, self.FUNCTION)
        kernel.run(self.FUNCTION)
        for mode in ("Context", "Minimal", "Docs"):
            _ipython_out(ipython, magic="xmode", args=mode)
            kernel.run("%xmode " + mode)
            _ipython_out(ipython, "pass")
            theirs = _ipython_out(ipython, "f(2)")
            ours = kernel.run("f(2)")[2][2]
            with self.subTest(mode=mode):
                self.assertEqual(ours.rstrip("\n"), theirs.rstrip("\n"))

    def test_debug_and_pdb(self):
        kernel = Kernel()
        _, _, error = kernel.run("%debug")
        self.assertIn("No traceback has been produced", error[1])
        kernel.run(self.FUNCTION)
        kernel.run("f(41)")
        out = kernel.stdout("%debug")
        self.assertIn("> <cell-2>(3)f()\n-> return y / 0\n    x = 41\n    y = 42\n", out)
        self.assertIn("No interactive debugger is available", out)
        _, _, error = kernel.run("%debug f(1)")
        self.assertIn("interactive debugger", error[1])
        self.assertIn("turned ON", kernel.stdout("%pdb on"))
        traceback = kernel.run("f(1)")[2][2]
        self.assertIn("Post-mortem of ZeroDivisionError", traceback)
        self.assertIn("    y = 2\n", traceback)
        self.assertEqual(kernel.stdout("%pdb off"), "Automatic pdb calling has been turned OFF\n")
        self.assertNotIn("Post-mortem", kernel.run("f(1)")[2][2])


class ProfileTests(unittest.TestCase):
    def test_prun_layout_and_options(self):
        kernel = Kernel()
        kernel.run("def g(n):\n    return sum(range(n))\n")
        out = kernel.stdout("%prun -l 2 -s cumulative g(1000)")
        lines = out.splitlines()
        self.assertRegex(lines[0], r"^ +\d+ function calls in \d+\.\d+ seconds$")
        self.assertEqual(lines[2], "   Ordered by: cumulative time")
        self.assertIn("List reduced from", lines[3])
        self.assertIn("ncalls  tottime  percall  cumtime  percall filename:lineno(function)", out)
        self.assertEqual(kernel.stdout("%prun -q g(10)"), "")
        self.assertEqual(kernel.value("stats = %prun -q -r g(10)\ntype(stats).__name__"), "'Stats'")
        with tempfile.TemporaryDirectory() as folder:
            text = os.path.join(folder, "profile.txt")
            out = kernel.stdout("%%prun -q -T " + text + "\ng(5)\n")
            self.assertIn("*** Profile printout saved to text file", out)
            with open(text) as handle:
                self.assertIn("function calls", handle.read())

    @unittest.skipUnless(HAVE_IPYTHON, "IPython is not installed: no oracle for %prun")
    def test_prun_head_matches_ipython(self):
        ipython = _ipython()
        kernel = Kernel()
        for shell in ("ipython", "cellbox"):
            code = "def g(n):\n    return sum(range(n))\n"
            _ipython_out(ipython, code) if shell == "ipython" else kernel.run(code)
        theirs = _ipython_out(ipython, magic="prun", args="-l 3 -s cumulative g(10)").splitlines()
        ours = kernel.stdout("%prun -l 3 -s cumulative g(10)").splitlines()
        self.assertEqual([re.sub(r"\d", "N", line) for line in ours[:6]], [re.sub(r"\d", "N", line) for line in theirs[:6]])


class SettingsTests(unittest.TestCase):
    @unittest.skipUnless(HAVE_IPYTHON, "IPython is not installed: no oracle for %precision/%pprint/%xmode")
    def test_messages_and_values_match_ipython(self):
        ipython = _ipython()
        kernel = Kernel()
        for magic, args in (("precision", "3"), ("precision", "%.2e"), ("precision", "")):
            self.assertEqual(kernel.value("%%%s %s" % (magic, args)), repr(ipython.run_line_magic(magic, args)))
        for magic, args in (("pprint", ""), ("pprint", ""), ("xmode", "Plain"), ("xmode", "Context"), ("matplotlib", "--list")):
            if magic == "matplotlib" and not HAVE_MATPLOTLIB:
                continue
            with self.subTest(magic=magic, args=args):
                self.assertEqual(kernel.stdout("%%%s %s" % (magic, args)), _ipython_out(ipython, magic=magic, args=args))

    def test_precision_changes_float_results(self):
        kernel = Kernel()
        kernel.run("%precision 2")
        self.assertEqual(kernel.value("3.14159"), "3.14")
        kernel.run("%precision")
        self.assertEqual(kernel.value("3.14159"), "3.14159")

    def test_config(self):
        kernel = Kernel()
        self.assertIn("InlineBackend", kernel.stdout("%config"))
        listing = kernel.stdout("%config InlineBackend")
        self.assertIn("InlineBackend.figure_format=<str>\n    Current: 'png'", listing)
        kernel.run("%config IPCompleter.greedy = True")
        kernel.run("%config InteractiveShell.ast_node_interactivity = 'all'")
        _, _, error = kernel.run("%config Nonsense.thing = 1")
        self.assertEqual(error[0], "UsageError")
        _, _, error = kernel.run("%config InlineBackend.figure_format = 'gif'")
        self.assertIn("supported figure formats", error[1])
        kernel.run("%config InlineBackend.figure_format = 'png'")

    @unittest.skipUnless(HAVE_MATPLOTLIB, "matplotlib is not installed")
    def test_figure_formats(self):
        import base64
        import struct

        kernel = Kernel()
        mpl.install()
        self.addCleanup(kernel.run, "%config InlineBackend.figure_format = 'png'")
        kernel.stdout("%matplotlib inline\nimport matplotlib.pyplot as plt")

        def figure():
            kernel.run("plt.figure(figsize=(2, 1), dpi=50)\nplt.plot([1, 2]);")
            images = [(data, metadata) for kind, data, metadata in kernel.displays if kind == "display"]
            self.assertEqual(len(images), 1)
            return images[0]

        data, metadata = figure()
        self.assertIn("image/png", data)
        kernel.run("%config InlineBackend.figure_format = 'retina'")
        data, metadata = figure()
        png = base64.b64decode(data["image/png"])
        width, height = struct.unpack(">II", png[16:24])
        self.assertEqual(metadata["image/png"], {"width": width // 2, "height": height // 2})
        kernel.run("%config InlineBackend.figure_format = 'svg'")
        self.assertTrue(figure()[0]["image/svg+xml"].lstrip().startswith("<?xml"))
        kernel.run("%config InlineBackend.figure_format = 'jpeg'")
        self.assertTrue(base64.b64decode(figure()[0]["image/jpeg"]).startswith(b"\xff\xd8"))
        _, _, error = kernel.run("%matplotlib nonsense")
        self.assertIn("is not a valid value for backend", error[1])
        self.assertIn("not available here", kernel.stdout("%matplotlib qt"))


class ShellTests(unittest.TestCase):
    def test_get_ipython_and_events(self):
        kernel = Kernel()
        kernel.run(
            "seen = []\n"
            "ip = get_ipython()\n"
            "ip.events.register('pre_run_cell', lambda info: seen.append(('pre', info.raw_cell)))\n"
            "ip.events.register('post_run_cell', lambda result: seen.append(('post', result.success)))\n"
            "ip.events.register('post_execute', lambda: 1 / 0)\n"
        )
        out, _, _ = kernel.run("1 / 0")
        self.assertEqual(kernel.value("seen[:3]"), "[('post', True), ('pre', '1 / 0'), ('post', False)]")
        ip = builtins.get_ipython()
        ip.push({"pushed": 7})
        self.assertEqual(kernel.value("pushed"), "7")
        self.assertEqual(kernel.value("get_ipython().run_line_magic('who_ls', 'int')"), "['pushed']")
        self.assertIs(ip.user_ns, kernel.executor.namespace)

    def test_register_magic_function(self):
        kernel = Kernel()
        kernel.run(
            "def shout(line):\n    return line.upper()\n"
            "def both(line, cell=None):\n    return (line, cell)\n"
            "get_ipython().register_magic_function(shout)\n"
            "get_ipython().register_magic_function(both, 'line_cell', 'twice')\n"
        )
        self.assertEqual(kernel.value("%shout hello"), "'HELLO'")
        self.assertEqual(kernel.value("%twice a"), "('a', None)")
        self.assertEqual(kernel.value("%%twice b\nbody\n"), "('b', 'body\\n')")
        self.assertEqual(kernel.value("get_ipython().run_cell_magic('twice', 'c', 'x')"), "('c', 'x')")

    def test_extensions_load_reload_unload(self):
        kernel = Kernel()
        with tempfile.TemporaryDirectory() as folder:
            with open(os.path.join(folder, "ek_extension.py"), "w") as handle:
                handle.write(
                    "LOADS = []\n"
                    "def load_ipython_extension(ip):\n"
                    "    LOADS.append(1)\n"
                    "    ip.push({'from_extension': len(LOADS)})\n"
                    "    ip.register_magic_function(lambda line: 'ext:' + line, 'line', 'ext')\n"
                    "def unload_ipython_extension(ip):\n"
                    "    ip.user_ns.pop('from_extension', None)\n"
                )
            sys.path.insert(0, folder)
            self.addCleanup(sys.path.remove, folder)
            self.addCleanup(sys.modules.pop, "ek_extension", None)
            kernel.stdout("%load_ext ek_extension")
            self.assertEqual(kernel.value("magic_value = %ext x\nfrom_extension, magic_value"), "(1, 'ext:x')")
            self.assertIn("already loaded", kernel.stdout("%load_ext ek_extension"))
            kernel.stdout("%reload_ext ek_extension")
            self.assertEqual(kernel.value("from_extension"), "1", "the module was re-imported")
            kernel.stdout("%unload_ext ek_extension")
            self.assertEqual(kernel.value("'from_extension' in dir()"), "False")
        _, _, error = kernel.run("%load_ext no_such_extension_module")
        self.assertEqual(error[0], "ModuleNotFoundError")


class AutoreloadTests(unittest.TestCase):
    def setUp(self):
        self.folder = tempfile.mkdtemp()
        sys.path.insert(0, self.folder)
        self.kernel = Kernel()

    def tearDown(self):
        sys.path.remove(self.folder)
        for name in ("ek_auto_one", "ek_auto_two"):
            sys.modules.pop(name, None)

    def write(self, name, text):
        path = os.path.join(self.folder, name + ".py")
        stamp = os.stat(path).st_mtime + 1 if os.path.exists(path) else None
        with open(path, "w") as handle:
            handle.write(text)
        if stamp is not None:  # a later mtime, whatever the file system's clock granularity
            os.utime(path, (stamp, stamp))

    def test_mode_2_reloads_edited_modules_in_place(self):
        kernel = self.kernel
        self.write("ek_auto_one", "def f():\n    return 1\nclass C:\n    def m(self):\n        return 'old'\n")
        kernel.stdout("%load_ext autoreload\n%autoreload 2")
        kernel.run("import ek_auto_one\nfrom ek_auto_one import f\nobj = ek_auto_one.C()")
        self.assertEqual(kernel.value("f(), obj.m()"), "(1, 'old')")
        self.write("ek_auto_one", "def f():\n    return 2\nclass C:\n    def m(self):\n        return 'new'\ndef g():\n    return 3\n")
        self.assertEqual(kernel.value("f(), obj.m(), ek_auto_one.g()"), "(2, 'new', 3)")
        kernel.run("%aimport -ek_auto_one")
        self.write("ek_auto_one", "def f():\n    return 99\n")
        self.assertEqual(kernel.value("f()"), "2", "a skipped module is not reloaded")
        self.assertIn("Modules to skip:\nek_auto_one", kernel.stdout("%aimport"))

    def test_mode_1_only_aimported_and_mode_3_rebinds(self):
        kernel = self.kernel
        self.write("ek_auto_one", "X = 1\n")
        self.write("ek_auto_two", "Y = 1\n")
        kernel.stdout("%load_ext autoreload\n%autoreload explicit")
        kernel.run("%aimport ek_auto_one\nimport ek_auto_two")
        self.write("ek_auto_one", "X = 2\n")
        self.write("ek_auto_two", "Y = 2\n")
        self.assertEqual(kernel.value("ek_auto_one.X, ek_auto_two.Y"), "(2, 1)")
        kernel.run("%autoreload 3")
        kernel.run("from ek_auto_two import Y")
        self.write("ek_auto_two", "Y = 3\nZ = 4\n")
        self.assertEqual(kernel.value("Y, ek_auto_two.Z"), "(3, 4)")
        kernel.run("%autoreload off")
        self.write("ek_auto_two", "Y = 5\n")
        self.assertEqual(kernel.value("Y"), "3")
        _, _, error = kernel.run("%autoreload sometimes")
        self.assertIn("Unrecognized autoreload mode", error[1])


class CoverageTests(unittest.TestCase):
    @unittest.skipUnless(HAVE_IPYTHON, "IPython is not installed: no %lsmagic to compare with")
    def test_every_ipython_magic_is_implemented_or_explained(self):
        ipython = _ipython()
        listed = ipython.magics_manager.lsmagic()
        kernel = Kernel()
        tables = {"line": kernel.magics.line_table(), "cell": kernel.magics.cell_table()}
        missing, unexplained = [], []
        for kind in ("line", "cell"):
            for name in sorted(listed[kind]):
                if name in SPELLED_OTHERWISE:
                    continue
                function = tables[kind].get(name)
                if function is None:
                    missing.append("%s %s" % (kind, name))
                    continue
                reason = getattr(function, "unavailable", None)
                if reason is None:
                    continue
                try:
                    function("", None) if kind == "line" else function("", "", None)
                except UsageError as error:
                    if len(str(error)) < 30:
                        unexplained.append(name)
                else:
                    unexplained.append(name)
        self.assertEqual(missing, [], "IPython magics cellbox neither has nor explains")
        self.assertEqual(unexplained, [])

    def test_lazy_table_names_every_magic_of_its_module(self):
        for module, (lines, cells) in dispatch.LAZY_GROUPS.items():
            loaded = importlib.import_module("cellbox_kernel.magics." + module)
            with self.subTest(module=module):
                self.assertEqual(sorted(lines), sorted(getattr(loaded, "LINE_MAGICS", {})))
                self.assertEqual(sorted(cells), sorted(getattr(loaded, "CELL_MAGICS", {})))

    def test_start_up_imports_no_magic_module(self):
        import subprocess

        code = (
            "import sys\nfrom cellbox_kernel.execute import Executor\nfrom cellbox_kernel.magics.dispatch import Magics\n"
            "class C:\n    def sync(self): pass\n"
            "Magics(Executor(None, None, C()))\n"
            "print(sorted(m for m in sys.modules if m.startswith('cellbox_kernel.magics.') or m in ('inspect', 'cellbox_kernel.autoreload')))"
        )
        env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(display.__file__)))
        out = subprocess.run([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, check=True).stdout
        loaded = set(ast.literal_eval(out.decode().strip()))
        # history is not lazy as a module: the shell keeps the In/Out lists from the start.
        lazy = {"cellbox_kernel.magics." + name for name in dispatch.LAZY_GROUPS} - {"cellbox_kernel.magics.history"}
        self.assertEqual(loaded & (lazy | {"inspect", "cellbox_kernel.autoreload"}), set())

    def test_lsmagic_layout(self):
        kernel = Kernel()
        out = kernel.stdout("%lsmagic")
        self.assertTrue(out.startswith("Available line magics:\n%"))
        self.assertIn("\n\nAvailable cell magics:\n%%", out)
        self.assertIn("%xmode", out)
        self.assertNotIn("%edit ", out, "magics that cannot work here are not listed")
        self.assertTrue(out.endswith("Automagic is OFF, % prefix IS needed for line magics.\n"))
        _, _, error = kernel.run("%qtconsole")
        self.assertEqual(error[0], "UsageError")
        self.assertIn("no windows", error[1])


if __name__ == "__main__":
    sys.exit(unittest.main())
