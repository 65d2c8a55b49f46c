"""The object the generated code calls: what `%name`, `%%name`, `!cmd` and
`var = !cmd` do.

The transformer turns each form into a call on the `Magics` object the
kernel puts in builtins as `__cellbox_magic__`. Behaviour follows IPython's;
each magic also emits a status event (`application/x-cellbox-status`).

The magics themselves live in the group modules of this package; this one
gathers their tables. The groups most cells use are imported with the
kernel; the others only when one of their magics is first used (or listed).
"""
import importlib
import sys

from .. import shell as shell_module
from ..expansion import expand
from ..slist import SList
from . import execution, packages, scripts, system
from .framework import bind, misuse

# Imported with the kernel, in this order (a later group's name wins).
EAGER_GROUPS = (execution, system, scripts, packages)

# The other groups' magics, by module: (line magic names, cell magic names).
LAZY_GROUPS = {
    "extensions": (("load_ext", "unload_ext", "reload_ext"), ()),
    "history": (("history", "hist", "recall", "rep", "rerun", "save", "dhist"), ()),
    "config": (("matplotlib", "pylab", "config", "precision", "pprint"), ()),
    "debug": (("xmode", "tb", "debug", "pdb", "prun"), ("prun", "debug")),
    "introspection": (("pinfo", "pinfo2", "pdoc", "pdef", "psource", "pfile", "psearch"), ()),
    "namespace": (("who", "whos", "who_ls", "reset", "reset_selective", "xdel"), ()),
    "store": (("store",), ()),
    "catalog": (
        (
            "lsmagic", "magic", "quickref", "alias_magic", "pushd", "popd", "dirs", "page", "pycat", "loadpy",
            "less", "more", "autoawait", "automagic", "autocall", "colors", "notebook",
            "edit", "ed", "gui", "qtconsole", "connect_info", "clear", "autosave", "man", "doctest_mode",
            "pastebin", "logstart", "logon", "logoff", "logstate", "logstop", "macro", "rehashx", "sc",
            "bookmark", "code_wrap", "killbgscripts",
        ),
        ("code_wrap", "HTML", "SVG"),
    ),
}  # fmt: skip

# Magics whose arguments are code, where `$x` and `{x}` must stay as written.
_NO_EXPANSION = frozenset(("time", "timeit", "prun"))


class LazyMagic:
    """A table entry that imports its group on first use; `__doc__` and
    `unavailable` (set on magics that cannot work here) come from the real function."""

    def __init__(self, shell, module, kind, name):
        self._shell = shell
        self._where = (module, kind, name)
        self._function = None

    def _resolve(self):
        if self._function is None:
            module, kind, name = self._where
            loaded = importlib.import_module("." + module, __package__)
            self._function = (loaded.LINE_MAGICS if kind == "line" else loaded.CELL_MAGICS)[name]
        return self._function

    def __call__(self, *args):
        return self._resolve()(self._shell, *args)

    @property
    def __doc__(self):
        return self._resolve().__doc__

    def __getattr__(self, attribute):
        if attribute == "unavailable":
            return getattr(self._resolve(), "unavailable")
        raise AttributeError(attribute)


class Magics:
    """Everything the generated code calls. `kernel` gives the user namespace,
    a way to run code fragments, and output diversion for `%%capture`.

    The tables map a name to `function(args, frame)` (line) or
    `function(args, body, frame)` (cell); `get_ipython()` (`self.shell`)
    reads and extends them."""

    def __init__(self, kernel):
        self._kernel = kernel
        self._line_magics = {}
        self._cell_magics = {}
        # get_ipython(), history, settings, help, debugging and the rest of IPython's magics.
        self.shell = shell_module.install(kernel, self)
        for group in EAGER_GROUPS:
            for name, function in getattr(group, "LINE_MAGICS", {}).items():
                self._line_magics[name] = bind(self.shell, function)
            for name, function in getattr(group, "CELL_MAGICS", {}).items():
                self._cell_magics[name] = bind(self.shell, function)
        system.setup(self.shell)
        for module, (lines, cells) in LAZY_GROUPS.items():
            for name in lines:
                self._line_magics[name] = LazyMagic(self.shell, module, "line", name)
            for name in cells:
                self._cell_magics[name] = LazyMagic(self.shell, module, "cell", name)

    # entry points used by the generated code -------------------------------

    def line(self, name, args):
        return self.call_line(name, args, sys._getframe(1))

    def cell(self, name, args, body):
        return self.call_cell(name, args, body, sys._getframe(1))

    def call_line(self, name, args, frame):
        """Run line magic `name` for the code running in `frame`."""
        method, args = self._resolve(self._line_magics, "Line magic function `%%%s` not found.", name, args, frame)
        return method(args, frame)

    def call_cell(self, name, args, body, frame):
        method, args = self._resolve(self._cell_magics, "Cell magic `%%%%%s` not found.", name, args, frame)
        return method(args, body, frame)

    def line_table(self):
        """{name: function(args, frame)}: the line magics, open to extensions."""
        return self._line_magics

    def cell_table(self):
        """{name: function(args, body, frame)}: the cell magics."""
        return self._cell_magics

    def _resolve(self, table, missing, name, args, frame):
        """The magic's function and its arguments, expanded in the user's frame."""
        method = table.get(name)
        if method is None:
            raise misuse(missing % name)
        if name not in _NO_EXPANSION:
            args = expand(args, frame)
        return method, args

    def system(self, command):
        """`!cmd`: run in a shell, output streaming into the cell; sets `_exit_code`."""
        frame = sys._getframe(1)
        command = expand(command, frame)
        import subprocess  # here, not at start-up: most kernels start no child

        code = subprocess.call(command, shell=True, stdin=subprocess.DEVNULL)
        self._kernel.namespace["_exit_code"] = code
        return None

    def getoutput(self, command):
        """`var = !cmd` / `!!cmd`: the output lines (stderr merged) as an SList."""
        frame = sys._getframe(1)
        command = expand(command, frame)
        import subprocess  # here, not at start-up: most kernels start no child

        process = subprocess.run(
            command, shell=True, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        )
        self._kernel.namespace["_exit_code"] = process.returncode
        return SList(process.stdout.decode("utf-8", "replace").splitlines())
