"""The fork server ("zygote"): import the preload modules once, then fork kernels.

The host starts `python -u runner.py --zygote --zygote-fd N --host-pid P
--preload a,b` with one end of a Unix SOCK_SEQPACKET socket at fd N. The
zygote imports the modules, checks that no thread is left running (a fork
copies only the calling thread: a lock another thread held stays locked for
ever in the child), says `ready`, and then serves fork requests:

    host -> zygote   {"type": "fork", "id": N, "cwd": ..., "env": {...}, "argv": [...]}
                     with five fds attached (SCM_RIGHTS): the request pipe,
                     stdout, stderr, the frames pipe, the diagnostics pipe
                     (and a sixth, the kernel's control socket, on Linux, and
                     a seventh, its started page, after that)
    zygote -> host   {"type": "forked", "id": N, "pid": P}  (or "fork_failed")
                     {"type": "exit", "pid": P, "code": C, "signal": S}

The zygote is the kernels' parent, so it reaps them and reports how each one
ended. End of file on the socket (the host is gone, or has no more use for
this zygote) ends the zygote; its kernels watch the host themselves.

The child becomes exactly what a spawned runner would be: its own session,
the same fd layout, the kernel's environment, cwd, `sys.path` and `sys.argv`,
fresh random state, then the runner's normal `main()`.
"""
import json
import os
import select
import signal
import socket
import sys
import threading

from . import wire
from .forking import exit_message, receive

# One request: the JSON text (an environment can be large) and five fds, six
# with the kernel's control socket (see `fork.py`), seven with its started page.
_MAX_MESSAGE = 1 << 20
_FD_COUNTS = (5, 6, 7)


def _arg(argv, name):
    for index, arg in enumerate(argv[:-1]):
        if arg == name:
            return argv[index + 1]
    return None


def _native_threads():
    """Threads of this process as the OS sees them (Linux), else None."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return None


def _python_threads():
    return [t.name for t in threading.enumerate() if t is not threading.main_thread()]


def _blas_pool_size():
    """How many worker threads OpenBLAS may start: one per CPU but this one.

    OpenBLAS (numpy's BLAS) starts its pool at import and stops it in its own
    pthread_atfork handler before every fork, so those threads are fork-safe."""
    return max(0, (os.cpu_count() or 1) - 1)


def preload(modules):
    """Import each module; return None, or why the zygote cannot be used.

    A module that leaves Python threads running, or native threads that are not
    numpy's BLAS pool, is refused by name."""
    import importlib

    for name in modules:
        before = _native_threads()
        had_numpy = "numpy" in sys.modules
        try:
            importlib.import_module(name)
        except BaseException as error:  # noqa: BLE001 - any failure is reported, the host spawns instead
            return "preloading %r failed: %s: %s" % (name, type(error).__name__, error)
        threads = _python_threads()
        if threads:
            return (
                "preloading %r left %d thread(s) running (%s); a fork copies only one thread, so kernels "
                "cannot be forked after it. Import it in a cell instead" % (name, len(threads), ", ".join(threads))
            )
        after = _native_threads()
        if before is not None and after is not None and after > before:
            blas = not had_numpy and "numpy" in sys.modules and after - before <= _blas_pool_size()
            if not blas:
                return (
                    "preloading %r started %d native thread(s); a fork copies only one thread, so kernels "
                    "cannot be forked after it. Import it in a cell instead" % (name, after - before)
                )
    return None


def _send(sock, message):
    sock.sendall(json.dumps(message).encode("utf-8"))


def _place_fds(fds):
    """Put the received fds at 0, 1, 2, ... in order (copied high first, so that no dup2
    overwrites one not yet moved), and close the received copies."""
    import fcntl

    high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in fds]
    for fd in fds:
        os.close(fd)
    for target, fd in enumerate(high):
        os.dup2(fd, target)
        os.close(fd)


def _fresh_state():
    """What a fork copies but a new process would not have: random state
    (`random`, numpy's legacy global RandomState), tempfile's cached folder
    (the kernel's TMPDIR may differ) and its name sequence."""
    import random

    random.seed()
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        try:
            numpy.random.seed()
        except Exception:  # noqa: BLE001 - a broken numpy must not stop the kernel
            pass
    tempfile = sys.modules.get("tempfile")
    if tempfile is not None:
        tempfile.tempdir = None
        if hasattr(tempfile, "_name_sequence"):
            tempfile._name_sequence = None


def _finish(code):
    """Leave the child as an interpreter exit would: non-daemon threads
    joined, atexit handlers run, buffers flushed; never back into the
    zygote's loop."""
    try:
        threading._shutdown()
    except Exception:  # noqa: BLE001
        pass
    try:
        import atexit

        atexit._run_exitfuncs()
    except Exception:  # noqa: BLE001
        pass
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001
            pass
    os._exit(code)


def _become_kernel(request, fds, base_path, closing):
    """In the forked child: turn into the runner a spawn would have made."""
    code = 70
    try:
        os.setsid()
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for fd in closing:
            os.close(fd)
        _place_fds(fds)
        os.environ.clear()
        os.environ.update(request["env"])
        os.chdir(request["cwd"])
        sys.path[:] = base_path
        sys.argv = list(request["argv"])
        _fresh_state()
        from .main import main

        main()
        code = 0
    except SystemExit as leave:
        code = leave.code if isinstance(leave.code, int) else (0 if leave.code is None else 1)
    except BaseException:  # noqa: BLE001 - report, then leave
        import traceback

        try:
            os.write(4, ("cellbox zygote child failed:\n" + traceback.format_exc()).encode("utf-8", "replace"))
        except OSError:
            pass
    _finish(code)


def _fork(sock, data, fds, base_path, closing):
    """Serve one fork request; the parent closes its copies of the fds."""
    try:
        request = wire.parse_fork_request(data)
        for name in ("cwd", "env", "argv"):
            if name not in request:
                raise ValueError("the fork server needs %r" % name)
    except ValueError as error:
        for fd in fds:
            os.close(fd)
        _send(sock, wire.fork_failed(None, "bad request: %s" % error))
        return
    ident = request.get("id")
    if len(fds) not in _FD_COUNTS:
        for fd in fds:
            os.close(fd)
        _send(sock, wire.fork_failed(ident, "expected 5 to 7 fds, got %d" % len(fds)))
        return
    try:
        pid = os.fork()
    except OSError as error:
        for fd in fds:
            os.close(fd)
        _send(sock, wire.fork_failed(ident, "fork failed: %s" % error))
        return
    if pid == 0:
        _become_kernel(request, fds, base_path, closing)
    for fd in fds:
        os.close(fd)
    _send(sock, wire.forked(ident, pid))


def _reap(sock):
    """Report every child that has ended."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        _send(sock, exit_message(pid, status))


def _receive(sock):
    """One request and its fds; (None, []) at end of file."""
    data, fds = receive(sock, _MAX_MESSAGE, max(_FD_COUNTS))
    if not data:
        for fd in fds:
            os.close(fd)
        return None, []
    return data, fds


def serve(argv):
    """Preload, say ready (or why not), then fork kernels until end of file."""
    sock = socket.socket(fileno=int(_arg(argv, "--zygote-fd")))
    modules = [m for m in (_arg(argv, "--preload") or "").split(",") if m]
    base_path = list(sys.path)
    # The runner's own modules are imported once here too: a kernel then only
    # runs main(). They keep no per-process state at import.
    from . import main  # noqa: F401

    problem = preload(modules)
    if problem is not None:
        _send(sock, wire.fork_server_failed(problem))
        os._exit(0)
    # Preloading must not leave the process elsewhere than it started.
    sys.path[:] = base_path
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_read, False)
    os.set_blocking(wake_write, False)
    signal.signal(signal.SIGCHLD, lambda signum, frame: None)
    signal.set_wakeup_fd(wake_write)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _send(sock, wire.fork_server_ready(os.getpid(), "%d.%d.%d" % sys.version_info[:3]))
    closing = (sock.fileno(), wake_read, wake_write)
    while True:
        try:
            readable, _, _ = select.select([sock, wake_read], [], [])
        except InterruptedError:
            continue
        if wake_read in readable:
            try:
                while os.read(wake_read, 512):
                    pass
            except (BlockingIOError, InterruptedError):
                pass
        _reap(sock)
        if sock in readable:
            data, fds = _receive(sock)
            if data is None:
                break
            _fork(sock, data, fds, base_path, closing)
            _reap(sock)
    os._exit(0)
