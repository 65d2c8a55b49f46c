"""cellbox's helpers in a Jupyter kernel: the same names and status events as
in cellbox's own kernels, built on IPython's display. The host puts the
source of the runner's `helpers.py` in `_cellbox_helpers_source` first, and
the sources of the runner's bridge modules in `_cellbox_bridge_sources`
(name → source, in import order)."""


def _cellbox_install_prelude(namespace, helpers_source):
    from IPython.display import display as _display

    def emit_status(op, **fields):
        """Send a structured status event (`application/x-cellbox-status`)."""
        event = {"op": op}
        event.update(fields)
        _display({"application/x-cellbox-status": event, "text/plain": "[%s]" % op}, raw=True)

    scope = {"__name__": "cellbox_helpers"}
    exec(compile(helpers_source, "<cellbox helpers>", "exec"), scope)
    for helper in (emit_status,) + tuple(scope["make_helpers"](emit_status)):
        namespace[helper.__name__] = helper
    namespace["display"] = _display


def _cellbox_install_bridge(namespace, sources):
    """Load the runner's bridge modules as a package of their own (their
    relative imports find each other in sys.modules), connect the bridge to
    this kernel's stdin channel, and put the cell-side API into `namespace`."""
    import sys
    import types

    from IPython import get_ipython

    package_name = "_cellbox_gateway"
    package = sys.modules.get(package_name)
    if package is None:
        package = types.ModuleType(package_name)
        package.__path__ = []
        sys.modules[package_name] = package
        for name, source in sources:
            module = types.ModuleType("%s.%s" % (package_name, name))
            module.__package__ = package_name
            sys.modules[module.__name__] = module
            exec(compile(source, "<cellbox %s>" % name, "exec"), module.__dict__)
            setattr(package, name, module)
        package.bridge_stdin.connect(package.bridge.BRIDGE, get_ipython().kernel)
    api = package.bridge_api
    for name in api.__all__:
        namespace[name] = getattr(api, name)


def _cellbox_tune_shell():
    """Drop two costs cellbox's cells would pay for nothing (best effort: any IPython).

    - Colour in tracebacks: cellbox strips the colour codes, and with them on IPython
      highlights every frame of a traceback with pygments: ~20 ms an error (an interrupted
      cell is one), twice over on IPython 9, which formats it again for its history.
    - The history database written after every cell (an SQLite commit in IPython's own
      thread, racing the cell's reply for the GIL): written a hundred cells at a time.
    """
    from IPython import get_ipython

    shell = get_ipython()
    try:
        shell.run_line_magic("colors", "nocolor")
    except Exception:
        pass
    try:
        shell.history_manager.db_cache_size = max(shell.history_manager.db_cache_size, 100)
    except Exception:
        pass


_cellbox_install_prelude(globals(), _cellbox_helpers_source)
_cellbox_install_bridge(globals(), _cellbox_bridge_sources)
_cellbox_tune_shell()
del _cellbox_install_prelude, _cellbox_helpers_source, _cellbox_install_bridge, _cellbox_bridge_sources
del _cellbox_tune_shell
