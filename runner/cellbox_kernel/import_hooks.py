"""Run a function right after a given module is first imported (or right
before its code runs).

Used to adapt third-party modules the moment user code imports them
(matplotlib's `plt.show`, IPython's `display`, what pandas decides at import)
without importing them ourselves. The finder is consulted for every import,
so it only compares the name against a dict before stepping aside.
"""
import sys

_callbacks = {}  # name -> called once the module's code has run
_before = {}  # name -> called on the new module before its code runs


def _adapt(callback, module):
    if callback is None:
        return
    try:
        callback(module)
    except Exception as error:  # an adapter must never break the import
        sys.stderr.write("[cellbox] adapting %s failed: %s\n" % (module.__name__, error))


class _Loader:
    def __init__(self, loader, callback, before=None):
        self._loader = loader
        self._callback = callback
        self._before = before

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        _adapt(self._before, module)
        self._loader.exec_module(module)
        _adapt(self._callback, module)

    def __getattr__(self, name):
        return getattr(self._loader, name)


class _Finder:
    def find_spec(self, fullname, path, target=None):
        callback = _callbacks.get(fullname)
        before = _before.get(fullname)
        if callback is None and before is None:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _Loader(spec.loader, callback, before)
                return spec
        return None


_finder = _Finder()


def on_import(name, callback):
    """Call callback(module) after `name` is imported (now, if it already is)."""
    _callbacks[name] = callback
    if _finder not in sys.meta_path:
        sys.meta_path.insert(0, _finder)
    if name in sys.modules:
        callback(sys.modules[name])


def before_import(name, callback):
    """Call callback(module) on `name`'s new module just before its code runs,
    so names it sets are there for that code (now, if `name` is already
    imported: then only for what its code does from now on)."""
    _before[name] = callback
    if _finder not in sys.meta_path:
        sys.meta_path.insert(0, _finder)
    if name in sys.modules:
        callback(sys.modules[name])
