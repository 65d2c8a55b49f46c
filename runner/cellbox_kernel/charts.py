"""The data behind a matplotlib figure, as a JSON object (`chart_data`).

A shown figure carries it under the MIME type `application/vnd.cellbox.chart+json`
(mpl.py adds it), so a client can read the plotted values without decoding the
image. The shape is the one E2B's Code Interpreter gives `result.chart`:

    {"type": "line" | "scatter" | "bar" | "pie" | "box_and_whisker" | "superchart" | "unknown",
     "title": str | None, "elements": [...],
     # every kind but pie, superchart and unknown:
     "x_label", "y_label", "x_unit", "y_unit": str | None,
     # line and scatter only:
     "x_ticks", "x_tick_labels", "x_scale", "y_ticks", "y_tick_labels", "y_scale"}

The kind of an axes is read from the artists on it: only lines is a line
chart; boxes (path patches) and lines a box plot; point collections a scatter
chart; wedges a pie; rectangles a bar chart; anything else is "unknown", with
a title and no elements. A figure of several axes is a "superchart" whose
elements are the charts of its axes; a figure with no data has no chart.

matplotlib is only imported inside the functions: this module is loaded once a
figure is shown, when the user has imported matplotlib already.
"""
import math
import re
import warnings

from . import wire

MIME = wire.CHART_MIME

# The unit in an axis label: "Time (s)" -> "s", "Length [m]" -> "m".
_UNIT = re.compile(r"\s\((.*?)\)|\[(.*?)\]")
# matplotlib's names for artists the user did not label.
_UNLABELLED_LINE = re.compile(r"_child(\d+)$")
_UNLABELLED_GROUP = re.compile(r"_container(\d+)$")
_NO_LINE = ("None", "none", "", " ")


def chart_data(figure):
    """The chart of a matplotlib figure as a JSON-ready dict, or None when the
    figure has no data or cannot be read. Never raises."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # deprecations of the matplotlib in use are not the user's business
            return _figure_chart(figure)
    except Exception:
        return None


def _figure_chart(figure):
    axes = list(figure.get_axes())
    if not any(ax.has_data() for ax in axes):
        return None
    if len(axes) == 1:
        return _axes_chart(axes[0])
    return {"type": "superchart", "title": _text(_suptitle(figure)), "elements": [_axes_chart(ax) for ax in axes]}


def _suptitle(figure):
    get = getattr(figure, "get_suptitle", None)  # matplotlib 3.8+
    if get is not None:
        return get()
    title = getattr(figure, "_suptitle", None)
    return title.get_text() if title is not None else None


def _axes_chart(ax):
    kind = _chart_type(ax)
    if kind == "line":
        return _point_chart("line", ax, _line_elements(ax))
    if kind == "scatter":
        return _point_chart("scatter", ax, _scatter_elements(ax))
    if kind == "bar":
        return _bar_chart(ax)
    if kind == "pie":
        return {"type": "pie", "title": _text(ax.get_title()), "elements": _pie_elements(ax)}
    if kind == "box_and_whisker":
        return _box_chart(ax)
    return {"type": "unknown", "title": _text(ax.get_title()), "elements": []}


# -- classification ----------------------------------------------------------


def _chart_type(ax):
    from matplotlib.collections import PathCollection
    from matplotlib.lines import Line2D
    from matplotlib.patches import PathPatch, Rectangle, Wedge
    from matplotlib.text import Text

    artists = [artist for artist in _children(ax) if not isinstance(artist, Text)]
    if _all_of(artists, Line2D):
        return "line"
    if _all_of(artists, (PathPatch, Line2D)):
        return "box_and_whisker"
    # axhline/axvline and the like do not make a scatter, pie or bar chart something else.
    artists = [artist for artist in artists if not (isinstance(artist, Line2D) and _is_rule(artist))]
    if _all_of(artists, PathCollection):
        return "scatter"
    if _all_of(artists, Wedge):
        return "pie"
    if _all_of(artists, Rectangle):
        return "bar"
    return "unknown"


def _children(ax):
    children = getattr(ax, "_children", None)  # matplotlib 3.5+: every artist added, in order
    if children is not None:
        return list(children)
    groups = ("lines", "collections", "patches", "images", "artists", "texts")
    return [artist for name in groups for artist in getattr(ax, name, ())]


def _all_of(artists, kinds):
    return all(isinstance(artist, kinds) for artist in artists)


def _is_rule(line):
    """A straight horizontal or vertical line of two points (a grid or reference line)."""
    xs, ys = line.get_xdata(), line.get_ydata()
    if len(xs) != 2 or len(ys) != 2:
        return False
    return bool(xs[0] == xs[1] or ys[0] == ys[1])


# -- fields every 2-D chart has ----------------------------------------------


def _text(value):
    """A title or label: "" (matplotlib's "none") becomes None."""
    if value is None:
        return None
    value = str(value)
    return value or None


def _unit(label):
    match = _UNIT.search(label) if label else None
    if match is None:
        return None
    return match.group(1) or match.group(2) or None


def _chart_2d(kind, ax, elements, swapped=False):
    """type, title, elements, and the axis labels with their units; `swapped`
    reports the y axis as x (horizontal bars and boxes: x is the category axis)."""
    x_label, y_label = _text(ax.get_xlabel()), _text(ax.get_ylabel())
    if swapped:
        x_label, y_label = y_label, x_label
    return {
        "type": kind,
        "title": _text(ax.get_title()),
        "elements": elements,
        "x_label": x_label,
        "y_label": y_label,
        "x_unit": _unit(x_label),
        "y_unit": _unit(y_label),
    }


# -- line and scatter charts -------------------------------------------------


def _point_chart(kind, ax, elements):
    chart = _chart_2d(kind, ax, elements)
    for name, axis in (("x", ax.xaxis), ("y", ax.yaxis)):
        ticks, labels = _ticks(axis)
        chart[name + "_ticks"] = _axis_values(axis, ticks)
        chart[name + "_tick_labels"] = labels
        chart[name + "_scale"] = _scale(axis, ticks, labels)
    return chart


def _ticks(axis):
    """(positions, label texts) of the major ticks inside the axis's limits:
    the locator also places one beyond each end, which is never drawn."""
    low, high = sorted(float(limit) for limit in axis.get_view_interval())
    slack = 1e-6 * (high - low)
    pairs = [(float(tick), label.get_text()) for tick, label in zip(axis.get_ticklocs(), axis.get_ticklabels())]
    shown = [(tick, label) for tick, label in pairs if low - slack <= tick <= high + slack]
    return [tick for tick, _ in shown], [label for _, label in shown]


def _scale(axis, ticks, labels):
    if _is_date_axis(axis):
        return "datetime"
    scale = axis.get_scale()
    if scale != "linear":
        return scale  # log, symlog, logit, function, functionlog, asinh or a custom name
    if _is_category_axis(axis) or _looks_categorical(ticks, labels):
        return "categorical"
    return "linear"


def _looks_categorical(ticks, labels):
    """Ticks at 0, 1, ..., n-1 whose labels are not those numbers: the
    positions matplotlib gives string values."""
    pairs = list(zip(ticks, labels))
    return bool(pairs) and all(tick == index and label != str(index) for index, (tick, label) in enumerate(pairs))


def _converter(axis):
    get = getattr(axis, "get_converter", None)  # matplotlib 3.10+; `.converter` is deprecated there
    return get() if get is not None else getattr(axis, "converter", None)


def _is_date_axis(axis):
    from matplotlib import dates

    names = ("_SwitchableDateConverter", "DateConverter", "ConciseDateConverter")
    kinds = tuple(kind for kind in (getattr(dates, name, None) for name in names) if isinstance(kind, type))
    return isinstance(_converter(axis), kinds)


def _is_category_axis(axis):
    from matplotlib import category

    kind = getattr(category, "StrCategoryConverter", None)
    return isinstance(kind, type) and isinstance(_converter(axis), kind)


def _axis_values(axis, numbers):
    """Positions on an axis: ISO-8601 strings on a date axis, else floats."""
    if not _is_date_axis(axis):
        return _values(numbers)
    from matplotlib.dates import num2date

    return [num2date(number).isoformat() if _finite(number) else None for number in _values(numbers)]


def _line_elements(ax):
    elements = []
    for line in ax.get_lines():
        if _is_rule(line):
            continue
        label = str(line.get_label())
        unlabelled = _UNLABELLED_LINE.match(label)
        if unlabelled:
            label = "Line %d" % int(unlabelled.group(1))
        points = _pairs(_values(line.get_xdata()), _values(line.get_ydata()))
        elements.append({"label": label, "points": points})
    return elements


def _scatter_elements(ax):
    import numpy

    elements = []
    for collection in ax.collections:
        offsets = numpy.asarray(collection.get_offsets(), dtype=float).reshape(-1, 2)
        xs = _axis_values(ax.xaxis, offsets[:, 0])
        ys = _axis_values(ax.yaxis, offsets[:, 1])
        elements.append({"label": str(collection.get_label()), "points": _pairs(xs, ys)})
    return elements


def _pairs(xs, ys):
    return [[x, y] for x, y in zip(xs, ys)]


# -- bar charts --------------------------------------------------------------


def _bar_chart(ax):
    containers = [container for container in ax.containers if hasattr(container, "patches")]
    horizontal = bool(containers) and _is_horizontal(containers[0])
    chart = _chart_2d("bar", ax, [], swapped=horizontal)
    position_axis = ax.yaxis if horizontal else ax.xaxis
    for container in containers:
        group = str(container.get_label())
        unlabelled = _UNLABELLED_GROUP.match(group)
        if unlabelled:
            group = "Group %d" % int(unlabelled.group(1))
        bars = list(container.patches)
        if horizontal:
            spans = [(bar.get_y(), bar.get_y() + bar.get_height()) for bar in bars]
            values = [bar.get_width() for bar in bars]
        else:
            spans = [(bar.get_x(), bar.get_x() + bar.get_width()) for bar in bars]
            values = [bar.get_height() for bar in bars]
        labels = _position_labels(position_axis, spans)
        for label, value in zip(labels, _values(values)):
            chart["elements"].append({"label": label, "group": group, "value": value})
    return chart


def _is_horizontal(container):
    orientation = getattr(container, "orientation", None)  # BarContainer knows it (matplotlib 3.4+)
    if orientation in ("horizontal", "vertical"):
        return orientation == "horizontal"
    heights = [bar.get_height() for bar in container.patches]
    return all(height == heights[0] for height in heights)


def _position_labels(axis, spans):
    """The category label of each bar or box, given its (start, end) along
    `axis`: the tick labels when there is one tick per item (categories,
    grouped bars), else the label of a tick inside the item, else its centre."""
    ticks, labels = _ticks(axis)
    if len(labels) == len(spans):
        return labels
    return [_label_within(axis, ticks, labels, start, end) for start, end in spans]


def _label_within(axis, ticks, labels, start, end):
    low, high = min(start, end), max(start, end)
    centre = (low + high) / 2
    slack = 1e-9 * max(1.0, abs(low), abs(high))
    inside = [(abs(tick - centre), label) for tick, label in zip(ticks, labels) if low - slack <= tick <= high + slack]
    if inside:
        return min(inside, key=lambda pair: pair[0])[1]
    value = _axis_values(axis, [centre])[0]
    return value if isinstance(value, str) else "%g" % centre


# -- pie charts --------------------------------------------------------------


def _pie_elements(ax):
    from matplotlib.patches import Wedge

    elements = []
    for wedge in ax.patches:
        if isinstance(wedge, Wedge):
            angle = _round(abs(float(wedge.theta2) - float(wedge.theta1)))
            elements.append({"label": str(wedge.get_label()), "angle": angle, "radius": _number(wedge.r)})
    return elements


# -- box-and-whisker charts --------------------------------------------------


def _box_chart(ax):
    """Boxes as matplotlib's boxplot(patch_artist=True) draws them: a path
    patch from the first to the third quartile, a line across it at the
    median, whiskers from its ends to the extremes (with caps), and marker-only
    lines for the outliers. Read along `position` (the category axis) and
    `value` (the other one)."""
    from matplotlib.patches import PathPatch

    patches = [patch for patch in ax.patches if isinstance(patch, PathPatch)]
    extents = [_extent(patch) for patch in patches]
    vertical = _boxes_are_vertical(ax, extents)
    boxes = []
    for (x0, x1, y0, y1) in extents:
        low, high, q1, q3 = (x0, x1, y0, y1) if vertical else (y0, y1, x0, x1)
        boxes.append({"low": low, "high": high, "q1": q1, "q3": q3, "median": None, "median_width": 0.0, "outliers": []})
    _read_box_lines(ax, boxes, vertical)
    labels = _position_labels(ax.xaxis if vertical else ax.yaxis, [(box["low"], box["high"]) for box in boxes])
    elements = [_box_element(label, box) for label, box in zip(labels, boxes)]
    return _chart_2d("box_and_whisker", ax, elements, swapped=not vertical)


def _extent(patch):
    vertices = patch.get_path().vertices
    xs, ys = vertices[:, 0], vertices[:, 1]
    return float(xs.min()), float(xs.max()), float(ys.min()), float(ys.max())


def _boxes_are_vertical(ax, extents):
    """Vertical boxes share a width, horizontal ones a height; one box (or no
    difference) is decided by the axis boxplot() gave fixed ticks to."""
    if len(extents) > 1:
        same_width = _all_close([x1 - x0 for x0, x1, _, _ in extents])
        same_height = _all_close([y1 - y0 for _, _, y0, y1 in extents])
        if same_width != same_height:
            return same_width
    from matplotlib.ticker import FixedLocator

    return isinstance(ax.xaxis.get_major_locator(), FixedLocator) or not isinstance(
        ax.yaxis.get_major_locator(), FixedLocator
    )


def _read_box_lines(ax, boxes, vertical):
    markers = []
    for line in ax.get_lines():
        try:
            xs, ys = _floats(line.get_xdata()), _floats(line.get_ydata())
        except (TypeError, ValueError):
            continue
        positions, values = (xs, ys) if vertical else (ys, xs)
        if line.get_linestyle() in _NO_LINE:
            markers.extend(zip(positions, values))
        elif len(positions) == 2 and len(values) == 2:
            _read_segment(boxes, positions, values)
    for box in boxes:  # no whisker: it ends at the box
        box.setdefault("min", box["q1"])
        box.setdefault("max", box["q3"])
    # Outliers lie beyond the whiskers; a marker within them is a mean.
    for position, value in markers:
        box = _box_at(boxes, position)
        if box is not None and not (box["min"] <= value <= box["max"]):
            box["outliers"].append(value)


def _read_segment(boxes, positions, values):
    if _close(positions[0], positions[1]):  # along the values: a whisker
        box = _box_at(boxes, positions[0])
        if box is None:
            return
        low, high = min(values), max(values)
        if _close(high, box["q1"]):
            box["min"] = low
        elif _close(low, box["q3"]):
            box["max"] = high
    elif _close(values[0], values[1]):  # across a box: the median (the widest such line) or a cap
        box = _box_at(boxes, (positions[0] + positions[1]) / 2)
        value, width = values[0], abs(positions[1] - positions[0])
        inside = box is not None and box["q1"] - _slack(value) <= value <= box["q3"] + _slack(value)
        if inside and (box["median"] is None or width > box["median_width"] + _slack(width)):
            box["median"], box["median_width"] = value, width


def _box_at(boxes, position):
    for box in boxes:
        if box["low"] - _slack(position) <= position <= box["high"] + _slack(position):
            return box
    return None


def _box_element(label, box):
    return {
        "label": label,
        "min": _round(box["min"]),
        "first_quartile": _round(box["q1"]),
        "median": _round(box["median"]),
        "third_quartile": _round(box["q3"]),
        "max": _round(box["max"]),
        "outliers": [_round(value) for value in box["outliers"]],
    }


# -- numbers -----------------------------------------------------------------


def _values(data):
    """Plotted values as JSON: numbers as floats (None for NaN and
    infinities), dates and numpy datetime64 as ISO-8601 strings, strings
    (categories) as they are."""
    import numpy

    try:
        array = numpy.asarray(data)
    except Exception:
        return [_value(item) for item in data]
    if array.dtype.kind in "biuf":
        array = array.astype(float).ravel()
        if numpy.isfinite(array).all():
            return array.tolist()
        return [_number(item) for item in array.tolist()]
    if array.dtype.kind == "M":
        return [None if text == "NaT" else text for text in array.astype("datetime64[s]").astype(str).ravel().tolist()]
    return [_value(item) for item in array.ravel().tolist()]


def _value(item):
    import datetime

    if isinstance(item, str):
        return item
    if isinstance(item, datetime.date):  # datetime, and pandas' Timestamp, are dates too
        return item.isoformat()
    if type(item).__name__ == "datetime64":
        return _values([item])[0]
    try:
        return _number(item)
    except (TypeError, ValueError):
        return str(item)


def _number(value):
    value = float(value)
    return value if _finite(value) else None


def _finite(value):
    return isinstance(value, float) and not math.isnan(value) and not math.isinf(value)


def _floats(data):
    import numpy

    return numpy.asarray(data, dtype=float).ravel().tolist()


def _round(value):
    """8 significant digits: box and pie values computed by matplotlib
    (quartiles, wedge angles) without their floating-point noise."""
    if value is None:
        return None
    value = float(value)
    return float("%.8g" % value) if _finite(value) else None


def _slack(value):
    return 1e-9 * max(1.0, abs(value))


def _close(a, b):
    return abs(a - b) <= _slack(max(abs(a), abs(b)))


def _all_close(values):
    return all(_close(value, values[0]) for value in values)
