"""The settings magics leave in a kernel, as the magic lines that make them again.

A snapshot keeps a session's variables; these lines let it keep how the session
was set up as well: `%config`, `%precision`, `%pprint`, `%xmode`, `%pdb`,
`%alias` (and `%unalias`), and the extensions loaded with `%load_ext` (with `%autoreload`'s mode
and `%aimport`'s lists). A hibernated session then wakes as it was left.

The lines are replayed by the magics themselves in the fresh kernel, so what a
magic does beside storing its value (numpy's print precision, `Out`'s size, an
extension's hooks) happens again as it did the first time. A line that fails
(an extension no longer installed) is named with its reason; the others still apply.
"""
import contextlib
import io
import re
import sys

from . import pretty


def lines(shell):
    """[[magic, args]] that set up a fresh kernel's shell as `shell` is now
    (only what differs from a fresh kernel's). Never raises: a part that
    cannot be read (a value a cell made odd) is left out, and the snapshot
    is still written."""
    made = []
    for part in (_config_lines, _display_lines, _debug_lines, _alias_lines, _extension_lines):
        try:
            made.extend(part(shell))
        except Exception:
            pass
    return made


def _config_lines(shell):
    settings = shell._settings
    if settings is None:
        return []
    from .magics.config import _SETTINGS

    made = []
    for owner, names in sorted(_SETTINGS.items()):
        for name, (default, _help) in sorted(names.items()):
            value = settings.values[(owner, name)]
            try:
                same = bool(value == default)
            except Exception:  # an array's comparison has no single truth value
                same = False
            if not same:
                made.append(["config", "%s.%s = %r" % (owner, name, value)])
    return made


def _display_lines(shell):
    made = []
    settings = shell._settings
    if settings is not None and settings.float_format != "%r":
        digits = re.fullmatch(r"%\.(\d+)f", settings.float_format)
        made.append(["precision", digits.group(1) if digits else settings.float_format])
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


def _extension_lines(shell):
    made = []
    for name in shell.extensions:
        made.append(["load_ext", name])
        if name in ("autoreload", "IPython.extensions.autoreload"):
            made.extend(_autoreload_lines())
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


def replay(shell, made):
    """Run `made` (from `lines`) in `shell`, quietly. Returns (kept, failed):
    the lines that ran as `%magic args` text, and {"name", "reason"} for each
    that did not."""
    kept, failed = [], []
    for entry in made if isinstance(made, list) else []:
        if not (isinstance(entry, list) and len(entry) == 2 and all(isinstance(part, str) for part in entry)):
            failed.append({"name": "a setting", "reason": "not a magic line: %r" % (entry,)})
            continue
        magic, args = entry
        text = ("%" + magic + " " + args).rstrip()
        if magic == "pprint" and not pretty.enabled:
            kept.append(text)  # a toggle: already off here
            continue
        # Called directly: the arguments are the text the magic ran with, not to be expanded again.
        method = shell._magics.line_table().get(magic)
        try:
            if method is None:
                raise LookupError("no magic %%%s in this kernel" % magic)
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                method(args, sys._getframe())
        except Exception as error:
            failed.append({"name": text, "reason": "%s: %s" % (type(error).__name__, error)})
            continue
        kept.append(text)
    return kept, failed
