"""Matplotlib capture: figures become `image/png` displays.

`plt.show()` inside a cell emits the open figures at that point (in order
with prints); after each cell, every figure still open is emitted and closed.
Nothing is imported here until the user imports matplotlib themselves.
"""
import sys
import warnings

from . import display, import_hooks


def _pyplot():
    return sys.modules.get("matplotlib.pyplot")


def _emit_open_figures(plt):
    for number in list(plt.get_fignums()):
        figure = plt.figure(number)
        text = display.safe_repr(figure)  # matplotlib's own: <Figure size 640x480 with 1 Axes>
        try:
            data = display.figure_png(figure)
        except Exception as error:
            sys.stderr.write("[evalkit] could not render figure %s: %s\n" % (number, error))
            data = None
        finally:
            plt.close(figure)
        if data is not None:
            display.publish("display", {"image/png": data, "text/plain": text})


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
        sys.stderr.write("[evalkit] matplotlib capture failed: %s\n" % error)
