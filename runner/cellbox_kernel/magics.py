"""The magics themselves: what `%name`, `%%name`, `!cmd` and `var = !cmd` do.

The transformer turns each form into a call on the `Magics` object the
kernel puts in builtins as `__cellbox_magic__`. Behaviour follows IPython's;
each magic also emits a status event (`application/x-cellbox-status`).
"""
import math
import os
import shlex
import subprocess
import sys
import time

from . import display, magics_packages, magics_scripts, magics_shell, usermain
from .expansion import expand
from .slist import SList


class UsageError(Exception):
    """A magic was called with arguments it cannot use."""


class PipError(RuntimeError):
    """pip exited with an error; its output is above in the cell."""


# Shown by their bare names in tracebacks, as IPython's own are.
UsageError.__module__ = "builtins"
PipError.__module__ = "builtins"

# Magics whose arguments are code, where `$x` and `{x}` must stay as written.
_NO_EXPANSION = frozenset(("time", "timeit", "prun"))


def _usage(message):
    return NameError("UsageError: " + message)


def format_time(seconds, precision=3):
    """IPython's `_format_time`: 1.23 s, 4.56 ms, 7.89 µs, 12.3 ns, or 1min 2s."""
    if seconds >= 60.0:
        parts = []
        for suffix, length in (("d", 86400), ("h", 3600), ("min", 60), ("s", 1)):
            value = int(seconds / length)
            if value > 0:
                seconds = seconds % length
                parts.append("%s%s" % (value, suffix))
            if not seconds:
                break
        return " ".join(parts)
    units = ("s", "ms", "\xb5s", "ns")
    scaling = (1, 1e3, 1e6, 1e9)
    order = min(-int(math.floor(math.log10(seconds)) // 3), 3) if seconds > 0.0 else 3
    return "%.*g %s" % (precision, seconds * scaling[order], units[order])


class TimeitResult:
    """What `%timeit -o` returns: per-loop timings and IPython's summary line."""

    def __init__(self, loops, repeat, all_runs, precision=3):
        self.loops = loops
        self.repeat = repeat
        self.all_runs = all_runs
        self.timings = [run / loops for run in all_runs]
        self.best = min(self.timings)
        self.worst = max(self.timings)
        self.average = sum(self.timings) / len(self.timings)
        self.stdev = math.sqrt(sum((t - self.average) ** 2 for t in self.timings) / len(self.timings))
        self._precision = precision

    def __str__(self):
        return "%s \xb1 %s per loop (mean \xb1 std. dev. of %d run%s, %s loop%s each)" % (
            format_time(self.average, self._precision),
            format_time(self.stdev, self._precision),
            self.repeat,
            "" if self.repeat == 1 else "s",
            "{:,}".format(self.loops),
            "" if self.loops == 1 else "s",
        )

    __repr__ = __str__


class CapturedIO:
    """What `%%capture name` stores: `.stdout`, `.stderr`, `.outputs` (rich
    displays as (data, metadata) pairs), and `.show()` to replay them."""

    def __init__(self, stdout, stderr, outputs):
        self.stdout = stdout
        self.stderr = stderr
        self.outputs = outputs

    def show(self):
        sys.stdout.write(self.stdout)
        sys.stderr.write(self.stderr)
        sys.stdout.flush()
        sys.stderr.flush()
        for data, metadata in self.outputs:
            display.publish("display", data, metadata)

    __call__ = show

    def __repr__(self):
        return "<CapturedIO stdout=%d chars, stderr=%d chars, %d outputs>" % (
            len(self.stdout),
            len(self.stderr),
            len(self.outputs),
        )


def _split_options(args, with_value, flags):
    """Leading `-x value` / `-x` options of a magic line; returns (options, rest)."""
    options = {}
    rest = args.lstrip()
    while rest.startswith("-"):
        head, _, tail = rest.partition(" ")
        key = head[1:2]
        if head[:2] in ("--",):
            break
        if key in with_value:
            value = head[2:]
            if not value:
                value, _, tail = tail.lstrip().partition(" ")
            options[key] = value
        elif key in flags and len(head) == 2:
            options[key] = True
        else:
            break
        rest = tail.lstrip()
    return options, rest


class Magics:
    """Everything the generated code calls. `kernel` gives the user namespace,
    a way to run code fragments, and output diversion for `%%capture`."""

    def __init__(self, kernel):
        self._kernel = kernel
        self._previous_dir = None
        self._line_magics = {
            "pip": self.pip,
            "cd": self.cd,
            "pwd": self.pwd,
            "ls": self.ls,
            "env": self.env,
            "set_env": self.set_env,
            "time": self.time,
            "timeit": self.timeit,
            "who": self.who,
            "whos": self.whos,
            "reset": self.reset,
            "load": self.load,
            "run": self.run,
        }
        self._cell_magics = {
            "bash": self.bash,
            "sh": self.sh,
            "capture": self.capture,
            "writefile": self.writefile,
            "time": self.time_cell,
            "timeit": self.timeit_cell,
        }
        for extension in (magics_scripts, magics_packages, magics_shell):
            extension.register(self)
        from . import magics_ext

        # get_ipython(), history, settings, help, debugging and the rest of IPython's magics.
        self.shell = magics_ext.install(kernel, self)

    # entry points used by the generated code -------------------------------

    def line(self, name, args):
        return self.call_line(name, args, sys._getframe(1))

    def cell(self, name, args, body):
        return self.call_cell(name, args, body, sys._getframe(1))

    def call_line(self, name, args, frame):
        """Run line magic `name` for the code running in `frame`."""
        method, args = self._resolve(self._line_magics, "Line magic function `%%%s` not found.", name, args, frame)
        return method(args, frame)

    def call_cell(self, name, args, body, frame):
        method, args = self._resolve(self._cell_magics, "Cell magic `%%%%%s` not found.", name, args, frame)
        return method(args, body, frame)

    def line_table(self):
        """{name: function(args, frame)}: the line magics, open to extensions."""
        return self._line_magics

    def cell_table(self):
        """{name: function(args, body, frame)}: the cell magics."""
        return self._cell_magics

    def _resolve(self, table, missing, name, args, frame):
        """The magic's method and its arguments, expanded in the user's frame."""
        method = table.get(name)
        if method is None:
            raise _usage(missing % name)
        if name not in _NO_EXPANSION:
            args = expand(args, frame)
        return method, args

    def system(self, command):
        """`!cmd`: run in a shell, output streaming into the cell; sets `_exit_code`."""
        frame = sys._getframe(1)
        command = expand(command, frame)
        code = subprocess.call(command, shell=True, stdin=subprocess.DEVNULL)
        self._kernel.namespace["_exit_code"] = code
        return None

    def getoutput(self, command):
        """`var = !cmd` / `!!cmd`: the output lines (stderr merged) as an SList."""
        frame = sys._getframe(1)
        command = expand(command, frame)
        process = subprocess.run(
            command, shell=True, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        )
        self._kernel.namespace["_exit_code"] = process.returncode
        return SList(process.stdout.decode("utf-8", "replace").splitlines())

    # line magics -----------------------------------------------------------

    def pip(self, args, frame):
        """`%pip ...`: run this interpreter's pip; then forget the modules of every
        distribution it installed or upgraded, so the next import loads the new code."""
        before = _distributions()
        command = magics_packages.pip_command(shlex.split(args))
        code = subprocess.call(command, stdin=subprocess.DEVNULL)
        after = _distributions()
        changed = sorted(name for name, version in after.items() if before.get(name) != version)
        evicted = _evict_modules(changed)
        import importlib

        importlib.invalidate_caches()
        display.emit_status("pip", args=args, installed=changed, evicted=evicted, exit_code=code)
        if code != 0:
            raise PipError("pip exited with status %d; its output is above%s" % (code, magics_packages.network_note()))
        return None

    def cd(self, args, frame):
        """`%cd [path|-]`: change the kernel's directory (kept for later cells)."""
        target = _unquote(args)
        if not target:
            target = os.path.expanduser("~")
        elif target == "-":
            if self._previous_dir is None:
                raise _usage("%cd -: no previous directory")
            target = self._previous_dir
        previous = os.getcwd()
        os.chdir(os.path.expanduser(target))
        self._previous_dir = previous
        here = os.getcwd()
        print(here)
        display.emit_status("cd", path=here)
        return None

    def pwd(self, args, frame):
        return os.getcwd()

    def ls(self, args, frame):
        """`%ls [path]`: the sorted entries of a folder."""
        path = os.path.expanduser(_unquote(args) or ".")
        entries = sorted(os.listdir(path))
        display.emit_status("ls", path=os.path.abspath(path), count=len(entries))
        return entries

    def env(self, args, frame):
        """`%env` (all), `%env KEY` (one), `%env KEY=VALUE` or `%env KEY VALUE` (set)."""
        args = args.strip()
        if not args:
            display.emit_status("env", action="list")
            return dict(os.environ)
        if "=" in args or len(args.split(None, 1)) == 2:
            return self.set_env(args, frame)
        if args not in os.environ:
            raise _usage("Environment does not have key: %s" % args)
        display.emit_status("env", action="get", key=args)
        return os.environ[args]

    def set_env(self, args, frame):
        """`%set_env KEY VALUE` or `%set_env KEY=VALUE`."""
        args = args.strip()
        first_word = args.split(None, 1)[0] if args else ""
        if "=" in first_word:
            key, _, value = args.partition("=")
        else:
            parts = args.split(None, 1)
            if len(parts) != 2:
                raise _usage("usage: %set_env KEY VALUE")
            key, value = parts
        key, value = key.strip(), _unquote(value.strip())
        os.environ[key] = value
        print("env: %s=%s" % (key, value))
        display.emit_status("env", action="set", key=key)
        return None

    def time(self, args, frame):
        """`%time statement_or_expression`: run once, print CPU and wall time, return the value."""
        return self._timed(args, frame, "<timed eval>")

    def time_cell(self, args, body, frame):
        return self._timed(body, frame, "<timed exec>")

    def _timed(self, code, frame, label):
        cpu_start = os.times()
        wall_start = time.perf_counter()
        value = self._kernel.run_fragment(code, frame.f_globals, frame.f_locals, label)
        wall = time.perf_counter() - wall_start
        cpu_end = os.times()
        user = cpu_end[0] - cpu_start[0]
        system = cpu_end[1] - cpu_start[1]
        print("CPU times: user %s, sys: %s, total: %s" % (format_time(user), format_time(system), format_time(user + system)))
        print("Wall time: %s" % format_time(wall))
        display.emit_status("time", wall_ms=wall * 1000.0, cpu_ms=(user + system) * 1000.0)
        return value

    def timeit(self, args, frame):
        """`%timeit [-n N] [-r R] [-p P] [-q] [-o] statement`: IPython's timing summary."""
        options, statement = _split_options(args, "nrp", "qo")
        return self._timeit(options, statement, "pass", frame)

    def timeit_cell(self, args, body, frame):
        options, setup = _split_options(args, "nrp", "qo")
        return self._timeit(options, body, setup or "pass", frame)

    def _timeit(self, options, statement, setup, frame):
        import timeit as timeit_module

        if not statement.strip():
            raise _usage("%timeit needs a statement to time")
        namespace = frame.f_globals if frame.f_locals is frame.f_globals else dict(frame.f_globals, **frame.f_locals)
        timer = timeit_module.Timer(statement, setup, timer=time.perf_counter, globals=namespace)
        repeat = int(options.get("r", 7))
        precision = int(options.get("p", 3))
        if "n" in options:
            number = int(options["n"])
        else:
            number = 1
            for power in range(10):
                number = 10 ** power
                if timer.timeit(number) >= 0.2:
                    break
        result = TimeitResult(number, repeat, timer.repeat(repeat, number), precision)
        if not options.get("q"):
            if result.worst > 4 * result.best and result.best > 0 and result.worst > 1e-6:
                print(
                    "The slowest run took %0.2f times longer than the fastest. This could mean that an intermediate "
                    "result is being cached." % (result.worst / result.best)
                )
            print(result)
        display.emit_status(
            "timeit",
            mean_ms=result.average * 1000.0,
            std_ms=result.stdev * 1000.0,
            runs=repeat,
            loops=number,
        )
        return result if options.get("o") else None

    def _user_names(self, type_filter=()):
        hidden = self._kernel.hidden_names()
        names = []
        for name, value in self._kernel.namespace.items():
            if name.startswith("_") or name in hidden:
                continue
            if type_filter and type(value).__name__ not in type_filter:
                continue
            names.append(name)
        return sorted(names)

    def who(self, args, frame):
        """`%who [type ...]`: the names you defined."""
        names = self._user_names(tuple(args.split()))
        if not names:
            print("Interactive namespace is empty.")
        else:
            print("\t".join(names))
        return None

    def whos(self, args, frame):
        """`%whos [type ...]`: IPython's table of Variable / Type / Data/Info."""
        names = self._user_names(tuple(args.split()))
        if not names:
            print("Interactive namespace is empty.")
            return None
        values = [self._kernel.namespace[name] for name in names]
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

    def reset(self, args, frame):
        """`%reset`: delete every name you defined (no confirmation) and reload the prelude."""
        self._kernel.reset_namespace()
        display.emit_status("reset")
        return None

    def load(self, args, frame):
        """`%load path`: run a file's code in the kernel, as if it were this cell."""
        path = os.path.expanduser(_unquote(args))
        if not path:
            raise _usage("%load needs a file path")
        with open(path, "r", encoding="utf-8") as handle:
            source = handle.read()
        display.emit_status("load", path=os.path.abspath(path), lines=source.count("\n") + 1)
        return self._kernel.run_fragment(source, frame.f_globals, frame.f_locals, os.path.abspath(path))

    def run(self, args, frame):
        """`%run script.py [args]`: run a script as __main__ with sys.argv set; its
        global names are then added to yours."""
        argv = shlex.split(args)
        if not argv:
            raise _usage("%run needs a file path")
        path = os.path.expanduser(argv[0])
        names = usermain.run_script(path, argv[1:])
        for name, value in names.items():
            if not (name.startswith("__") and name.endswith("__")):
                frame.f_globals[name] = value
        display.emit_status("run", path=os.path.abspath(path), argv=argv[1:])
        return None

    # cell magics -----------------------------------------------------------

    def bash(self, args, body, frame):
        return self._script(["bash"] + shlex.split(args), body)

    def sh(self, args, body, frame):
        return self._script(["sh"] + shlex.split(args), body)

    def _script(self, command, body):
        code = subprocess.call(command + ["-c", body], stdin=subprocess.DEVNULL)
        self._kernel.namespace["_exit_code"] = code
        display.emit_status("shell", shell=command[0], exit_code=code)
        return None

    def capture(self, args, body, frame):
        """`%%capture [name] [--no-stdout] [--no-stderr] [--no-display]`: run the
        cell and keep its stdout, stderr and displays in `name` instead of showing them."""
        words = shlex.split(args)
        keep = {"stdout": "--no-stdout" not in words, "stderr": "--no-stderr" not in words}
        keep_display = "--no-display" not in words
        names = [word for word in words if not word.startswith("--")]
        streams = {"stdout": [], "stderr": []}
        outputs = []

        def on_text(stream, text):
            if keep[stream]:
                streams[stream].append(text)
                return True
            return False  # not captured: shown as usual

        def on_display(kind, data, metadata):
            if keep_display and STATUS_KEY not in data:
                outputs.append((data, metadata))
                return True
            return False

        with self._kernel.diverted(on_text, on_display):
            value = self._kernel.run_fragment(body, frame.f_globals, frame.f_locals, "<capture>")
            if value is not None:
                on_display("result", *display.mime_bundle(value))
        captured = CapturedIO("".join(streams["stdout"]), "".join(streams["stderr"]), outputs)
        if names:
            frame.f_globals[names[0]] = captured
        return None

    def writefile(self, args, body, frame):
        """`%%writefile [-a] path`: write (or append) the cell's text to a file."""
        words = shlex.split(args)
        append = "-a" in words or "--append" in words
        paths = [word for word in words if word not in ("-a", "--append")]
        if len(paths) != 1:
            raise _usage("usage: %%writefile [-a] path")
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


STATUS_KEY = display.STATUS_MIME


def _unquote(text):
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text


def _normalize(name):
    import re

    return re.sub(r"[-_.]+", "-", name).lower()


def _distributions():
    """{normalized distribution name: version} of what is installed now."""
    try:
        from importlib import metadata
    except ImportError:  # pragma: no cover - Python < 3.8
        return {}
    found = {}
    for dist in metadata.distributions():
        try:
            name = dist.metadata["Name"]
        except Exception:
            continue
        if name:
            found[_normalize(name)] = dist.version
    return found


def import_names(distribution):
    """The top-level import names a distribution provides (top_level.txt, else RECORD)."""
    from importlib import metadata

    try:
        dist = metadata.distribution(distribution)
    except Exception:
        return set()
    names = set()
    top_level = dist.read_text("top_level.txt")
    if top_level:
        names.update(line.strip() for line in top_level.splitlines() if line.strip())
    for entry in dist.files or ():
        parts = entry.parts
        if not parts or parts[0].endswith((".dist-info", ".egg-info", ".data")) or parts[0] in ("..", "__pycache__"):
            continue
        head = parts[0]
        if len(parts) == 1:
            if head.endswith(".py"):
                names.add(head[:-3])
            elif head.endswith((".so", ".pyd")):
                names.add(head.split(".")[0])
        else:
            names.add(head)
    return {name for name in names if name.isidentifier()}


def _evict_modules(distributions):
    """Remove from sys.modules every module of these distributions; return the roots."""
    roots = set()
    for distribution in distributions:
        roots.update(import_names(distribution))
    for module in list(sys.modules):
        if module.split(".", 1)[0] in roots:
            del sys.modules[module]
    return sorted(roots)
