"""Helpers injected into every kernel's namespace (again after `%reset`).

The model reads these docstrings: keep them short and exact.
"""
from . import bridge_api
from .display import display, emit_status
from .helpers import make_helpers

__all__ = ["display", "env", "read", "write", "log", "phase", "emit_status"] + bridge_api.__all__

env, read, write, log, phase = make_helpers(emit_status)


def install(namespace):
    """Put the helpers into `namespace` (idempotent)."""
    for name in __all__:
        namespace[name] = globals()[name] if name in globals() else getattr(bridge_api, name)
