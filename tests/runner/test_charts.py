"""Chart data of matplotlib figures (charts.py): one test per chart kind, the
figure's display bundle carrying it, and matplotlib staying unimported until
the user imports it.

Run as `python -m unittest` with runner/ on sys.path; needs matplotlib and
numpy (the tests skip without them).
"""
import datetime
import importlib.util
import io
import json
import os
import subprocess
import sys
import unittest
from contextlib import redirect_stderr, redirect_stdout

RUNNER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "runner")
sys.path.insert(0, RUNNER)

from cellbox_kernel import charts, display, mpl  # noqa: E402
from cellbox_kernel.execute import Executor  # noqa: E402

HAVE_MATPLOTLIB = importlib.util.find_spec("matplotlib") is not None
CHART_MIME = "application/vnd.cellbox.chart+json"

if HAVE_MATPLOTLIB:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np


def chart_of(figure):
    """chart_data(figure), checked to be strict JSON, then the figure closed."""
    try:
        chart = charts.chart_data(figure)
        json.dumps(chart, allow_nan=False)
        return chart
    finally:
        plt.close(figure)


@unittest.skipUnless(HAVE_MATPLOTLIB, "matplotlib is not installed")
class ChartKindTests(unittest.TestCase):
    def test_line_chart(self):
        fig, ax = plt.subplots()
        ax.plot([0, 1, 2, 3], [1.5, 2.5, 2.0, 4.0], label="speed")
        ax.plot([0, 1, 2, 3], [3, 2, 1, 0])
        ax.set_title("Runs")
        ax.set_xlabel("Distance [km]")
        ax.set_ylabel("Pace (min/km)")
        chart = chart_of(fig)
        self.assertEqual(chart["type"], "line")
        self.assertEqual(chart["title"], "Runs")
        self.assertEqual((chart["x_label"], chart["y_label"]), ("Distance [km]", "Pace (min/km)"))
        self.assertEqual((chart["x_unit"], chart["y_unit"]), ("km", "min/km"))
        self.assertEqual([element["label"] for element in chart["elements"]], ["speed", "Line 1"])
        self.assertEqual(chart["elements"][0]["points"], [[0.0, 1.5], [1.0, 2.5], [2.0, 2.0], [3.0, 4.0]])
        self.assertEqual(chart["elements"][1]["points"][-1], [3.0, 0.0])
        self.assertEqual((chart["x_scale"], chart["y_scale"]), ("linear", "linear"))
        self.assertTrue(chart["x_ticks"] and all(isinstance(tick, float) for tick in chart["x_ticks"]))
        self.assertEqual(len(chart["x_ticks"]), len(chart["x_tick_labels"]))
        self.assertTrue(all(isinstance(label, str) for label in chart["y_tick_labels"]))
        # Only the ticks inside the axis limits, as drawn.
        low, high = fig.axes[0].get_xlim()
        self.assertTrue(all(low <= tick <= high for tick in chart["x_ticks"]))

    def test_line_chart_with_dates_gaps_and_a_log_scale(self):
        fig, ax = plt.subplots()
        days = [datetime.datetime(2024, 3, 1) + datetime.timedelta(days=i) for i in range(4)]
        ax.plot(days, [10, float("nan"), 1000, 100])
        ax.axhline(50)  # a reference line is not data
        ax.set_yscale("log")
        chart = chart_of(fig)
        self.assertEqual(chart["type"], "line")
        self.assertEqual(len(chart["elements"]), 1)
        points = chart["elements"][0]["points"]
        self.assertEqual(points[0], ["2024-03-01T00:00:00", 10.0])
        self.assertEqual(points[1], ["2024-03-02T00:00:00", None])  # NaN is not JSON
        self.assertEqual((chart["x_scale"], chart["y_scale"]), ("datetime", "log"))
        self.assertTrue(all(isinstance(datetime.datetime.fromisoformat(tick), datetime.datetime) for tick in chart["x_ticks"]))

    def test_categorical_axis(self):
        fig, ax = plt.subplots()
        ax.plot([3, 1, 2], ["low", "mid", "high"])
        chart = chart_of(fig)
        self.assertEqual((chart["x_scale"], chart["y_scale"]), ("linear", "categorical"))
        self.assertEqual(chart["y_tick_labels"], ["low", "mid", "high"])
        self.assertEqual(chart["y_ticks"], [0.0, 1.0, 2.0])
        self.assertEqual(chart["elements"][0]["points"], [[3.0, "low"], [1.0, "mid"], [2.0, "high"]])

    def test_scatter_chart(self):
        fig, ax = plt.subplots()
        ax.scatter([1, 2, 3], [9, 8, 7], label="north")
        ax.scatter([4.5, 5.5], [1, 2], label="south")
        ax.set_xlabel("Width")
        ax.set_ylabel("Height")
        chart = chart_of(fig)
        self.assertEqual(chart["type"], "scatter")
        self.assertIsNone(chart["title"])
        self.assertEqual((chart["x_label"], chart["y_label"], chart["x_unit"]), ("Width", "Height", None))
        self.assertEqual(
            chart["elements"],
            [
                {"label": "north", "points": [[1.0, 9.0], [2.0, 8.0], [3.0, 7.0]]},
                {"label": "south", "points": [[4.5, 1.0], [5.5, 2.0]]},
            ],
        )
        self.assertEqual((chart["x_scale"], chart["y_scale"]), ("linear", "linear"))

    def test_bar_chart(self):
        fig, ax = plt.subplots()
        ax.bar(["pears", "plums", "figs"], [12, 30, 7], label="Harvest")
        ax.set_title("Fruit")
        ax.set_xlabel("Kind")
        ax.set_ylabel("Weight (kg)")
        chart = chart_of(fig)
        self.assertEqual(chart["type"], "bar")
        self.assertEqual(chart["title"], "Fruit")
        self.assertEqual((chart["x_label"], chart["y_label"], chart["y_unit"]), ("Kind", "Weight (kg)", "kg"))
        self.assertEqual(
            chart["elements"],
            [
                {"label": "pears", "group": "Harvest", "value": 12.0},
                {"label": "plums", "group": "Harvest", "value": 30.0},
                {"label": "figs", "group": "Harvest", "value": 7.0},
            ],
        )
        self.assertNotIn("x_ticks", chart)

    def test_grouped_and_horizontal_bars(self):
        fig, ax = plt.subplots()
        positions = np.arange(2)
        ax.bar(positions - 0.2, [5, 6], 0.4, label="2023")
        ax.bar(positions + 0.2, [7, 8], 0.4)
        ax.set_xticks(positions, ["Q1", "Q2"])
        chart = chart_of(fig)
        self.assertEqual(
            [(e["label"], e["group"], e["value"]) for e in chart["elements"]],
            [("Q1", "2023", 5.0), ("Q2", "2023", 6.0), ("Q1", "Group 1", 7.0), ("Q2", "Group 1", 8.0)],
        )

        fig, ax = plt.subplots()
        ax.barh(["red", "blue"], [3, 9])
        ax.set_xlabel("Votes")
        ax.set_ylabel("Colour")
        chart = chart_of(fig)
        # x is the category axis, as for vertical bars.
        self.assertEqual((chart["x_label"], chart["y_label"]), ("Colour", "Votes"))
        self.assertEqual([(e["label"], e["value"]) for e in chart["elements"]], [("red", 3.0), ("blue", 9.0)])

    def test_pie_chart(self):
        fig, ax = plt.subplots()
        ax.pie([3, 1], labels=["yes", "no"], startangle=45)
        ax.set_title("Votes")
        chart = chart_of(fig)
        self.assertEqual(
            chart,
            {
                "type": "pie",
                "title": "Votes",
                "elements": [{"label": "yes", "angle": 270.0, "radius": 1.0}, {"label": "no", "angle": 90.0, "radius": 1.0}],
            },
        )

    def test_box_and_whisker_chart(self):
        samples = [[10, 12, 13, 14, 15, 17], [20, 21, 22, 23, 24, 40], [5, 6, 6, 7, 8]]
        fig, ax = plt.subplots()
        ax.boxplot(samples, patch_artist=True)
        ax.set_xticks([1, 2, 3], ["low", "high", "tiny"])
        ax.set_title("Spread")
        ax.set_xlabel("Sample")
        ax.set_ylabel("Value [ms]")
        chart = chart_of(fig)
        self.assertEqual(chart["type"], "box_and_whisker")
        self.assertEqual(chart["title"], "Spread")
        self.assertEqual((chart["x_label"], chart["y_unit"]), ("Sample", "ms"))
        expected = []
        for label, values in zip(["low", "high", "tiny"], samples):
            q1, median, q3 = (float(v) for v in np.percentile(values, [25, 50, 75]))
            reach = 1.5 * (q3 - q1)
            inside = [v for v in values if q1 - reach <= v <= q3 + reach]
            expected.append(
                {
                    "label": label,
                    "min": float(min(inside)),
                    "first_quartile": q1,
                    "median": median,
                    "third_quartile": q3,
                    "max": float(max(inside)),
                    "outliers": [float(v) for v in values if v not in inside],
                }
            )
        self.assertEqual(chart["elements"], expected)
        self.assertEqual(chart["elements"][1]["outliers"], [40.0])

    def test_horizontal_box_plot_with_means(self):
        fig, ax = plt.subplots()
        horizontal = {"orientation": "horizontal"} if _has_boxplot_orientation() else {"vert": False}
        ax.boxplot([[1, 2, 3, 4, 5]], patch_artist=True, showmeans=True, **horizontal)
        ax.set_xlabel("Size")
        chart = chart_of(fig)
        self.assertEqual(chart["type"], "box_and_whisker")
        self.assertEqual((chart["x_label"], chart["y_label"]), (None, "Size"))
        (box,) = chart["elements"]
        self.assertEqual(
            (box["min"], box["first_quartile"], box["median"], box["third_quartile"], box["max"]), (1.0, 2.0, 3.0, 4.0, 5.0)
        )
        self.assertEqual(box["outliers"], [])  # the mean marker is no outlier

    def test_several_axes_make_a_superchart(self):
        fig, (left, right) = plt.subplots(1, 2)
        fig.suptitle("Overview")
        left.plot([1, 2, 3])
        left.set_title("Trend")
        right.bar(["a", "b"], [4, 2])
        right.set_ylabel("Count")
        chart = chart_of(fig)
        self.assertEqual(chart["type"], "superchart")
        self.assertEqual(chart["title"], "Overview")
        self.assertEqual([element["type"] for element in chart["elements"]], ["line", "bar"])
        line, bar = chart["elements"]
        self.assertEqual(line["title"], "Trend")
        self.assertEqual(line["elements"][0]["points"], [[0.0, 1.0], [1.0, 2.0], [2.0, 3.0]])
        self.assertEqual(bar["y_label"], "Count")
        self.assertEqual([(e["label"], e["value"]) for e in bar["elements"]], [("a", 4.0), ("b", 2.0)])

    def test_an_image_is_an_unknown_chart(self):
        fig, ax = plt.subplots()
        ax.imshow(np.arange(6).reshape(2, 3))
        ax.set_title("Heat")
        self.assertEqual(chart_of(fig), {"type": "unknown", "title": "Heat", "elements": []})

        fig, ax = plt.subplots()
        ax.plot([1, 2])
        ax.scatter([1], [2])  # lines and points together are no known kind either
        self.assertEqual(chart_of(fig)["type"], "unknown")

    def test_no_chart_for_a_blank_figure_or_a_non_figure(self):
        fig, _ = plt.subplots()
        self.assertIsNone(chart_of(fig))
        self.assertIsNone(chart_of(plt.figure()))
        self.assertIsNone(charts.chart_data(object()))
        self.assertIsNone(charts.chart_data(None))


@unittest.skipUnless(HAVE_MATPLOTLIB, "matplotlib is not installed")
class DisplayBundleTests(unittest.TestCase):
    def setUp(self):
        self.displays = []
        display.set_sink(lambda kind, data, metadata: self.displays.append((kind, data, metadata)))
        self.addCleanup(display.set_sink, None)

    def test_displayed_figure_carries_its_chart(self):
        fig, ax = plt.subplots()
        ax.plot([1, 4, 9], label="squares")
        try:
            data, _ = display.mime_bundle(fig, as_json=True)
        finally:
            plt.close(fig)
        self.assertIn("image/png", data)
        self.assertEqual(data[CHART_MIME]["type"], "line")
        self.assertEqual(data[CHART_MIME]["elements"][0]["label"], "squares")

    def test_plt_show_in_a_cell_sends_the_chart(self):
        mpl.install()
        errors = []
        executor = Executor(_Gate(), lambda *error: errors.append(error), _Capture())
        code = "import matplotlib.pyplot as plt\nplt.bar(['x', 'y'], [2, 5])\nplt.title('Shown')\nplt.show()\n"
        with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
            executor.run(code, False, True)
        self.assertEqual(errors, [])
        shown = [data for kind, data, _ in self.displays if kind == "display"]
        self.assertEqual(len(shown), 1)
        self.assertIn("image/png", shown[0])
        self.assertTrue(shown[0]["text/plain"].startswith("<Figure"))
        chart = shown[0][CHART_MIME]
        self.assertEqual((chart["type"], chart["title"]), ("bar", "Shown"))
        self.assertEqual([(e["label"], e["value"]) for e in chart["elements"]], [("x", 2.0), ("y", 5.0)])

    def test_a_blank_figure_has_no_chart_entry(self):
        fig = plt.figure()
        try:
            data, _ = mpl.figure_bundle(fig)
        finally:
            plt.close(fig)
        self.assertIn("image/png", data)
        self.assertNotIn(CHART_MIME, data)


class LazyImportTests(unittest.TestCase):
    def test_the_runner_does_not_import_matplotlib_itself(self):
        code = "import sys, cellbox_kernel.mpl, cellbox_kernel.charts, cellbox_kernel.execute; print('matplotlib' in sys.modules)"
        env = dict(os.environ, PYTHONPATH=RUNNER)
        out = subprocess.run([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, check=True).stdout
        self.assertEqual(out.strip(), b"False")


class _Capture:
    def sync(self):
        pass


class _Gate:
    received = False

    def arm(self):
        pass

    def disarm(self):
        pass


def _has_boxplot_orientation():
    import inspect

    return "orientation" in inspect.signature(plt.Axes.boxplot).parameters


if __name__ == "__main__":
    unittest.main()
