"""Save a session's variables to a file and restore them into a fresh kernel.

Classes and functions defined in cells (in the `__main__` dict, usermain.py)
exist only in that kernel, so plain pickle's reference `__main__.f` would not
resolve elsewhere: they are saved by value (code through `marshal`), and their
globals become the restoring namespace, as for a function defined there.
Modules and importable classes and functions go by reference, data by value.
Loading unpickles and so runs code: load only snapshots you wrote yourself.

Each name is pickled on its own: one that cannot be pickled is skipped, one
that cannot be unpickled (its module is gone) fails, the others are intact.
Identity holds where it matters: a name's pickle exports the objects it met
that are other names' values, or classes, functions and cells saved by
value, and later names refer to those (`type(p) is P`, `b is a` after
`b = a`, closures sharing a cell), failing if that name failed. Other objects
two names share are copied into both: finding them would need each
pickler's whole memo, which costs as much as the pickling itself.

Those references are persistent ids, and the C pickler calls `persistent_id`
(in Python) for every object it meets, each float of a list included. So a
value is first pickled without it, and again with it only when that pickle
met what needs a reference: a definition saved by value, the namespace, or
another name's value (a list of a million floats: 0.27 s → 0.03 s).

The file's layout and the checks before a load are in snapshot_file.py.
"""
import builtins
import datetime
import enum
import functools
import importlib
import io
import json
import marshal
import os
import pickle
import re
import sys
import types
import zlib

from . import prelude
from .snapshot_file import FORMAT_VERSION, MAGIC, PYTHON, SnapshotError, read, read_header, write_atomically

__all__ = ["SnapshotError", "save", "save_to", "load", "load_from", "read_header"]

_PROTOCOL = pickle.HIGHEST_PROTOCOL
_MEMO_LOOKS = 500_000  # memoized objects at most whose memo is copied (see _needs_references)
# Values whose copies are as good as the original: never referred to across names.
_COPIED = frozenset((type(None), bool, int, float, complex, str, bytes))

# What every module has (usermain.py); the new kernel sets its own.
_MODULE_NAMES = frozenset(("__name__", "__doc__", "__package__", "__loader__", "__spec__", "__builtins__"))
# The shell's history (magics/history.py) and `!cmd`'s exit status
# (magics/dispatch.py): the new kernel starts its own history.
_SHELL_NAMES = frozenset(("In", "Out", "_ih", "_oh", "_dh", "_", "__", "___", "_i", "_ii", "_iii", "_exit_code"))
_NUMBERED = re.compile(r"_i?\d+\Z")  # `_N` outputs, `_iN` and `_i00` inputs

def _dataclass_sentinels():
    """{id: name} of `dataclasses`' sentinels, or {} when no cell imported it
    (then nothing in the namespace is a dataclass). dataclasses tells field
    kinds apart by identity (`f._field_type is _FIELD`): copies of these
    sentinels would make `dataclasses.fields()` come back empty."""
    dataclasses = sys.modules.get("dataclasses")
    if dataclasses is None:
        return {}
    return {
        id(value): name
        for name, value in vars(dataclasses).items()
        if type(value).__module__ == "dataclasses" and not isinstance(value, type)
    }
# What `type()` must get when a class is created; the rest of the class body
# is set afterwards, once the class exists for its methods to refer to.
# Slots make the instance layout; Generic checks `__orig_bases__`.
_CLASS_BODY = ("__module__", "__qualname__", "__doc__", "__slots__", "__orig_bases__")
_FUNCTION_ATTRS = ("__defaults__", "__kwdefaults__", "__annotations__", "__qualname__", "__doc__", "__module__")

# Hints for the kinds of object that never pickle, by type name.
_CANNOT_SAVE = {
    "generators cannot be saved": "generator async_generator",
    "coroutines cannot be saved": "coroutine",
    "frames cannot be saved": "frame traceback",
    "open files cannot be saved; keep the path and open the file again after restoring": (
        "TextIOWrapper BufferedReader BufferedWriter BufferedRandom FileIO"
    ),
    "sockets cannot be saved; connect again after restoring": "socket SSLSocket",
    "locks cannot be saved; create them again after restoring": "lock RLock Lock Condition Event",
    "threads cannot be saved; start them again after restoring": "Thread",
}
_HINTS = {kind: hint for hint, kinds in _CANNOT_SAVE.items() for kind in kinds.split()}
_UNPICKLABLE = re.compile(r"cannot pickle '([\w.]+)'")


def save(namespace, path, cellbox_version, shell=None):
    """Write the user's names in `namespace` to `path`, atomically (a crash
    leaves the old file or the new one, never half of one), with `shell`'s
    settings in its header (see shell_settings.py).

    Returns {"saved": [names], "skipped": [{"name", "reason"}], "bytes": file
    size, "path": absolute path}. Every user name is saved or listed as skipped.
    """
    report, chunks = _prepare(namespace, cellbox_version, shell)
    path = os.path.abspath(os.fspath(path))
    write_atomically(path, chunks)
    report["path"] = path
    return report


def save_to(namespace, handle, cellbox_version, shell=None):
    """Write the user's names in `namespace` into `handle` (a binary file open
    for writing, the host's: see `handoff.py`), from where it stands; the
    file's owner makes it durable. Returns `save`'s report without "path"."""
    report, chunks = _prepare(namespace, cellbox_version, shell)
    for chunk in chunks:
        handle.write(chunk)
    handle.flush()
    return report


def _prepare(namespace, cellbox_version, shell=None):
    """The report and the file's chunks (not joined: the payload may be large)."""
    entries, skipped = _pickle_names(namespace)
    payload = pickle.dumps(entries, _PROTOCOL)
    header = {
        "format": FORMAT_VERSION,
        "python": PYTHON,
        "implementation": sys.implementation.name,
        "cellbox": cellbox_version,
        "created": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "names": len(entries),
        "payload_bytes": len(payload),
        "payload_crc32": zlib.crc32(payload),
    }
    if shell is not None:
        from . import shell_settings

        settings, unsaved = shell_settings.collect(shell)
        skipped.extend(unsaved)
        if settings:
            header["settings"] = settings
    chunks = [MAGIC, json.dumps(header).encode("ascii") + b"\n", payload]
    size = sum(len(chunk) for chunk in chunks)
    return {"saved": [name for name, _pickles in entries], "skipped": skipped, "bytes": size}, chunks


def load(path, namespace, shell=None):
    """Restore the names saved in `path` into `namespace` (a dict), then the
    shell's settings saved with them into `shell` (when given).

    Returns {"restored": [names], "failed": [{"name", "reason"}], "settings":
    [magic lines replayed], "header": {...}}: a name or setting that cannot be
    restored (say its module is no longer installed) is reported in "failed",
    and the others are still restored. Raises SnapshotError for a file that is
    not a loadable snapshot, before changing `namespace` (which otherwise also
    gets `__builtins__` if it has none).
    """
    with open(path, "rb") as handle:
        return load_from(handle, namespace, path, shell)


def load_from(handle, namespace, path, shell=None):
    """`load` from `handle` (a binary file open for reading, from its start);
    `path` only names it in messages."""
    header, payload = read(handle, path)
    entries = pickle.loads(payload)
    del payload  # the entries hold a copy of it
    # Before Python 3.10 a function finds the builtins through its globals, even while unpickling.
    namespace.setdefault("__builtins__", builtins)
    # Extensions first (one may patch what the values import), the other settings after the values.
    settings, failed = _replay(shell, header, "EARLY")
    shared = {}  # name -> the objects its pickle exports, for later names to refer to
    restored = []
    for name, data in entries:
        unpickler = _Unpickler(io.BytesIO(data), namespace, shared)
        try:
            value = unpickler.load()
            shared[name] = unpickler.load()
        except Exception as error:
            failed.append({"name": name, "reason": _load_reason(error)})
            continue
        namespace[name] = value
        restored.append(name)
    late, unset = _replay(shell, header, "LATE")
    failed.extend(unset)
    return {"restored": restored, "failed": failed, "settings": settings + late, "header": header}


def _replay(shell, header, which):
    """Replay the header's settings whose magics are `which` (shell_settings.EARLY or LATE)."""
    if shell is None or not header.get("settings"):
        return [], []
    from . import shell_settings

    return shell_settings.replay(shell, header["settings"], getattr(shell_settings, which), which == "LATE")


# saving ------------------------------------------------------------------


def _pickle_names(namespace):
    """([(name, pickles)], skipped) for the names worth saving."""
    names = _save_order(namespace)
    values = {id(namespace[name]) for name in names if _keeps_identity(namespace[name])}
    shared = {}  # id -> ((name, position), object) of what earlier names' pickles export
    entries, skipped = [], []
    for name in names:
        try:
            pickles, exports = _pickle_value(namespace[name], namespace, values, shared)
        except Exception as error:
            skipped.append({"name": name, "reason": _save_reason(namespace[name], error)})
            continue
        entries.append((name, pickles))
        for position, obj in enumerate(exports):
            shared[id(obj)] = ((name, position), obj)  # the object is kept so that its id stays unique
    return entries, skipped


def _pickle_value(value, namespace, values, shared):
    """(the pickles of `value` and of its exports, the exports)."""
    if value is not namespace and id(value) not in shared:
        stream = io.BytesIO()
        pickler = _PlainPickler(stream, namespace, values, shared)
        try:
            pickler.dump(value)
        except Exception:  # it needs references, or the error is for the referencing pickler to word
            pickler = None
        if pickler is not None and not _needs_references(
            pickler, stream.getvalue(), value, namespace, values, shared
        ):
            exports = [value] if id(value) in values else []
            pickler.dump(exports)
            return stream.getvalue(), exports
    stream = io.BytesIO()
    pickler = _ReferencingPickler(stream, namespace, values, shared)
    pickler.dump(value)
    exports = list(pickler.exports.values())
    pickler.dump(exports)  # all in the pickler's memo by now: a list of references
    return stream.getvalue(), exports


def _needs_references(pickler, pickles, value, namespace, values, shared):
    """Whether the plain pickle met an object that the referencing pickler
    would have written as a reference (or exported): the namespace, an
    earlier name's export, another name's value. Everything but numbers is
    in the memo, so a set intersection tells; but a copy of the memo costs
    about 150 bytes per object, so a pickle that may have memoized more than
    _MEMO_LOOKS objects (counted by the MEMOIZE byte, which data can hold
    too) is redone with references instead."""
    if pickles.count(pickle.MEMOIZE) > _MEMO_LOOKS:
        return True
    try:
        met = pickler.memo.copy().keys()
    except MemoryError:
        return True
    if id(namespace) in met or not met.isdisjoint(shared.keys()):
        return True
    return not (met & values) <= {id(value)}


def _keeps_identity(value):
    """Whether other names must refer to this value rather than copy it: not
    for strings and numbers, whose copies are as good, nor for what is looked
    up by name (modules, importable classes and functions)."""
    if type(value) in _COPIED or isinstance(value, (types.ModuleType, types.BuiltinFunctionType)):
        return False
    if isinstance(value, type):
        return value.__module__ == "__main__"
    return _by_value(value) if isinstance(value, types.FunctionType) else True


def _save_order(namespace):
    """The names to save: classes, functions, then the rest, each in the
    namespace's order (a base class is defined before its subclasses). So a
    definition is pickled whole in its own entry and does not depend on data."""
    helpers = {}
    prelude.install(helpers)  # the prelude's helpers: the new kernel installs its own
    names = [name for name, value in list(namespace.items()) if not _excluded(name, value, helpers)]
    return sorted(names, key=lambda name: _rank(namespace[name]))


def _rank(value):
    return 0 if isinstance(value, type) else 1 if isinstance(value, types.FunctionType) else 2


def _excluded(name, value, helpers):
    """Names the runner made: the module's own, the shell's history, and the
    prelude's helpers unless the user bound the name to something else."""
    if name in _MODULE_NAMES or name in _SHELL_NAMES or _NUMBERED.match(name):
        return True
    return name in helpers and helpers[name] is value


def _save_reason(value, error):
    """Why a value was skipped, with a hint for the kinds of object that never pickle."""
    message = str(error)[:500]
    found = _UNPICKLABLE.search(message)
    inner = found.group(1).rpartition(".")[2] if found else None
    hint = _HINTS.get(type(value).__name__) or _HINTS.get(inner)
    detail = "%s: %s" % (type(error).__name__, message)
    return "%s: %s" % (type(value).__name__, "%s (%s)" % (hint, detail) if hint else detail)


class _ModuleGlobals:
    """Stands for a module's dict as a function's globals; imported when loading."""

    def __init__(self, module):
        self.module = module


class _Pickler(pickle.Pickler):
    """Pickles cell-defined classes and functions by value (see the module doc);
    without `persistent_id`, for `_PlainPickler`."""

    def __init__(self, file, namespace, values, shared):
        super().__init__(file, _PROTOCOL)
        self.namespace = namespace
        self.values = values  # ids of the values of the names being saved
        self.shared = shared
        self.exports = {}  # id -> object, for later names to refer to
        self.sentinels = _dataclass_sentinels()
        # Cells whose contents their function's state sets: the function
        # needs its cells before it exists, and the contents may be the
        # function itself (a recursive closure).
        self.owned_cells = set()

    def reducer_override(self, obj):
        kind = type(obj)
        if kind is types.FunctionType:
            if not _by_value(obj):
                return NotImplemented
            self.exports[id(obj)] = obj
            return self._reduce_function(obj)
        if isinstance(obj, type):
            if getattr(obj, "__module__", None) != "__main__":
                return NotImplemented
            self.exports[id(obj)] = obj
            return _reduce_class(obj)
        if isinstance(obj, types.ModuleType):
            return _reduce_module(obj)
        if kind is types.CellType:
            self.exports[id(obj)] = obj
            if id(obj) in self.owned_cells:
                return _make_cell, ()
            return _make_cell, (), _contents(obj), None, None, _fill_cell
        # Parts of class bodies that pickle cannot handle by itself.
        if kind in (staticmethod, classmethod):
            return kind, (obj.__func__,)
        if isinstance(obj, property):
            return kind, (obj.fget, obj.fset, obj.fdel, obj.__doc__)
        if kind is functools.cached_property:  # holds a lock before Python 3.12
            return kind, (obj.func,), {"attrname": obj.attrname}
        if kind is types.MappingProxyType:  # dataclass field metadata
            return _mappingproxy, (dict(obj),)
        if id(obj) in self.sentinels:
            return getattr, (sys.modules["dataclasses"], self.sentinels[id(obj)])
        return NotImplemented

    def _reduce_function(self, func):
        cells = func.__closure__ or ()
        self.owned_cells.update(id(cell) for cell in cells)
        state = {attr: getattr(func, attr) for attr in _FUNCTION_ATTRS}
        state["__dict__"] = func.__dict__
        state["closure"] = [_contents(cell) for cell in cells]
        args = (marshal.dumps(func.__code__), self._globals_of(func), func.__name__, func.__closure__)
        return _make_function, args, state, None, None, _set_function_state

    def _globals_of(self, func):
        """Where the restored function looks up globals: the restoring
        namespace for cell code (also `%run` scripts, run as `__main__`), a
        module's own dict for code from a module, else a copy of just the
        names it uses (a namedtuple's generated `__new__`)."""
        found = func.__globals__
        module = found.get("__name__")
        if found is self.namespace or module == "__main__":
            return self.namespace
        if getattr(sys.modules.get(module), "__dict__", None) is found:
            return _ModuleGlobals(module)
        return {name: found[name] for name in _global_names(func.__code__) | {"__builtins__"} if name in found}


class _PlainPickler(_Pickler):
    """The pickler tried first: a definition saved by value needs references
    (it exports itself, its globals are the namespace), so it stops there."""

    def reducer_override(self, obj):
        kind = type(obj)
        if kind is types.CellType or kind is types.FunctionType and _by_value(obj):
            raise _NeedsReferences
        if isinstance(obj, type) and getattr(obj, "__module__", None) == "__main__":
            raise _NeedsReferences
        return super().reducer_override(obj)


class _NeedsReferences(Exception):
    """The value holds a definition saved by value."""


class _ReferencingPickler(_Pickler):
    """Writes the namespace, another name's exports and module dicts as
    references, and exports what other names have as values."""

    def persistent_id(self, obj):
        kind = type(obj)
        if kind in _COPIED:  # most objects: a quick way out
            return None
        if obj is self.namespace:  # a function's globals, or `space = globals()`
            return ("globals", None)
        if kind is _ModuleGlobals:
            return ("globals", obj.module)
        key = id(obj)
        found = self.shared.get(key)
        if found is not None:
            return ("shared",) + found[0]
        if key in self.values:
            self.exports[key] = obj
        return None


def _by_value(func):
    """Cell-defined functions, and those pickle cannot find by their name
    (closures made by library code, a namedtuple's `__new__`)."""
    if func.__module__ == "__main__":
        return True
    target = sys.modules.get(func.__module__)
    for part in func.__qualname__.split("."):
        target = getattr(target, part, None)
    return target is not func


def _global_names(code):
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _global_names(const)
    return names


def _contents(cell):
    """() for an empty cell (a variable not assigned yet), else (contents,)."""
    try:
        return (cell.cell_contents,)
    except ValueError:
        return ()


def _reduce_class(cls):
    if isinstance(cls, enum.EnumMeta):
        # EnumMeta makes the members from the class body, which is set after creation here.
        raise pickle.PicklingError("enum classes defined in a cell cannot be saved; define the enum in a module")
    attrs = {name: value for name, value in vars(cls).items() if not _made_by_type(cls, name, value)}
    body = {name: attrs.pop(name) for name in _CLASS_BODY if name in attrs}
    return _make_class, (type(cls), cls.__name__, cls.__bases__, body), attrs, None, None, _set_attributes


def _made_by_type(cls, name, value):
    """Attributes the metaclass creates again: `__dict__`, `__weakref__`, slot
    descriptors, and ABCMeta's registry (its virtual subclasses are lost)."""
    if name == "_abc_impl":
        return True
    return isinstance(value, (types.GetSetDescriptorType, types.MemberDescriptorType)) and value.__objclass__ is cls


def _reduce_module(module):
    name = module.__name__
    if sys.modules.get(name) is not module:
        raise pickle.PicklingError("module %r was not imported by name, so it cannot be imported again" % name)
    return importlib.import_module, (name,)


# restoring (the functions the pickles name) -------------------------------


class _Unpickler(pickle.Unpickler):
    def __init__(self, file, namespace, shared):
        super().__init__(file)
        self.namespace = namespace
        self.shared = shared

    def persistent_load(self, pid):
        if pid[0] == "globals":
            return self.namespace if pid[1] is None else vars(importlib.import_module(pid[1]))
        _kind, name, position = pid
        if name not in self.shared:
            raise _SharedWithFailed("it shares objects with %r, which could not be restored" % name)
        return self.shared[name][position]


class _SharedWithFailed(Exception):
    """A name refers to an object of an earlier name that could not be restored."""


def _make_function(code, globals_, name, closure):
    return types.FunctionType(marshal.loads(code), globals_, name, None, closure)


def _set_function_state(func, state):
    for cell, contents in zip(func.__closure__ or (), state.pop("closure")):
        _fill_cell(cell, contents)
    func.__dict__.update(state.pop("__dict__"))
    _set_attributes(func, state)


def _make_cell():
    return types.CellType()


def _fill_cell(cell, contents):
    if contents:
        cell.cell_contents = contents[0]


def _make_class(metaclass, name, bases, body):
    return metaclass(name, bases, dict(body))


def _set_attributes(obj, attrs):
    for name, value in attrs.items():
        setattr(obj, name, value)


def _mappingproxy(mapping):
    return types.MappingProxyType(mapping)


def _load_reason(error):
    if isinstance(error, _SharedWithFailed):
        return str(error)
    reason = "%s: %s" % (type(error).__name__, str(error)[:500])
    if isinstance(error, ImportError):
        reason += "; make the module importable in this kernel, then load the snapshot again"
    return reason
