"""The operating system from a cell: folders (%cd, %pwd, %ls), environment
variables (%env, %set_env), command output (%sx / %system), named shell
commands (%alias / %unalias, with IPython's default aliases), and files
(%%writefile / %%file).

`!cmd` and `var = !cmd` themselves are the dispatcher's: the generated code
calls them directly.
"""
import os
import shlex

from .. import display
from ..slist import SList
from .framework import UsageError, misuse, unquote

# IPython's default aliases on POSIX systems.
_DEFAULT_ALIASES = (
    ("cat", "cat"),
    ("cp", "cp"),
    ("mkdir", "mkdir"),
    ("mv", "mv"),
    ("rm", "rm"),
    ("rmdir", "rmdir"),
    ("ll", "ls -F -o %l"),
    ("lf", "ls -F -o %l | grep ^-"),
    ("lk", "ls -F -o %l | grep ^l"),
    ("ldir", "ls -F -o %l | grep /$"),
    ("lx", "ls -F -o %l | grep ^-..x"),
)
# Names IPython refuses to alias.
_NOT_ALIASABLE = frozenset(("cd", "popd", "pushd", "dhist", "alias", "unalias"))


def setup(shell):
    """Define the default aliases, except where a magic has the name."""
    table = shell._magics.line_table()
    for name, command in _DEFAULT_ALIASES:
        if name not in table:
            _define(shell, name, command)


# folders -----------------------------------------------------------------


def cd(shell, args, frame):
    """`%cd [path|-]`: change the kernel's directory (kept for later cells)."""
    target = unquote(args)
    if not target:
        target = os.path.expanduser("~")
    elif target == "-":
        if shell.previous_directory is None:
            raise misuse("%cd -: no previous directory")
        target = shell.previous_directory
    previous = os.getcwd()
    os.chdir(os.path.expanduser(target))
    shell.previous_directory = previous
    here = os.getcwd()
    print(here)
    display.emit_status("cd", path=here)
    return None


def pwd(shell, args, frame):
    return os.getcwd()


def ls(shell, args, frame):
    """`%ls [path]`: the sorted entries of a folder."""
    path = os.path.expanduser(unquote(args) or ".")
    entries = sorted(os.listdir(path))
    display.emit_status("ls", path=os.path.abspath(path), count=len(entries))
    return entries


# environment variables ---------------------------------------------------


def env(shell, args, frame):
    """`%env` (all), `%env KEY` (one), `%env KEY=VALUE` or `%env KEY VALUE` (set)."""
    args = args.strip()
    if not args:
        display.emit_status("env", action="list")
        return dict(os.environ)
    if "=" in args or len(args.split(None, 1)) == 2:
        return set_env(shell, args, frame)
    if args not in os.environ:
        raise misuse("Environment does not have key: %s" % args)
    display.emit_status("env", action="get", key=args)
    return os.environ[args]


def set_env(shell, args, frame):
    """`%set_env KEY VALUE` or `%set_env KEY=VALUE`."""
    args = args.strip()
    first_word = args.split(None, 1)[0] if args else ""
    if "=" in first_word:
        key, _, value = args.partition("=")
    else:
        parts = args.split(None, 1)
        if len(parts) != 2:
            raise misuse("usage: %set_env KEY VALUE")
        key, value = parts
    key, value = key.strip(), unquote(value.strip())
    os.environ[key] = value
    print("env: %s=%s" % (key, value))
    display.emit_status("env", action="set", key=key)
    return None


# %sx / %system -----------------------------------------------------------


def sx(shell, args, frame):
    """`%sx cmd` / `%system cmd`: the command's output lines (stderr merged)
    as an SList, the same as `!!cmd`."""
    import subprocess  # here, not at start-up: most kernels start no child

    process = subprocess.run(
        args, shell=True, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    frame.f_globals["_exit_code"] = process.returncode
    return SList(process.stdout.decode("utf-8", "replace").splitlines())


def sx_cell(shell, args, body, frame):
    """`%%sx [--out VAR]` / `%%system`: the cell run as a shell script; its
    output lines as an SList, returned or stored in VAR."""
    words = shlex.split(args)
    target = None
    if words[:1] in (["--out"], ["-o"]) and len(words) == 2:
        target = words[1]
    elif words:
        raise UsageError("usage: %%sx [--out VAR]")
    lines = sx(shell, body, frame)
    if target is None:
        return lines
    frame.f_globals[target] = lines
    return None


# %alias / %unalias -------------------------------------------------------


class Alias:
    """One `%alias`: a shell command with `%s` (one word each) or `%l` (the
    whole line) placeholders; extra words are appended."""

    def __init__(self, name, command):
        self.name = name
        self.command = command
        self.nargs = command.count("%s") - command.count("%%s")
        if self.nargs > 0 and "%l" in command:
            raise UsageError("The %s and %l specifiers are mutually exclusive in alias definitions.")

    def expand(self, rest):
        command = self.command
        if "%l" in command:
            command, rest = command.replace("%l", rest), ""
        if self.nargs == 0:
            return ("%s %s" % (command.replace("%%s", "%s"), rest)).rstrip()
        words = rest.split(None, self.nargs)
        if len(words) < self.nargs:
            raise UsageError("Alias <%s> requires %s arguments, %s given." % (self.name, self.nargs, len(words)))
        return ("%s %s" % (command % tuple(words[: self.nargs]), " ".join(words[self.nargs :]))).rstrip()

    def __repr__(self):
        return "<alias %s for %r>" % (self.name, self.command)


def _define(shell, name, command):
    alias = Alias(name, command)
    shell.aliases[name] = alias

    def run_alias(args, frame):
        import subprocess  # here, not at start-up: most kernels start no child

        code = subprocess.call(alias.expand(args), shell=True, stdin=subprocess.DEVNULL)
        frame.f_globals["_exit_code"] = code
        return None

    run_alias.__doc__ = "Alias for `!%s`" % command
    shell._magics.line_table()[name] = run_alias


def alias(shell, args, frame):
    """`%alias` lists (name, command) pairs; `%alias name command` defines one."""
    words = args.strip().split(None, 1)
    if not words:
        names = sorted((name, alias.command) for name, alias in shell.aliases.items())
        print("Total number of aliases:", len(names))
        return names
    if len(words) == 1:
        raise UsageError("usage: %alias name command (with %s for each argument, or %l for the whole line)")
    name, command = words
    if name in _NOT_ALIASABLE:
        raise UsageError("The name %s can't be aliased because it is a keyword or builtin." % name)
    if name in shell._magics.line_table() and name not in shell.aliases:
        raise UsageError("The name %s can't be aliased because it is another magic command." % name)
    _define(shell, name, command)
    return None


def unalias(shell, args, frame):
    """`%unalias name`: forget an alias."""
    name = args.strip()
    if name not in shell.aliases:
        print("%s is not an alias" % name)
        return None
    del shell.aliases[name]
    del shell._magics.line_table()[name]
    return None


# files -------------------------------------------------------------------


def writefile(shell, args, body, frame):
    """`%%writefile [-a] path`: write (or append) the cell's text to a file."""
    words = shlex.split(args)
    append = "-a" in words or "--append" in words
    paths = [word for word in words if word not in ("-a", "--append")]
    if len(paths) != 1:
        raise misuse("usage: %%writefile [-a] path")
    path = os.path.expanduser(paths[0])
    parent = os.path.dirname(path)
    if parent:
        os.makedirs(parent, exist_ok=True)
    existed = os.path.exists(path)
    with open(path, "a" if append else "w", encoding="utf-8") as handle:
        handle.write(body)
    if append:
        print("Appending to %s" % paths[0])
    else:
        print("%s %s" % ("Overwriting" if existed else "Writing", paths[0]))
    display.emit_status("writefile", path=os.path.abspath(path), chars=len(body), append=append)
    return None


LINE_MAGICS = {
    "cd": cd,
    "pwd": pwd,
    "ls": ls,
    "env": env,
    "set_env": set_env,
    "sx": sx,
    "system": sx,
    "alias": alias,
    "unalias": unalias,
}
# `%%file` is IPython's other name for `%%writefile`.
CELL_MAGICS = {"sx": sx_cell, "system": sx_cell, "writefile": writefile, "file": writefile}
