"""Shell conveniences from IPython: `%sx` / `%system` (a command's output as an
SList), `%alias` / `%unalias` (named shell commands with `%s` and `%l`
placeholders), and `%store` (variables kept on disk for later kernels).

`%store` keeps one pickle file per variable in
`$XDG_DATA_HOME/cellbox/store/<first 16 hex digits of sha256(project dir)>/`
(`~/.local/share` when XDG_DATA_HOME is unset), where the project directory
is the kernel's working directory when it started: each project has its own
store, and nothing is written inside the project.
"""
import os
import shlex
import subprocess
import types

from . import display
from .slist import SList

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


class UsageError(Exception):
    """A shell magic was called with arguments it cannot use."""


UsageError.__module__ = "builtins"


def register(magics):
    """Add these line magics to a `Magics` object's table."""
    shell = _Shell(magics)
    table = magics._line_magics
    table["sx"] = shell.sx
    table["system"] = shell.sx
    magics._cell_magics["sx"] = shell.sx_cell
    magics._cell_magics["system"] = shell.sx_cell
    table["alias"] = shell.alias
    table["unalias"] = shell.unalias
    table["store"] = shell.store
    for name, command in _DEFAULT_ALIASES:
        if name not in table:
            shell.define(name, command)


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


class _Shell:
    def __init__(self, magics):
        self._magics = magics
        self._aliases = {}
        self._project = os.getcwd()

    # %sx / %system -------------------------------------------------------------

    def sx(self, args, frame):
        """`%sx cmd` / `%system cmd`: the command's output lines (stderr merged)
        as an SList, the same as `!!cmd`."""
        process = subprocess.run(
            args, shell=True, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        )
        frame.f_globals["_exit_code"] = process.returncode
        return SList(process.stdout.decode("utf-8", "replace").splitlines())

    def sx_cell(self, args, body, frame):
        """`%%sx [--out VAR]` / `%%system`: the cell run as a shell script; its
        output lines as an SList, returned or stored in VAR."""
        words = shlex.split(args)
        target = None
        if words[:1] in (["--out"], ["-o"]) and len(words) == 2:
            target = words[1]
        elif words:
            raise UsageError("usage: %%sx [--out VAR]")
        lines = self.sx(body, frame)
        if target is None:
            return lines
        frame.f_globals[target] = lines
        return None

    # %alias / %unalias ---------------------------------------------------------

    def define(self, name, command):
        alias = Alias(name, command)
        self._aliases[name] = alias

        def run_alias(args, frame):
            code = subprocess.call(alias.expand(args), shell=True, stdin=subprocess.DEVNULL)
            frame.f_globals["_exit_code"] = code
            return None

        run_alias.__doc__ = "Alias for `!%s`" % command
        self._magics._line_magics[name] = run_alias

    def alias(self, args, frame):
        """`%alias` lists (name, command) pairs; `%alias name command` defines one."""
        words = args.strip().split(None, 1)
        if not words:
            names = sorted((name, alias.command) for name, alias in self._aliases.items())
            print("Total number of aliases:", len(names))
            return names
        if len(words) == 1:
            raise UsageError("usage: %alias name command (with %s for each argument, or %l for the whole line)")
        name, command = words
        if name in _NOT_ALIASABLE:
            raise UsageError("The name %s can't be aliased because it is a keyword or builtin." % name)
        if name in self._magics._line_magics and name not in self._aliases:
            raise UsageError("The name %s can't be aliased because it is another magic command." % name)
        self.define(name, command)
        return None

    def unalias(self, args, frame):
        """`%unalias name`: forget an alias."""
        name = args.strip()
        if name not in self._aliases:
            print("%s is not an alias" % name)
            return None
        del self._aliases[name]
        del self._magics._line_magics[name]
        return None

    # %store --------------------------------------------------------------------

    def store_dir(self):
        import hashlib  # here, not at start-up: few kernels ever %store

        base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
        digest = hashlib.sha256(os.path.abspath(self._project).encode("utf-8", "surrogateescape")).hexdigest()[:16]
        return os.path.join(base, "cellbox", "store", digest)

    def _path(self, name):
        if not name.isidentifier():
            raise UsageError("%store: %r is not a variable name" % name)
        return os.path.join(self.store_dir(), name)

    def _stored_names(self):
        try:
            return sorted(name for name in os.listdir(self.store_dir()) if name.isidentifier())
        except FileNotFoundError:
            return []

    def _load(self, name):
        import pickle

        with open(self._path(name), "rb") as handle:
            return pickle.load(handle)

    def store(self, args, frame):
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
                os.remove(self._path(names[0]))
            except OSError:
                raise UsageError("Can't delete variable '%s'" % names[0]) from None
        elif "-z" in flags:
            for name in self._stored_names():
                os.remove(self._path(name))
        elif "-r" in flags:
            for name in names or self._stored_names():
                try:
                    namespace[name] = self._load(name)
                except FileNotFoundError:
                    print("no stored variable or alias %s" % name)
                except Exception as error:
                    print("Unable to restore variable '%s', ignoring (use %%store -d to forget!)" % name)
                    print("The error was:", type(error))
        elif not names:
            self._list()
        elif len(names) > 1 and names[1].startswith(">"):
            self._write_text(names[0], names[1], frame)
        else:
            for name in names:
                if name not in namespace:
                    raise UsageError("Unknown variable '%s'" % name)
                if not self._save(name, namespace[name]):
                    return None
        display.emit_status("store", args=args, dir=self.store_dir())
        return None

    def _save(self, name, value):
        defined_by = value if isinstance(value, (type, types.FunctionType)) else type(value)
        module = getattr(defined_by, "__module__", None)
        if module == "__main__":
            print(
                "Warning:%s is %s\nProper storage of interactively declared classes (or instances\n"
                "of those classes) is not possible! Only instances\nof classes in real modules on file system "
                "can be %%store'd.\n" % (name, value)
            )
            return False
        os.makedirs(self.store_dir(), exist_ok=True)
        path = self._path(name)
        temporary = path + ".tmp"
        import pickle

        with open(temporary, "wb") as handle:
            pickle.dump(value, handle, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(temporary, path)
        print("Stored '%s' (%s)" % (name, type(value).__name__))
        return True

    def _list(self):
        names = self._stored_names()
        width = max(map(len, names)) if names else 0
        print("Stored variables and their in-db values:")
        for name in names:
            try:
                text = repr(self._load(name))
            except Exception:
                text = "<unavailable>"
            print("%-*s -> %s" % (width, name, text[:50]))

    def _write_text(self, name, target, frame):
        path = os.path.expanduser(target.lstrip(">").strip())
        value = eval(name, frame.f_globals, frame.f_locals)
        print("Writing '%s' (%s) to file '%s'." % (name, type(value).__name__, path))
        with open(path, "a" if target.startswith(">>") else "w", encoding="utf-8") as handle:
            if isinstance(value, str):
                handle.write(value if value.endswith("\n") else value + "\n")
            else:
                import pprint

                pprint.pprint(value, handle)
