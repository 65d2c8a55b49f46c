"""Matplotlib capture: figures become image displays (`image/png` unless
`%config InlineBackend.figure_format` chose retina, jpeg, svg or pdf), with
the plotted values beside the image (charts.py).

`plt.show()` inside a cell emits the open figures at that point (in order
with prints); after each cell, every figure still open is emitted and closed.
Nothing is imported here until the user imports matplotlib themselves.
"""
import io
import sys
import warnings

from . import display, import_hooks

# Figure formats %config InlineBackend.figure_format(s) accepts, in bundle order.
FORMATS = ("png", "retina", "jpeg", "jpg", "svg", "pdf")
_MIMES = {"png": "image/png", "retina": "image/png", "jpeg": "image/jpeg", "jpg": "image/jpeg", "svg": "image/svg+xml", "pdf": "application/pdf"}

# What %config changed: the formats and savefig()'s keyword arguments.
settings = {"formats": ["png"], "savefig": {"bbox_inches": "tight"}}


def figure_bundle(figure):
    """(data, metadata) of a figure in the chosen format(s); retina is a PNG
    at twice the dpi whose metadata gives the size to show it at, as IPython's."""
    import base64  # with matplotlib, not at start-up
    import struct

    data, metadata = {}, {}
    for name in settings["formats"]:
        mime = _MIMES[name]
        if mime in data:
            continue
        options = dict(settings["savefig"])
        options.setdefault("bbox_inches", None)
        options["format"] = "jpeg" if name == "jpg" else ("png" if name == "retina" else name)
        options.setdefault("facecolor", figure.get_facecolor())
        options.setdefault("edgecolor", figure.get_edgecolor())
        options["dpi"] = figure.dpi * (2 if name == "retina" else 1)
        buffer = io.BytesIO()
        figure.canvas.print_figure(buffer, **options)
        raw = buffer.getvalue()
        if mime == "image/svg+xml":
            data[mime] = raw.decode("utf-8")
            continue
        data[mime] = base64.b64encode(raw).decode("ascii")
        if name == "retina" and raw[12:16] == b"IHDR":
            width, height = struct.unpack(">II", raw[16:24])
            metadata[mime] = {"width": width // 2, "height": height // 2}
    from . import charts  # here, not at the top: only a shown figure needs it

    chart = charts.chart_data(figure)  # the plotted values, as E2B's `result.chart`
    if chart is not None:
        data[charts.MIME] = chart
    return data, metadata


def is_figure(obj):
    """A matplotlib figure (checked by its class's module, so matplotlib is
    never imported here)."""
    module = getattr(type(obj), "__module__", "") or ""
    return module.startswith("matplotlib.figure") and hasattr(obj, "savefig")


# Registered on import rather than in install(): the executor imports this
# module, so wherever cells run, a figure shown with display() or left as a
# cell's value is an image, whether or not pyplot has been adapted yet.
display.add_renderer(is_figure, figure_bundle, "savefig")


def apply_rc(rc):
    """matplotlib rc settings from `InlineBackend.rc` (once matplotlib is loaded)."""
    matplotlib = sys.modules.get("matplotlib")
    if matplotlib is not None and rc:
        matplotlib.rcParams.update(rc)


def _pyplot():
    return sys.modules.get("matplotlib.pyplot")


def _emit_open_figures(plt):
    for number in list(plt.get_fignums()):
        figure = plt.figure(number)
        text = display.safe_repr(figure)  # matplotlib's own: <Figure size 640x480 with 1 Axes>
        try:
            data, metadata = figure_bundle(figure)
        except Exception as error:
            sys.stderr.write("[cellbox] could not render figure %s: %s\n" % (number, error))
            data = None
        finally:
            plt.close(figure)
        if data is not None:
            data["text/plain"] = text
            display.publish("display", data, metadata)


def _show(*args, **kwargs):
    plt = _pyplot()
    if plt is not None:
        _emit_open_figures(plt)


def _patch(plt):
    """Replace plt.show and silence the non-GUI-backend warning."""
    plt.show = _show
    warnings.filterwarnings("ignore", message=".*non-GUI backend.*")
    warnings.filterwarnings("ignore", message=".*FigureCanvasAgg is non-interactive.*")


def install():
    """Adapt pyplot as soon as user code imports it."""
    import_hooks.on_import("matplotlib.pyplot", _patch)


def after_cell():
    """Emit and close every figure the cell left open."""
    plt = _pyplot()
    if plt is None:
        return
    try:
        _emit_open_figures(plt)
    except Exception as error:
        sys.stderr.write("[cellbox] matplotlib capture failed: %s\n" % error)
