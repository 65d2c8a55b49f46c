"""`%store`: variables kept on disk for later kernels, as IPython's storemagic.

One pickle file per variable in `<store>/<first 16 hex digits of
sha256(project dir)>/`, where the project directory is the kernel's working
directory when it started: each project has its own store, and nothing is
written inside the project. `<store>` is `$CELLBOX_STORE_DIR`, which the host
sets for a sandboxed kernel to a folder of its principal's own (so that no
other principal's kernel can plant a pickle there), else
`$XDG_DATA_HOME/cellbox/store` (`~/.local/share` when XDG_DATA_HOME is unset).
"""
import os
import shlex
import types

from .. import display
from .framework import UsageError


def store_dir(shell):
    """The folder where this project's variables are kept."""
    import hashlib  # here, not at start-up: few kernels ever %store

    base = os.environ.get("CELLBOX_STORE_DIR") or os.path.join(
        os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share"), "cellbox", "store"
    )
    digest = hashlib.sha256(os.path.abspath(shell.start_directory).encode("utf-8", "surrogateescape")).hexdigest()[:16]
    return os.path.join(base, digest)


def _path(shell, name):
    if not name.isidentifier():
        raise UsageError("%store: %r is not a variable name" % name)
    return os.path.join(store_dir(shell), name)


def _stored_names(shell):
    try:
        return sorted(name for name in os.listdir(store_dir(shell)) if name.isidentifier())
    except FileNotFoundError:
        return []


def _load(shell, name):
    import pickle

    with open(_path(shell, name), "rb") as handle:
        return pickle.load(handle)


def store(shell, args, frame):
    """IPython's `%store`: `%store var [var ...]` saves, `%store -r [var ...]`
    restores, `%store -d var` forgets, `%store -z` forgets all, `%store`
    lists, `%store var >file` / `>>file` writes the value to a text file."""
    words = shlex.split(args)
    flags = {word for word in words if word in ("-r", "-d", "-z")}
    names = [word for word in words if word not in ("-r", "-d", "-z")]
    namespace = frame.f_globals
    if "-d" in flags:
        if not names:
            raise UsageError("You must provide the variable to forget")
        try:
            os.remove(_path(shell, names[0]))
        except OSError:
            raise UsageError("Can't delete variable '%s'" % names[0]) from None
    elif "-z" in flags:
        for name in _stored_names(shell):
            os.remove(_path(shell, name))
    elif "-r" in flags:
        for name in names or _stored_names(shell):
            try:
                namespace[name] = _load(shell, name)
            except FileNotFoundError:
                print("no stored variable or alias %s" % name)
            except Exception as error:
                print("Unable to restore variable '%s', ignoring (use %%store -d to forget!)" % name)
                print("The error was:", type(error))
    elif not names:
        _list(shell)
    elif len(names) > 1 and names[1].startswith(">"):
        _write_text(names[0], names[1], frame)
    else:
        for name in names:
            if name not in namespace:
                raise UsageError("Unknown variable '%s'" % name)
            if not _save(shell, name, namespace[name]):
                return None
    display.emit_status("store", args=args, dir=store_dir(shell))
    return None


def _save(shell, name, value):
    defined_by = value if isinstance(value, (type, types.FunctionType)) else type(value)
    module = getattr(defined_by, "__module__", None)
    if module == "__main__":
        print(
            "Warning:%s is %s\nProper storage of interactively declared classes (or instances\n"
            "of those classes) is not possible! Only instances\nof classes in real modules on file system "
            "can be %%store'd.\n" % (name, value)
        )
        return False
    os.makedirs(store_dir(shell), exist_ok=True)
    path = _path(shell, name)
    temporary = path + ".tmp"
    import pickle

    with open(temporary, "wb") as handle:
        pickle.dump(value, handle, protocol=pickle.HIGHEST_PROTOCOL)
    os.replace(temporary, path)
    print("Stored '%s' (%s)" % (name, type(value).__name__))
    return True


def _list(shell):
    names = _stored_names(shell)
    width = max(map(len, names)) if names else 0
    print("Stored variables and their in-db values:")
    for name in names:
        try:
            text = repr(_load(shell, name))
        except Exception:
            text = "<unavailable>"
        print("%-*s -> %s" % (width, name, text[:50]))


def _write_text(name, target, frame):
    path = os.path.expanduser(target.lstrip(">").strip())
    value = eval(name, frame.f_globals, frame.f_locals)
    print("Writing '%s' (%s) to file '%s'." % (name, type(value).__name__, path))
    with open(path, "a" if target.startswith(">>") else "w", encoding="utf-8") as handle:
        if isinstance(value, str):
            handle.write(value if value.endswith("\n") else value + "\n")
        else:
            import pprint

            pprint.pprint(value, handle)


LINE_MAGICS = {"store": store}
