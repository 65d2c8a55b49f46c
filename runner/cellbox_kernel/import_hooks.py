"""Run a function right after a given module is first imported.

Used to adapt third-party modules the moment user code imports them
(matplotlib's `plt.show`, IPython's `display`) without importing them
ourselves. The finder is consulted for every import, so it only compares
the name against a dict before stepping aside.
"""
import sys

_callbacks = {}


class _Loader:
    def __init__(self, loader, callback):
        self._loader = loader
        self._callback = callback

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        try:
            self._callback(module)
        except Exception as error:  # an adapter must never break the import
            sys.stderr.write("[cellbox] adapting %s failed: %s\n" % (module.__name__, error))

    def __getattr__(self, name):
        return getattr(self._loader, name)


class _Finder:
    def find_spec(self, fullname, path, target=None):
        callback = _callbacks.get(fullname)
        if callback is None:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _Loader(spec.loader, callback)
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
