"""Running code in a particular way: %time / %%time, %timeit / %%timeit,
%load, %run, and %%capture."""
import math
import os
import shlex
import sys
import time as clock

from .. import display, usermain
from .framework import misuse, split_options, unquote


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


def time(shell, args, frame):
    """`%time statement_or_expression`: run once, print CPU and wall time, return the value."""
    return _timed(shell, args, frame, "<timed eval>")


def time_cell(shell, args, body, frame):
    return _timed(shell, body, frame, "<timed exec>")


def _timed(shell, code, frame, label):
    cpu_start = os.times()
    wall_start = clock.perf_counter()
    value = shell._kernel.run_fragment(code, frame.f_globals, frame.f_locals, label)
    wall = clock.perf_counter() - wall_start
    cpu_end = os.times()
    user = cpu_end[0] - cpu_start[0]
    system = cpu_end[1] - cpu_start[1]
    print("CPU times: user %s, sys: %s, total: %s" % (format_time(user), format_time(system), format_time(user + system)))
    print("Wall time: %s" % format_time(wall))
    display.emit_status("time", wall_ms=wall * 1000.0, cpu_ms=(user + system) * 1000.0)
    return value


def timeit(shell, args, frame):
    """`%timeit [-n N] [-r R] [-p P] [-q] [-o] statement`: IPython's timing summary."""
    options, statement = split_options(args, "nrp", "qo")
    return _timeit(options, statement, "pass", frame)


def timeit_cell(shell, args, body, frame):
    options, setup = split_options(args, "nrp", "qo")
    return _timeit(options, body, setup or "pass", frame)


def _timeit(options, statement, setup, frame):
    import timeit as timeit_module

    if not statement.strip():
        raise misuse("%timeit needs a statement to time")
    namespace = frame.f_globals if frame.f_locals is frame.f_globals else dict(frame.f_globals, **frame.f_locals)
    timer = timeit_module.Timer(statement, setup, timer=clock.perf_counter, globals=namespace)
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


def load(shell, args, frame):
    """`%load path`: run a file's code in the kernel, as if it were this cell."""
    path = os.path.expanduser(unquote(args))
    if not path:
        raise misuse("%load needs a file path")
    with open(path, "r", encoding="utf-8") as handle:
        source = handle.read()
    display.emit_status("load", path=os.path.abspath(path), lines=source.count("\n") + 1)
    return shell._kernel.run_fragment(source, frame.f_globals, frame.f_locals, os.path.abspath(path))


def run(shell, args, frame):
    """`%run script.py [args]`: run a script as __main__ with sys.argv set; its
    global names are then added to yours."""
    argv = shlex.split(args)
    if not argv:
        raise misuse("%run needs a file path")
    path = os.path.expanduser(argv[0])
    names = usermain.run_script(path, argv[1:])
    for name, value in names.items():
        if not (name.startswith("__") and name.endswith("__")):
            frame.f_globals[name] = value
    display.emit_status("run", path=os.path.abspath(path), argv=argv[1:])
    return None


def capture(shell, args, body, frame):
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
        if keep_display and display.STATUS_MIME not in data:
            outputs.append((data, metadata))
            return True
        return False

    kernel = shell._kernel
    with kernel.diverted(on_text, on_display):
        value = kernel.run_fragment(body, frame.f_globals, frame.f_locals, "<capture>")
        if value is not None:
            on_display("result", *display.mime_bundle(value))
    captured = CapturedIO("".join(streams["stdout"]), "".join(streams["stderr"]), outputs)
    if names:
        frame.f_globals[names[0]] = captured
    return None


LINE_MAGICS = {"time": time, "timeit": timeit, "load": load, "run": run}
CELL_MAGICS = {"time": time_cell, "timeit": timeit_cell, "capture": capture}
