"""SIGINT handling: ignored between requests, KeyboardInterrupt inside a cell.

The host interrupts a cell by sending SIGINT to the kernel's process group.
While a cell runs, the gate raises KeyboardInterrupt in user code; outside a
cell the gate's handler drops the signal, so a late or stray interrupt never
kills the kernel. A frame being written when the signal lands is finished first.

The handler stays installed between cells and a flag says whether a cell runs:
setting a handler is a system call and costs more than a quick cell's own work,
so it is set again only when a cell replaced it.
"""
import signal
import threading

try:  # the C module: no enum conversion on every cell
    from _signal import SIGINT
    from _signal import getsignal as _get_handler
    from _signal import signal as _set_handler
except ImportError:  # pragma: no cover - other interpreters
    from signal import SIGINT
    from signal import getsignal as _get_handler
    from signal import signal as _set_handler


class InterruptGate:
    def __init__(self):
        self._armed = False
        self._critical = 0
        self._deferred = False
        self.received = False  # a SIGINT arrived during the current cell
        self._main = threading.get_ident()
        self._handler = self._on_sigint  # one bound method, compared by identity
        _set_handler(SIGINT, self._handler)

    def arm(self):
        """Let SIGINT raise KeyboardInterrupt (call right before user code)."""
        self.received = False
        self._deferred = False
        self._armed = True
        self._reinstall()

    def disarm(self):
        """Ignore SIGINT again (call right after user code)."""
        self._armed = False
        self._reinstall()

    def _reinstall(self):
        """Put the gate's handler back if user code replaced it (a cell's
        `signal.signal(SIGINT, ...)` lasts until the cell ends)."""
        if _get_handler(SIGINT) is not self._handler:
            _set_handler(SIGINT, self._handler)

    def enter_critical(self):
        """Mark the start of a frame write; only the main thread counts."""
        if threading.get_ident() == self._main:
            self._critical += 1

    def leave_critical(self):
        if threading.get_ident() != self._main:
            return
        self._critical -= 1
        if self._critical == 0 and self._deferred:
            self._deferred = False
            if self._armed:
                raise KeyboardInterrupt

    def _on_sigint(self, signum, frame):
        # Python runs signal handlers in the main thread only, and only the
        # main thread counts critical sections, so a frame written by the
        # output thread never defers or receives the interrupt.
        if not self._armed:
            return
        self.received = True
        if self._critical:
            self._deferred = True
            return
        raise KeyboardInterrupt


def block_interrupts_in_this_thread():
    """Keep SIGINT away from a helper thread, so the kernel always delivers it
    to the main thread, where it interrupts a blocking call in user code."""
    try:
        signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGINT])
    except (AttributeError, OSError, ValueError):
        pass
