"""Unit tests of the E2B-compatible result models, charts and exceptions:
the MIME bundle mapping, `formats()` order, `to_json()` shapes, reprs, chart
deserialisation and tolerance of keys a newer engine may send.

Run as `python -m unittest discover -s tests/sdk` with python/ on sys.path
(this file puts it there).
"""
import ast
import json
import os
import pickle
import sys
import unittest

PYTHON_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python")
sys.path.insert(0, PYTHON_DIR)

from cellbox import charts, exceptions, models  # noqa: E402
from cellbox.charts import (  # noqa: E402
    BarChart,
    BarData,
    BoxAndWhiskerChart,
    BoxAndWhiskerData,
    Chart,
    Chart2D,
    ChartType,
    LineChart,
    PieChart,
    PieData,
    PointChart,
    PointData,
    ScaleType,
    ScatterChart,
    SuperChart,
    deserialize_chart,
)
from cellbox.models import (  # noqa: E402
    Context,
    Execution,
    ExecutionError,
    Logs,
    MIMEType,
    OutputMessage,
    Result,
)

CHART_MIME = "application/vnd.cellbox.chart+json"
DATA_MIME = "application/vnd.cellbox.data+json"

# Chart JSON in the shape the kernel's extractor sends, with the values of
# real matplotlib figures (the figures E2B's own chart tests draw).

LINE = {
    "type": "line",
    "title": "Plot of sin(x) and cos(x)",
    "elements": [
        {
            "label": "sin(x)",
            "points": [["2023-09-01T00:00:00", 0.0], ["2023-09-01T00:00:01", 0.0634], ["2023-09-01T00:00:02", 0.1266]],
        },
        {
            "label": "cos(x)",
            "points": [["2023-09-01T00:00:00", 1.0], ["2023-09-01T00:00:01", 0.998], ["2023-09-01T00:00:02", 0.992]],
        },
    ],
    "x_label": "Time (s)",
    "y_label": "Amplitude (Hz)",
    "x_unit": "s",
    "y_unit": "Hz",
    "x_ticks": ["2023-09-01T00:00:00", "2023-09-01T00:00:20", "2023-09-01T00:00:40"],
    "x_tick_labels": ["00:00", "00:20", "00:40"],
    "x_scale": "datetime",
    "y_ticks": [-1.0, -0.5, 0.0, 0.5, 1.0],
    "y_tick_labels": ["\u22121.0", "\u22120.5", "0.0", "0.5", "1.0"],
    "y_scale": "linear",
}

SCATTER = {
    "type": "scatter",
    "title": None,
    "elements": [
        {"label": "Dataset 1", "points": [[1.0, 2.0], [2.0, 4.0], [3.0, 3.5], [4.0, 5.0], [5.0, 6.0]]},
        {"label": "Dataset 2", "points": [[1.5, 2.5], [2.5, 3.0]]},
    ],
    "x_label": "A",
    "y_label": "B",
    "x_unit": None,
    "y_unit": None,
    "x_ticks": [0.0, 2.0, 4.0, 6.0],
    "x_tick_labels": ["0", "2", "4", "6"],
    "x_scale": "linear",
    "y_ticks": [2.0, 4.0, 6.0],
    "y_tick_labels": ["2", "4", "6"],
    "y_scale": "linear",
}

BAR = {
    "type": "bar",
    "title": "Book Sales by Authors",
    "elements": [
        {"label": "Author A", "group": "Books Sold", "value": 100},
        {"label": "Author B", "group": "Books Sold", "value": 200},
        {"label": "Author C", "group": "Books Sold", "value": 300},
        {"label": "Author D", "group": "Books Sold", "value": 400},
    ],
    "x_label": "Authors",
    "y_label": "Number of Books Sold",
    "x_unit": None,
    "y_unit": None,
}

PIE = {
    "type": "pie",
    "title": "Will I wake up early tomorrow?",
    "elements": [
        {"label": "No", "angle": 324.0, "radius": 1.0},
        {"label": "No, in blue", "angle": 36.0, "radius": 1.0},
    ],
}

BOX = {
    "type": "box_and_whisker",
    "title": "Exam Scores Distribution",
    "elements": [
        {"label": "Class A", "min": 78, "first_quartile": 85, "median": 88, "third_quartile": 90, "max": 92,
         "outliers": []},
        {"label": "Class B", "min": 84, "first_quartile": 84.75, "median": 88, "third_quartile": 90.5, "max": 95,
         "outliers": [76]},
        # An older extractor leaves `outliers` out when there are none.
        {"label": "Class C", "min": 75, "first_quartile": 79, "median": 82, "third_quartile": 86, "max": 88},
    ],
    "x_label": "Class",
    "y_label": "Score",
    "x_unit": None,
    "y_unit": None,
}

UNKNOWN = {"type": "unknown", "title": "Two Concentric Circles", "elements": []}

SUPER = {
    "type": "superchart",
    "title": "Multiple Charts Example",
    "elements": [
        dict(LINE, title="Sine Wave", x_label=None, y_label=None, x_unit=None, y_unit=None),
        dict(SCATTER, title="Scatter Plot", x_label="X", y_label="Y"),
    ],
}


class ChartDeserialisationTest(unittest.TestCase):
    def test_line_chart(self):
        chart = deserialize_chart(LINE)
        self.assertIsInstance(chart, LineChart)
        self.assertIsInstance(chart, PointChart)
        self.assertIsInstance(chart, Chart2D)
        self.assertEqual(chart.type, ChartType.LINE)
        self.assertEqual(chart.type, "line")
        self.assertEqual(chart.title, "Plot of sin(x) and cos(x)")
        self.assertEqual((chart.x_label, chart.y_label), ("Time (s)", "Amplitude (Hz)"))
        self.assertEqual((chart.x_unit, chart.y_unit), ("s", "Hz"))
        self.assertEqual(chart.x_scale, ScaleType.DATETIME)
        self.assertEqual(chart.y_scale, "linear")
        self.assertEqual(chart.x_ticks, LINE["x_ticks"])
        self.assertEqual(chart.x_tick_labels, ["00:00", "00:20", "00:40"])
        self.assertEqual(chart.y_ticks, [-1.0, -0.5, 0.0, 0.5, 1.0])
        self.assertEqual(chart.y_tick_labels[0], "\u22121.0")
        self.assertEqual([e.label for e in chart.elements], ["sin(x)", "cos(x)"])
        first = chart.elements[0]
        self.assertIsInstance(first, PointData)
        self.assertEqual(len(first.points), 3)
        self.assertIsInstance(first.points[0], tuple)
        self.assertEqual(first.points[1], ("2023-09-01T00:00:01", 0.0634))

    def test_scatter_chart(self):
        chart = deserialize_chart(SCATTER)
        self.assertIsInstance(chart, ScatterChart)
        self.assertEqual(chart.type, ChartType.SCATTER)
        self.assertIsNone(chart.title)
        self.assertEqual((chart.x_label, chart.y_label, chart.x_unit, chart.y_unit), ("A", "B", None, None))
        self.assertEqual((chart.x_scale, chart.y_scale), (ScaleType.LINEAR, ScaleType.LINEAR))
        self.assertEqual([len(e.points) for e in chart.elements], [5, 2])
        self.assertTrue(all(isinstance(p, tuple) for e in chart.elements for p in e.points))
        self.assertEqual(chart.elements[1], PointData(label="Dataset 2", points=[(1.5, 2.5), (2.5, 3.0)]))

    def test_bar_chart(self):
        chart = deserialize_chart(BAR)
        self.assertIsInstance(chart, BarChart)
        self.assertEqual(chart.type, ChartType.BAR)
        self.assertEqual(chart.title, "Book Sales by Authors")
        self.assertEqual((chart.x_label, chart.y_label), ("Authors", "Number of Books Sold"))
        self.assertEqual((chart.x_unit, chart.y_unit), (None, None))
        self.assertEqual([e.value for e in chart.elements], [100, 200, 300, 400])
        self.assertEqual([e.label for e in chart.elements], ["Author A", "Author B", "Author C", "Author D"])
        self.assertEqual({e.group for e in chart.elements}, {"Books Sold"})
        self.assertIsInstance(chart.elements[0], BarData)

    def test_pie_chart(self):
        chart = deserialize_chart(PIE)
        self.assertIsInstance(chart, PieChart)
        self.assertNotIsInstance(chart, Chart2D)
        self.assertEqual(chart.type, ChartType.PIE)
        self.assertEqual(chart.title, "Will I wake up early tomorrow?")
        self.assertEqual([e.angle for e in chart.elements], [324.0, 36.0])
        self.assertEqual([e.radius for e in chart.elements], [1.0, 1.0])
        self.assertEqual(chart.elements[1], PieData(label="No, in blue", angle=36.0, radius=1.0))

    def test_box_and_whisker_chart(self):
        chart = deserialize_chart(BOX)
        self.assertIsInstance(chart, BoxAndWhiskerChart)
        self.assertEqual(chart.type, ChartType.BOX_AND_WHISKER)
        self.assertEqual(chart.title, "Exam Scores Distribution")
        self.assertEqual((chart.x_label, chart.y_label, chart.x_unit, chart.y_unit), ("Class", "Score", None, None))
        elements = chart.elements
        self.assertTrue(all(isinstance(e, BoxAndWhiskerData) for e in elements))
        self.assertEqual([e.label for e in elements], ["Class A", "Class B", "Class C"])
        self.assertEqual([e.outliers for e in elements], [[], [76], []])
        self.assertEqual([e.min for e in elements], [78, 84, 75])
        self.assertEqual([e.first_quartile for e in elements], [85, 84.75, 79])
        self.assertEqual([e.median for e in elements], [88, 88, 82])
        self.assertEqual([e.third_quartile for e in elements], [90, 90.5, 86])
        self.assertEqual([e.max for e in elements], [92, 95, 88])

    def test_superchart_deserialises_each_axes(self):
        chart = deserialize_chart(SUPER)
        self.assertIsInstance(chart, SuperChart)
        self.assertEqual(chart.type, ChartType.SUPERCHART)
        self.assertEqual(chart.title, "Multiple Charts Example")
        line, scatter = chart.elements
        self.assertIsInstance(line, LineChart)
        self.assertEqual(line.title, "Sine Wave")
        self.assertEqual((line.x_label, line.y_label), (None, None))
        self.assertEqual(len(line.elements), 2)
        self.assertIsInstance(scatter, ScatterChart)
        self.assertEqual((scatter.title, scatter.x_label, scatter.y_label), ("Scatter Plot", "X", "Y"))
        self.assertEqual(len(scatter.elements[0].points), 5)
        # The raw form keeps the nested charts as dicts, for JSON.
        self.assertEqual(chart.to_dict()["elements"][1]["type"], "scatter")

    def test_unknown_chart_is_the_base_class(self):
        chart = deserialize_chart(UNKNOWN)
        self.assertIs(type(chart), Chart)
        self.assertEqual(chart.type, ChartType.UNKNOWN)
        self.assertEqual(chart.title, "Two Concentric Circles")
        self.assertEqual(chart.elements, [])

    def test_unrecognised_or_missing_type_gives_an_unknown_chart(self):
        newer = deserialize_chart({"type": "heatmap", "title": "T", "elements": [{"cell": [0, 0]}]})
        self.assertIs(type(newer), Chart)
        self.assertEqual(newer.type, ChartType.UNKNOWN)
        self.assertEqual(newer.elements, [{"cell": [0, 0]}])
        untyped = deserialize_chart({"title": "T"})
        self.assertIs(type(untyped), Chart)
        self.assertEqual((untyped.type, untyped.elements), (ChartType.UNKNOWN, []))

    def test_empty_chart_is_none(self):
        self.assertIsNone(deserialize_chart({}))
        self.assertIsNone(deserialize_chart(None))

    def test_enum_type_values_are_accepted(self):
        chart = deserialize_chart(dict(PIE, type=ChartType.PIE))
        self.assertIsInstance(chart, PieChart)

    def test_subclass_without_type_key_keeps_its_own_type(self):
        chart = LineChart(title="t", elements=[])
        self.assertEqual(chart.type, ChartType.LINE)
        self.assertEqual(chart.x_scale, ScaleType.UNKNOWN)
        self.assertEqual((chart.x_ticks, chart.y_tick_labels), ([], []))

    def test_unknown_scale_and_extra_keys_are_tolerated(self):
        data = dict(SCATTER, x_scale="mercator", z_label="new in a later version")
        data["elements"] = [dict(SCATTER["elements"][0], colour="red")]
        chart = deserialize_chart(data)
        self.assertEqual(chart.x_scale, ScaleType.UNKNOWN)
        self.assertEqual(chart.y_scale, ScaleType.LINEAR)
        self.assertEqual(chart.elements[0].label, "Dataset 1")
        self.assertEqual(chart.to_dict()["z_label"], "new in a later version")
        bar = deserialize_chart(dict(BAR, elements=[dict(BAR["elements"][0], stacked=True)]))
        self.assertEqual(bar.elements[0].value, 100)

    def test_malformed_known_chart_raises(self):
        with self.assertRaises(TypeError):
            deserialize_chart({"type": "bar", "title": None, "elements": [{"label": "a"}]})

    def test_to_dict_is_the_raw_json(self):
        for data in (LINE, SCATTER, BAR, PIE, BOX, UNKNOWN, SUPER):
            with self.subTest(type=data["type"]):
                chart = deserialize_chart(data)
                self.assertEqual(chart.to_dict(), data)
                self.assertEqual(json.loads(json.dumps(chart.to_dict())), data)

    def test_equality_and_repr(self):
        self.assertEqual(deserialize_chart(BAR), deserialize_chart(json.loads(json.dumps(BAR))))
        self.assertNotEqual(deserialize_chart(BAR), deserialize_chart(PIE))
        self.assertIn("PieChart", repr(deserialize_chart(PIE)))
        self.assertIn("Will I wake up early tomorrow?", repr(deserialize_chart(PIE)))

    def test_enums(self):
        self.assertEqual(
            [t.value for t in ChartType],
            ["line", "scatter", "bar", "pie", "box_and_whisker", "superchart", "unknown"],
        )
        self.assertEqual(
            [s.value for s in ScaleType],
            ["linear", "datetime", "categorical", "log", "symlog", "logit", "function", "functionlog", "asinh",
             "unknown"],
        )
        self.assertTrue(isinstance(ChartType.BAR, str))
        self.assertEqual(ScaleType("log"), ScaleType.LOG)

    def test_e2b_private_name_is_kept(self):
        self.assertIs(charts._deserialize_chart, deserialize_chart)


class BundleMappingTest(unittest.TestCase):
    def test_each_known_mime_type_has_its_attribute(self):
        bundle = {
            "text/plain": "<Figure size 640x480 with 1 Axes>",
            "text/html": "<b>hi</b>",
            "text/markdown": "# hi",
            "image/svg+xml": "<svg></svg>",
            "image/png": "iVBORw0KGgo=",
            "image/jpeg": "/9j/4AAQ",
            "application/pdf": "JVBERi0=",
            "text/latex": r"$\alpha$",
            "application/json": {"a": [1, 2]},
            "application/javascript": "console.log(1)",
            DATA_MIME: {"a": [1, 2, 3]},
            CHART_MIME: PIE,
        }
        result = Result.from_bundle(bundle, is_main_result=False)
        self.assertEqual(result.text, "<Figure size 640x480 with 1 Axes>")
        self.assertEqual(result.html, "<b>hi</b>")
        self.assertEqual(result.markdown, "# hi")
        self.assertEqual(result.svg, "<svg></svg>")
        self.assertEqual(result.png, "iVBORw0KGgo=")
        self.assertEqual(result.jpeg, "/9j/4AAQ")
        self.assertEqual(result.pdf, "JVBERi0=")
        self.assertEqual(result.latex, r"$\alpha$")
        self.assertEqual(result.json, {"a": [1, 2]})
        self.assertEqual(result.javascript, "console.log(1)")
        self.assertEqual(result.data, {"a": [1, 2, 3]})
        self.assertIsInstance(result.chart, PieChart)
        self.assertFalse(result.is_main_result)
        self.assertEqual(result.extra, {})
        self.assertFalse(result.extra)
        self.assertEqual(
            result.formats(),
            ["text", "html", "markdown", "svg", "png", "jpeg", "pdf", "latex", "json", "javascript", "data", "chart"],
        )

    def test_other_mime_types_go_to_extra_in_order(self):
        bundle = {
            "application/vnd.plotly.v1+json": {"data": []},
            "text/plain": "Figure()",
            "application/geo+json": {"type": "Point"},
        }
        result = Result.from_bundle(bundle, True)
        self.assertEqual(result.extra, {"application/vnd.plotly.v1+json": {"data": []},
                                        "application/geo+json": {"type": "Point"}})
        self.assertEqual(result.formats(), ["text", "application/vnd.plotly.v1+json", "application/geo+json"])
        self.assertTrue(result.is_main_result)

    def test_bundle_is_not_modified(self):
        bundle = {"text/plain": "'x'", "text/x-custom": "y"}
        Result.from_bundle(bundle, True)
        self.assertEqual(bundle, {"text/plain": "'x'", "text/x-custom": "y"})

    def test_one_pair_of_repr_quotes_is_stripped(self):
        cases = [
            ("'bar'", "bar"),
            ('"/home/user"', "/home/user"),
            ('"it\'s"', "it's"),
            ("\"'nested'\"", "'nested'"),
            ('[1] "bar"', '[1] "bar"'),
            ("'mismatched\"", "'mismatched\""),
            ("'", "'"),
            ("''", ""),
            ("1", "1"),
        ]
        for raw, shown in cases:
            with self.subTest(raw=raw):
                self.assertEqual(Result.from_bundle({"text/plain": raw}, True).text, shown)

    def test_constructor_does_not_strip_quotes(self):
        # Wire results built with Result(**obj) were already stripped server-side.
        self.assertEqual(Result(text="'x'").text, "'x'")

    def test_notebook_style_line_lists_are_joined(self):
        result = Result.from_bundle({"text/plain": ["a\n", "b"], "text/html": ["<p>", "</p>"]}, True)
        self.assertEqual((result.text, result.html), ("a\nb", "<p></p>"))
        self.assertEqual(Result.from_bundle({"application/json": ["a", "b"]}, True).json, ["a", "b"])

    def test_empty_chart_means_no_chart(self):
        result = Result.from_bundle({"image/png": "iVBOR", "text/plain": "<Figure>", CHART_MIME: {}}, False)
        self.assertIsNone(result.chart)
        self.assertEqual(result.formats(), ["text", "png"])
        self.assertEqual(result.extra, {})

    def test_unreadable_chart_is_dropped_and_logged(self):
        bad = {"type": "pie", "title": None, "elements": [{"label": "no angle"}]}
        with self.assertLogs("cellbox.models", level="WARNING"):
            result = Result.from_bundle({"image/png": "iVBOR", CHART_MIME: bad}, False)
        self.assertIsNone(result.chart)
        self.assertEqual(result.png, "iVBOR")

    def test_latex_only_display(self):
        result = Result.from_bundle({"text/latex": r"\text{CustomReprObject}"}, False)
        self.assertEqual(result.formats(), ["latex"])
        self.assertEqual(str(result), "Result(Formats: latex)")


class ResultTest(unittest.TestCase):
    def test_defaults(self):
        result = Result()
        for name in ("text", "html", "markdown", "svg", "png", "jpeg", "pdf", "latex", "json", "javascript", "data",
                     "chart", "extra"):
            self.assertIsNone(getattr(result, name), name)
        self.assertFalse(result.is_main_result)
        self.assertEqual(result.formats(), [])

    def test_formats_skip_falsy_values(self):
        result = Result(text="", html="<p/>", json={}, data={"a": [1]}, extra={"text/x": 1})
        self.assertEqual(result.formats(), ["html", "data", "text/x"])

    def test_chart_from_dict_or_object(self):
        self.assertIsInstance(Result(chart=BAR).chart, BarChart)
        chart = deserialize_chart(PIE)
        self.assertIs(Result(chart=chart).chart, chart)
        self.assertIsNone(Result(chart={}).chart)

    def test_unknown_keyword_arguments_are_ignored(self):
        result = Result(text="1", is_main_result=True, type="result", sparkline="▁▂▃", extra={})
        self.assertEqual(result.text, "1")
        self.assertFalse(hasattr(result, "sparkline"))
        self.assertFalse(hasattr(result, "type"))

    def test_wire_result_line(self):
        line = {"type": "result", "text": "1", "is_main_result": True, "extra": {}, "chart": SCATTER}
        obj = dict(line)
        del obj["type"]
        result = Result(**obj)
        self.assertIsInstance(result.chart, ScatterChart)
        self.assertEqual(result.formats(), ["text", "chart"])

    def test_repr_and_str(self):
        self.assertEqual(repr(Result(text="1")), "Result(1)")
        self.assertEqual(str(Result(text="1", png="x")), "Result(1)")
        self.assertEqual(repr(Result(png="x", chart=PIE, extra={"text/x": 1})), "Result(Formats: png, chart, text/x)")
        self.assertEqual(repr(Result()), "Result(Formats: )")

    def test_ipython_repr_methods(self):
        result = Result(html="h", markdown="m", svg="s", png="p", jpeg="j", pdf="d", latex="l", json={"k": 1},
                        javascript="js")
        self.assertEqual(result._repr_html_(), "h")
        self.assertEqual(result._repr_markdown_(), "m")
        self.assertEqual(result._repr_svg_(), "s")
        self.assertEqual(result._repr_png_(), "p")
        self.assertEqual(result._repr_jpeg_(), "j")
        self.assertEqual(result._repr_pdf_(), "d")
        self.assertEqual(result._repr_latex_(), "l")
        self.assertEqual(result._repr_json_(), {"k": 1})
        self.assertEqual(result._repr_javascript_(), "js")
        self.assertIsNone(Result()._repr_png_())

    def test_getitem(self):
        result = Result(text="t", png="p", extra={"text/x-thing": 3})
        self.assertEqual(result["text"], "t")
        self.assertEqual(result["png"], "p")
        self.assertIsNone(result["html"])
        self.assertEqual(result["text/x-thing"], 3)
        with self.assertRaises(KeyError):
            result["nope"]

    def test_equality(self):
        self.assertEqual(Result(text="a", chart=BAR), Result(text="a", chart=dict(BAR)))
        self.assertNotEqual(Result(text="a"), Result(text="b"))

    def test_mime_type_is_a_str(self):
        mime = MIMEType("text/html")
        self.assertIsInstance(mime, str)
        self.assertEqual(mime, "text/html")
        self.assertEqual(Result(extra={mime: "<p/>"})["text/html"], "<p/>")


class ExecutionTest(unittest.TestCase):
    def test_text_is_the_first_main_result(self):
        execution = Execution(results=[
            Result(text="<Figure>", png="p"),
            Result(text="2", is_main_result=True),
            Result(text="3", is_main_result=True),
        ])
        self.assertEqual(execution.text, "2")
        self.assertIsNone(Execution(results=[Result(text="display only")]).text)
        self.assertIsNone(Execution().text)

    def test_defaults_and_unknown_keywords(self):
        execution = Execution(duration_ms=12)
        self.assertEqual(execution.results, [])
        self.assertEqual((execution.logs.stdout, execution.logs.stderr), ([], []))
        self.assertIsNone(execution.error)
        self.assertIsNone(execution.execution_count)
        # Defaults are fresh objects: appending to one execution leaves others alone.
        execution.logs.stdout.append("x")
        execution.results.append(Result())
        self.assertEqual((Execution().logs.stdout, Execution().results), ([], []))

    def test_repr(self):
        execution = Execution(
            results=[Result(text="1", is_main_result=True)],
            logs=Logs(stdout=["hi\n"]),
            error=ExecutionError("NameError", "name 'x' is not defined", "tb"),
            execution_count=3,
        )
        self.assertEqual(
            repr(execution),
            "Execution(Results: [Result(1)], Logs: Logs(stdout: ['hi\\n'], stderr: []), "
            "Error: ExecutionError(name='NameError', value=\"name 'x' is not defined\", traceback='tb'))",
        )

    def test_to_json_nests_logs_and_error_as_strings(self):
        execution = Execution(
            results=[
                Result(text="<Figure>", png="iVBOR", chart=SCATTER),
                Result(text="3", is_main_result=True, extra={"application/vnd.custom+json": {"k": [1]}}),
                Result(latex="$x$"),
            ],
            logs=Logs(stdout=["a\n"], stderr=["b\n"]),
            error=ExecutionError("ValueError", "bad", "Traceback..."),
            execution_count=7,
        )
        data = json.loads(execution.to_json())
        self.assertEqual(set(data), {"results", "logs", "error"})
        self.assertEqual(json.loads(data["logs"]), {"stdout": ["a\n"], "stderr": ["b\n"]})
        self.assertEqual(json.loads(data["error"]), {"name": "ValueError", "value": "bad", "traceback": "Traceback..."})
        first, second, third = data["results"]
        self.assertEqual(first["chart"]["type"], "scatter")
        self.assertEqual(first["chart"], SCATTER)
        self.assertEqual(first["png"], "iVBOR")
        self.assertEqual(second, {"text": "3", "extra": {"application/vnd.custom+json": {"k": [1]}}})
        # `text` is always present, even when the result has none.
        self.assertEqual(third, {"latex": "$x$", "text": None})

    def test_to_json_without_error(self):
        data = json.loads(Execution().to_json())
        self.assertEqual(data, {"results": [], "logs": '{"stdout": [], "stderr": []}', "error": None})

    def test_results_round_trip_through_json(self):
        results = [
            Result(text="<Figure>", png="iVBOR", chart=BOX),
            Result(text="t", html="<p/>", json={"a": 1}, data={"a": [1, 2]}, extra={"text/x-custom": "v"}),
        ]
        data = json.loads(Execution(results=results).to_json())
        rebuilt = [Result(**item) for item in data["results"]]
        for original, copy in zip(results, rebuilt):
            self.assertEqual(copy.formats(), original.formats())
            self.assertEqual(copy, original)
        self.assertIsInstance(rebuilt[0].chart, BoxAndWhiskerChart)

    def test_logs_and_error_round_trip(self):
        logs = Logs(stdout=["1\n", "2"], stderr=["w\n"])
        self.assertEqual(Logs(**json.loads(logs.to_json())).stdout, ["1\n", "2"])
        self.assertEqual(repr(logs), "Logs(stdout: ['1\\n', '2'], stderr: ['w\\n'])")
        error = ExecutionError("NameError", "name 'x' is not defined", "Traceback...\nNameError")
        self.assertEqual(ExecutionError(**json.loads(error.to_json())), error)


class SmallModelsTest(unittest.TestCase):
    def test_output_message(self):
        message = OutputMessage("Hello\n", 1700000000000000000)
        self.assertEqual(str(message), "Hello\n")
        self.assertFalse(message.error)
        self.assertTrue(OutputMessage("oops\n", 0, True).error)
        self.assertEqual(OutputMessage(line="a", timestamp=1, error=False), OutputMessage("a", 1))

    def test_execution_error_tolerates_unknown_keywords(self):
        error = ExecutionError(name="E", value="v", traceback="t", type="error", ename="E")
        self.assertEqual((error.name, error.value, error.traceback), ("E", "v", "t"))

    def test_logs_tolerates_unknown_keywords(self):
        self.assertEqual(Logs(stdout=["x"], display=["y"]).stdout, ["x"])

    def test_context(self):
        context = Context("ctx-1", "python", "/home/user", kernel="python3")
        self.assertEqual((context.id, context.language, context.cwd), ("ctx-1", "python", "/home/user"))
        self.assertEqual(Context(context_id="ctx-1", language="python", cwd="/home/user"), context)
        wire = {"id": "ctx-2", "language": "javascript", "cwd": "/tmp", "created": 1}
        self.assertEqual(Context.from_json(wire), Context("ctx-2", "javascript", "/tmp"))
        self.assertEqual(repr(context), "Context(id='ctx-1', language='python', cwd='/home/user')")


class ExceptionsTest(unittest.TestCase):
    def test_sandbox_exception_family(self):
        for name in ("TimeoutException", "InvalidArgumentException", "NotEnoughSpaceException", "NotFoundException",
                     "GitUpstreamException", "TemplateException", "RateLimitException", "CommandExitException"):
            with self.subTest(name=name):
                self.assertTrue(issubclass(getattr(exceptions, name), exceptions.SandboxException))
        for name in ("FileNotFoundException", "SandboxNotFoundException", "VolumeNotFoundException",
                     "VolumePathNotFoundException"):
            with self.subTest(name=name):
                self.assertTrue(issubclass(getattr(exceptions, name), exceptions.NotFoundException))

    def test_classes_outside_sandbox_exception(self):
        pairs = [
            ("AuthenticationException", Exception),
            ("GitAuthException", exceptions.AuthenticationException),
            ("BuildException", Exception),
            ("FileUploadException", exceptions.BuildException),
            ("VolumeException", Exception),
            ("SecretException", Exception),
            ("SecretNotFoundException", exceptions.SecretException),
        ]
        for name, base in pairs:
            with self.subTest(name=name):
                cls = getattr(exceptions, name)
                self.assertTrue(issubclass(cls, base))
                self.assertFalse(issubclass(cls, exceptions.SandboxException))

    def test_every_exception_has_a_docstring(self):
        for name in exceptions.__all__:
            with self.subTest(name=name):
                self.assertTrue((getattr(exceptions, name).__doc__ or "").strip())

    def test_command_exit_exception(self):
        error = exceptions.CommandExitException("boom\n", "partial", 2, "exit status 2")
        self.assertEqual((error.stderr, error.stdout, error.exit_code, error.error),
                         ("boom\n", "partial", 2, "exit status 2"))
        self.assertIn("2", str(error))
        self.assertIn("boom", str(error))
        copy = pickle.loads(pickle.dumps(error))
        self.assertEqual((copy.stderr, copy.exit_code), ("boom\n", 2))
        with self.assertRaises(exceptions.SandboxException):
            raise error
        # Exceptions stay hashable (logging and traceback machinery may rely on it).
        hash(error)

    def test_timeout_messages(self):
        killed = exceptions.format_sandbox_killed_error()
        self.assertIsInstance(killed, exceptions.TimeoutException)
        self.assertRegex(str(killed), "sandbox was killed while the request was in progress")
        self.assertIn("'timeout'", str(exceptions.format_execution_timeout_error()))
        self.assertIn("'request_timeout'", str(exceptions.format_request_timeout_error()))


class ModuleSurfaceTest(unittest.TestCase):
    def test_all_names_exist(self):
        for module in (models, charts, exceptions):
            for name in module.__all__:
                with self.subTest(module=module.__name__, name=name):
                    self.assertTrue(hasattr(module, name))

    def test_models_export_the_e2b_names(self):
        expected = {"Context", "Execution", "ExecutionError", "Result", "MIMEType", "Logs", "OutputHandler",
                    "OutputMessage", "RunCodeLanguage"}
        self.assertLessEqual(expected, set(models.__all__))

    def test_modules_import_only_the_standard_library(self):
        third_party = {"matplotlib", "pandas", "numpy", "pydantic", "attrs", "httpx", "e2b", "e2b_code_interpreter"}
        for module in (models, charts, exceptions):
            with open(module.__file__, encoding="utf-8") as source:
                tree = ast.parse(source.read())
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    roots = [alias.name.split(".")[0] for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and not node.level:
                    roots = [(node.module or "").split(".")[0]]
                else:
                    continue
                with self.subTest(module=module.__name__, imports=roots):
                    self.assertFalse(third_party & set(roots))


if __name__ == "__main__":
    unittest.main()
