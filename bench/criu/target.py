"""Idle Python 'interpreter' holding ~10+ MB of state, answering on a unix socket.

usage: python3 target.py SOCKET_PATH
commands (one line per connection): ping | sum | pickle PATH | pid
"""
import os
import pickle
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import state as st  # noqa: E402

sock_path = sys.argv[1]
STATE = st.build()
READY_SUM = st.checksum(STATE)

try:
    os.unlink(sock_path)
except FileNotFoundError:
    pass
srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
srv.bind(sock_path)
srv.listen(4)

while True:  # idle: blocked in accept()
    conn, _ = srv.accept()
    with conn:
        cmd = conn.recv(4096).decode().strip()
        if cmd == "ping":
            out = "pong"
        elif cmd == "pid":
            out = str(os.getpid())
        elif cmd == "sum":
            out = st.checksum(STATE) + " " + READY_SUM
        elif cmd.startswith("pickle "):
            path = cmd.split(" ", 1)[1]
            t0 = time.perf_counter()
            with open(path, "wb") as f:
                pickle.dump(STATE, f, protocol=pickle.HIGHEST_PROTOCOL)
            out = f"{time.perf_counter() - t0:.6f}"
        else:
            out = "?"
        conn.sendall(out.encode())
