"""MIME bundles for `display()` and cell results: IPython's display protocol,
reimplemented without IPython.

An object is offered to every formatter it supports; one formatter failing
does not lose the others, and `text/plain` is always present.
"""
import sys

from . import pretty
from .wire import STATUS_MIME

# Checked in this order after `_repr_mimebundle_`; a key already produced by
# the mimebundle is not asked for again.
_REPR_METHODS = (
    ("text/markdown", "_repr_markdown_"),
    ("text/html", "_repr_html_"),
    ("image/svg+xml", "_repr_svg_"),
    ("image/png", "_repr_png_"),
    ("image/jpeg", "_repr_jpeg_"),
    ("application/json", "_repr_json_"),
    ("text/latex", "_repr_latex_"),
)
_BINARY_MIMES = ("image/png", "image/jpeg", "image/gif", "application/pdf")

_sink = None
# Functions that may take a display instead of sending it (`%%capture`); the
# innermost one that returns True keeps it.
_diversions = []
# (accepts(obj), render(obj) -> (data, metadata), step): bundles for objects
# of other libraries that have no repr methods (matplotlib's figures, added by
# mpl.py). Library support registers here, so this module imports none of it.
_renderers = []


def set_sink(sink):
    """Install the function that sends a frame: sink(kind, bundle, metadata)."""
    global _sink
    _sink = sink


def add_renderer(accepts, render, step):
    """Render the objects `accepts(obj)` picks with `render(obj)` -> (data,
    metadata), before their repr methods are asked; if it raises, a warning
    names `step` (the method that failed) and the repr methods still run."""
    _renderers.append((accepts, render, step))


def push_diversion(divert):
    _diversions.append(divert)


def pop_diversion():
    _diversions.pop()


def safe_repr(obj):
    """repr() that never raises; a failing repr names the type instead."""
    try:
        return repr(obj)
    except Exception as error:
        return "<%s object; repr() failed: %s>" % (type(obj).__name__, _describe(error))


def _describe(error):
    try:
        return "%s: %s" % (type(error).__name__, error)
    except Exception:
        return type(error).__name__


def _warn(obj, method, error):
    sys.stderr.write("[cellbox] %s.%s failed: %s\n" % (type(obj).__name__, method, _describe(error)))


def _real_method(obj, name):
    """getattr for formatter methods that ignores classes and objects whose
    __getattr__ claims every name (IPython checks the same canary)."""
    if isinstance(obj, type):
        return None
    try:
        if getattr(obj, "_ipython_canary_method_should_not_exist_", None) is not None:
            return None
        method = getattr(obj, name, None)
    except Exception:
        return None
    return method if callable(method) else None


def _encode(mime, value):
    if isinstance(value, (bytes, bytearray)) and (mime in _BINARY_MIMES or mime.startswith("image/")):
        import base64  # here, not at start-up: most kernels show no image

        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", "replace")
    return value


def _split(result):
    """A formatter may return data or (data, metadata)."""
    if isinstance(result, tuple) and len(result) == 2:
        return result[0], result[1] if isinstance(result[1], dict) else {}
    return result, {}


# Set by %precision: float -> text (or None for the usual repr).
float_text = None

# Types whose only representation is their repr (the common results).
_PLAIN_TYPES = (int, float, complex, str, bytes, bool, range, type(None))
# Builtin containers have no rich representation either.
_CONTAINER_TYPES = (tuple, list, dict, set, frozenset)


def result_text(obj):
    """The text/plain of a cell result: IPython's pretty-printed form (pretty.py),
    or repr() under `%pprint` off."""
    try:
        return pretty.result_text(obj, float_text)
    except Exception:
        return safe_repr(obj)


def mime_bundle(obj, include=None, exclude=None, as_json=False):
    """Build (data, metadata) for `obj`.

    `as_json` adds `application/json` for plain dicts and lists, which is
    what `display()` does for them; without it (a cell result), text/plain is
    IPython's pretty-printed text.
    """
    if type(obj) in _PLAIN_TYPES:
        if float_text is not None and type(obj) is float:
            return {"text/plain": float_text(obj) or safe_repr(obj)}, {}
        return {"text/plain": safe_repr(obj)}, {}
    if type(obj) in _CONTAINER_TYPES:
        if not as_json:
            return {"text/plain": result_text(obj)}, {}
        if type(obj) not in (list, dict):
            return {"text/plain": safe_repr(obj)}, {}
    data, metadata = {}, {}
    for accepts, render, step in _renderers:
        if accepts(obj):
            try:
                data, metadata = render(obj)
            except Exception as error:
                _warn(obj, step, error)
            break
    method = _real_method(obj, "_repr_mimebundle_")
    if method is not None:
        try:
            produced, produced_meta = _split(method(include=include, exclude=exclude))
            if isinstance(produced, dict):
                for mime, value in produced.items():
                    data.setdefault(mime, _encode(mime, value))
                metadata.update(produced_meta or {})
        except Exception as error:
            _warn(obj, "_repr_mimebundle_", error)
    for mime, name in _REPR_METHODS:
        if mime in data:
            continue
        method = _real_method(obj, name)
        if method is None:
            continue
        try:
            value, meta = _split(method())
        except Exception as error:
            _warn(obj, name, error)
            continue
        if value is None:
            continue
        data[mime] = _encode(mime, value)
        if meta:
            metadata[mime] = meta
    if as_json and "application/json" not in data and type(obj) in (dict, list):
        data["application/json"] = obj
    if "text/plain" not in data:
        data["text/plain"] = safe_repr(obj) if as_json else result_text(obj)
    if include is not None:
        data = {k: v for k, v in data.items() if k in include or k == "text/plain"}
    if exclude is not None:
        data = {k: v for k, v in data.items() if k not in exclude or k == "text/plain"}
    return data, metadata


def publish(kind, data, metadata=None):
    """Send a display or result bundle for the current request."""
    if _diversions and _diversions[-1](kind, data, metadata or {}):
        return
    if _sink is not None:
        _sink(kind, data, metadata or {})


def display(*objs, raw=False, include=None, exclude=None, metadata=None, display_id=None, update=False, **kwargs):
    """Show objects as rich output (images, tables, HTML, JSON) in the cell's result.

    With raw=True each object is already a MIME bundle dict. With a
    display_id (True for a new one) it returns a DisplayHandle, as IPython does;
    IPython's other keywords (`clear`, `transient`) are accepted and change nothing.
    """
    for obj in objs:
        if raw:
            data, meta = dict(obj), {}
        else:
            data, meta = mime_bundle(obj, include=include, exclude=exclude, as_json=True)
        if metadata:
            meta.update(metadata)
        publish("display", data, meta)
    if display_id is None:
        return None
    return DisplayHandle(None if display_id is True else display_id)


class DisplayHandle:
    """What `display(..., display_id=...)` returns: `.display(obj)` and `.update(obj)`.

    Cell output here is a stream, not a page that can be redrawn, so an update
    is shown as a new display below the earlier ones.
    """

    def __init__(self, display_id=None):
        if display_id is None:
            import uuid

            display_id = uuid.uuid4().hex
        self.display_id = display_id

    def __repr__(self):
        return "<DisplayHandle display_id=%s>" % self.display_id

    def display(self, obj, **kwargs):
        """Show `obj` (again)."""
        kwargs.pop("display_id", None)
        display(obj, **kwargs)

    def update(self, obj, **kwargs):
        """Show the new value of this display."""
        self.display(obj, **kwargs)


def emit_status(op, **fields):
    """Send a structured status event (`application/x-cellbox-status`)."""
    event = {"op": op}
    event.update(fields)
    publish("display", {STATUS_MIME: event, "text/plain": "[%s]" % op})
