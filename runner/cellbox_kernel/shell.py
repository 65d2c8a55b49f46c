"""The shell object `get_ipython()` returns, events around cells, extensions.

Notebooks and IPython extensions talk to "the shell": they push names into
the user namespace, register magics and hook the cell lifecycle. `Shell` is
the small part of IPython's InteractiveShell they commonly use, backed by
cellbox's executor and magics tables. `%load_ext NAME` imports NAME and calls
its `load_ipython_extension(shell)`; `autoreload` is built in, so it works
with no IPython installed.
"""
import builtins
import importlib
import os
import sys

from . import display
from .magics.framework import UsageError
from .magics.history import History

# Extensions cellbox provides itself (IPython's live inside IPython): name -> runner module.
_BUILTIN_EXTENSIONS = {"autoreload": "autoreload", "IPython.extensions.autoreload": "autoreload"}

EVENTS = ("pre_execute", "pre_run_cell", "post_execute", "post_run_cell", "shell_initialized")


class EventManager:
    """`shell.events`: callbacks run around every cell, as IPython runs them.

    A failing callback is reported on stderr and the others still run.
    """

    def __init__(self):
        self.callbacks = {name: [] for name in EVENTS}

    def register(self, event, function):
        if event not in self.callbacks:
            raise KeyError("Unknown event %s; known events: %s" % (event, ", ".join(EVENTS)))
        if not callable(function):
            raise TypeError("Need a callable, got %r" % (function,))
        if function not in self.callbacks[event]:
            self.callbacks[event].append(function)

    def unregister(self, event, function):
        try:
            self.callbacks[event].remove(function)
        except (KeyError, ValueError):
            raise ValueError("Function %r is not registered as a %s callback" % (function, event))

    def trigger(self, event, *args, **kwargs):
        callbacks = self.callbacks[event]
        if not callbacks:  # the usual case, on every cell
            return
        for function in list(callbacks):
            try:
                function(*args, **kwargs)
            except (Exception, KeyboardInterrupt):
                import traceback

                sys.stderr.write(
                    "Error in callback %r (for %s), with arguments args %r,kwargs %r:\n" % (function, event, args, kwargs)
                )
                traceback.print_exc()


class ExecutionInfo:
    """What `pre_run_cell` callbacks receive (IPython's fields)."""

    def __init__(self, raw_cell, store_history, silent, shell_futures=True, cell_id=None):
        self.raw_cell = raw_cell
        self.transformed_cell = raw_cell
        self.store_history = store_history
        self.silent = silent
        self.shell_futures = shell_futures
        self.cell_id = cell_id

    def __repr__(self):
        return "<ExecutionInfo object at %x, raw_cell=%r store_history=%s silent=%s cell_id=%s>" % (
            id(self),
            self.raw_cell[:50],
            self.store_history,
            self.silent,
            self.cell_id,
        )


class ExecutionResult:
    """What `post_run_cell` callbacks receive and `shell.run_cell` returns."""

    def __init__(self, info, execution_count=None):
        self.info = info
        self.execution_count = execution_count
        self.error_before_exec = None
        self.error_in_exec = None
        self.result = None

    @property
    def success(self):
        return self.error_before_exec is None and self.error_in_exec is None

    def raise_error(self):
        if self.error_before_exec is not None:
            raise self.error_before_exec
        if self.error_in_exec is not None:
            raise self.error_in_exec

    def __repr__(self):
        return "<ExecutionResult object at %x, execution_count=%s error_before_exec=%s error_in_exec=%s info=%r result=%r>" % (
            id(self),
            self.execution_count,
            self.error_before_exec,
            self.error_in_exec,
            self.info,
            self.result,
        )


class Shell:
    """`get_ipython()`: the user namespace, magics, events and extensions.

    It also keeps what the magic groups remember between cells: `history`
    (magics/history.py), `settings` (magics/config.py) and `debug`
    (magics/debug.py), the last two created when first used, so a kernel that
    never needs them never imports them; and the directories and aliases below.
    """

    def __init__(self, kernel, magics):
        self._kernel = kernel
        self._magics = magics
        self.events = EventManager()
        self.extensions = {}  # name -> module, for the ones loaded
        self._current = None
        self.history = None
        self._settings = None
        self._debug = None
        self.last_error = None  # (error, traceback) of the last failed cell
        self.hidden = ("In", "Out", "get_ipython")
        self.directory_stack = []  # %pushd / %popd
        self.previous_directory = None  # %cd -
        self.start_directory = os.getcwd()  # the project whose variables %store keeps
        self.aliases = {}  # name -> magics.system.Alias
        kernel.hooks = self
        builtins.get_ipython = self.get_ipython

    @property
    def settings(self):
        if self._settings is None:
            from .magics.config import Settings

            self._settings = Settings()
        return self._settings

    @property
    def debug(self):
        if self._debug is None:
            from .magics.debug import DebugState

            self._debug = DebugState(self)
        return self._debug

    def get_ipython(self):
        """The cellbox shell (IPython's `get_ipython()`): `user_ns`, `push`,
        `run_line_magic`, `run_cell_magic`, `register_magic_function`, `events`."""
        return self

    def __repr__(self):
        return "<cellbox shell: get_ipython() without IPython>"

    # the namespace -------------------------------------------------------

    @property
    def user_ns(self):
        return self._kernel.namespace

    user_global_ns = user_ns

    @property
    def execution_count(self):
        return self._kernel.execution_count + (0 if self._current is not None else 1)

    def push(self, variables, interactive=True):
        """Add names to the user namespace: a dict, or names (a list or a
        space-separated string) looked up in the caller's frame."""
        if isinstance(variables, dict):
            self.user_ns.update(variables)
            return
        names = variables.split() if isinstance(variables, str) else list(variables)
        frame = sys._getframe(1)
        for name in names:
            try:
                self.user_ns[name] = eval(name, frame.f_globals, frame.f_locals)
            except Exception:
                sys.stderr.write("Could not get variable %s from %s\n" % (name, frame.f_code.co_name))

    def drop_by_id(self, variables):
        for name, value in variables.items():
            if name in self.user_ns and self.user_ns[name] is value:
                del self.user_ns[name]

    def ev(self, expression):
        return eval(expression, self.user_ns)

    def ex(self, code):
        exec(code, self.user_ns)

    # magics --------------------------------------------------------------

    def run_line_magic(self, magic_name, line, _stack_depth=1):
        """`%magic_name line`, run in the caller's namespace."""
        return self._magics.call_line(magic_name, line, sys._getframe(_stack_depth))

    def run_cell_magic(self, magic_name, line, cell):
        """`%%magic_name line` with `cell` as its body."""
        return self._magics.call_cell(magic_name, line, cell, sys._getframe(1))

    def magic(self, arg_s):
        """IPython's old `magic("name args")` spelling."""
        name, _, line = arg_s.lstrip("%").partition(" ")
        return self._magics.call_line(name, line, sys._getframe(1))

    def find_line_magic(self, name):
        return self._magics.line_table().get(name)

    def find_cell_magic(self, name):
        return self._magics.cell_table().get(name)

    def find_magic(self, name, magic_kind="line"):
        return self.find_cell_magic(name) if magic_kind == "cell" else self.find_line_magic(name)

    def register_magic_function(self, func, magic_kind="line", magic_name=None):
        """Make `func` a magic: line magics get `func(line)`, cell magics
        `func(line, cell)` (`line_cell`: `cell` is None on a line)."""
        name = magic_name or func.__name__
        if magic_kind not in ("line", "cell", "line_cell"):
            raise ValueError("magic_kind must be one of 'line', 'cell', 'line_cell', not %r" % (magic_kind,))
        if magic_kind in ("line", "line_cell"):
            self._magics.line_table()[name] = _user_line_magic(func, magic_kind)
        if magic_kind in ("cell", "line_cell"):
            self._magics.cell_table()[name] = _user_cell_magic(func)

    def system(self, command):
        return self._magics.system(command)

    def getoutput(self, command):
        return self._magics.getoutput(command)

    def run_cell(self, raw_cell, store_history=False, silent=False, shell_futures=True, cell_id=None):
        """Run code (magics allowed) in the user namespace, as a nested cell:
        an error is printed, not raised, and comes back in the result."""
        info = ExecutionInfo(raw_cell, store_history, silent, shell_futures, cell_id)
        result = ExecutionResult(info, self._kernel.execution_count)
        try:
            result.result = self._kernel.run_fragment(raw_cell, self.user_ns, self.user_ns, "<run_cell>")
        except SyntaxError as error:
            result.error_before_exec = error
            self._kernel.print_error(error)
        except Exception as error:
            result.error_in_exec = error
            self._kernel.print_error(error)
        return result

    def set_next_input(self, text, replace=False):
        """There is no input line to fill here; the text is printed instead."""
        print(text)

    def showtraceback(self, exc_tuple=None, *args, **kwargs):
        error = exc_tuple[1] if exc_tuple else sys.exc_info()[1]
        if error is not None:
            self._kernel.print_error(error)

    # extensions ----------------------------------------------------------

    def load_extension(self, name):
        """Import `name` and call its load_ipython_extension(shell); return
        "already loaded" when it is loaded, None otherwise."""
        if name in self.extensions:
            return "already loaded"
        builtin = _BUILTIN_EXTENSIONS.get(name)
        if builtin is not None:
            module = importlib.import_module("." + builtin, __package__)
        else:
            module = importlib.import_module(name)
        loader = getattr(module, "load_ipython_extension", None)
        if loader is None:
            return "no load function"
        loader(self)
        self.extensions[name] = module
        return None

    def unload_extension(self, name):
        module = self.extensions.get(name)
        if module is None:
            return "not loaded"
        unloader = getattr(module, "unload_ipython_extension", None)
        if unloader is None:
            return "no unload function"
        unloader(self)
        del self.extensions[name]
        return None

    def reload_extension(self, name):
        module = self.extensions.get(name)
        if module is None:
            return self.load_extension(name)
        unloader = getattr(module, "unload_ipython_extension", None)
        if unloader is not None:
            unloader(self)
        del self.extensions[name]
        if name not in _BUILTIN_EXTENSIONS and name in sys.modules:
            importlib.reload(sys.modules[name])
        return self.load_extension(name)

    # hooks the executor calls --------------------------------------------

    def before_cell(self, code, silent, number):
        """Events first (autoreload runs here), then the input history.

        `number` is the cell's execution count; None marks the host's own
        requests (set-up, silent ones), which no hook sees."""
        if number is None:
            self._current = None
            return
        info = ExecutionInfo(code, True, silent)
        self._current = ExecutionResult(info)
        self.events.trigger("pre_execute")
        if not silent:
            self.events.trigger("pre_run_cell", info)
        if self.history is not None:
            self.history.store_input(number, code)

    def cell_value(self, value, store_history):
        """The cell's displayed value: `_`, `Out` and friends."""
        if self._current is not None:
            self._current.result = value
        if self.history is not None and store_history:
            self.history.store_output(self._kernel.execution_count, value)

    def after_cell(self, error, before_exec, silent, store_history):
        result = self._current
        if result is None:
            return
        self._current = None
        result.execution_count = self._kernel.execution_count
        if self.history is not None:
            self.history.note_directory()
        if before_exec:
            result.error_before_exec = error
        else:
            result.error_in_exec = error
        self.events.trigger("post_execute")
        if not silent:
            self.events.trigger("post_run_cell", result)

    def format_error(self, error, tb):
        """Traceback lines in the chosen %xmode (None: Python's own format)."""
        if type(error) is UsageError:
            return ["UsageError: %s\n" % error]  # a magic's misuse: no frames to show
        if not isinstance(error, KeyboardInterrupt):
            self.last_error = (error, tb)
        if self._debug is None:
            return None
        return self._debug.format_error(error, tb)


def _user_line_magic(func, kind):
    def call(args, frame):
        return func(args) if kind == "line" else func(args, None)

    call.__doc__ = func.__doc__
    return call


def _user_cell_magic(func):
    def call(args, body, frame):
        return func(args, body)

    call.__doc__ = func.__doc__
    return call


def install(kernel, magics):
    """Create the shell (`get_ipython()`) with its history, and let %precision
    choose how float results are shown."""
    shell = Shell(kernel, magics)
    shell.history = History(kernel.namespace)
    display.float_text = lambda value: shell._settings.format_float(value) if shell._settings is not None else None
    return shell
