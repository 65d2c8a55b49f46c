"""cellbox's helpers in a Jupyter kernel: the same names and status events as
in cellbox's own kernels, built on IPython's display. The host puts the
sources of the runner package's modules the gateway ships in
`_cellbox_runner_sources` first ((name, source) pairs, each module after the
modules it imports): the helpers, and the bridge modules."""


def _cellbox_load_runner(sources):
    """Load the runner's modules as a package of their own (their relative
    imports find each other in sys.modules), once per kernel."""
    import sys
    import types

    package_name = "_cellbox_gateway"
    package = sys.modules.get(package_name)
    if package is not None:
        return package, False
    package = types.ModuleType(package_name)
    package.__path__ = []
    sys.modules[package_name] = package
    for name, source in sources:
        module = types.ModuleType("%s.%s" % (package_name, name))
        module.__package__ = package_name
        sys.modules[module.__name__] = module
        exec(compile(source, "<cellbox %s>" % name, "exec"), module.__dict__)
        setattr(package, name, module)
    return package, True


def _cellbox_install_prelude(namespace, helpers):
    from IPython.display import display as _display

    def emit_status(op, **fields):
        """Send a structured status event (`application/x-cellbox-status`)."""
        event = {"op": op}
        event.update(fields)
        _display({"application/x-cellbox-status": event, "text/plain": "[%s]" % op}, raw=True)

    for helper in (emit_status,) + tuple(helpers.make_helpers(emit_status)):
        namespace[helper.__name__] = helper
    namespace["display"] = _display


def _cellbox_install_bridge(namespace, package, loaded):
    """Connect the bridge to this kernel's stdin channel (when its modules were
    just loaded), and put the cell-side API into `namespace`."""
    from IPython import get_ipython

    if loaded:
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


def _cellbox_order_streams():
    """Keep stdout and stderr in the order the cell wrote them, as a local kernel does.

    ipykernel buffers each stream on its own and sends each after its own timer, so
    `print('out'); print('err', file=sys.stderr)` reaches the host as err, out whenever the
    timers fire so. When a write goes to the other stream than the one before, the one
    written so far is flushed first (a flush per switch, not per write). The hook is the
    stream class's `_schedule_flush`, which every write in the kernel's process calls after
    buffering its text: `write` itself is not, because IPython puts its own on the streams
    around every cell and leaves the one it found. Once per kernel, best effort.
    """
    import sys

    last = [None]
    for cls in {type(sys.stdout), type(sys.stderr)}:
        original = getattr(cls, "_schedule_flush", None)
        if original is None or getattr(original, "_cellbox_ordered", False):
            continue

        def schedule_flush(self, _original=original):
            previous = last[0]
            last[0] = self
            if previous is not None and previous is not self:
                try:
                    previous.flush()
                except Exception:
                    pass
            return _original(self)

        schedule_flush._cellbox_ordered = True
        try:
            cls._schedule_flush = schedule_flush
        except Exception:
            pass


_cellbox_package, _cellbox_loaded = _cellbox_load_runner(_cellbox_runner_sources)
_cellbox_install_prelude(globals(), _cellbox_package.helpers)
_cellbox_install_bridge(globals(), _cellbox_package, _cellbox_loaded)
_cellbox_tune_shell()
_cellbox_order_streams()
del _cellbox_load_runner, _cellbox_runner_sources, _cellbox_package, _cellbox_loaded
del _cellbox_install_prelude, _cellbox_install_bridge, _cellbox_tune_shell, _cellbox_order_streams
