"""The settings magics leave in a kernel, as the magic lines that make them again.

A snapshot keeps a session's variables; these lines let it keep how the session
was set up as well: `%config`, `%precision`, `%pprint`, `%xmode`, `%pdb`,
`%alias` (and `%unalias`), and the extensions loaded with `%load_ext` (with
`%autoreload`'s mode and `%aimport`'s lists). A hibernated session then wakes
as it was left.

The lines are replayed by the magics themselves in the new kernel, so what a
magic does beside keeping its value (numpy's print precision, `Out`'s size, an
extension's hooks) happens again as it did the first time. Extensions come back
before the variables (one may need to be in place before the imports it
patches), the rest after them (a `%config` value may name a variable). Only
these magics are replayed, whatever a file says; a line that fails, or one too
long to keep, is named with its reason and the others still apply.
"""
import contextlib
import io
import json
import sys
import types

from . import pretty

#: The magics a snapshot replays: those that only set how the shell behaves.
EARLY = frozenset(("load_ext", "autoreload", "aimport"))
LATE = frozenset(("config", "precision", "pprint", "xmode", "pdb", "alias", "unalias"))

#: The most a line may take in the header (as JSON, escapes included), and all
#: of them together: a snapshot's header is read in a bounded buffer (64 KiB),
#: and the settings must never make the file unloadable.
LINE_LIMIT = 4 << 10
TOTAL_LIMIT = 32 << 10

_PARTS = ("%load_ext", "%config", "%precision and %pprint", "%xmode and %pdb", "%alias")


def collect(shell):
    """([[magic, args]], [{"name", "reason"}]): the lines that set up a new
    kernel's shell as `shell` is now (only what differs from a new kernel's),
    and what could not be kept. Never raises."""
    made, skipped, total = [], [], 0
    # Extensions first: the lines that follow them (`%autoreload`) need them, and the budget keeps the first.
    parts = (_extension_lines, _config_lines, _display_lines, _debug_lines, _alias_lines)
    for title, part in zip(_PARTS, parts):
        try:
            lines = part(shell)
        except Exception as error:
            skipped.append({"name": title, "reason": "its settings could not be read (%s: %s)" % (type(error).__name__, error)})
            continue
        for magic, args in lines:
            size = len(json.dumps([magic, args])) + 2  # as the header holds it, with its separator
            if size > LINE_LIMIT:
                reason = "too long to keep with a snapshot (%d bytes in its header, at most %d)" % (size, LINE_LIMIT)
            elif total + size > TOTAL_LIMIT:
                reason = "left out: a snapshot keeps at most %d KiB of settings" % (TOTAL_LIMIT >> 10)
            else:
                total += size
                made.append([magic, args])
                continue
            skipped.append({"name": _shown("%" + magic + " " + args), "reason": reason})
    return made, skipped


def _shown(text, limit=80):
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _config_lines(shell):
    settings = shell._settings
    if settings is None:
        return []
    from . import mpl
    from .magics.config import _SETTINGS

    made = []
    for owner, names in sorted(_SETTINGS.items()):
        for name, (default, _help) in sorted(names.items()):
            if name in ("xmode", "pdb", "figure_format", "figure_formats"):
                continue  # other magics change what these chose: the debug state and the formats in use say it
            value = settings.values[(owner, name)]
            try:
                same = bool(value == default)
            except Exception:  # an array's comparison has no single truth value
                same = False
            if not same:
                made.append(["config", "%s.%s = %r" % (owner, name, value)])
    # Both figure settings choose the formats, and the last one set wins: the formats in use say it.
    formats = mpl.settings["formats"]
    if formats != ["png"]:
        if formats == [settings.values[("InlineBackend", "figure_format")]]:
            made.append(["config", "InlineBackend.figure_format = %r" % formats[0]])
        else:
            made.append(["config", "InlineBackend.figure_formats = %r" % (formats,)])
    return made


def _display_lines(shell):
    made = []
    settings = shell._settings
    if settings is not None and settings.float_format != "%r":
        made.append(["precision", getattr(settings, "precision_text", None) or settings.float_format])
    if not pretty.enabled:
        made.append(["pprint", ""])
    return made


def _debug_lines(shell):
    debug = shell._debug
    made = []
    if debug is not None:
        if debug.mode != "Plain":
            made.append(["xmode", debug.mode])
        if debug.automatic_pdb:
            made.append(["pdb", "on"])
    return made


def _alias_lines(shell):
    """The aliases defined, and the default ones removed, since the kernel started."""
    from .magics.system import _DEFAULT_ALIASES

    defaults = dict(_DEFAULT_ALIASES)
    made = []
    for name, alias in sorted(shell.aliases.items()):
        if defaults.get(name) != alias.command:
            made.append(["alias", "%s %s" % (name, alias.command)])
    table = shell._magics.line_table()
    for name in sorted(defaults):
        # A default that is neither an alias nor a magic now was taken away with %unalias.
        if name not in shell.aliases and name not in table:
            made.append(["unalias", name])
    return made


def _extension_lines(shell):
    made = []
    for name in shell.extensions:
        made.append(["load_ext", name])
        if name in ("autoreload", "IPython.extensions.autoreload"):
            made.extend(_autoreload_lines())
    return made


def _autoreload_lines():
    from . import autoreload

    reloader = autoreload._reloader
    if reloader is None:
        return []
    made = []
    flags = (" -p" if reloader.report is not None else "") + (" --hide-errors" if reloader.hide_errors else "")
    if reloader.mode or flags:
        made.append(["autoreload", "%d%s" % (reloader.mode, flags)])
    made.extend(["aimport", name] for name in sorted(reloader.explicit))
    made.extend(["aimport", "-" + name] for name in sorted(reloader.skipped))
    return made


def replay(shell, made, magics, name_the_others=False):
    """Run the lines of `made` (from `collect`) whose magic is in `magics`
    (`EARLY` or `LATE`) in `shell`, quietly. Returns (kept, failed): the lines
    that ran as `%magic args` text, and {"name", "reason"} for each that did
    not, and for each line that is no setting when `name_the_others`."""
    kept, failed = [], []
    for entry in made if isinstance(made, list) else []:
        if not (isinstance(entry, list) and len(entry) == 2 and all(isinstance(part, str) for part in entry)):
            if name_the_others:
                failed.append({"name": "a setting", "reason": "not a magic line: %s" % _shown(repr(entry))})
            continue
        magic, args = entry
        if magic not in EARLY and magic not in LATE:
            if name_the_others:
                failed.append({"name": _shown(("%" + magic + " " + args).rstrip()), "reason": "not a setting a snapshot keeps"})
            continue
        if magic not in magics:
            continue
        text = _shown(("%" + magic + " " + args).rstrip())
        try:
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                _run(shell, magic, args)
        except BaseException as error:  # an extension's load may even call sys.exit()
            failed.append({"name": text, "reason": _shown("%s: %s" % (type(error).__name__, error), 200)})
            continue
        kept.append(text)
    return kept, failed


def _run(shell, magic, args):
    if magic == "pprint":
        if pretty.enabled:  # a toggle: only turned off, never back on
            shell._magics.line_table()["pprint"]("", _user_frame(shell))
        return
    if magic == "aimport" and not args.startswith("-"):
        _watch(args)  # %aimport would also put the module into the namespace, over a restored name
        return
    method = shell._magics.line_table().get(magic)
    if method is None:
        raise LookupError("no magic %%%s in this kernel" % magic)
    # Called directly: the arguments are the text the magic ran with, not to be expanded again.
    method(args, _user_frame(shell))


def _user_frame(shell):
    """What the magics read of a cell's frame, for the user's namespace: where
    `%config` evaluates a value that is not a literal, as it did in the cell."""
    return types.SimpleNamespace(f_globals=shell.user_ns, f_locals=shell.user_ns)


def _watch(name):
    """`%aimport name`'s bookkeeping alone: reload `name` when it changes."""
    from . import autoreload

    if not all(part.isidentifier() for part in name.split(".")):
        raise ValueError("%r is not a module name" % name)
    reloader = autoreload._reloader
    if reloader is None:
        raise LookupError("autoreload is not loaded")
    reloader.skipped.discard(name)
    reloader.explicit.add(name)
    module = sys.modules.get(name)
    if module is not None:
        path, mtime = autoreload.source_and_mtime(module)
        if path is not None:
            reloader.mtimes.setdefault(name, mtime)
