"""Fork this kernel at a cell boundary: the copy becomes a kernel of its own.

`fork()` copies the whole process, so the child starts with every name,
import and object of the session, for the price of copying page tables
(memory is shared copy-on-write until either side writes to it).

The host makes the child's pipes itself, as for any kernel, and passes their
ends over the control socket (fd `--control-fd`, a Unix SOCK_SEQPACKET
socket) before it writes the `fork` request line:

    host -> kernel   {"type": "fork", "id": N} with six fds attached: the
                     request pipe, stdout, stderr, the frames pipe, the
                     diagnostics pipe and the child's own control socket
    kernel -> host   {"type": "forked", "id": N, "pid": P, "lostThreads": [...]}
                     (or "fork_failed"), then {"type": "exit", "pid": P, ...}
                     when that child ends

This kernel is the child's parent, so one of its threads waits for the child
and reports how it ended. The child leads a session of its own, moves the
received fds onto the runner's private fd numbers (so every object that
holds those numbers keeps working), restarts the runner's threads and sends
`ready` on its new frames pipe, then serves requests like any kernel.

Only the thread that forks survives a fork: threads a cell started do not run
in the copy. The child is told their names (`lostThreads`).
"""
import json
import os
import threading
import warnings

from . import forking, wire

# One message: a small JSON object and six fds.
_MAX_MESSAGE = 1 << 16
_FD_COUNT = 6
# How long the fds may take to arrive after the request line (they are sent first).
_RECEIVE_SECONDS = 10.0


def _user_threads():
    """Names of live threads other than the main thread and the runner's own."""
    return sorted(
        t.name
        for t in threading.enumerate()
        if t is not threading.main_thread() and not t.name.startswith("cellbox-") and t.is_alive()
    )


def _receive(control):
    """One fork message and its fds from the control socket."""
    control.settimeout(_RECEIVE_SECONDS)
    try:
        return forking.receive(control, _MAX_MESSAGE, _FD_COUNT)
    finally:
        control.settimeout(None)


def _send(control, message):
    try:
        control.sendall(json.dumps(message).encode("utf-8"))
    except OSError:
        pass  # the host is gone; nobody is left to tell


def _reap(control, pid):
    """Wait for the child and tell the host how it ended (run on a thread)."""
    try:
        _, status = os.waitpid(pid, 0)
    except ChildProcessError:
        status = None  # a cell reaped it first (os.wait()): the status is lost
    _send(control, forking.exit_message(pid, status))


class Forker:
    """Serves `fork` requests for one kernel (Unix only)."""

    def __init__(self, channel, runner):
        self._channel = channel
        # Called in the child, after its fds are in place: restart the
        # runner's threads and say ready. Returns nothing.
        self._become_child = runner
        self._control = channel.control_socket()
        self._control_fd = channel.control

    def fork(self, request, flush):
        """Fork for `request`; True in the child (which must start over), False here."""
        control = self._control
        if control is None:
            return False  # started by hand: no host to hand the child to
        ident = request.fork_id
        try:
            data, fds = _receive(control)
        except OSError as error:
            _send(control, wire.fork_failed(ident, "no fds came with the request: %s" % error))
            return False
        if _message_id(data) != ident or len(fds) != _FD_COUNT:
            for fd in fds:
                self._channel.raw_close(fd)
            why = "expected fork %d with %d fds, got %d fds" % (ident, _FD_COUNT, len(fds))
            _send(control, wire.fork_failed(ident, why))
            return False
        lost = _user_threads()
        flush()
        try:
            with warnings.catch_warnings():
                # Python 3.12+ warns that forking a threaded process may
                # deadlock: the runner's threads hold no lock at a cell
                # boundary, and the child starts its own again.
                warnings.simplefilter("ignore", DeprecationWarning)
                self._channel.forking = True
                try:
                    pid = os.fork()
                finally:
                    self._channel.forking = False
        except OSError as error:
            for fd in fds:
                self._channel.raw_close(fd)
            _send(control, wire.fork_failed(ident, "fork failed: %s" % error))
            return False
        if pid == 0:
            self._in_child(fds, lost)
            return True
        for fd in fds:
            self._channel.raw_close(fd)
        _send(control, wire.forked(ident, pid, lost))
        threading.Thread(target=_reap, args=(control, pid), name="cellbox-fork-reaper", daemon=True).start()
        return False

    def _in_child(self, fds, lost):
        os.setsid()  # its own process group: stopping either kernel spares the other
        self._channel.adopt_fork(fds)
        # The copy of the parent's socket object now stands for the new
        # control socket (same fd number); the parent's reaper threads and
        # their children are not this process's.
        self._become_child(lost)


def _message_id(data):
    try:
        return wire.parse_fork_request(data)["id"]
    except ValueError:  # UnicodeDecodeError included
        return None
