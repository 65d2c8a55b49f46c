"""`Out`, the output history: bounded as IPython's output cache is, and
what `%reset out` and `%xdel` do to it and to the `_N` names, with IPython as
the oracle where it is installed."""
import contextlib
import io
import os
import sys
import unittest
import warnings

sys.path.insert(0, os.path.dirname(__file__))  # the shared helpers, when run by path
from test_magics_ipython import HAVE_IPYTHON, Kernel, _ipython, _ipython_out  # noqa: E402


class OutTests(unittest.TestCase):
    def test_out_lets_its_oldest_values_go_at_its_size_as_ipython(self):
        kernel = Kernel()
        kernel.run("%config InteractiveShell.cache_size = 5")
        cells = ["%d * 10" % n for n in range(1, 8)]  # cells 2 to 8
        for cell in cells[:5]:
            kernel.run(cell)
        self.assertEqual(kernel.stderr, "")
        kernel.run(cells[5])
        self.assertEqual(
            kernel.stderr,
            "[cellbox: Out held 5 values (InteractiveShell.cache_size is 5); the oldest 2, Out[2] to Out[3], were let go]\n",
        )
        kernel.run(cells[6])
        kept = sorted(kernel.magics.shell.history.outputs)
        self.assertEqual(kept, [4, 5, 6, 7, 8])
        namespace = kernel.executor.namespace
        self.assertEqual(("_2" in namespace, "_3" in namespace, namespace["_4"], namespace["_"]), (False, False, 30, 70))
        if HAVE_IPYTHON:
            from IPython.core.interactiveshell import InteractiveShell
            from traitlets.config import Config

            config = Config()
            config.HistoryManager.hist_file = ":memory:"
            config.InteractiveShell.cache_size = 5
            InteractiveShell.clear_instance()
            ipython = InteractiveShell.instance(config=config)
            self.addCleanup(InteractiveShell.clear_instance)
            with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
                warnings.simplefilter("ignore")
                for cell in ["pass"] + cells:
                    ipython.run_cell(cell, store_history=True)
            self.assertEqual(sorted(ipython.user_ns["Out"]), kept, "the same values kept as IPython's")

    def test_out_size_lowered_small_or_wrong(self):
        kernel = Kernel()
        outputs = kernel.magics.shell.history.outputs
        for n in range(6):
            kernel.run(str(n))  # Out[1] to Out[6]
        kernel.run("%config InteractiveShell.cache_size = 3")  # cell 7
        self.assertIn("the oldest 3, Out[1] to Out[3], were let go", kernel.stderr, "down to the new size at once")
        self.assertEqual(sorted(outputs), [4, 5, 6])
        kernel.run("7")  # cell 8
        self.assertEqual(sorted(outputs), [6, 8])
        kernel.run("%config InteractiveShell.cache_size = 0")
        self.assertIn("the oldest 2, Out[6] to Out[8], were let go", kernel.stderr)
        kernel.run("'not kept'")
        self.assertEqual(outputs, {}, "under 3, nothing is kept")
        self.assertEqual(kernel.executor.namespace["_"], 7, "and `_` stays")
        for wrong in ("'10'", "2.5"):
            _, _, error = kernel.run("%config InteractiveShell.cache_size = " + wrong)
            self.assertEqual(error[0], "UsageError")
            self.assertIn("whole number", error[1])

    def test_a_cell_that_broke_out_or_stderr_still_gets_its_value_kept(self):
        kernel = Kernel()
        kernel.run("%config InteractiveShell.cache_size = 3")
        kernel.run("1")
        kernel.run("2")
        kernel.run("Out['mine'] = 'kept'")
        out, results, error = kernel.run("import sys\nsys.stderr = None\n4")  # Out is full: a cull
        self.assertEqual((results, error), (["4"], None))
        kernel.run("sys.stderr = sys.__stderr__")
        outputs = kernel.magics.shell.history.outputs
        self.assertEqual(sorted(outputs, key=str), [5, "mine"], "the user's key is left, the history's go")
        self.assertEqual(kernel.executor.namespace["_5"], 4)

    def test_reset_out_counts_what_it_flushes_as_ipython(self):
        cells = ["1", "2", "x = 3"]
        kernel = Kernel()
        for cell in cells:
            kernel.run(cell)
        ours = kernel.stdout("%reset -f out")
        self.assertEqual(ours, "Flushing output cache (2 entries)\n")
        if HAVE_IPYTHON:
            ipython = _ipython()
            self.addCleanup(ipython.clear_instance)
            with contextlib.redirect_stdout(io.StringIO()):
                for cell in cells:
                    ipython.run_cell(cell, store_history=True)
            self.assertEqual(_ipython_out(ipython, magic="reset", args="-f out"), ours)

    def test_xdel_with_keys_of_the_users_in_out_as_ipython(self):
        # Out[3] is replaced by x, while _3 still names the cell's own value; True is a key of its own.
        # _7 names x though Out[7] was deleted.
        cells = ["x = [1]", "x", "'cell 3'", "Out['mine'] = x", "Out[3] = x", "Out[True] = x", "x", "del Out[7]"]
        kernel = Kernel()
        for cell in cells:
            kernel.run(cell)
        namespace = kernel.executor.namespace
        self.assertIs(namespace["_2"], namespace["x"])
        self.assertIs(namespace["_7"], namespace["x"])
        self.assertEqual(namespace["_3"], "cell 3")
        out, _, error = kernel.run("%xdel x")
        self.assertEqual((out, error), ("", None))
        self.assertEqual(kernel.magics.shell.history.outputs, {}, "every key that held x")
        self.assertFalse({"_2", "_7"} & set(namespace))
        self.assertEqual(namespace["_3"], "cell 3", "a `_N` that never held x stays")
        if HAVE_IPYTHON:
            ipython = _ipython()
            self.addCleanup(ipython.clear_instance)
            for cell in cells:
                _ipython_out(ipython, cell)
            self.assertIs(ipython.user_ns["_7"], ipython.user_ns["x"])
            _ipython_out(ipython, "%xdel x")
            self.assertEqual(ipython.user_ns["Out"], {})
            self.assertEqual(ipython.user_ns["_3"], "cell 3")
            self.assertFalse({"_2", "_7"} & set(ipython.user_ns))

    def test_reset_out_with_a_key_of_the_users_in_out_as_ipython(self):
        cells = ["1", "2", "del Out[2]", "Out['mine'] = 3"]
        kernel = Kernel()
        for cell in cells:
            kernel.run(cell)
        namespace = kernel.executor.namespace
        self.assertEqual((namespace["_1"], namespace["_2"]), (1, 2))
        ours = kernel.stdout("%reset -f out")
        self.assertEqual(ours, "Flushing output cache (2 entries)\n")
        self.assertEqual(kernel.magics.shell.history.outputs, {})
        self.assertFalse({"_1", "_2"} & set(namespace), "every `_N`, as IPython's flush: _2 too, gone from Out")
        if HAVE_IPYTHON:
            ipython = _ipython()
            self.addCleanup(ipython.clear_instance)
            for cell in cells:
                _ipython_out(ipython, cell)
            self.assertEqual((ipython.user_ns["_1"], ipython.user_ns["_2"]), (1, 2))
            self.assertEqual(_ipython_out(ipython, magic="reset", args="-f out"), ours)
            self.assertFalse({"_1", "_2"} & set(ipython.user_ns))


if __name__ == "__main__":
    unittest.main()
