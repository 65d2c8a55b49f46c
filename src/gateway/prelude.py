"""evalkit's helpers in a Jupyter kernel: the same names and status events as
in evalkit's own kernels, built on IPython's display. The host puts the
source of the runner's `helpers.py` in `_evalkit_helpers_source` first."""


def _evalkit_install_prelude(namespace, helpers_source):
    from IPython.display import display as _display

    def emit_status(op, **fields):
        """Send a structured status event (`application/x-evalkit-status`)."""
        event = {"op": op}
        event.update(fields)
        _display({"application/x-evalkit-status": event, "text/plain": "[%s]" % op}, raw=True)

    scope = {"__name__": "evalkit_helpers"}
    exec(compile(helpers_source, "<evalkit helpers>", "exec"), scope)
    for helper in (emit_status,) + tuple(scope["make_helpers"](emit_status)):
        namespace[helper.__name__] = helper
    namespace["display"] = _display


_evalkit_install_prelude(globals(), _evalkit_helpers_source)
del _evalkit_install_prelude, _evalkit_helpers_source
