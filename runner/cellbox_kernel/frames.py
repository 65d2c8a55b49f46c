"""pandas DataFrames carry their columns as data beside their HTML table.

A DataFrame shown as a result or with display() gets one more MIME type,
`application/vnd.cellbox.data+json`: `{column: [values...]}` (pandas'
`to_dict(orient="list")`), with timestamps as ISO 8601 text and missing or
infinite numbers as null. E2B's Code Interpreter gives the same shape as
`result.data`, so a client reads a frame's values without parsing HTML.
Front ends that show text ignore the type.

Only frames of up to `MAX_VALUES` values get it: a bigger frame's table is
truncated by pandas anyway, and its full data would cost every display of it
a copy of the whole frame through the pipe.

pandas is never imported here: a frame exists only once the user imported it.

Frames also read as in Jupyter. pandas asks `get_ipython()` whether it runs
in a terminal: a shell with a `kernel` is a Jupyter kernel (then
`display.max_columns` is 20, decided at import, not 0, "fit the terminal"),
and one whose type names zmq is a notebook-like front end (sizes are then
pandas' defaults, not the terminal's, and categories are not wrapped).
cellbox's shell is neither, so a wide frame's middle columns were left out,
as in a terminal. pandas' two modules that ask get a `get_ipython` of their
own, before their code runs, answering as ipykernel's shell does; nothing
else sees it. The hook is set when this module is imported, so pandas
preloaded by the fork server (imported before any kernel exists) gets it.
"""
import math
import sys

from . import display, import_hooks, wire

MIME = wire.DATA_MIME
#: The most values (rows times columns) a frame's data is sent for.
MAX_VALUES = 10000


def is_small_frame(obj):
    pandas = sys.modules.get("pandas")
    if pandas is None or not isinstance(obj, pandas.DataFrame):
        return False
    try:
        return obj.size <= MAX_VALUES
    except Exception:
        return False


def frame_bundle(frame):
    """({MIME: columns}, {}); the other types of the bundle come from the
    frame's own repr methods. A frame whose values cannot be read has no
    data rather than a warning."""
    try:
        columns = frame.to_dict(orient="list")
        data = {str(name): [_value(value) for value in values] for name, values in columns.items()}
    except Exception:
        return {}, {}
    return {MIME: data}, {}


def _value(value):
    """A cell's value as strict JSON can carry it."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if _missing(value):  # NaT, pandas.NA, numpy's NaN
        return None
    # Not imported at start-up: no value is a date while nothing has imported `datetime`.
    datetime = sys.modules.get("datetime")
    if datetime is not None and isinstance(value, (datetime.date, datetime.time)):  # pandas' Timestamp is one
        return value.isoformat()
    item = getattr(value, "item", None)  # numpy scalars
    if item is not None:
        try:
            return _value(item())
        except Exception:
            pass
    return str(value)


def _missing(value):
    try:
        missing = sys.modules["pandas"].isna(value)
        return getattr(missing, "ndim", 0) == 0 and bool(missing)  # a list's isna is an array
    except Exception:
        return False


class _AsZMQInteractiveShell:
    """The two things pandas reads off a Jupyter kernel's shell: it has a
    `kernel`, and its type's name says zmq (ipykernel's ZMQInteractiveShell)."""

    kernel = None


_KERNEL_SHELL = _AsZMQInteractiveShell()


def _kernel_shell():
    return _KERNEL_SHELL


def _as_in_a_kernel(module):
    module.get_ipython = _kernel_shell


display.add_renderer(is_small_frame, frame_bundle, "to_dict")
# pandas.core.config_init sets max_columns at import; console answers at each repr.
import_hooks.before_import("pandas.core.config_init", _as_in_a_kernel)
import_hooks.before_import("pandas.io.formats.console", _as_in_a_kernel)
