"""pandas prints frames as under a Jupyter kernel, not as in a terminal: up to
`display.max_columns` (20) columns, wrapped at `display.width` (80) with a
trailing `\\` on each wrapped block, where a terminal's auto-detected
max_columns (0) would leave out the middle columns. Same for a frame that is
a cell's result and for `print(df)`, and for pandas preloaded by the fork
server (imported before any kernel exists).

The expected texts were printed by a real ipykernel 7.4.0 (IPython 9.18.1,
pandas 3.1.1, Python 3.11): `jupyter_client.manager.start_new_kernel(
kernel_name="python3")`, `kc.execute(cell)` for each cell below, keeping the
`execute_result`'s text/plain and the `stdout` stream of each.

Runs the runner itself (`runner.py` started by hand: frames on stdout, what
cells print on stderr). Needs pandas (the tests skip without it).
Run by tests/it/runner_python.rs as `python -m unittest` with runner/ on sys.path.
"""
import importlib.util
import json
import os
import subprocess
import sys
import unittest

RUNNER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "runner")
HAVE_PANDAS = importlib.util.find_spec("pandas") is not None

SETUP = (
    "import pandas as pd\n"
    "wide = pd.DataFrame([[i * 1000 for i in range(30)] for _ in range(3)])\n"
    "long_names = pd.DataFrame([[r * 100 + c for c in range(12)] for r in range(3)],"
    " columns=['a_rather_long_column_name_%d' % c for c in range(12)])"
)

WIDE = (
    "   0     1     2     3     4     5     6     7     8     9   ...     20  \\\n"
    "0   0  1000  2000  3000  4000  5000  6000  7000  8000  9000  ...  20000   \n"
    "1   0  1000  2000  3000  4000  5000  6000  7000  8000  9000  ...  20000   \n"
    "2   0  1000  2000  3000  4000  5000  6000  7000  8000  9000  ...  20000   \n"
    "\n"
    "      21     22     23     24     25     26     27     28     29  \n"
    "0  21000  22000  23000  24000  25000  26000  27000  28000  29000  \n"
    "1  21000  22000  23000  24000  25000  26000  27000  28000  29000  \n"
    "2  21000  22000  23000  24000  25000  26000  27000  28000  29000  \n"
    "\n"
    "[3 rows x 30 columns]\n"
)

LONG_NAMES = (
    "   a_rather_long_column_name_0  a_rather_long_column_name_1  \\\n"
    "0                            0                            1   \n"
    "1                          100                          101   \n"
    "2                          200                          201   \n"
    "\n"
    "   a_rather_long_column_name_2  a_rather_long_column_name_3  \\\n"
    "0                            2                            3   \n"
    "1                          102                          103   \n"
    "2                          202                          203   \n"
    "\n"
    "   a_rather_long_column_name_4  a_rather_long_column_name_5  \\\n"
    "0                            4                            5   \n"
    "1                          104                          105   \n"
    "2                          204                          205   \n"
    "\n"
    "   a_rather_long_column_name_6  a_rather_long_column_name_7  \\\n"
    "0                            6                            7   \n"
    "1                          106                          107   \n"
    "2                          206                          207   \n"
    "\n"
    "   a_rather_long_column_name_8  a_rather_long_column_name_9  \\\n"
    "0                            8                            9   \n"
    "1                          108                          109   \n"
    "2                          208                          209   \n"
    "\n"
    "   a_rather_long_column_name_10  a_rather_long_column_name_11  \n"
    "0                            10                            11  \n"
    "1                           110                           111  \n"
    "2                           210                           211  \n"
)


def run_cells(cells):
    """({request id: result text/plain}, what the cells printed) from a runner."""
    lines = [json.dumps({"type": "execute", "id": "c%d" % n, "code": code, "silent": False, "storeHistory": True}) for n, code in enumerate(cells)]
    lines.append(json.dumps({"type": "exit"}))
    env = dict(os.environ)
    env.pop("COLUMNS", None)
    env.pop("LINES", None)
    done = subprocess.run(
        [sys.executable, "-u", os.path.join(RUNNER, "runner.py")],
        input="\n".join(lines) + "\n",
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=RUNNER,
    )
    results = {}
    for line in done.stdout.splitlines():
        frame = json.loads(line)
        if frame["type"] == "result":
            results[frame["id"]] = frame["bundle"]["text/plain"]
        elif frame["type"] == "error":
            raise AssertionError("%s failed: %s" % (frame["id"], "".join(frame["traceback"])))
    return results, done.stderr


@unittest.skipUnless(HAVE_PANDAS, "pandas is not installed")
class FramesReadAsInJupyter(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cells = [
            SETUP,
            "wide",
            "long_names",
            "print(wide)\nprint(long_names)",
            "pd.get_option('display.max_columns'), pd.get_option('display.width')",
            "pd.Categorical(['category_%d' % i for i in range(20)])",
        ]
        cls.results, cls.printed = run_cells(cells)

    def test_a_wide_frame_as_the_result(self):
        self.assertEqual(self.results["c1"], WIDE[:-1])

    def test_long_column_names_as_the_result(self):
        self.assertEqual(self.results["c2"], LONG_NAMES[:-1])

    def test_printed_frames(self):
        self.assertEqual(self.printed, WIDE + LONG_NAMES)

    def test_the_options_are_jupyters(self):
        self.assertEqual(self.results["c4"], "(20, 80)")

    def test_categories_are_not_wrapped(self):
        # ipykernel: the values on one line, "Length: 20", the categories on one line.
        self.assertEqual(len(self.results["c5"].splitlines()), 3, self.results["c5"])


@unittest.skipUnless(HAVE_PANDAS, "pandas is not installed")
class PreloadedPandas(unittest.TestCase):
    def test_pandas_imported_before_the_kernel_starts(self):
        # The fork server imports the runner's modules, then the preloads, then forks kernels.
        probe = "import cellbox_kernel.main, pandas; print(pandas.get_option('display.max_columns'))"
        out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=RUNNER, check=True)
        self.assertEqual(out.stdout.strip(), "20")


if __name__ == "__main__":
    unittest.main()
