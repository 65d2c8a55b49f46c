"""Magics that show and manage the user namespace: %who, %whos, %who_ls,
%reset (with IPython's options), %reset_selective, %xdel.

`%reset` keeps IPython's meaning: names go, the input history stays, outputs
go unless `-s`. There is no confirmation prompt (cells have no stdin), so
`-f` is implied.
"""
import re

from .. import display
from .framework import UsageError

# The names the output history gives each value it keeps: `_1`, `_2`, ...
_UNDER_N = re.compile(r"_[0-9]+\Z")


def user_names(shell, type_filter=()):
    """The names the user defined (not `_`-prefixed, not the prelude's or the
    shell's), sorted; only those whose type name is in `type_filter`, if given."""
    kernel = shell._kernel
    hidden = kernel.hidden_names()
    names = []
    for name, value in kernel.namespace.items():
        if name.startswith("_") or name in hidden:
            continue
        if type_filter and type(value).__name__ not in type_filter:
            continue
        names.append(name)
    return sorted(names)


def who(shell, args, frame):
    """`%who [type ...]`: the names you defined."""
    names = user_names(shell, tuple(args.split()))
    if not names:
        print("Interactive namespace is empty.")
    else:
        print("\t".join(names))
    return None


def whos(shell, args, frame):
    """`%whos [type ...]`: IPython's table of Variable / Type / Data/Info."""
    names = user_names(shell, tuple(args.split()))
    if not names:
        print("Interactive namespace is empty.")
        return None
    values = [shell._kernel.namespace[name] for name in names]
    types = [type(value).__name__ for value in values]
    separation = 3
    name_width = max(max(len(n) for n in names), len("Variable")) + separation
    type_width = max(max(len(t) for t in types), len("Type")) + separation
    lines = [
        "Variable".ljust(name_width) + "Type".ljust(type_width) + " Data/Info",
        "-" * (name_width + type_width + len("Data/Info") + 1),
    ]
    for name, value, kind in zip(names, values, types):
        text = display.safe_repr(value) if not isinstance(value, str) else value
        text = text.replace("\n", "\\n")
        if len(text) >= 50:
            text = text[:25] + "<...>" + text[-25:]
        lines.append(name.ljust(name_width) + kind.ljust(type_width) + " " + text)
    print("\n".join(lines))
    return None


def who_ls(shell, args, frame):
    """`%who_ls [type ...]`: your names, sorted, as a list."""
    return user_names(shell, tuple(args.split()))


def reset(shell, args, frame):
    """`%reset [-f] [-s] [in|out|dhist|array]`: forget every name you defined
    (-s: keep the output history too); or only clear one kind of history."""
    words = [word for word in args.split() if word != "-f"]
    soft = "-s" in words
    targets = [word for word in words if word != "-s"]
    history = shell.history
    if not targets:
        shell._kernel.reset_namespace()
        if not soft:
            history.outputs.clear()
            history.unders = {"_": "", "__": "", "___": ""}
            history.directories[:] = history.directories[-1:]
        history.install(shell.user_ns)
        display.emit_status("reset")
        return None
    for target in targets:
        if target == "in":
            history.inputs[1:] = [""] * (len(history.inputs) - 1)
            for name in [n for n in shell.user_ns if re.match(r"^_i\d*$|^_i{2,3}$", n)]:
                shell.user_ns[name] = ""
            print("Flushing input history")
        elif target == "out":
            print("Flushing output cache (%d entries)" % len(history.outputs))
            # As IPython's flush: every `_N` a cell so far could have made, whatever Out still holds.
            for number in range(1, shell._kernel.execution_count + 1):
                shell.user_ns.pop("_%d" % number, None)
            history.outputs.clear()
            history.unders = {"_": "", "__": "", "___": ""}
            shell.user_ns.update(history.unders)
        elif target == "dhist":
            history.directories[:] = history.directories[-1:]
            print("Flushing directory history")
        elif target == "array":
            numpy = __import__("sys").modules.get("numpy")
            if numpy is None:
                print("reset array only works if Numpy is available.")
                continue
            for name in user_names(shell):
                if isinstance(shell.user_ns.get(name), numpy.ndarray):
                    del shell.user_ns[name]
        else:
            raise UsageError("Unknown %%reset target %r: use in, out, dhist or array" % target)
    return None


def reset_selective(shell, args, frame):
    """`%reset_selective [-f] REGEX`: forget the names that match REGEX (re.search)."""
    words = [word for word in args.split() if word != "-f"]
    if not words:
        raise UsageError("%reset_selective needs a regular expression")
    try:
        pattern = re.compile(" ".join(words))
    except re.error as error:
        raise TypeError("regex must be a string or compiled pattern: %s" % error)
    for name in user_names(shell):
        if pattern.search(name):
            del shell.user_ns[name]
    return None


def xdel(shell, args, frame):
    """`%xdel name`: delete a variable and every reference the output history holds to it."""
    name = args.strip()
    if not name:
        raise UsageError("%xdel needs a variable name")
    if name not in shell.user_ns:
        print("name '%s' is not defined" % name)
        return None
    value = shell.user_ns.pop(name)
    history = shell.history
    for key, held in list(history.outputs.items()):
        if held is value:
            del history.outputs[key]
    # Every `_N` that still names the value, whether or not Out holds it now (as IPython's del_var).
    for under_n in [n for n, held in shell.user_ns.items() if held is value and _UNDER_N.match(n)]:
        del shell.user_ns[under_n]
    for under in ("_", "__", "___"):
        if shell.user_ns.get(under) is value:
            shell.user_ns[under] = ""
            history.unders[under] = ""
    return None


LINE_MAGICS = {
    "who": who,
    "whos": whos,
    "who_ls": who_ls,
    "reset": reset,
    "reset_selective": reset_selective,
    "xdel": xdel,
}
