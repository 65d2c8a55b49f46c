"""What the fork server (`zygote.py`) and a kernel being forked (`fork.py`)
share: the fds the host passes with a message on a Unix socket (SCM_RIGHTS,
the new kernel's pipes), and how they tell it a child kernel has ended."""
import os
import socket
import sys

from . import wire


def receive(sock, max_bytes, max_fds):
    """One message of at most `max_bytes` and the fds (at most `max_fds`) that came with it."""
    data, ancillary, _flags, _address = sock.recvmsg(max_bytes, socket.CMSG_SPACE(max_fds * 4))
    fds = []
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            usable = len(payload) - len(payload) % 4
            fds.extend(int.from_bytes(payload[i : i + 4], sys.byteorder, signed=True) for i in range(0, usable, 4))
    return data, fds


def exit_message(pid, status):
    """The `exit` message for child `pid` that ended with wait `status` (None: unknown)."""
    if status is None:
        return wire.exited(pid, None, None)
    if os.WIFSIGNALED(status):
        return wire.exited(pid, None, os.WTERMSIG(status))
    return wire.exited(pid, os.WEXITSTATUS(status), None)
