"""Help on objects: `obj?`, `obj??`, `?obj`, `%pinfo`, `%pinfo2`, `%pdoc`,
`%pdef`, `%psource`, `%pfile`, `%psearch`.

The fields and their layout are IPython's (Type, String form, Length,
Signature / Init signature, Docstring, Source, File, ...), printed as text:
IPython shows them in a pager, which a cell does not have.
"""
import fnmatch
import inspect
import os
import re
import types

from .framework import UsageError

_SIMPLE_CALLABLES = (
    types.FunctionType,
    types.MethodType,
    types.BuiltinFunctionType,
    types.BuiltinMethodType,
    types.LambdaType,
)
_NOT_FOUND = object()
_GENERIC_INIT_DOC = object.__init__.__doc__


def _find(shell, name, frame):
    """(object, namespace label) for a dotted name or `%magic`; _NOT_FOUND when absent."""
    name = name.strip()
    if name.startswith("%"):
        bare = name.lstrip("%")
        table = shell._magics.cell_table() if name.startswith("%%") else shell._magics.line_table()
        magic = table.get(bare)
        if magic is None and not name.startswith("%%"):
            magic = shell._magics.cell_table().get(bare)
        return (magic, "magic") if magic is not None else (_NOT_FOUND, None)
    parts = name.split(".")
    if not all(part.isidentifier() for part in parts):
        return _NOT_FOUND, None
    import builtins

    for label, namespace in (("Interactive", frame.f_locals), ("Interactive", frame.f_globals), ("Python builtin", vars(builtins))):
        if parts[0] in namespace:
            obj = namespace[parts[0]]
            break
    else:
        magic = shell._magics.line_table().get(name) if len(parts) == 1 else None
        return (magic, "magic") if magic is not None else (_NOT_FOUND, None)
    for part in parts[1:]:
        try:
            obj = getattr(obj, part)
        except Exception:
            return _NOT_FOUND, None
    return obj, label


def _signature(obj, name):
    try:
        return name + str(inspect.signature(obj))
    except (TypeError, ValueError):
        return None


def _file(obj):
    if inspect.isclass(obj) and obj.__module__ == "__main__":
        return None  # defined in a cell
    try:
        path = inspect.getabsfile(obj if not _is_instance(obj) else type(obj))
    except TypeError:
        return None
    if path.startswith("<") or os.path.basename(path).startswith("<"):
        return None
    home = os.path.expanduser("~")
    return "~" + path[len(home) :] if path.startswith(home + os.sep) else path


def _is_instance(obj):
    return not (inspect.isclass(obj) or inspect.ismodule(obj) or isinstance(obj, _SIMPLE_CALLABLES))


def _source(obj):
    try:
        return inspect.getsource(obj)
    except (TypeError, OSError):
        return None


def _doc(obj):
    return inspect.getdoc(obj)


def _init_doc(cls):
    init = getattr(cls, "__init__", None)
    if init is None or init is object.__init__:
        return None
    doc = inspect.getdoc(init)
    return None if doc in (None, _GENERIC_INIT_DOC) else doc


def info_fields(obj, name, label, detail):
    """[(title, text)] in IPython's order for this kind of object."""
    fields = []

    def add(title, value):
        if value is not None:
            fields.append((title, value))

    if label == "magic":
        if detail and _source(obj):
            add("Source", _source(obj))
        else:
            add("Docstring", _doc(obj) or "<no docstring>")
        add("File", _file(inspect.unwrap(obj)))  # a group's magic, not the table entry around it
        return fields
    if inspect.isclass(obj) or isinstance(obj, _SIMPLE_CALLABLES):
        short = name.split(".")[-1] if inspect.isclass(obj) else name
        if inspect.isclass(obj):
            add("Init signature", _signature(obj, short))
        else:
            add("Signature", _signature(obj, short))
        add("Docstring", _doc(obj) or "<no docstring>")
        source = _source(obj) if detail else None
        if source:
            add("Source", source)
        elif inspect.isclass(obj):
            add("Init docstring", _init_doc(obj))
        add("File", _file(obj))
        add("Type", type(obj).__name__)
        if inspect.isclass(obj):
            try:
                add("Subclasses", ", ".join(sub.__name__ for sub in type.__subclasses__(obj)))
            except TypeError:
                pass
        return fields
    if callable(obj) and not inspect.ismodule(obj):
        add("Call signature", _signature(obj, name))
    add("Type", type(obj).__name__)
    text = _string_form(obj)
    add("String form", text)
    if label not in (None, "Interactive"):
        add("Namespace", label)
    try:
        add("Length", str(len(obj)))
    except Exception:
        pass
    if inspect.ismodule(obj):
        add("File", _file(obj))
    source = _source(obj) if detail and inspect.ismodule(obj) else None
    if source:
        add("Source", source)
    else:
        own = obj.__doc__ if isinstance(getattr(obj, "__doc__", None), str) else None
        class_doc = inspect.getdoc(type(obj))
        add("Docstring", inspect.cleandoc(own) if own else "<no docstring>")
        if class_doc and own is not None and inspect.cleandoc(own) != class_doc and not inspect.ismodule(obj):
            add("Class docstring", class_doc)
    if not inspect.ismodule(obj):
        add("Init docstring", _init_doc(type(obj)))
    return fields


def _string_form(obj):
    try:
        text = str(obj)
    except Exception as error:
        return "<str() failed: %s>" % error
    if len(text) > 200:
        text = text[:100] + " <...> " + text[-100:]
    return text


def format_fields(fields):
    """IPython's layout: titles padded to the longest; multi-line values start on the next line."""
    if not fields:
        return ""
    width = max(len(title) for title, _ in fields)
    lines = []
    for title, body in fields:
        body = body.strip("\n")
        lines.append("%s:%s%s%s" % (title, " " * (width - len(title)), "\n" if "\n" in body else " ", body))
    return "\n".join(lines)


def _show(shell, args, frame, detail):
    name = args.strip()
    if not name:
        raise UsageError("%pinfo needs an object name, e.g. %pinfo len or len?")
    if "*" in name:
        return psearch(shell, name, frame)
    obj, label = _find(shell, name, frame)
    if obj is _NOT_FOUND:
        print("Object `%s` not found." % name)
        return None
    print(format_fields(info_fields(obj, name, label, detail)))
    return None


def pinfo(shell, args, frame):
    """`%pinfo obj` (`obj?`): type, signature, docstring and file of an object."""
    return _show(shell, _strip_flags(args), frame, detail=False)


def pinfo2(shell, args, frame):
    """`%pinfo2 obj` (`obj??`): as %pinfo, with the source code when it can be found."""
    return _show(shell, _strip_flags(args), frame, detail=True)


def _strip_flags(args):
    return " ".join(word for word in args.split() if word != "-n")


def _lookup(shell, args, frame, what):
    name = args.strip()
    if not name:
        raise UsageError("%%%s needs an object name" % what)
    obj, label = _find(shell, name, frame)
    if obj is _NOT_FOUND:
        print("Object `%s` not found." % name)
    return obj


def pdoc(shell, args, frame):
    """`%pdoc obj`: the docstring (for a class, also its constructor's)."""
    obj = _lookup(shell, args, frame, "pdoc")
    if obj is _NOT_FOUND:
        return None
    parts = []
    if inspect.isclass(obj):
        if _doc(obj):
            parts.append("Class docstring:\n" + _indent(_doc(obj)))
        if _init_doc(obj):
            parts.append("Init docstring:\n" + _indent(_init_doc(obj)))
    elif _doc(obj):
        parts.append(_indent(_doc(obj)) if not callable(obj) else _doc(obj))
    print("\n".join(parts) if parts else "No documentation found for %s" % args.strip())
    return None


def _indent(text):
    return "\n".join("    " + line if line else line for line in text.splitlines())


def pdef(shell, args, frame):
    """`%pdef obj`: the call signature of a callable."""
    name = args.strip()
    obj = _lookup(shell, args, frame, "pdef")
    if obj is _NOT_FOUND:
        return None
    if not callable(obj):
        print("Object is not callable.")
        return None
    signature = _signature(obj, name.split(".")[-1])
    print(signature if signature else "No definition header found for %s" % name)
    return None


def psource(shell, args, frame):
    """`%psource obj`: the source code of an object."""
    obj = _lookup(shell, args, frame, "psource")
    if obj is _NOT_FOUND:
        return None
    source = _source(obj)
    if source is None:
        print("No source found for %s" % args.strip())
    else:
        print(source.rstrip("\n"))
    return None


def pfile(shell, args, frame):
    """`%pfile obj_or_path`: the whole file an object is defined in (or a file by path)."""
    name = args.strip()
    obj, _ = _find(shell, name, frame)
    if obj is _NOT_FOUND:
        path = os.path.expanduser(name)
        if not os.path.isfile(path):
            print("Object `%s` not found." % name)
            return None
    else:
        try:
            path = inspect.getabsfile(obj)
        except TypeError:
            print("No file found for %s" % name)
            return None
        if not os.path.isfile(path):
            print("File %r does not exist, not printing." % path)
            return None
    with open(path, "r", encoding="utf-8", errors="replace") as handle:
        print(handle.read().rstrip("\n"))
    return None


def psearch(shell, args, frame):
    """`%psearch [-i] [-a] pattern [type]`: names matching a wildcard pattern
    (`a*`, `os.*path*`), optionally of one type name (`%psearch a* function`)."""
    words = args.split()
    ignore_case = "-i" in words
    show_all = "-a" in words
    words = [word for word in words if word not in ("-i", "-a", "-c", "-e", "-s")]
    if not words:
        raise UsageError("%psearch needs a pattern, e.g. %psearch a*")
    pattern, kind = words[0], (words[1] if len(words) > 1 else None)
    owner, _, leaf = pattern.rpartition(".")
    if owner:
        obj, _ = _find(shell, owner, frame)
        if obj is _NOT_FOUND:
            return None
        names = {name: getattr(obj, name, None) for name in dir(obj)}
        prefix = owner + "."
    else:
        names = dict(shell.user_ns)
        prefix = ""
    flags = re.IGNORECASE if ignore_case else 0
    regex = re.compile(fnmatch.translate(leaf), flags)
    found = []
    for name, value in names.items():
        if not regex.match(name) or (name.startswith("_") and not show_all and not leaf.startswith("_")):
            continue
        if kind and type(value).__name__ != kind and not (kind == "function" and isinstance(value, _SIMPLE_CALLABLES)):
            continue
        found.append(prefix + name)
    print("\n".join(sorted(found)))
    return None


LINE_MAGICS = {
    "pinfo": pinfo,
    "pinfo2": pinfo2,
    "pdoc": pdoc,
    "pdef": pdef,
    "psource": psource,
    "pfile": pfile,
    "psearch": psearch,
}
