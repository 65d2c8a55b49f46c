"""Chart data that a cell's matplotlib figures carry, as typed Python objects.

E2B's Code Interpreter SDK hands users `result.chart`: the data behind a
figure (lines, bars, pie wedges, box plots) so that an agent or a front end
can redraw or reason about a plot without decoding its PNG. Code written
against `e2b_code_interpreter.charts` must work against `cellbox.charts`
unchanged, so the class names, attribute names and enum values here follow
that SDK. The kernel side sends each chart as a JSON object under the MIME
type `application/vnd.cellbox.chart+json`; `deserialize_chart` turns such an
object into the matching class.

Construction is lenient on purpose: a newer kernel may add keys or chart
kinds that this SDK does not know yet, and a user's `run_code` call must not
fail because of that. Unknown keys are kept in `to_dict()` and otherwise
ignored; an unknown chart kind becomes a plain `Chart` of type UNKNOWN.
"""

import enum
from typing import (
    Any,
    Dict,
    Iterable,
    List,
    Mapping,
    Optional,
    Sequence,
    Tuple,
    Type,
    Union,
)

__all__ = [
    "ChartType",
    "ScaleType",
    "Chart",
    "Chart2D",
    "PointData",
    "PointChart",
    "LineChart",
    "ScatterChart",
    "BarData",
    "BarChart",
    "PieData",
    "PieChart",
    "BoxAndWhiskerData",
    "BoxAndWhiskerChart",
    "SuperChart",
    "ChartTypes",
    "deserialize_chart",
]


class ChartType(str, enum.Enum):
    """The kind of a chart, as named in the chart JSON's `type` key."""

    LINE = "line"
    SCATTER = "scatter"
    BAR = "bar"
    PIE = "pie"
    BOX_AND_WHISKER = "box_and_whisker"
    SUPERCHART = "superchart"
    UNKNOWN = "unknown"


class ScaleType(str, enum.Enum):
    """How an axis maps values to positions (matplotlib's scale names, plus
    `datetime` and `categorical`, which the extractor infers from the ticks)."""

    LINEAR = "linear"
    DATETIME = "datetime"
    CATEGORICAL = "categorical"
    LOG = "log"
    SYMLOG = "symlog"
    LOGIT = "logit"
    FUNCTION = "function"
    FUNCTIONLOG = "functionlog"
    ASINH = "asinh"
    UNKNOWN = "unknown"


# A tick or a point coordinate: a float, or an ISO-8601 string on a datetime axis.
Coordinate = Union[str, float]


def _scale(value: Any) -> ScaleType:
    # Custom matplotlib scales have names of their own; they must not make
    # the whole chart unreadable.
    try:
        return ScaleType(value)
    except ValueError:
        return ScaleType.UNKNOWN


def _list(value: Any) -> List[Any]:
    return list(value) if value else []


class Chart:
    """Data extracted from a figure's axes; the base of every chart class.

    `type`, `title` and `elements` are always set. A chart whose kind this SDK
    does not know is a `Chart` with type UNKNOWN and its raw elements.
    """

    # Each subclass names its kind here, so a chart built without a `type`
    # key still reports the right one.
    type: ChartType = ChartType.UNKNOWN
    title: Optional[str]
    elements: List[Any]

    def __init__(self, **kwargs: Any) -> None:
        self._raw_data: Dict[str, Any] = kwargs
        self.type = self._chart_type(kwargs.get("type"))
        self.title = kwargs.get("title")
        self.elements = _list(kwargs.get("elements"))

    def _chart_type(self, value: Any) -> ChartType:
        if not value:
            return type(self).type
        try:
            return ChartType(value)
        except ValueError:
            return ChartType.UNKNOWN

    def to_dict(self) -> Dict[str, Any]:
        """The JSON object this chart was built from, unknown keys included."""
        return self._raw_data

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Chart):
            return NotImplemented
        return type(self) is type(other) and self._raw_data == other._raw_data

    # Charts compare by content and hold mutable lists, so they are unhashable.
    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"{type(self).__name__}(type={self.type.value!r}, title={self.title!r}, elements={self.elements!r})"


class Chart2D(Chart):
    """A chart drawn on an x/y plane, with axis labels and the units found in them."""

    x_label: Optional[str]
    y_label: Optional[str]
    x_unit: Optional[str]
    y_unit: Optional[str]

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.x_label = kwargs.get("x_label")
        self.y_label = kwargs.get("y_label")
        self.x_unit = kwargs.get("x_unit")
        self.y_unit = kwargs.get("y_unit")


class PointData:
    """One labelled series of a line or scatter chart."""

    label: str
    points: List[Tuple[Coordinate, Coordinate]]

    def __init__(self, label: str, points: Iterable[Sequence[Coordinate]], **kwargs: Any) -> None:
        self.label = label
        # JSON has no tuples; users index points as (x, y) pairs.
        self.points = [(x, y) for x, y in points]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PointData):
            return NotImplemented
        return (self.label, self.points) == (other.label, other.points)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"PointData(label={self.label!r}, points={self.points!r})"


class PointChart(Chart2D):
    """A chart of (x, y) points with ticks and scales on both axes."""

    x_ticks: List[Coordinate]
    x_tick_labels: List[str]
    x_scale: ScaleType

    y_ticks: List[Coordinate]
    y_tick_labels: List[str]
    y_scale: ScaleType

    elements: List[PointData]

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.x_ticks = _list(kwargs.get("x_ticks"))
        self.x_tick_labels = _list(kwargs.get("x_tick_labels"))
        self.x_scale = _scale(kwargs.get("x_scale"))
        self.y_ticks = _list(kwargs.get("y_ticks"))
        self.y_tick_labels = _list(kwargs.get("y_tick_labels"))
        self.y_scale = _scale(kwargs.get("y_scale"))
        self.elements = [PointData(**d) for d in _list(kwargs.get("elements"))]


class LineChart(PointChart):
    """Lines drawn with `plot()`: one `PointData` per line."""

    type = ChartType.LINE


class ScatterChart(PointChart):
    """Markers drawn with `scatter()`: one `PointData` per call."""

    type = ChartType.SCATTER


class BarData:
    """One bar: its tick label, the legend group it belongs to, and its length."""

    label: str
    group: str
    # E2B annotates this as str, but the wire carries a number.
    value: float

    def __init__(self, label: str, group: str, value: float, **kwargs: Any) -> None:
        self.label = label
        self.group = group
        self.value = value

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, BarData):
            return NotImplemented
        return (self.label, self.group, self.value) == (other.label, other.group, other.value)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"BarData(label={self.label!r}, group={self.group!r}, value={self.value!r})"


class BarChart(Chart2D):
    """Bars drawn with `bar()` or `barh()`; horizontal bars arrive with the axes swapped back."""

    type = ChartType.BAR
    elements: List[BarData]

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.elements = [BarData(**d) for d in _list(kwargs.get("elements"))]


class PieData:
    """One wedge: its label, its angle in degrees and its radius."""

    label: str
    angle: float
    radius: float

    def __init__(self, label: str, angle: float, radius: float, **kwargs: Any) -> None:
        self.label = label
        self.angle = angle
        self.radius = radius

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PieData):
            return NotImplemented
        return (self.label, self.angle, self.radius) == (other.label, other.angle, other.radius)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"PieData(label={self.label!r}, angle={self.angle!r}, radius={self.radius!r})"


class PieChart(Chart):
    """Wedges drawn with `pie()`; a pie has no x/y axes, hence no labels or units."""

    type = ChartType.PIE
    elements: List[PieData]

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.elements = [PieData(**d) for d in _list(kwargs.get("elements"))]


class BoxAndWhiskerData:
    """One box of a box plot: the five-number summary and the points beyond the whiskers."""

    label: str
    min: float
    first_quartile: float
    median: float
    third_quartile: float
    max: float
    outliers: List[float]

    def __init__(
        self,
        label: str,
        min: float,
        first_quartile: float,
        median: float,
        third_quartile: float,
        max: float,
        outliers: Optional[Iterable[float]] = None,
        **kwargs: Any
    ) -> None:
        self.label = label
        self.min = min
        self.first_quartile = first_quartile
        self.median = median
        self.third_quartile = third_quartile
        self.max = max
        # A box without outliers may omit the key or send null.
        self.outliers = _list(outliers)

    def _key(self) -> Tuple[Any, ...]:
        return (
            self.label,
            self.min,
            self.first_quartile,
            self.median,
            self.third_quartile,
            self.max,
            self.outliers,
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, BoxAndWhiskerData):
            return NotImplemented
        return self._key() == other._key()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (
            "BoxAndWhiskerData(label={!r}, min={!r}, first_quartile={!r}, median={!r}, "
            "third_quartile={!r}, max={!r}, outliers={!r})".format(*self._key())
        )


class BoxAndWhiskerChart(Chart2D):
    """Boxes drawn with `boxplot()`: one `BoxAndWhiskerData` per box."""

    type = ChartType.BOX_AND_WHISKER
    elements: List[BoxAndWhiskerData]

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.elements = [BoxAndWhiskerData(**d) for d in _list(kwargs.get("elements"))]


class SuperChart(Chart):
    """A figure with several axes: `title` is the figure's suptitle and each
    element is the chart of one axes, in the figure's order."""

    type = ChartType.SUPERCHART
    elements: List[Chart]

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        elements = []
        for data in _list(kwargs.get("elements")):
            chart = deserialize_chart(data)
            # Every axes of a multi-axes figure is sent as a chart, at worst an
            # UNKNOWN one, so an empty entry is malformed data: skip it rather
            # than put None in a list of charts.
            if chart is not None:
                elements.append(chart)
        self.elements = elements


ChartTypes = Union[LineChart, ScatterChart, BarChart, PieChart, BoxAndWhiskerChart, SuperChart]
"""Every chart class with a known kind (a plain `Chart` is the UNKNOWN kind)."""

_CLASSES: Dict[str, Type[Chart]] = {
    ChartType.LINE.value: LineChart,
    ChartType.SCATTER.value: ScatterChart,
    ChartType.BAR.value: BarChart,
    ChartType.PIE.value: PieChart,
    ChartType.BOX_AND_WHISKER.value: BoxAndWhiskerChart,
    ChartType.SUPERCHART.value: SuperChart,
}


def deserialize_chart(data: Optional[Mapping[str, Any]]) -> Optional[Chart]:
    """Build the chart class that `data["type"]` names.

    Returns None for None or an empty object, which is how the kernel says
    that a figure had nothing to extract. An unknown or missing type gives a
    plain `Chart`. Raises TypeError or ValueError when a known kind's elements
    lack a required key; `Result` catches that and leaves `chart` unset.
    """
    if not data:
        return None
    kind = data.get("type")
    # Enum members hash by name, not by value, so a ChartType must be turned
    # into its value before it can index the table.
    if isinstance(kind, ChartType):
        kind = kind.value
    cls = _CLASSES.get(kind, Chart) if isinstance(kind, str) else Chart
    return cls(**data)


# E2B's private name for the same function; kept for code that reached for it.
_deserialize_chart = deserialize_chart
