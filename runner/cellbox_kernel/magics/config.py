"""Settings magics: %matplotlib, %config, %precision, %pprint.

Notebooks start with `%matplotlib inline` and `%config InlineBackend.figure_format
= 'retina'` out of habit. Every backend name IPython accepts is accepted here;
figures always come back as images (there are no GUI windows), and
`InlineBackend.figure_format(s)` really chooses their format. The other
common `%config` settings are accepted and listed, so a notebook's setup cell
runs; the ones cellbox has no use for are kept but change nothing.
"""
import ast
import operator
import sys

from .. import mpl, pretty
from .framework import UsageError

# IPython's names for matplotlib's backends, used when matplotlib is too old
# to list its own (IPython's fallback list, plus `auto`).
_FALLBACK_BACKENDS = (
    "agg", "auto", "gtk", "gtk3", "gtk4", "inline", "ipympl", "nbagg", "notebook", "osx",
    "pdf", "ps", "qt", "qt4", "qt5", "qt6", "svg", "tk", "webagg", "widget", "wx",
)  # fmt: skip

# name -> (default, what it does here). Values are Python literals, as in IPython.
_SETTINGS = {
    "InlineBackend": {
        "figure_format": ("png", "the image format of captured figures: 'png', 'retina' (2x PNG), 'jpeg' or 'svg'"),
        "figure_formats": ({"png"}, "several formats at once, e.g. {'png', 'svg'}"),
        "print_figure_kwargs": ({"bbox_inches": "tight"}, "keyword arguments for savefig()"),
        "rc": ({}, "matplotlib rc settings applied by %matplotlib inline"),
        "close_figures": (True, "close figures after each cell (always, in cellbox)"),
    },
    "IPCompleter": {
        "greedy": (False, "accepted; completion is not offered by cellbox"),
        "use_jedi": (True, "accepted; completion is not offered by cellbox"),
        "evaluation": ("limited", "accepted; completion is not offered by cellbox"),
        "limit_to__all__": (False, "accepted; completion is not offered by cellbox"),
    },
    "InteractiveShell": {
        "ast_node_interactivity": ("last_expr", "accepted; cellbox shows the last expression's value"),
        "autocall": (0, "accepted; cellbox has no autocall"),
        "colors": ("nocolor", "accepted; cellbox prints plain text"),
        "xmode": ("Plain", "the traceback style, as %xmode"),
        "cache_size": (1000, "how many values Out keeps; at the limit the oldest fifth is let go (under 3: none)"),
        "pdb": (False, "print the post-mortem after errors, as %pdb"),
        "automagic": (False, "accepted; magics need their % prefix in cellbox"),
    },
    "HistoryManager": {"enabled": (True, "accepted; history lives for the kernel's life")},
    "ZMQInteractiveShell": {"ast_node_interactivity": ("last_expr", "accepted; as InteractiveShell")},
}


class Settings:
    """The current values of the settings above, and %precision/%pprint."""

    def __init__(self):
        self.values = {(owner, name): spec[0] for owner, names in _SETTINGS.items() for name, spec in names.items()}
        self.float_format = "%r"
        self.precision_text = None  # what %precision was given, kept with a snapshot
        self.pretty = True

    def format_float(self, value):
        """The text/plain of a float result under %precision (None: the usual repr)."""
        if not self.pretty or self.float_format == "%r":
            return None
        try:
            return self.float_format % value
        except Exception:
            return None


def backends():
    """The backend names `%matplotlib --list` shows, as IPython builds them."""
    try:
        from matplotlib.backends.registry import backend_registry
    except Exception:
        return sorted(_FALLBACK_BACKENDS)
    names = list(backend_registry.list_all())
    names += ["osx" if gui == "macosx" else gui for gui in backend_registry.list_gui_frameworks()]
    return sorted(["auto"] + names)


def matplotlib(shell, args, frame):
    """`%matplotlib [backend]` / `--list`: figures are captured and shown as
    images whatever the backend (there are no windows here)."""
    words = args.split()
    if words and words[0] in ("-l", "--list"):
        print("Available matplotlib backends: %s" % backends())
        return None
    name = words[0] if words else ""
    if name and not name.startswith("module://") and name.lower() not in [b.lower() for b in backends()]:
        raise UsageError(
            "%r is not a valid value for backend; supported values are %s" % (name, backends())
        )
    import matplotlib.pyplot  # noqa: F401 (IPython imports it too; a missing matplotlib fails here)

    mpl.apply_rc(shell.settings.values[("InlineBackend", "rc")])
    if not name or name == "auto":
        print("Using matplotlib backend: inline")
    elif name.lower() not in ("inline", "agg"):
        print("cellbox shows figures inline as images: the %s backend's windows are not available here." % name)
    return None


def pylab(shell, args, frame):
    """`%pylab [backend]`: %matplotlib, then numpy's and pylab's names in your namespace."""
    matplotlib(shell, args if args.strip() not in ("--no-import-all",) else "", frame)
    print("%pylab is deprecated, use %matplotlib inline and import the required libraries.")
    print("Populating the interactive namespace from numpy and matplotlib")
    code = "import numpy\nimport matplotlib\nfrom matplotlib import pylab, mlab, pyplot\nnp = numpy\nplt = pyplot\n"
    if "--no-import-all" not in args.split():
        code += "from pylab import *\nfrom numpy import *\n"
    exec(compile(code, "<pylab>", "exec"), frame.f_globals)
    return None


def config(shell, args, frame):
    """`%config` lists what is accepted; `%config Class` its settings with their
    values; `%config Class.name = value` sets one (value is a Python literal)."""
    args = args.strip()
    if not args:
        print("Available objects for config:")
        for owner in sorted(_SETTINGS):
            print("    " + owner)
        return None
    if "=" not in args:
        owner = args.split(".")[0]
        if owner not in _SETTINGS:
            raise UsageError("Invalid config statement: %r, should be `Class.trait = value` with Class one of %s" % (args, ", ".join(sorted(_SETTINGS))))
        print("%s(...) options\n%s" % (owner, "-" * (len(owner) + 14)))
        for name, (_, help_text) in sorted(_SETTINGS[owner].items()):
            print("%s.%s=<%s>" % (owner, name, type(shell.settings.values[(owner, name)]).__name__))
            print("    Current: %r" % (shell.settings.values[(owner, name)],))
            print("    %s" % help_text)
        return None
    target, _, text = args.partition("=")
    owner, _, name = target.strip().partition(".")
    if owner not in _SETTINGS or name not in _SETTINGS[owner]:
        known = ", ".join("%s.%s" % (o, n) for o in sorted(_SETTINGS) for n in sorted(_SETTINGS[o]))
        raise UsageError("cellbox does not know the setting %r; it accepts: %s" % (target.strip(), known))
    try:
        value = ast.literal_eval(text.strip())
    except (ValueError, SyntaxError):
        value = eval(text.strip(), frame.f_globals, frame.f_locals)
    _apply(shell, owner, name, value)
    return None


def _apply(shell, owner, name, value):
    if owner == "InlineBackend" and name in ("figure_format", "figure_formats"):
        formats = {value} if isinstance(value, str) else set(value)
        unknown = formats - set(mpl.FORMATS)
        if unknown:
            raise UsageError("supported figure formats are %s, not %s" % (", ".join(mpl.FORMATS), ", ".join(sorted(unknown))))
        mpl.settings["formats"] = sorted(formats, key=mpl.FORMATS.index)
    elif owner == "InlineBackend" and name == "print_figure_kwargs":
        mpl.settings["savefig"] = dict(value)
    elif owner == "InlineBackend" and name == "rc":
        mpl.apply_rc(value)
    elif owner in ("InteractiveShell", "ZMQInteractiveShell") and name == "xmode":
        shell.run_line_magic("xmode", str(value))
    elif owner in ("InteractiveShell", "ZMQInteractiveShell") and name == "pdb":
        shell.debug.automatic_pdb = bool(value)
    elif owner == "InteractiveShell" and name == "cache_size":
        try:
            value = operator.index(value)
        except TypeError:
            raise UsageError("InteractiveShell.cache_size is a whole number, not %r" % (value,)) from None
        shell.history.set_cache_size(value)
    shell.settings.values[(owner, name)] = value


def precision(shell, args, frame):
    """`%precision [N | format]`: how float results print ('%.3f' for 3);
    no argument restores repr. Returns the format in use (numpy follows too)."""
    settings = shell.settings
    text = args.strip()
    if not text:
        settings.float_format = "%r"
        digits = 8
    elif "%" in text:
        try:
            text % 3.14159
        except Exception:
            raise ValueError("Precision must be int or format string, not %s" % text)
        settings.float_format = text
        digits = None
    else:
        try:
            digits = int(text)
        except ValueError:
            raise ValueError("Precision must be int or format string, not %s" % text)
        if digits < 0:
            raise ValueError("Precision must be int or format string, not %s" % text)
        settings.float_format = "%%.%if" % digits
    settings.precision_text = text or None
    numpy = sys.modules.get("numpy")
    if numpy is not None and digits is not None:
        try:
            numpy.set_printoptions(precision=digits)
        except Exception:
            pass
    return settings.float_format


def pprint(shell, args, frame):
    """`%pprint`: toggle pretty printing of results (off: a result is its repr(), floats too, whatever %precision says)."""
    message = pretty.toggle()
    shell.settings.pretty = pretty.enabled
    print(message)
    return None


LINE_MAGICS = {"matplotlib": matplotlib, "pylab": pylab, "config": config, "precision": precision, "pprint": pprint}
