"""DataFrame data (frames.py): a frame's bundle carries its columns as strict
JSON beside its HTML; big frames and other objects do not; pandas stays
unimported until the user imports it.

Run as `python -m unittest` with runner/ on sys.path; needs pandas (the tests
skip without it).
"""
import datetime
import importlib.util
import json
import os
import subprocess
import sys
import unittest

RUNNER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "runner")
sys.path.insert(0, RUNNER)

from cellbox_kernel import display, frames  # noqa: E402

HAVE_PANDAS = importlib.util.find_spec("pandas") is not None


@unittest.skipUnless(HAVE_PANDAS, "pandas is not installed")
class FrameDataTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        import numpy
        import pandas

        cls.pd, cls.np = pandas, numpy

    def bundle(self, obj):
        data, _ = display.mime_bundle(obj)
        json.dumps(data, allow_nan=False)  # what the frame writer sends must be strict JSON
        return data

    def test_a_frame_has_its_columns_beside_its_table(self):
        data = self.bundle(self.pd.DataFrame({"a": [1, 2, 3], "b": ["x", "y", "z"]}))
        self.assertEqual(data[frames.MIME], {"a": [1, 2, 3], "b": ["x", "y", "z"]})
        self.assertIn("<table", data["text/html"])
        self.assertIn("a  b", data["text/plain"])

    def test_values_become_strict_json(self):
        stamp = self.pd.Timestamp("2026-01-02 03:04:05")
        frame = self.pd.DataFrame(
            {
                "when": [stamp, self.pd.NaT],
                "float": [1.5, float("nan")],
                "inf": [float("inf"), 2.0],
                "nullable": self.pd.array([7, None], dtype="Int64"),
                "date": [datetime.date(2026, 1, 2), None],
                "flag": self.np.array([True, False]),
                "other": [complex(1, 2), [1]],
            }
        )
        data = self.bundle(frame)[frames.MIME]
        self.assertEqual(data["when"], ["2026-01-02T03:04:05", None])
        self.assertEqual(data["float"], [1.5, None])
        self.assertEqual(data["inf"], [None, 2.0])
        self.assertEqual(data["nullable"], [7, None])
        self.assertEqual(data["date"], ["2026-01-02", None])
        self.assertEqual(data["flag"], [True, False])
        self.assertEqual(data["other"], ["(1+2j)", "[1]"])

    def test_non_text_column_names_become_text(self):
        data = self.bundle(self.pd.DataFrame({1: [1], ("a", "b"): [2]}))
        self.assertEqual(list(data[frames.MIME]), ["1", "('a', 'b')"])

    def test_a_frame_over_the_limit_has_no_data(self):
        rows = frames.MAX_VALUES // 2 + 1
        data = self.bundle(self.pd.DataFrame({"a": range(rows), "b": range(rows)}))
        self.assertNotIn(frames.MIME, data)
        self.assertIn("<table", data["text/html"])

    def test_series_and_other_objects_have_no_data(self):
        self.assertNotIn(frames.MIME, self.bundle(self.pd.Series([1, 2])))
        self.assertNotIn(frames.MIME, self.bundle({"a": [1]}))


class ImportTests(unittest.TestCase):
    def test_pandas_is_not_imported_by_the_runner(self):
        probe = "import sys; from cellbox_kernel import execute, frames; print('pandas' in sys.modules)"
        out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=RUNNER, check=True)
        self.assertEqual(out.stdout.strip(), "False")


if __name__ == "__main__":
    unittest.main()
