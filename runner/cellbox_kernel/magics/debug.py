"""Errors after the fact: traceback styles (%xmode), %tb, %debug, %pdb, %prun.

There is no interactive debugger here (cells have no stdin), so `%debug`
prints the post-mortem a debugger would start from: every frame of the last
error with its local variables. `%pdb on` prints that after each error.
Traceback styles follow IPython's: Plain (Python's own format, cellbox's
default), Context (numbered source lines around each frame), Verbose (Context
plus argument values and the variables of each failing line), Minimal (only
the exception) and Docs (the failing cell line and the exception).
"""
import linecache
import os
import re
import sys
import traceback

from .. import display
from .framework import UsageError

MODES = ("Plain", "Context", "Verbose", "Minimal", "Docs")
_WIDTH = 75
_CONTEXT = 2
_CELL = re.compile(r"^<cell-(\d+)>$")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")


class DebugState:
    """The chosen style and %pdb; the shell keeps the last error (for %tb and %debug)."""

    def __init__(self, shell):
        self._shell = shell
        self.mode = "Plain"
        self.automatic_pdb = False

    @property
    def last(self):
        return self._shell.last_error

    def format_error(self, error, tb):
        """The traceback lines of a cell's error in the chosen style (None:
        Python's own format), plus the post-mortem when %pdb is on."""
        lines = None if self.mode == "Plain" else format_exception(error, tb, self.mode)
        if self.automatic_pdb and not isinstance(error, (KeyboardInterrupt, SyntaxError)):
            if lines is None:
                lines = traceback.format_exception(type(error), error, tb)
            lines = list(lines) + ["\n"] + post_mortem(error, tb)
        return lines


def _frame_title(frame, lineno, verbose):
    code = frame.f_code
    match = _CELL.match(code.co_filename)
    if match is not None:
        where = "Cell In[%s], line %d" % (match.group(1), lineno)
    else:
        filename = code.co_filename
        home = os.path.expanduser("~")
        if filename.startswith(home + os.sep):
            filename = "~" + filename[len(home) :]
        where = "File %s:%d" % (filename, lineno)
    if code.co_name == "<module>":
        return where
    return "%s, in %s(%s)" % (where, _qualname(frame), _arguments(frame, verbose))


def _qualname(frame):
    return getattr(frame.f_code, "co_qualname", frame.f_code.co_name)


def _arguments(frame, verbose):
    code = frame.f_code
    count = code.co_argcount + code.co_kwonlyargcount
    names = list(code.co_varnames[:count])
    flags = code.co_flags
    if flags & 0x04:
        names.append("*" + code.co_varnames[count])
        count += 1
    if flags & 0x08:
        names.append("**" + code.co_varnames[count])
    if not verbose:
        return ", ".join(names)
    parts = []
    for name in names:
        value = frame.f_locals.get(name.lstrip("*"), "<unbound>")
        parts.append("%s=%s" % (name, _short_repr(value)))
    return ", ".join(parts)


def _short_repr(value, limit=80):
    text = display.safe_repr(value)
    text = re.sub(r" at 0x[0-9a-f]+>", ">", text)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _source_lines(filename, lineno, frame):
    linecache.checkcache(filename)
    lines = linecache.getlines(filename, frame.f_globals)
    first = max(lineno - _CONTEXT - 1, 0)
    out = []
    for number in range(first, min(lineno + _CONTEXT, len(lines))):
        text = lines[number].rstrip("\n")
        label = str(number + 1)
        if number + 1 == lineno:
            out.append("-" * (5 - len(label)) + "> " + label + " " + text)
        else:
            out.append(label.rjust(7) + " " + text)
    return out


def _variables_of(line, frame):
    """`name = value` for the names the failing line uses (Verbose)."""
    seen, out = set(), []
    for name in _NAME.findall(line):
        head = name.split(".")[0]
        if name in seen or head in ("return", "if", "for", "in", "not", "and", "or", "is", "None", "True", "False"):
            continue
        seen.add(name)
        try:
            value = eval(name, frame.f_globals, frame.f_locals)
        except Exception:
            continue
        if callable(value) and not hasattr(value, "__self__"):
            continue
        out.append("        %s = %s" % (name, _short_repr(value, 200)))
    return out


def _frames(tb):
    while tb is not None:
        yield tb.tb_frame, tb.tb_lineno
        tb = tb.tb_next


def format_exception(error, tb, mode):
    """IPython-like traceback text for one mode (a list of lines, each ending in \\n)."""
    ename = type(error).__name__
    try:
        last = traceback.format_exception_only(type(error), error)
    except Exception:
        last = ["%s\n" % ename]
    if mode == "Minimal" or isinstance(error, SyntaxError) and mode != "Docs":
        return last if mode == "Minimal" else traceback.format_exception(type(error), error, tb)
    frames = list(_frames(tb))
    if mode == "Docs":
        if not frames:
            return last
        frame, lineno = frames[0]
        line = linecache.getline(frame.f_code.co_filename, lineno, frame.f_globals).strip()
        text = ["Traceback (most recent call last): %s\n" % _frame_title(frame, lineno, False).split(", in ")[0], "\n", "->  %s\n" % line, "\n"]
        if len(frames) > 1:
            text += ["    [... %d skipped frames]\n" % (len(frames) - 1), "\n"]
        return text + last
    verbose = mode == "Verbose"
    text = ["-" * _WIDTH + "\n", ename.ljust(_WIDTH - 33) + "Traceback (most recent call last)\n"]
    for index, (frame, lineno) in enumerate(frames):
        text.append(_frame_title(frame, lineno, verbose) + "\n")
        for source in _source_lines(frame.f_code.co_filename, lineno, frame):
            text.append(source + "\n")
            if verbose and source.startswith("-"):
                text.extend(v + "\n" for v in _variables_of(source.split(" ", 2)[-1], frame))
        text.append("\n")
    return text + last


def post_mortem(error, tb):
    """Every frame of the error, innermost last, with its local variables."""
    out = ["Post-mortem of %s: %s (no interactive debugger in cellbox; frames and their local variables follow)\n" % (type(error).__name__, _short_repr(str(error), 200))]
    for frame, lineno in _frames(tb):
        filename = frame.f_code.co_filename
        out.append("> %s(%d)%s()\n" % (filename, lineno, frame.f_code.co_name))
        line = linecache.getline(filename, lineno, frame.f_globals).strip()
        if line:
            out.append("-> %s\n" % line)
        if frame.f_code.co_name == "<module>":
            continue  # the user namespace: %whos shows it
        for name, value in sorted(frame.f_locals.items()):
            if not name.startswith("__"):
                out.append("    %s = %s\n" % (name, _short_repr(value, 200)))
    return out


# the magics ------------------------------------------------------------------


def xmode(shell, args, frame):
    """`%xmode [Plain|Context|Verbose|Minimal|Docs]`: how cell errors are
    shown (no argument: the next style in turn)."""
    state = shell.debug
    name = args.strip()
    if not name:
        chosen = MODES[(MODES.index(state.mode) + 1) % len(MODES)]
    else:
        matches = [mode for mode in MODES if mode.lower() == name.lower()]
        if not matches:
            raise UsageError("Unrecognized mode in FormattedTB: <%s>; choose one of %s" % (name, ", ".join(MODES)))
        chosen = matches[0]
    state.mode = chosen
    print("Exception reporting mode: %s" % chosen)
    return None


def tb(shell, args, frame):
    """`%tb [mode]`: print the last error's traceback again (in `mode`, or the current style)."""
    state = shell.debug
    if state.last is None:
        raise UsageError("No traceback available to show.")
    mode = args.strip().capitalize() or state.mode
    if mode not in MODES:
        raise UsageError("Unrecognized mode: %s; choose one of %s" % (mode, ", ".join(MODES)))
    error, trace = state.last
    if mode == "Plain":
        lines = traceback.format_exception(type(error), error, trace)
    else:
        lines = format_exception(error, trace, mode)
    sys.stdout.write("".join(lines))
    return None


def debug(shell, args, frame):
    """`%debug`: the post-mortem of the last error, printed (frames with their
    local variables); there is no interactive debugger to step through code."""
    if args.strip():
        raise UsageError(
            "%debug with code needs an interactive debugger, which cellbox does not have (cells have no stdin). "
            "Run the code, then use %debug alone to print the post-mortem of its error."
        )
    state = shell.debug
    if state.last is None:
        raise UsageError("No traceback has been produced, nothing to debug.")
    error, trace = state.last
    sys.stdout.write("".join(post_mortem(error, trace)))
    print("No interactive debugger is available in cellbox (cells have no stdin): the post-mortem above is printed instead.")
    return None


def debug_cell(shell, args, body, frame):
    raise UsageError(
        "%%debug runs a cell under an interactive debugger, which cellbox does not have (cells have no stdin). "
        "Run the cell normally, then use %debug to print the post-mortem of its error."
    )


def pdb(shell, args, frame):
    """`%pdb [on|off|1|0]`: print the post-mortem (frames and their local
    variables) after every error; no argument toggles."""
    state = shell.debug
    word = args.strip().lower()
    if not word:
        state.automatic_pdb = not state.automatic_pdb
    elif word in ("on", "1", "true"):
        state.automatic_pdb = True
    elif word in ("off", "0", "false"):
        state.automatic_pdb = False
    else:
        raise UsageError("Incorrect argument. Use on/1, off/0, or nothing for a toggle.")
    if state.automatic_pdb:
        print("Automatic pdb calling has been turned ON (no interactive debugger in cellbox: after an error, "
              "its frames and their local variables are printed with the traceback)")
    else:
        print("Automatic pdb calling has been turned OFF")
    return None


def prun(shell, args, frame):
    """`%prun [-s key] [-l limit] [-T file] [-D file] [-q] [-r] statement`: run under cProfile."""
    options, statement = _prun_options(args)
    return _profile(shell, options, statement, frame)


def prun_cell(shell, args, body, frame):
    """`%%prun [options]`: profile the whole cell."""
    options, rest = _prun_options(args)
    return _profile(shell, options, body if not rest.strip() else rest + "\n" + body, frame)


def _prun_options(args):
    sorts, limits = [], []
    options = {}
    rest = args.lstrip()
    while rest.startswith("-"):
        head, _, tail = rest.partition(" ")
        key = head[1:2]
        if key in "slTD" and len(head) >= 2:
            value = head[2:]
            if not value:
                value, _, tail = tail.lstrip().partition(" ")
            if key == "s":
                sorts.append(value)
            elif key == "l":
                limits.append(value)
            else:
                options[key] = value
        elif head in ("-q", "-r"):
            options[key] = True
        else:
            break
        rest = tail.lstrip()
    options["s"] = sorts or ["time"]
    options["l"] = limits
    return options, rest


def _profile(shell, options, statement, frame):
    import cProfile
    import io
    import pstats

    if not statement.strip():
        raise UsageError("%prun needs a statement to profile")
    from ..transform import transform_cell

    code = compile(transform_cell(statement), "<string>", "exec")
    profiler = cProfile.Profile()
    try:
        profiler.runctx(code, frame.f_globals, frame.f_locals)
    except SystemExit:
        pass
    stats = pstats.Stats(profiler, stream=io.StringIO())
    stats.sort_stats(*options["s"])
    restrictions = []
    for limit in options["l"]:
        try:
            restrictions.append(int(limit))
        except ValueError:
            try:
                restrictions.append(float(limit))
            except ValueError:
                restrictions.append(limit)
    stats.print_stats(*restrictions)
    text = stats.stream.getvalue().rstrip() + "\n"
    while text.startswith("\n"):
        text = text[1:]
    if not options.get("q"):
        print(text, end="")
    if options.get("T"):
        with open(os.path.expanduser(options["T"]), "w", encoding="utf-8") as handle:
            handle.write(text)
        print("\n*** Profile printout saved to text file '%s'." % options["T"])
    if options.get("D"):
        profiler.dump_stats(os.path.expanduser(options["D"]))
        print("\n*** Profile stats marshalled to file '%s'." % options["D"])
    display.emit_status("prun", calls=stats.total_calls, seconds=stats.total_tt)
    return stats if options.get("r") else None


LINE_MAGICS = {"xmode": xmode, "tb": tb, "debug": debug, "pdb": pdb, "prun": prun}
CELL_MAGICS = {"prun": prun_cell, "debug": debug_cell}
