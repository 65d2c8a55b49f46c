"""The runner's main loop: set up the process, answer requests until told to exit.

Set-up, in order: move the protocol fds out of user code's reach (see
`channel.py`), point fd 0 at /dev/null so user code and its children can
never read the protocol, send crash stacks to the cell's stderr, ignore SIGINT
between requests, watch for the host's death, then send the `ready` handshake.
"""
import builtins
import io
import os
import signal
import sys
import threading
import time

from . import display, import_hooks, ipython_compat, memory, mpl, pil, protocol, wire
from .bridge import BRIDGE
from .capture import OutputCapture, flush_python_streams
from .channel import Channel
from .execute import Executor
from .interrupts import InterruptGate, block_interrupts_in_this_thread
from .magics.dispatch import Magics
from .requests import Requests
from .transform import check_complete

# How often an orphaned runner checks whether its host is still alive.
_PARENT_POLL_SECONDS = 1.0


class StdinNotSupportedError(EOFError):
    """Raised by input(): cells have no interactive stdin.

    It is an EOFError, so code written to cope with a closed stdin still works.
    """


StdinNotSupportedError.__module__ = "builtins"  # print the bare name in tracebacks


def _input_not_supported(prompt=""):
    raise StdinNotSupportedError(
        "input() is not supported: cellbox cells have no interactive stdin. "
        "Pass the data in the code instead (a variable, a file, or an argument)."
    )


def _isolate_stdin():
    """fd 0 is already /dev/null (the channel moved the requests away)."""
    sys.stdin = open(0, "r", encoding="utf-8", closefd=False)
    builtins.input = _input_not_supported


def _text_stream(fd):
    """A UTF-8 writer on `fd` that characters UTF-8 cannot carry never break.

    Text goes straight into a 64 KiB byte buffer (write_through), which is
    written when full, at every sync point (displays, the end of a cell), before
    any child process starts, and by the output thread a few times a second
    while a cell runs. One syscall per line would cap output near 50 MB/s.
    """
    raw = io.FileIO(fd, "w", closefd=False)
    return io.TextIOWrapper(
        io.BufferedWriter(raw, 1 << 16), encoding="utf-8", errors="backslashreplace", write_through=True
    )


_flush_python_output = flush_python_streams


def _flush_before_children():
    """Keep order with writes that bypass sys.stdout: a child process or
    os.write(1, ...) goes straight to the fd, so what Python buffered must be
    out first. (C code writing to fd 1 itself can still overtake it, as in
    any Python process whose stdout is a pipe.)

    `subprocess` is patched when something first imports it: most kernels
    never start a child, and the module with what it imports is about 0.6 MB
    of every kernel's memory. Where the standard library's loader cannot be
    hooked (no `exec_module`: a zipped library on Python 3.8 and 3.9) it is
    patched now."""
    if hasattr(getattr(os.__spec__, "loader", None), "exec_module"):
        import_hooks.on_import("subprocess", _flush_before_popen)
    else:
        import subprocess

        _flush_before_popen(subprocess)
    system = os.system

    def flushed_system(command):
        _flush_python_output()
        return system(command)

    flushed_system.__doc__ = system.__doc__
    os.system = flushed_system
    raw_write = os.write

    def ordered_write(fd, data):
        if fd in (1, 2):
            _flush_python_output()
        return raw_write(fd, data)

    ordered_write.__doc__ = raw_write.__doc__
    os.write = ordered_write
    if hasattr(os, "register_at_fork"):  # not on Windows, which has no fork()
        os.register_at_fork(before=_flush_python_output)


def _flush_before_popen(subprocess):
    original = subprocess.Popen._execute_child

    def execute_child(self, *args, **kwargs):
        _flush_python_output()
        return original(self, *args, **kwargs)

    subprocess.Popen._execute_child = execute_child


def _saved_env(request):
    """The current values of the variables a request sets for itself only."""
    if not (request.restore_env and request.env):
        return None
    return {key: os.environ.get(key) for key in request.env}


def _restore_env(saved):
    for key, value in (saved or {}).items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


def _host_pid(argv):
    """The host's pid from `--host-pid N`, if given."""
    for index, arg in enumerate(argv[:-1]):
        if arg == "--host-pid" and argv[index + 1].isdigit():
            return int(argv[index + 1])
    return None


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # exists, owned by someone else
    return True


def _watch_parent(parent_pid, host_pid):
    """Exit, taking our process group along, once the host has died.

    A changed parent pid means we were re-parented; the host's own pid covers
    a host that died before we even started. A kernel forked from another
    (`parent_pid` None) outlives that kernel, so only the host counts.
    """
    block_interrupts_in_this_thread()
    while True:
        time.sleep(_PARENT_POLL_SECONDS)
        reparented = parent_pid is not None and os.getppid() != parent_pid
        if reparented or (host_pid is not None and not _alive(host_pid)):
            if os.getpgrp() == os.getpid():
                os.killpg(os.getpid(), signal.SIGKILL)
            os._exit(1)


class Kernel:
    def __init__(self, writer, capture, gate, channel):
        self._writer = writer
        self._capture = capture
        self._pid = os.getpid()
        self._channel = channel
        self._request_id = None
        self._quoted_id = b'""'  # the running request's id as a JSON string
        self.executor = Executor(gate, self._emit_error, capture)
        display.set_sink(self._publish)
        BRIDGE.connect(writer.send, lambda: self._request_id, _flush_python_output)
        self.magics = builtins.__cellbox_magic__ = Magics(self.executor)
        ipython_compat.install()
        mpl.install()
        pil.install()

    def _publish(self, kind, data, metadata):
        if kind == "result":
            # Only `done` (and figures still open) follow a result: it waits
            # to leave with them in one write. The output thread may send it
            # sooner (a post-run hook can take a while), so what the cell
            # printed before it is flushed to the host's pipe first.
            _flush_python_output()
            text = data.get("text/plain")
            if not metadata and len(data) == 1 and type(text) is str:
                # The common result, a repr, is formatted directly (as `done` is).
                self._writer.send_raw(wire.text_result_line(self._quoted_id, protocol.quote(text)), hold=True)
                return
            self._writer.send(self._frame(kind, data, metadata), hold=True)
            return
        frame = self._frame(kind, data, metadata)
        self._capture.sync()
        # User code goes on after a display: output it writes next must not
        # reach the host before the display does.
        self._writer.send(frame)
        self._channel.wait_frames_read()

    def _frame(self, kind, data, metadata):
        return wire.bundle_frame(kind, self._request_id, data, metadata)

    def _emit_error(self, ename, evalue, traceback_lines):
        _flush_python_output()  # held as a result is, see _publish
        self._writer.send(wire.error(self._request_id, ename, evalue, traceback_lines), hold=True)

    def handle(self, request):
        self._request_id = request.id
        self._quoted_id = quoted_id = protocol.quote(request.id)
        # Said at once, before any of the cell runs: the host blames a
        # kernel's death on this cell only once it knows the cell began.
        self._channel.begin(request.id, quoted_id, self._writer)
        self._capture.begin(request.id)
        outcome = None
        try:
            saved_env = _saved_env(request)
            self.executor.json_results = request.json_results
            if self._apply_context(request):
                outcome = self.executor.run(request.code, request.silent, request.store_history)
        finally:
            if os.getpid() != self._pid:
                self._leave_forked_child()
            self._capture.end()
            _restore_env(saved_env)
            status = outcome.status if outcome is not None else "error"
            cancelled = outcome.cancelled if outcome is not None else False
            # The two frames every request sends are formatted directly: json.dumps
            # costs more than the rest of a trivial cell.
            self._writer.send_raw(wire.done_line(quoted_id, status, self.executor.execution_count, cancelled))
            self._request_id = None

    def after_fork(self):
        """This process is a kernel forked from the one it copied."""
        self._pid = os.getpid()

    @staticmethod
    def _leave_forked_child():
        """A child made by os.fork() in a cell came back here instead of
        exiting: it must not answer requests beside the real runner. Its
        output is flushed to the shared fd 1/2 first, then it leaves."""
        _flush_python_output()
        os._exit(0)

    def _apply_context(self, request):
        """Apply the request's cwd and env; report a failure as the cell's error."""
        try:
            if request.env:
                for key, value in request.env.items():
                    if value is None:
                        os.environ.pop(key, None)
                    else:
                        os.environ[key] = value
            if request.cwd is not None:
                os.chdir(request.cwd)
                if request.cwd not in sys.path:
                    sys.path.insert(0, request.cwd)
        except (OSError, ValueError) as error:
            self._emit_error(type(error).__name__, str(error), ["%s: %s\n" % (type(error).__name__, error)])
            return False
        return True

    def protocol_error(self, error):
        self._writer.send(wire.error(error.request_id, "ProtocolError", str(error), []))
        if error.request_id is not None:
            self._writer.send(wire.done(error.request_id, "error", self.executor.execution_count))


def main():
    """Run the kernel; a failure of the runner itself is reported on the
    diagnostics fd (the host keeps its tail) and exits with status 70."""
    channel = None
    try:
        channel = Channel(sys.argv)
        _serve(channel)
    except SystemExit:
        raise
    except BaseException as error:
        import errno
        import traceback

        text = "cellbox runner failed:\n" + traceback.format_exc()
        if isinstance(error, OSError) and error.errno == errno.EBADF:
            text = (
                "cellbox runner failed: its protocol channel was closed by code outside Python (a C "
                "extension or ctypes closed the runner's private file descriptors); the kernel must restart.\n"
                + text
            )
        if channel is None or not channel.diagnose(text):
            try:
                os.write(2, text.encode("utf-8", "replace"))
            except OSError:
                pass
        os._exit(70)


def _start_parent_watch(parent_pid, host_pid):
    thread = threading.Thread(target=_watch_parent, args=(parent_pid, host_pid), name="cellbox-parent-watch", daemon=True)
    thread.start()


def _ready_frame(lost_threads=None):
    return wire.ready(os.getpid(), "%d.%d.%d" % sys.version_info[:3], sys.executable, lost_threads)


def _snapshot_answer(request, namespace, shell, channel):
    """Save or restore for `request`; the `snapshot` frame with the report, or
    with the reason in words (a bad file, a path that cannot be written)."""
    from . import handoff, snapshot

    try:
        if request.file is not None:
            report = _snapshot_handed(request, namespace, shell, handoff.receive(channel, request.file))
        elif request.restore:
            report = snapshot.load(request.path, namespace, shell)
        else:
            report = snapshot.save(namespace, request.path, request.version, shell)
    except (snapshot.SnapshotError, handoff.HandoffError) as error:
        return wire.snapshot(request.id, error=str(error))
    except OSError as error:
        what = "restore from" if request.restore else "save to"
        return wire.snapshot(request.id, error="cannot %s %s: %s" % (what, request.path, error.strerror or error))
    except Exception as error:  # a damaged file whose checksum still matched: the kernel goes on
        what = "restore from" if request.restore else "save to"
        return wire.snapshot(request.id, error="cannot %s %s: %s: %s" % (what, request.path, type(error).__name__, error))
    return wire.snapshot(request.id, report=protocol.jsonable(report))


def _snapshot_handed(request, namespace, shell, fd):
    """Save into or restore from the file the host handed over (`handoff.py`), with the shell's settings."""
    from . import snapshot

    with os.fdopen(fd, "rb" if request.restore else "wb") as handle:
        if request.restore:
            return snapshot.load_from(handle, namespace, request.path, shell)
        return snapshot.save_to(namespace, handle, request.version, shell)


def _serve(channel):
    parent_pid = os.getppid()
    _isolate_stdin()
    try:
        import faulthandler

        # A crash in C code leaves every thread's Python stack on the
        # diagnostics pipe, which the host reads even though the process is
        # gone: the cell's part of it is shown, the whole kept.
        faulthandler.enable(file=channel.fault_file(), all_threads=True)
    except Exception:
        pass

    writer = protocol.FrameWriter(channel.frames)
    channel.on_fork_child.append(writer.disable)
    capture = OutputCapture(writer, channel)
    channel.install_streams(_text_stream)
    _flush_before_children()
    channel.protect(_flush_python_output)
    gate = InterruptGate()
    writer.gate = gate
    host_pid = _host_pid(sys.argv)
    # User code sees what the interactive interpreter shows, not our arguments.
    sys.argv = [""]
    # On Windows the host's Job Object ends the kernel with the host (and
    # os.kill(pid, 0) there would terminate the host, not probe it).
    if sys.platform != "win32":
        _start_parent_watch(parent_pid, host_pid)

    kernel = Kernel(writer, capture, gate, channel)
    reader = protocol.RequestReader(channel.requests)
    writer.send(_ready_frame())

    def become_forked_child(lost_threads):
        """In a kernel forked from this one: the runner's threads and buffers
        start over on the new pipes, then the host hears `ready`."""
        kernel.after_fork()
        writer.after_fork()
        reader.drop_buffer()
        capture.start_output_thread()
        _start_parent_watch(None, host_pid)
        writer.send(_ready_frame(lost_threads))

    # Made at the first fork request: most kernels are never forked, and it imports socket.
    forker = None
    # Windows has no SIGINT to send: interrupts arrive as request lines, read while a cell runs.
    always_read = sys.platform == "win32"
    requests = Requests(reader, BRIDGE, always_read=always_read)
    while True:
        request = requests.next()
        if request is None:
            break
        if type(request) is protocol.Request:  # a cell, by far the most frequent
            kernel.handle(request)
            memory.after_cell()
            continue
        if isinstance(request, protocol.ProtocolError):
            kernel.protocol_error(request)
            continue
        if isinstance(request, protocol.ExitRequest):
            break
        if isinstance(request, protocol.SnapshotRequest):
            writer.send(_snapshot_answer(request, kernel.executor.namespace, kernel.magics.shell, channel))
            continue
        if isinstance(request, protocol.ForkRequest):
            if forker is None:
                from .fork import Forker

                forker = Forker(channel, become_forked_child)
            if forker.fork(request, _flush_python_output):
                requests = Requests(reader, BRIDGE, always_read=always_read)
            continue
        if isinstance(request, protocol.CheckRequest):
            from .precheck import check_cells

            cells, notes = check_cells(request.cells, request.lint, kernel.executor.namespace)
            writer.send(wire.checked(request.id, cells, notes))
            continue
        if isinstance(request, protocol.CompleteRequest):
            status, indent = check_complete(request.code)
            writer.send(wire.completeness(request.id, status, indent))
            continue
        kernel.handle(request)
    capture.sync()
    sys.exit(0)
