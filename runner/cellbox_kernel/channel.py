"""The runner's private file descriptors, kept out of user code's reach.

The host starts the runner with this layout: fd 0 carries requests, fd 1 and
fd 2 are pipes the host reads itself (the cell's stdout and stderr, so they
reach the host even if this process dies), fd 3 carries frames to the host and
fd 4 the runner's own diagnostics. At start the runner moves fd 0, 3 and 4 to
private close-on-exec fds near the top of the fd table, points fd 0 at
/dev/null and keeps private duplicates of fd 1 and fd 2. Then:

- `os.close`, `os.closerange` and `os.dup2` called from Python skip the
  private fds, so a daemon idiom like `os.closerange(3, 256)` cannot cut the
  channel;
- forked children close the request, frame and diagnostics fds at once, so no
  child can ever write a frame;
- before and after each cell, fd 1/2 and `sys.stdout`/`sys.stderr` are
  compared with what the runner set up and repaired when user code closed or
  redirected them, with a note on stderr;
- `wait_output_read()` waits until the host has read everything written to
  fd 1/2 so far, and `wait_frames_read()` until it has read every frame: a
  frame written between the two is therefore in its exact place among the
  output (see `capture.py`).

On Linux the host also gives a small memory file (`--started-fd`): the id of
each request the runner begins is written there instead of a `started` frame,
and the host reads it only when this process has died (see `begin`).

On Windows the host passes the frame and diagnostics pipes as inherited
handles (`--frames-handle`, `--diagnostics-handle`), opened here as fds.

Started without `--frames-fd` (by hand, for debugging), the runner writes its
frames to the original stdout and cell output to the original stderr.
"""
import errno
import os
import sys
import time

from . import wire

# Bound before the runner wraps them: repairs and notes must not be skipped or
# reordered by the wrappers.
_raw_write = os.write
_raw_pwrite = getattr(os, "pwrite", None)  # not on Windows, which gets no started page
_raw_dup2 = os.dup2

_FIONREAD = None
try:
    import fcntl
    import termios

    _FIONREAD = termios.FIONREAD
except ImportError:  # pragma: no cover - not a Unix
    fcntl = None

# The sys.stdout/sys.stderr the runner installed (kept flushed even when user
# code switched to other streams).
OWN_STREAMS = []

# How long a frame waits for the host to catch up with the output before it is
# written anyway (a background process writing without pause never lets the
# pipe run empty). After one such give-up, later waits are short until the
# pipe is seen empty again.
_WAIT_LIMIT = 0.5
_SHORT_WAIT_LIMIT = 0.02


def _arg(argv, name):
    for index, arg in enumerate(argv[:-1]):
        if arg == name and argv[index + 1].isdigit():
            return int(argv[index + 1])
    return None


def _handle_arg(argv, name):
    """An inherited Windows handle named on the command line, as an fd."""
    handle = _arg(argv, name)
    if handle is None:
        return None
    import msvcrt

    return msvcrt.open_osfhandle(handle, os.O_WRONLY)


def _floor():
    """The lowest fd number the private fds may take: high, so they stay out
    of the way of code that assumes small fds are its own, yet below the limit."""
    limit = 1024
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        if 0 < soft < limit:
            limit = soft
    except (ImportError, OSError, ValueError):
        pass
    return max(10, limit - 24)


def _private(fd, floor):
    """A close-on-exec duplicate of `fd` at or above `floor`."""
    if fcntl is not None:
        try:
            new = fcntl.fcntl(fd, fcntl.F_DUPFD, floor)
        except OSError:
            new = os.dup(fd)
    else:  # pragma: no cover
        new = os.dup(fd)
    os.set_inheritable(new, False)
    return new


def _identity(fd):
    try:
        info = os.fstat(fd)
    except OSError:
        return None
    return (info.st_dev, info.st_ino)


class _FdFile:
    """What faulthandler needs of a file: its fd (and a no-op flush)."""

    def __init__(self, fd):
        self._fd = fd

    def fileno(self):
        return self._fd

    def flush(self):
        pass


class Channel:
    """The private fds and the repairs that keep them working."""

    def __init__(self, argv):
        floor = _floor()
        frames_fd = _arg(argv, "--frames-fd")
        if frames_fd is None:
            frames_fd = _handle_arg(argv, "--frames-handle")
        diagnostics_fd = _arg(argv, "--diagnostics-fd")
        if diagnostics_fd is None:
            diagnostics_fd = _handle_arg(argv, "--diagnostics-handle")
        control_fd = _arg(argv, "--control-fd")
        started_fd = _arg(argv, wire.STARTED_FD_FLAG)
        self.host_pipes = frames_fd is not None
        self.requests = _private(0, floor)
        if self.host_pipes:
            self.frames = _private(frames_fd, floor)
            os.close(frames_fd)
        else:
            self.frames = _private(1, floor)
            os.dup2(2, 1)  # cell output must not mix with frames
        if diagnostics_fd is not None:
            self.diagnostics = _private(diagnostics_fd, floor)
            os.close(diagnostics_fd)
        else:
            self.diagnostics = _private(2, floor)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.close(devnull)
        self.saved = {1: _private(1, floor), 2: _private(2, floor)}
        # The socket fork requests bring their fds on (see `fork.py`), when the host gave one.
        self.control = None
        self._control_socket = None
        if control_fd is not None:
            self.control = _private(control_fd, floor)
            os.close(control_fd)
        # Where the id of each request begun goes instead of a `started` frame
        # (`begin`), when the host made one.
        self.started_page = None
        if started_fd is not None:
            self.started_page = _private(started_fd, floor)
            os.close(started_fd)
        self._identities = {1: _identity(1), 2: _identity(2)}
        self._streams = {}  # "stdout"/"stderr" -> (the stream we installed, factory)
        self._buffer = bytearray(4)
        self._limit = _WAIT_LIMIT
        self._measurable = self.host_pipes and _FIONREAD is not None
        private = [self.requests, self.frames, self.diagnostics, self.saved[1], self.saved[2]]
        if self.control is not None:
            private.append(self.control)
        if self.started_page is not None:
            private.append(self.started_page)
        self.private = frozenset(private)
        self.on_fork_child = []  # callbacks run in a forked child (the writer stops)
        # True while the runner itself forks the kernel: that child keeps the protocol.
        self.forking = False
        self._raw_close = os.close

    def control_socket(self):
        """The control socket as a socket object, made once: fork requests
        (`fork.py`) and handed files (`handoff.py`) share it. None when the
        host gave none."""
        if self._control_socket is None and self.control is not None:
            import socket

            self._control_socket = socket.socket(fileno=self.control)
        return self._control_socket

    def begin(self, request_id, quoted_id, writer):
        """Say that request `request_id` begins: into the started page when the
        host made one (read only if this process dies, so the host is not
        woken for it), else as a `started` frame."""
        page = self.started_page
        if page is not None and _raw_pwrite is not None:
            try:
                _raw_pwrite(page, request_id.encode("utf-8", "replace") + b"\n", 0)
                return
            except OSError:
                pass
        writer.send_raw(wire.started_line(quoted_id))

    def raw_close(self, fd):
        """Close `fd` even if it is private (the wrapped os.close would skip it)."""
        try:
            self._raw_close(fd)
        except OSError:
            pass

    def adopt_fork(self, fds):
        """In a kernel forked by the runner: put the host's new pipes where
        the old ones were (requests, stdout, stderr, frames, diagnostics,
        control), so every object holding those fd numbers talks to the new
        kernel's host ends, then close the received copies."""
        requests, stdout, stderr, frames, diagnostics, control = fds
        # First: the page is its source's: this kernel says `started` to its own host.
        if self.started_page is not None:
            self.raw_close(self.started_page)
            self.started_page = None
        places = [
            (requests, (self.requests,)),
            (stdout, (1, self.saved[1])),
            (stderr, (2, self.saved[2])),
            (frames, (self.frames,)),
            (diagnostics, (self.diagnostics,)),
            (control, (self.control,)),
        ]
        for received, targets in places:
            for target in targets:
                _raw_dup2(received, target, target in (1, 2))
        for received in fds:
            self.raw_close(received)
        self._identities = {1: _identity(1), 2: _identity(2)}

    def fault_file(self):
        """Where faulthandler writes a crash's stacks: the diagnostics pipe,
        which the host reads even after this process is gone and which no
        cell output shares (the host shows the cell's part of the dump and
        keeps the whole of it). A forked child writes to its stderr instead
        (see `_in_forked_child`)."""
        return _FdFile(self.diagnostics)

    def diagnose(self, text):
        """Write the runner's own failure text where the host keeps it;
        False when that fd is gone too."""
        try:
            _raw_write(self.diagnostics, text.encode("utf-8", "replace"))
        except OSError:
            return False
        return True

    # keeping user code away ------------------------------------------------

    def protect(self, flush_python):
        """Make os.close/os.closerange/os.dup2 skip the private fds, close them
        in forked children, and flush Python's buffers before os._exit and
        os.abort (what a cell printed just before is not lost with the process)."""
        private = self.private
        raw_close = os.close
        raw_closerange = os.closerange
        raw_dup2 = os.dup2
        raw_exit = os._exit
        raw_abort = os.abort

        def close(fd):
            if fd in private:
                return None
            return raw_close(fd)

        def closerange(fd_low, fd_high):
            low = fd_low
            for fd in sorted(private):
                if low <= fd < fd_high:
                    if low < fd:
                        raw_closerange(low, fd)
                    low = fd + 1
            if low < fd_high:
                raw_closerange(low, fd_high)

        def dup2(fd, fd2, inheritable=True):
            if fd2 in private:
                raise OSError(errno.EBUSY, "fd %d is reserved by the cellbox kernel" % fd2)
            return raw_dup2(fd, fd2, inheritable)

        def _exit(status):
            flush_python()
            raw_exit(status)

        def abort():
            flush_python()
            raw_abort()

        wrappers = ((close, raw_close), (closerange, raw_closerange), (dup2, raw_dup2), (_exit, raw_exit), (abort, raw_abort))
        for wrapper, original in wrappers:
            wrapper.__doc__ = original.__doc__
            wrapper.__name__ = original.__name__
        os.close, os.closerange, os.dup2, os._exit, os.abort = close, closerange, dup2, _exit, abort
        self._raw_close = raw_close
        if hasattr(os, "register_at_fork"):  # not on Windows, which has no fork()
            os.register_at_fork(after_in_child=self._in_forked_child)

    def _in_forked_child(self):
        """A forked child never speaks the protocol: its copies of the request,
        frame and diagnostics fds go, and its stdout/stderr become unbuffered
        so `print(); os._exit()` loses nothing. A kernel the runner forks
        itself (`forking`) keeps them: it is a kernel too."""
        if self.forking:
            return
        for fd in (self.requests, self.frames, self.diagnostics, self.control, self.started_page):
            if fd is None:
                continue
            try:
                self._raw_close(fd)
            except OSError:
                pass
        # Its crash is its own, not the runner's: the stacks go to its stderr
        # (never to the closed diagnostics fd, whose number may be reused).
        faulthandler = sys.modules.get("faulthandler")
        if faulthandler is not None and faulthandler.is_enabled():
            try:
                faulthandler.enable(file=_FdFile(self.saved[2]), all_threads=True)
            except Exception:
                faulthandler.disable()
        self.private = frozenset()
        self._measurable = False
        for callback in self.on_fork_child:
            try:
                callback()
            except Exception:
                pass
        for name, fd in (("stdout", 1), ("stderr", 2)):
            installed = self._streams.get(name)
            if installed is not None and getattr(sys, name) is installed[0]:
                try:
                    installed[0].flush()
                except Exception:
                    pass
                OWN_STREAMS.remove(installed[0])
                stream = unbuffered_stream(fd)
                OWN_STREAMS.append(stream)
                setattr(sys, name, stream)

    # repairs -----------------------------------------------------------------

    def install_streams(self, make_stream):
        """Set sys.stdout/sys.stderr to make_stream(1)/(2) and remember them."""
        for name, fd in (("stdout", 1), ("stderr", 2)):
            stream = make_stream(fd)
            self._streams[name] = (stream, make_stream, fd)
            OWN_STREAMS.append(stream)
            setattr(sys, name, stream)

    def repair_fds(self):
        """Point fd 1/2 at the host's pipes again if user code closed or
        redirected them; return notes saying what was repaired."""
        notes = []
        for fd, name in ((1, "stdout"), (2, "stderr")):
            expected = self._identities[fd]
            found = _identity(fd)
            if found == expected or expected is None:
                continue
            _raw_dup2(self.saved[fd], fd)
            what = "closed" if found is None else "redirected"
            notes.append("fd %d (%s) had been %s by the code; it is connected to the cell output again" % (fd, name, what))
        return notes

    def repair_streams(self):
        """Give sys.stdout/sys.stderr back when user code set them to None or
        closed them; a stream the user set on purpose and left open stays."""
        notes = []
        for name in ("stdout", "stderr"):
            current = getattr(sys, name)
            if current is not None and not getattr(current, "closed", False):
                continue
            installed, make_stream, fd = self._streams[name]
            if getattr(installed, "closed", False):
                OWN_STREAMS.remove(installed)
                installed = make_stream(fd)
                self._streams[name] = (installed, make_stream, fd)
                OWN_STREAMS.append(installed)
            setattr(sys, name, installed)
            what = "None" if current is None else "closed"
            notes.append("sys.%s was %s; it writes to the cell output again" % (name, what))
        return notes

    def note(self, notes):
        """Tell the cell, on stderr, what was repaired."""
        if notes:
            text = "".join("[cellbox: %s]\n" % note for note in notes)
            try:
                _raw_write(self.saved[2], text.encode("utf-8", "replace"))
            except OSError:
                pass

    # ordering ----------------------------------------------------------------

    def wait_output_read(self):
        """Wait until the host has read every byte written to fd 1/2 so far."""
        if self._measurable:
            self._wait_empty((self.saved[1], self.saved[2]))

    def wait_frames_read(self):
        """Wait until the host has read every frame written so far."""
        if self._measurable:
            self._wait_empty((self.frames,))

    def _unread(self, fd):
        fcntl.ioctl(fd, _FIONREAD, self._buffer, True)
        return int.from_bytes(self._buffer, sys.byteorder)

    def _wait_empty(self, fds):
        try:
            if not any(self._unread(fd) for fd in fds):
                self._limit = _WAIT_LIMIT
                return
            deadline = time.monotonic() + self._limit
            delay = 0.00002
            while True:
                time.sleep(delay)
                if not any(self._unread(fd) for fd in fds):
                    self._limit = _WAIT_LIMIT
                    return
                if time.monotonic() > deadline:
                    self._limit = _SHORT_WAIT_LIMIT
                    return
                delay = min(delay * 2, 0.001)
        except OSError:
            self._measurable = False  # this platform cannot tell; order is best effort



def unbuffered_stream(fd):
    """A UTF-8 text stream that writes every call straight to `fd`."""
    import io

    raw = io.FileIO(fd, "w", closefd=False)
    return io.TextIOWrapper(raw, encoding="utf-8", errors="backslashreplace", write_through=True)
