"""`IPython.display` without an IPython shell.

Outside a running IPython, IPython's own `display()` just prints. When user
code imports IPython, cellbox's `display` replaces it, so
`from IPython.display import display, HTML; display(HTML("<b>x</b>"))` shows
rich output. IPython is never required: nothing happens until it is imported.
"""
from . import display, import_hooks

# Modules that define (or re-export) `display`, across IPython 7, 8 and 9.
_TARGETS = ("IPython.core.display_functions", "IPython.core.display", "IPython.display")


def _patch(module):
    if hasattr(module, "display"):
        module.display = display.display


def install():
    for name in _TARGETS:
        import_hooks.on_import(name, _patch)
