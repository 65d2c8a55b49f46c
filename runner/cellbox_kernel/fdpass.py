"""Receiving file descriptors sent with a message on a Unix socket
(SCM_RIGHTS): how the host hands a new kernel its pipes, to the fork server
(`zygote.py`) and to a kernel being forked (`fork.py`)."""
import socket
import sys


def receive(sock, max_bytes, max_fds):
    """One message of at most `max_bytes` and the fds (at most `max_fds`) that came with it."""
    data, ancillary, _flags, _address = sock.recvmsg(max_bytes, socket.CMSG_SPACE(max_fds * 4))
    fds = []
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            usable = len(payload) - len(payload) % 4
            fds.extend(int.from_bytes(payload[i : i + 4], sys.byteorder, signed=True) for i in range(0, usable, 4))
    return data, fds
