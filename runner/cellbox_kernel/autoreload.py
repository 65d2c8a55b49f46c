"""The `autoreload` extension, built in: edited modules are reloaded before each cell.

`%load_ext autoreload` then `%autoreload 2` is the habit of notebook users
who edit a package beside the notebook. As in IPython, a module is reloaded
when its source file's mtime moved past the one recorded for it, and objects
the user already holds (functions, classes) are updated in place, so old
references run the new code. Modes: 0/off, 1/explicit (only `%aimport`-ed
modules), 2/all (all but the `%aimport -name` ones), 3/complete (2, plus the
names cells took with `from module import ...` are rebound to the new module).
"""
import ast
import importlib
import importlib.util
import os
import sys
import traceback
import types

from .magics.framework import UsageError

_MODES = {"0": 0, "off": 0, "1": 1, "explicit": 1, "2": 2, "all": 2, "3": 3, "complete": 3}


class Reloader:
    """Which modules to watch, their recorded mtimes, and the reloading."""

    def __init__(self, shell):
        self.shell = shell
        self.mode = 0
        self.explicit = set()  # %aimport name
        self.skipped = set()  # %aimport -name
        self.mtimes = {}
        self.failed = {}  # source path -> mtime whose reload failed
        self.imports_from = {}  # module -> {user name: attribute} (mode 3)
        self.report = None  # print, with --print
        self.hide_errors = False
        self.known_modules = set(sys.modules)
        self.check(everything=True, reload=False)

    def check(self, everything=False, reload=True):
        """Reload every watched module whose source changed since last seen."""
        if everything or self.mode >= 2:
            names = list(sys.modules)
        else:
            names = list(self.explicit)
        for name in names:
            module = sys.modules.get(name)
            if name in self.skipped or module is None:
                continue
            path, mtime = source_and_mtime(module)
            if path is None:
                continue
            seen = self.mtimes.get(name)
            if seen is None or mtime <= seen:
                self.mtimes.setdefault(name, mtime)
                continue
            self.mtimes[name] = mtime
            if not reload or self.failed.get(path) == mtime:
                continue
            if self.report is not None:
                self.report("Reloading '%s'." % name)
            try:
                superreload(module)
                self.failed.pop(path, None)
                if self.mode == 3:
                    self._rebind_imported_names(name, module)
            except Exception:
                self.failed[path] = mtime
                if not self.hide_errors:
                    sys.stderr.write("[autoreload of %s failed: %s]\n" % (name, traceback.format_exc(10)))

    def after_cell(self, result=None):
        """Record the mtimes of modules the cell imported, so a later edit reloads them."""
        if self.mode == 3 and result is not None and result.success:
            self._track_imports_from(result.info.raw_cell)
        for name in set(sys.modules) - self.known_modules:
            module = sys.modules.get(name)
            path, mtime = source_and_mtime(module)
            if path is not None:
                self.mtimes[name] = mtime
        self.known_modules.update(sys.modules)

    def _track_imports_from(self, code):
        try:
            tree = ast.parse(code)
        except SyntaxError:
            return  # a cell with magics: its plain-Python imports are not tracked
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names = self.imports_from.setdefault(node.module, {})
                for alias in node.names:
                    names[alias.asname or alias.name] = alias.name

    def _rebind_imported_names(self, name, module):
        for user_name, attribute in self.imports_from.get(name, {}).items():
            if attribute == "*":
                public = getattr(module, "__all__", None) or [n for n in vars(module) if not n.startswith("_")]
                for each in public:
                    if hasattr(module, each):
                        self.shell.user_ns[each] = getattr(module, each)
            elif hasattr(module, attribute):
                self.shell.user_ns[user_name] = getattr(module, attribute)

    def before_cell(self, info=None):
        if self.mode:
            try:
                self.check()
            except Exception:
                pass


def source_and_mtime(module):
    """(source path, mtime) of a module loaded from a .py file, else (None, None)."""
    filename = getattr(module, "__file__", None)
    if not filename or getattr(module, "__name__", None) in (None, "__main__", "__mp_main__"):
        return None, None
    if not filename.endswith(".py"):
        try:
            filename = importlib.util.source_from_cache(filename)
        except (ValueError, NotImplementedError):
            return None, None
    try:
        return filename, os.stat(filename).st_mtime
    except OSError:
        return None, None


def superreload(module):
    """Reload `module` and update the functions and classes it had before in place."""
    old = dict(vars(module))
    # The bytecode cache compares whole-second mtimes: an edit within the same
    # second as the last import must not be read from a stale .pyc.
    importlib.invalidate_caches()
    cached = getattr(module, "__cached__", None)
    if cached:
        try:
            os.remove(cached)
        except OSError:
            pass
    module = importlib.reload(module)
    for name, old_object in old.items():
        new_object = vars(module).get(name)
        if new_object is not None and new_object is not old_object:
            _update(old_object, new_object)
    return module


def _update(old, new):
    if isinstance(old, types.FunctionType) and isinstance(new, types.FunctionType):
        for attribute in ("__code__", "__defaults__", "__doc__", "__dict__", "__kwdefaults__", "__annotations__"):
            try:
                setattr(old, attribute, getattr(new, attribute))
            except (AttributeError, TypeError, ValueError):
                pass
    elif isinstance(old, type) and isinstance(new, type):
        for key in list(vars(old)):
            if key not in vars(new) and key not in ("__dict__", "__weakref__"):
                try:
                    delattr(old, key)
                except (AttributeError, TypeError):
                    pass
        for key, value in vars(new).items():
            if key in ("__dict__", "__weakref__", "__doc__"):
                continue
            current = vars(old).get(key)
            if isinstance(current, types.FunctionType) and isinstance(value, types.FunctionType):
                _update(current, value)
            else:
                try:
                    setattr(old, key, value)
                except (AttributeError, TypeError):
                    pass
    elif isinstance(old, property) and isinstance(new, property):
        for getter in ("fget", "fset", "fdel"):
            if getattr(old, getter) is not None and getattr(new, getter) is not None:
                _update(getattr(old, getter), getattr(new, getter))


# the magics, and the extension's entry points --------------------------------

_reloader = None


def autoreload_magic(line):
    """`%autoreload [0|off|1|explicit|2|all|3|complete|now] [-p] [-l] [--hide-errors]`:
    reload edited modules before each cell (`now`, or nothing: once, right now)."""
    words = line.split()
    flags = [word for word in words if word.startswith("-") and not word[1:].isdigit()]
    modes = [word for word in words if word not in flags]
    mode = (modes[0] if modes else "now").lower().rstrip("-")
    reloader = _reloader
    reloader.report = print if ("-p" in flags or "--print" in flags) else None
    reloader.hide_errors = "--hide-errors" in flags
    if mode in ("", "now"):
        reloader.check(everything=True)
    elif mode in _MODES:
        reloader.mode = _MODES[mode]
    else:
        raise ValueError('Unrecognized autoreload mode "%s".' % mode)


def aimport_magic(line):
    """`%aimport`: list the watched and skipped modules; `%aimport a, b as c`:
    import and watch them (mode 1); `%aimport -a`: never reload `a`."""
    reloader = _reloader
    line = line.strip()
    if not line:
        if reloader.mode >= 2:
            sys.stdout.write("Modules to reload:\nall-except-skipped\n")
        else:
            sys.stdout.write("Modules to reload:\n%s\n" % " ".join(sorted(reloader.explicit)))
        sys.stdout.write("\nModules to skip:\n%s\n" % " ".join(sorted(reloader.skipped)))
        return
    for item in (part.strip() for part in line.split(",")):
        if item.startswith("-"):
            name = item[1:].strip()
            reloader.skipped.add(name)
            reloader.explicit.discard(name)
            continue
        real, _, alias = item.partition(" as ")
        real, alias = real.strip(), alias.strip()
        reloader.skipped.discard(real)
        reloader.explicit.add(real)
        importlib.import_module(real)
        top = real.split(".")[0]
        if alias:
            reloader.shell.push({alias: sys.modules[real]})
        else:
            reloader.shell.push({top: sys.modules[top]})
        module = sys.modules[real]
        path, mtime = source_and_mtime(module)
        if path is not None:
            reloader.mtimes.setdefault(real, mtime)


def load_ipython_extension(shell):
    """Register %autoreload and %aimport and check modules before every cell."""
    global _reloader
    if _reloader is None or _reloader.shell is not shell:
        _reloader = Reloader(shell)
    shell.register_magic_function(autoreload_magic, "line", "autoreload")
    shell.register_magic_function(aimport_magic, "line", "aimport")
    shell.events.register("pre_run_cell", _reloader.before_cell)
    shell.events.register("post_run_cell", _reloader.after_cell)


def unload_ipython_extension(shell):
    """Stop checking; %autoreload and %aimport stay (as in IPython), inactive."""
    if _reloader is not None:
        _reloader.mode = 0
        for event, callback in (("pre_run_cell", _reloader.before_cell), ("post_run_cell", _reloader.after_cell)):
            try:
                shell.events.unregister(event, callback)
            except ValueError:
                pass


__all__ = ["load_ipython_extension", "unload_ipython_extension", "UsageError"]
