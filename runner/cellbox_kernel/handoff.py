"""Files the host hands the kernel open, on its control socket.

A hibernating session's snapshot is written into a folder the kernel cannot
reach: the host opens the file there itself and sends the open fd (a `file`
message with one fd attached, SCM_RIGHTS) just before the `snapshot` or
`restore` request line that names the message's id. The kernel thus gets
that one file, opened for writing or for reading as the host chose, and no
path.
"""
from . import forking, wire

_MAX_MESSAGE = 1024
# How long the fd may take to arrive after the request line (it is sent first).
_RECEIVE_SECONDS = 10.0


class HandoffError(Exception):
    """The file did not come as announced; the message says what came instead."""


def receive(channel, file_id):
    """The fd of the `file` message `file_id` (the caller closes it)."""
    control = channel.control_socket()
    if control is None:
        raise HandoffError("this kernel has no control socket, so no file can be handed to it")
    control.settimeout(_RECEIVE_SECONDS)
    try:
        data, fds = forking.receive(control, _MAX_MESSAGE, 1)
    except OSError as error:
        raise HandoffError("no file came with the request: %s" % error)
    finally:
        control.settimeout(None)
    try:
        got = wire.parse_file_message(data)
    except ValueError:
        got = None
    if got != file_id or len(fds) != 1:
        for fd in fds:
            channel.raw_close(fd)
        raise HandoffError("expected file %d with one fd, got %r with %d fds" % (file_id, got, len(fds)))
    return fds[0]
