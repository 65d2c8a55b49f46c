"""What `Sandbox.run_code` and the code-context methods return.

These classes exist so that code written for E2B's Code Interpreter SDK
(`from e2b_code_interpreter import Execution, Result, ...`) keeps working
when it imports from `cellbox` instead: the names, constructor signatures,
attributes, `repr`s and `to_json()` output follow that SDK. Constructors
accept and ignore unknown keyword arguments, because results are built from
wire data and a newer engine may send keys this SDK does not know.

One thing differs in where the work happens. E2B's in-sandbox server turns
each Jupyter MIME bundle into result fields before the client sees it;
cellbox's transport hands over the raw bundle, so `Result.from_bundle` does
that mapping here, including the quote stripping of `text/plain` that E2B
users observe.
"""

import json as _json
import logging
from dataclasses import dataclass, field
from typing import (
    Any,
    Awaitable,
    Callable,
    Dict,
    List,
    Literal,
    Mapping,
    Optional,
    TypeVar,
    Union,
)

from .charts import Chart, deserialize_chart

__all__ = [
    "OutputMessage",
    "ExecutionError",
    "MIMEType",
    "Result",
    "Logs",
    "Execution",
    "Context",
    "OutputHandler",
    "RunCodeLanguage",
]

logger = logging.getLogger(__name__)

T = TypeVar("T")

OutputHandler = Callable[[T], Any]
"""A streaming callback of `run_code` (`on_stdout`, `on_result`, ...)."""

OutputHandlerWithAsync = Union[Callable[[T], Any], Callable[[T], Awaitable[Any]]]
"""A streaming callback of `AsyncSandbox.run_code`: sync, or a coroutine function that is awaited in turn."""

RunCodeLanguage = Union[Literal["python", "javascript", "typescript", "r", "java", "bash"], str]
"""A `language=` value of `run_code`; the literals are what editors offer, any string is accepted."""

# Jupyter MIME types with a dedicated `Result` attribute, in bundle terms.
_MIME_FIELDS = {
    "text/plain": "text",
    "text/html": "html",
    "text/markdown": "markdown",
    "image/svg+xml": "svg",
    "image/png": "png",
    "image/jpeg": "jpeg",
    "application/pdf": "pdf",
    "text/latex": "latex",
    "application/json": "json",
    "application/javascript": "javascript",
    "application/vnd.cellbox.data+json": "data",
    "application/vnd.cellbox.chart+json": "chart",
}

# The order of `Result.formats()`, which users and E2B's tests compare as lists.
_FORMATS = (
    "text",
    "html",
    "markdown",
    "svg",
    "png",
    "jpeg",
    "pdf",
    "latex",
    "json",
    "javascript",
    "data",
    "chart",
)


@dataclass
class OutputMessage:
    """One chunk of stdout or stderr, as passed to `on_stdout` / `on_stderr`."""

    line: str
    """The chunk as the kernel streamed it, newline included; not necessarily one line."""
    timestamp: int
    """When the chunk was produced, in nanoseconds since the Unix epoch."""
    error: bool = False
    """True for stderr, False for stdout."""

    def __str__(self) -> str:
        return self.line


@dataclass(init=False)
class ExecutionError:
    """The error that ended a cell: an exception in user code, or an engine-side
    failure such as an interrupted or aborted execution."""

    name: str
    """The error's class name, e.g. `NameError`."""
    value: str
    """The error's message, e.g. `name 'x' is not defined`."""
    traceback: str
    """The whole traceback as one string, without ANSI colour codes."""

    def __init__(self, name: str, value: str, traceback: str, **kwargs: Any) -> None:
        self.name = name
        self.value = value
        self.traceback = traceback

    def to_json(self) -> str:
        """This error as a JSON object with `name`, `value` and `traceback`."""
        return _json.dumps({"name": self.name, "value": self.value, "traceback": self.traceback})


class MIMEType(str):
    """A MIME type name, such as `text/html`; a plain string, typed for readability."""


def _strip_repr_quotes(text: str) -> str:
    # A cell ending in a string shows its repr, 'like this'. E2B drops that one
    # pair of quotes, so `os.getenv('FOO')` reads as `bar`; R's `[1] "bar"` is
    # left alone because it does not start with a quote.
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text


def _joined(value: Any) -> Any:
    # nbformat stores multi-line text as a list of lines; the wire sends a str.
    # Accept both so a bundle read from a notebook file maps the same way.
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return "".join(value)
    return value


@dataclass(init=False)
class Result:
    """One rich output of a cell: the value of its last expression
    (`is_main_result`) or a `display()` call such as a `plt.show()` figure.

    Each attribute holds one representation of the same output; `formats()`
    lists those present. Representations with no attribute of their own are
    in `extra`, keyed by MIME type.
    """

    text: Optional[str] = None
    """`text/plain`, without the quotes of a string's repr."""
    html: Optional[str] = None
    markdown: Optional[str] = None
    svg: Optional[str] = None
    png: Optional[str] = None
    """Base64-encoded PNG bytes."""
    jpeg: Optional[str] = None
    """Base64-encoded JPEG bytes."""
    pdf: Optional[str] = None
    latex: Optional[str] = None
    json: Any = None
    """`application/json`: a decoded JSON value, usually a dict."""
    javascript: Optional[str] = None
    data: Optional[Dict[str, Any]] = None
    """A pandas DataFrame as columns: `{"column": [values...]}`."""
    chart: Optional[Chart] = None
    """The data behind a matplotlib figure, see `cellbox.charts`."""
    is_main_result: bool = False
    """True for the cell's last-expression value, False for `display()` output."""
    extra: Optional[Dict[str, Any]] = None
    """Representations without an attribute of their own, keyed by MIME type."""

    def __init__(
        self,
        text: Optional[str] = None,
        html: Optional[str] = None,
        markdown: Optional[str] = None,
        svg: Optional[str] = None,
        png: Optional[str] = None,
        jpeg: Optional[str] = None,
        pdf: Optional[str] = None,
        latex: Optional[str] = None,
        json: Any = None,
        javascript: Optional[str] = None,
        data: Optional[Dict[str, Any]] = None,
        chart: Union[Chart, Mapping[str, Any], None] = None,
        is_main_result: bool = False,
        extra: Optional[Dict[str, Any]] = None,
        **kwargs: Any
    ) -> None:
        self.text = text
        self.html = html
        self.markdown = markdown
        self.svg = svg
        self.png = png
        self.jpeg = jpeg
        self.pdf = pdf
        self.latex = latex
        self.json = json
        self.javascript = javascript
        self.data = data
        self.chart = self._chart(chart)
        self.is_main_result = is_main_result
        self.extra = extra

    @staticmethod
    def _chart(chart: Union[Chart, Mapping[str, Any], None]) -> Optional[Chart]:
        if chart is None or isinstance(chart, Chart):
            return chart
        try:
            return deserialize_chart(chart)
        except Exception as error:  # noqa: BLE001 - any malformed chart
            # A chart this SDK cannot read must not cost the user the rest of
            # the result (its PNG, its text), so it is dropped, not raised.
            logger.warning("cellbox: ignoring a chart this SDK version cannot read: %r", error)
            return None

    @classmethod
    def from_bundle(cls, bundle: Mapping[str, Any], is_main_result: bool) -> "Result":
        """A result from a Jupyter MIME bundle (the `data` of an `execute_result`
        or `display_data` message). The bundle is not modified."""
        fields: Dict[str, Any] = {}
        extra: Dict[str, Any] = {}
        for mime, value in bundle.items():
            name = _MIME_FIELDS.get(mime)
            if name is None:
                extra[mime] = value
            elif name in ("json", "data", "chart"):
                fields[name] = value
            else:
                fields[name] = _joined(value)
        text = fields.get("text")
        if isinstance(text, str):
            fields["text"] = _strip_repr_quotes(text)
        return cls(is_main_result=is_main_result, extra=extra, **fields)

    def __getitem__(self, key: str) -> Any:
        """A representation by format name (`result["png"]`) or by the MIME type of an extra one."""
        if key in _FORMATS or key in ("is_main_result", "extra"):
            return getattr(self, key)
        if self.extra and key in self.extra:
            return self.extra[key]
        raise KeyError(key)

    def formats(self) -> List[str]:
        """The names of the representations present: the fixed ones in a fixed
        order (text, html, markdown, svg, png, jpeg, pdf, latex, json,
        javascript, data, chart), then the MIME types in `extra`."""
        present = [name for name in _FORMATS if getattr(self, name)]
        if self.extra:
            present.extend(self.extra)
        return present

    def __repr__(self) -> str:
        if self.text:
            return f"Result({self.text})"
        return "Result(Formats: {})".format(", ".join(self.formats()))

    def __str__(self) -> str:
        return self.__repr__()

    # IPython and Jupyter call these to show a Result that is itself the value
    # of a notebook cell, so an agent's notebook shows the original output.

    def _repr_html_(self) -> Optional[str]:
        return self.html

    def _repr_markdown_(self) -> Optional[str]:
        return self.markdown

    def _repr_svg_(self) -> Optional[str]:
        return self.svg

    def _repr_png_(self) -> Optional[str]:
        return self.png

    def _repr_jpeg_(self) -> Optional[str]:
        return self.jpeg

    def _repr_pdf_(self) -> Optional[str]:
        return self.pdf

    def _repr_latex_(self) -> Optional[str]:
        return self.latex

    def _repr_json_(self) -> Any:
        return self.json

    def _repr_javascript_(self) -> Optional[str]:
        return self.javascript


def serialize_results(results: List[Result]) -> List[Dict[str, Any]]:
    """Results as JSON-ready dicts: each present format by name, `chart` as
    its raw dict, `text` always, and `extra` (when not empty) as a nested
    object keyed by MIME type, the shape the server sends results in."""
    serialized = []
    for result in results:
        item: Dict[str, Any] = {}
        for name in _FORMATS:
            value = getattr(result, name)
            if value:
                item[name] = value.to_dict() if name == "chart" else value
        item["text"] = result.text
        if result.extra:
            item["extra"] = dict(result.extra)
        serialized.append(item)
    return serialized


@dataclass(init=False, repr=False)
class Logs:
    """What a cell printed, as the raw chunks the kernel streamed (not split
    into lines; newlines kept)."""

    stdout: List[str] = field(default_factory=list)
    stderr: List[str] = field(default_factory=list)

    def __init__(self, stdout: Optional[List[str]] = None, stderr: Optional[List[str]] = None, **kwargs: Any) -> None:
        self.stdout = stdout or []
        self.stderr = stderr or []

    def __repr__(self) -> str:
        return f"Logs(stdout: {self.stdout}, stderr: {self.stderr})"

    def to_json(self) -> str:
        """These logs as a JSON object with `stdout` and `stderr` lists."""
        return _json.dumps({"stdout": self.stdout, "stderr": self.stderr})


@dataclass(init=False, repr=False)
class Execution:
    """Everything one `run_code` call produced. An error in the user's code
    does not raise: it is in `error`, next to the output produced before it."""

    results: List[Result] = field(default_factory=list)
    """Rich outputs in the order they arrived: `display()` calls and the main result."""
    logs: Logs = field(default_factory=Logs)
    error: Optional[ExecutionError] = None
    """The first error of the execution, or None."""
    execution_count: Optional[int] = None
    """The kernel's cell counter for this execution."""
    artifact: Optional[str] = None
    """cellbox's own (not in E2B's SDK): an `artifact://` URI of the full output,
    set when the model-facing text of the call was clamped; `cellbox artifact URI` prints it."""

    def __init__(
        self,
        results: Optional[List[Result]] = None,
        logs: Optional[Logs] = None,
        error: Optional[ExecutionError] = None,
        execution_count: Optional[int] = None,
        artifact: Optional[str] = None,
        **kwargs: Any
    ) -> None:
        self.results = results or []
        self.logs = logs or Logs()
        self.error = error
        self.execution_count = execution_count
        self.artifact = artifact

    def __repr__(self) -> str:
        return f"Execution(Results: {self.results}, Logs: {self.logs}, Error: {self.error})"

    @property
    def text(self) -> Optional[str]:
        """The text of the main result (the cell's last expression), or None if it had none."""
        for result in self.results:
            if result.is_main_result:
                return result.text
        return None

    def to_json(self) -> str:
        """This execution as JSON. As in E2B's SDK, `logs` and `error` are JSON
        strings nested inside it (decode them a second time), and
        `execution_count` is not included."""
        return _json.dumps(
            {
                "results": serialize_results(self.results),
                "logs": self.logs.to_json(),
                "error": self.error.to_json() if self.error else None,
            }
        )


@dataclass(init=False)
class Context:
    """A code context: one kernel with its own state, language and working directory."""

    id: str
    language: str
    """The normalised language name, e.g. `python` or `javascript`."""
    cwd: str

    # The first parameter is `context_id`, not `id`, as in E2B's SDK.
    def __init__(self, context_id: str, language: str, cwd: str, **kwargs: Any) -> None:
        self.id = context_id
        self.language = language
        self.cwd = cwd

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "Context":
        """A context from its wire form, `{"id", "language", "cwd"}`."""
        return cls(context_id=data.get("id"), language=data.get("language"), cwd=data.get("cwd"))
