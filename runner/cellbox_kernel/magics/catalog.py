"""What magics exist: %lsmagic, %magic, %quickref, %alias_magic, IPython's
default shell aliases (%cat, %mkdir, %ll, ...), small session magics
(%pushd/%popd/%dirs, %page, %pycat, %loadpy, %autoawait, %automagic,
%autocall, %colors, %notebook), and the magics that need an interactive
front end, each of which raises a UsageError saying why it cannot work here.
"""
import json
import os

from .. import display
from .framework import UsageError

# Magics that only make sense with an interactive front end (or a feature
# cellbox does not have): name -> why, and what to do instead.
UNAVAILABLE_LINE = {
    "edit": "%edit opens a text editor, and cellbox has no editor or terminal: write files with %%writefile, run them with %run",
    "ed": "%ed opens a text editor, and cellbox has no editor or terminal: write files with %%writefile, run them with %run",
    "gui": "%gui starts a GUI event loop, and cellbox has no windows: figures are captured as images (%matplotlib inline)",
    "qtconsole": "%qtconsole opens a Qt console window, and cellbox has no windows",
    "connect_info": "%connect_info describes a Jupyter kernel's connection files, and cellbox kernels are not Jupyter kernels",
    "clear": "%clear clears a terminal screen, and cell output is not a screen",
    "autosave": "%autosave sets a notebook's save interval, and there is no notebook file here",
    "man": "%man shows a manual page in a pager, and cells have no pager: use !man -P cat NAME",
    "doctest_mode": "%doctest_mode switches prompts and output to doctest style, and cellbox has no prompts",
    "pastebin": "%pastebin uploads code to a web service, and cellbox does not send your code anywhere: use %save FILE RANGE",
    "logstart": "session logging is not available: %history -f FILE or %save FILE 1-N writes the session's code to a file",
    "logon": "session logging is not available: %history -f FILE or %save FILE 1-N writes the session's code to a file",
    "logoff": "session logging is not available: %history -f FILE or %save FILE 1-N writes the session's code to a file",
    "logstate": "session logging is not available: %history -f FILE or %save FILE 1-N writes the session's code to a file",
    "logstop": "session logging is not available: %history -f FILE or %save FILE 1-N writes the session's code to a file",
    "macro": "macros run through IPython's input prefilter, which cellbox does not have: use %rerun RANGE, or %save FILE RANGE and %run FILE",
    "rehashx": "%rehashx turns every command on PATH into a magic; cellbox runs commands with !cmd",
    "sc": "%sc is IPython's old shell capture: use var = !cmd",
    "bookmark": "bookmarks live in IPython's profile database, which cellbox does not have: keep the path in a variable and use %cd $var",
    "code_wrap": "%code_wrap changes how IPython compiles cells, which cellbox does not support",
    "killbgscripts": "cellbox has no background scripts to kill",
}
UNAVAILABLE_CELL = {
    "code_wrap": UNAVAILABLE_LINE["code_wrap"],
}


def _unavailable(reason):
    def line(shell, args, frame):
        raise UsageError(reason)

    line.unavailable = reason
    return line


def _unavailable_cell(reason):
    def cell(shell, args, body, frame):
        raise UsageError(reason)

    cell.unavailable = reason
    return cell


def _available(table):
    return sorted(name for name, function in table.items() if not hasattr(function, "unavailable"))


def lsmagic_text(shell):
    line = "  ".join("%" + name for name in _available(shell._magics.line_table()))
    cell = "  ".join("%%" + name for name in _available(shell._magics.cell_table()))
    return (
        "Available line magics:\n" + line + "\n\nAvailable cell magics:\n" + cell + "\n\n"
        "Automagic is OFF, % prefix IS needed for line magics."
    )


def lsmagic(shell, args, frame):
    """`%lsmagic`: every line and cell magic cellbox has."""
    print(lsmagic_text(shell))
    return None


def magic(shell, args, frame):
    """`%magic`: how magics work here, and each one's description."""
    print(
        "cellbox magics: IPython's syntax, run without IPython.\n\n"
        "  %name args     a line magic (anywhere a statement can be, also `x = %name args`)\n"
        "  %%name args    a cell magic: the first line of a cell; the rest is its body\n"
        "  !cmd, x = !cmd a shell command (its output as a list with `x = !cmd`)\n"
        "  obj?, obj??    help on an object (?? adds the source)\n"
    )
    for kind, prefix, table in (("Line", "%", shell._magics.line_table()), ("Cell", "%%", shell._magics.cell_table())):
        print("%s magics:\n" % kind)
        for name in _available(table):
            doc = (table[name].__doc__ or "").strip()
            first = doc.split("\n\n")[0].replace("\n", " ") if doc else "(no description)"
            print("%s%s:\n    %s\n" % (prefix, name, first))
    return None


def quickref(shell, args, frame):
    """`%quickref`: a one-screen reference of the notebook syntax cellbox accepts."""
    print(
        "cellbox quick reference\n\n"
        "obj?, ?obj, %pinfo obj      details about an object (obj??: with its source)\n"
        "%magic, %lsmagic            the magics and what they do\n"
        "!cmd, x = !cmd, !!cmd       shell commands\n"
        "_, __, ___                  the last three results\n"
        "_N, Out[N], _iN, In[N]      result and input of cell N; _i, _ii, _iii the previous inputs\n"
        "%history -n 1-5, %rerun 3   earlier inputs; run one again\n"
        "%xmode Verbose, %tb, %debug traceback style; the last traceback; its frames and variables\n"
        "%time, %timeit, %prun       timing and profiling\n"
        "%load_ext autoreload        reload edited modules before each cell (%autoreload 2)\n"
    )
    return None


def alias_magic(shell, args, frame):
    """`%alias_magic [-l] [-c] [-p PARAMS] name target`: `%name` runs `%target`."""
    words = args.split()
    params = ""
    if "-p" in words:
        at = words.index("-p")
        params = words[at + 1] if at + 1 < len(words) else ""
        del words[at : at + 2]
    line_only, cell_only = "-l" in words, "-c" in words
    names = [word.lstrip("%") for word in words if word not in ("-l", "-c")]
    if len(names) != 2:
        raise UsageError("usage: %alias_magic [-l] [-c] [-p PARAMS] name target")
    name, target = names
    made = False
    line_table, cell_table = shell._magics.line_table(), shell._magics.cell_table()
    if not cell_only and target in line_table:
        line_table[name] = _line_alias(shell, target, params)
        print("Created `%%%s` as an alias for `%%%s%s`." % (name, target, (" " + params) if params else ""))
        made = True
    if not line_only and target in cell_table:
        cell_table[name] = _cell_alias(shell, target, params)
        print("Created `%%%%%s` as an alias for `%%%%%s%s`." % (name, target, (" " + params) if params else ""))
        made = True
    if not made:
        raise UsageError("Magic `%s` not found." % target)
    return None


def _line_alias(shell, target, params):
    def alias(args, frame):
        return shell._magics.call_line(target, (params + " " + args).strip(), frame)

    alias.__doc__ = "Alias for `%%%s`." % target
    return alias


def _cell_alias(shell, target, params):
    def alias(args, body, frame):
        return shell._magics.call_cell(target, (params + " " + args).strip(), body, frame)

    alias.__doc__ = "Alias for `%%%%%s`." % target
    return alias


def pushd(shell, args, frame):
    """`%pushd [dir]`: remember the current folder, then %cd to dir."""
    stack = shell.directory_stack
    here = os.getcwd()
    shell._magics.call_line("cd", args or "~", frame)
    stack.insert(0, here)
    return stack


def popd(shell, args, frame):
    """`%popd`: go back to the folder %pushd remembered last."""
    stack = shell.directory_stack
    if not stack:
        raise UsageError("%popd on empty stack")
    top = stack.pop(0)
    shell._magics.call_line("cd", top, frame)
    print("popd ->", top)
    return None


def dirs(shell, args, frame):
    """`%dirs`: the folders %pushd remembered."""
    return list(shell.directory_stack)


def page(shell, args, frame):
    """`%page [-r] obj`: print an object's repr (-r: its str); there is no pager."""
    words = args.split()
    raw = "-r" in words
    names = [word for word in words if word != "-r"]
    if not names:
        raise UsageError("%page needs an object name")
    try:
        value = eval(names[0], frame.f_globals, frame.f_locals)
    except Exception:
        print("Object `%s` not found" % names[0])
        return None
    print(str(value) if raw else display.safe_repr(value))
    return None


def pycat(shell, args, frame):
    """`%pycat path`: print a file (as IPython's, without colour)."""
    path = os.path.expanduser(args.strip())
    if not path:
        raise UsageError("Missing filename.")
    try:
        with open(path, "r", encoding="utf-8", errors="replace") as handle:
            print(handle.read().rstrip("\n"))
    except OSError as error:
        raise UsageError("File %r not found (%s)" % (args.strip(), error.strerror))
    return None


def loadpy(shell, args, frame):
    """`%loadpy path`: the old name of %load."""
    return shell._magics.call_line("load", args, frame)


def less(shell, args, frame):
    """`%less path` / `%more path`: print a file (there is no pager)."""
    return pycat(shell, args, frame)


def autoawait(shell, args, frame):
    """`%autoawait`: top-level `await` always works, on asyncio."""
    word = args.strip().lower()
    if not word:
        print("IPython autoawait is `on`, and set to use `asyncio`")
    elif word not in ("on", "true", "1", "asyncio"):
        raise UsageError("cellbox always runs top-level await on asyncio; %%autoawait %s is not available" % args.strip())
    return None


def automagic(shell, args, frame):
    """`%automagic off`: magics always need their % prefix here."""
    word = args.strip().lower()
    if word in ("off", "0", "false"):
        print("Automagic is OFF, % prefix IS needed for line magics.")
        return None
    raise UsageError("cellbox has no automagic: a magic needs its % prefix (a bare name is Python)")


def autocall(shell, args, frame):
    """`%autocall 0`: callables are never called without parentheses here."""
    if args.strip() in ("0", ""):
        print("Automatic calling is: Off")
        return None
    raise UsageError("cellbox has no autocall: call functions with parentheses")


_THEMES = ("nocolor", "neutral", "linux", "lightbg", "pride", "gruvbox-dark")


def colors(shell, args, frame):
    """`%colors scheme`: accepted; cellbox's output is plain text."""
    if args.strip().lower() not in _THEMES:
        raise UsageError("%%colors needs one of %s" % ", ".join(_THEMES))
    return None


def notebook(shell, args, frame):
    """`%notebook path.ipynb`: write this kernel's history (inputs and text
    outputs) as a notebook."""
    path = os.path.expanduser(args.strip())
    if not path:
        raise UsageError("%notebook needs a file name, e.g. %notebook session.ipynb")
    history = shell.history
    cells = []
    for number, code in history.entries("", shell.execution_count):
        outputs = []
        if number in history.outputs:
            data, _ = display.mime_bundle(history.outputs[number])
            outputs.append({"output_type": "execute_result", "execution_count": number, "metadata": {}, "data": {"text/plain": data["text/plain"]}})
        cells.append({"cell_type": "code", "execution_count": number, "metadata": {}, "outputs": outputs, "source": code})
    document = {
        "cells": cells,
        "metadata": {"language_info": {"name": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    for index, cell in enumerate(cells):
        cell["id"] = "cell-%d" % index
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(document, handle, indent=1)
        handle.write("\n")
    return None


LINE_MAGICS = {
    "lsmagic": lsmagic,
    "magic": magic,
    "quickref": quickref,
    "alias_magic": alias_magic,
    "pushd": pushd,
    "popd": popd,
    "dirs": dirs,
    "page": page,
    "pycat": pycat,
    "loadpy": loadpy,
    "less": less,
    "more": less,
    "autoawait": autoawait,
    "automagic": automagic,
    "autocall": autocall,
    "colors": colors,
    "notebook": notebook,
}
LINE_MAGICS.update({name: _unavailable(reason) for name, reason in UNAVAILABLE_LINE.items()})
CELL_MAGICS = {name: _unavailable_cell(reason) for name, reason in UNAVAILABLE_CELL.items()}


def _upper_case(target):
    def cell(shell, args, body, frame):
        return shell._magics.call_cell(target, args, body, frame)

    cell.__doc__ = "`%%%%%s`: IPython's upper-case spelling of `%%%%%s`." % (target.upper(), target)
    return cell


CELL_MAGICS.update({"HTML": _upper_case("html"), "SVG": _upper_case("svg")})
