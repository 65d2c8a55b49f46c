"""The Jupyter baseline for the cellbox benchmark, driven over stdin/stdout.

Each input line is a JSON command; each answer is one JSON line. Timings are
measured here, around jupyter_client calls, so the pipe to the orchestrator
is not part of them. Commands:
  {"op": "cold", "code": C}              start a kernel, run C (default 1+1) to its result, return ms; stop it
                                         ("kernel": K: of kernelspec K, default python3; a value shown
                                         as display_data, as IRkernel shows it, counts as the result)
  {"op": "start"} / {"op": "stop"}       the warm kernel for the other scenarios
  {"op": "named_start", "kernel": K} / {"op": "named_stop"}   a warm kernel of kernelspec K; "roundtrip"
                                         with "via": "named" uses it
  {"op": "roundtrip", "n": N}            N x execute("1+1") + wait for idle; ms each, and this
                                         process's CPU ms each ("reply": true: and the execute_reply;
                                         "store_history": true: sent so, as jupyter_client's default)
  {"op": "output", "code": C}            run C, drain iopub; seconds, bytes received, messages ("reply",
                                         "store_history")
  {"op": "interrupt"}                    ms from interrupt to the execute reply of `while True: pass`
                                         ("ms"), and to both the reply and the idle status ("done_ms")
  {"op": "concurrent", "kernels": K, "cells": N}   K kernels x N cells at once; latencies
  {"op": "ladder", "budget": B, "window": W}  a cell ignoring SIGINT: interrupt after B s, restart after
                                         W more s; seconds to the restart, and to the next cell's answer
  {"op": "gateway_start", "url": U, "token": T}  a warm kernel on the Jupyter gateway at U instead (see
                                         GatewayKernel); "roundtrip", "output" and "interrupt" with
                                         "via": "gateway" use it; {"op": "gateway_stop"} deletes it

The kernels this helper starts log at ERROR: ipykernel warns at every start that it "is running
over TCP without encryption" (the local kernels are on 127.0.0.1), which is noise in the bench's
output. Their stderr goes to a file, not the bench's output (an interrupt that lands between two
cells makes ipykernel log "KeyboardInterrupt caught in kernel"); a command that fails answers with
that file's tail.
"""
import collections
import http.client
import json
import queue
import socket
import sys
import tempfile
import threading
import time
import urllib.parse

from jupyter_client.manager import KernelManager
from jupyter_client.session import Session

_warm = None
_gateway = None

# Only the kernel application's own log (its TCP warning) is quieted; its errors go to KERNEL_LOG.
QUIET_KERNEL = ["--IPKernelApp.log_level=ERROR"]
KERNEL_LOG = tempfile.TemporaryFile()


def _kernel_log_tail(limit=2000):
    KERNEL_LOG.seek(0, 2)
    size = KERNEL_LOG.tell()
    KERNEL_LOG.seek(max(0, size - limit))
    return KERNEL_LOG.read().decode("utf-8", "replace")


_named = None


def _start(kernel_name="python3"):
    manager = KernelManager(kernel_name=kernel_name)
    extra = QUIET_KERNEL if kernel_name == "python3" else []
    manager.start_kernel(extra_arguments=extra, stderr=KERNEL_LOG)
    client = manager.client()
    client.start_channels()
    client.wait_for_ready(timeout=60)
    return manager, client


def _stop(pair):
    manager, client = pair
    client.stop_channels()
    manager.shutdown_kernel(now=True)


def _execute(client, code, timeout=600, reply=False, store_history=False):
    """Run code; return (stdout bytes received, iopub messages) once idle, and, with `reply`,
    its execute_reply arrived too (what jupyter_client's execute_interactive and JupyterLab
    wait for)."""
    msg_id = client.execute(code, store_history=store_history)
    received = 0
    messages = 0
    while True:
        msg = client.get_iopub_msg(timeout=timeout)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        messages += 1
        kind = msg["msg_type"]
        if kind == "stream":
            received += len(msg["content"]["text"].encode("utf-8"))
        elif kind == "status" and msg["content"]["execution_state"] == "idle":
            if reply:
                _wait_reply(client, msg_id, timeout)
            return received, messages


def _wait_reply(client, msg_id, timeout):
    while client.get_shell_msg(timeout=timeout)["parent_header"].get("msg_id") != msg_id:
        pass


def _wait_idle(client, msg_id, timeout):
    while True:
        msg = client.get_iopub_msg(timeout=timeout)
        if (msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == "status"
                and msg["content"]["execution_state"] == "idle"):
            return


def cold(command):
    started = time.perf_counter()
    pair = _start(command.get("kernel", "python3"))
    msg_id = pair[1].execute(command.get("code", "1+1"))
    while True:
        msg = pair[1].get_iopub_msg(timeout=60)
        if msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] in ("execute_result", "display_data"):
            break
    elapsed = (time.perf_counter() - started) * 1000.0
    _stop(pair)
    return {"ms": elapsed}


def start(_):
    global _warm
    if _warm is not None:
        return {"ok": True, "python": _warm[0].kernel_spec.argv[0]}
    _warm = _start()
    _execute(_warm[1], "1+1")
    return {"ok": True, "python": _warm[0].kernel_spec.argv[0]}


def stop(_):
    global _warm
    if _warm is not None:
        _stop(_warm)
        _warm = None
    return {"ok": True}


def named_start(command):
    global _named
    if _named is None:
        _named = _start(command["kernel"])
        _execute(_named[1], "1+1")
    return {"ok": True}


def named_stop(_):
    global _named
    if _named is not None:
        _stop(_named)
        _named = None
    return {"ok": True}


def _client(command):
    """The warm kernel's client: the local one, the gateway's with "via": "gateway", or the
    named kernelspec's with "via": "named"."""
    via = command.get("via")
    return _gateway if via == "gateway" else _named[1] if via == "named" else _warm[1]


def _interrupt_kernel(command):
    if command.get("via") == "gateway":
        _gateway.interrupt()
    else:
        _warm[0].interrupt_kernel()


def roundtrip(command):
    client = _client(command)
    times = []
    cpu = []
    for _ in range(command["n"]):
        started, used = time.perf_counter(), time.process_time()
        _execute(client, "1+1", reply=command.get("reply", False), store_history=command.get("store_history", False))
        times.append((time.perf_counter() - started) * 1000.0)
        cpu.append((time.process_time() - used) * 1000.0)
    return {"ms": times, "cpu_ms": cpu}


def output(command):
    started = time.perf_counter()
    received, messages = _execute(
        _client(command), command["code"], reply=command.get("reply", False),
        store_history=command.get("store_history", False))
    return {"seconds": time.perf_counter() - started, "bytes": received, "messages": messages}


def interrupt(command):
    client = _client(command)
    msg_id = client.execute("while True: pass")
    while True:  # wait until it is running
        msg = client.get_iopub_msg(timeout=30)
        if msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == "execute_input":
            break
    time.sleep(0.2)
    started = time.perf_counter()
    _interrupt_kernel(command)
    _wait_reply(client, msg_id, 30)
    to_reply = (time.perf_counter() - started) * 1000.0
    _wait_idle(client, msg_id, 30)
    done = (time.perf_counter() - started) * 1000.0
    _execute(client, "1")  # drain to idle
    return {"ms": to_reply, "done_ms": done}


def concurrent(command):
    pairs = [_start() for _ in range(command["kernels"])]
    latencies = []
    lock = threading.Lock()

    def work(client):
        mine = []
        for _ in range(command["cells"]):
            begun = time.perf_counter()
            _execute(client, "1+1")
            mine.append((time.perf_counter() - begun) * 1000.0)
        with lock:
            latencies.extend(mine)

    threads = [threading.Thread(target=work, args=(client,)) for _, client in pairs]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    total = time.perf_counter() - started
    for pair in pairs:
        _stop(pair)
    return {"seconds": total, "ms": latencies}


STUCK = "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True: pass"


def ladder(command):
    """Jupyter's way with a stuck cell: interrupt, wait, restart the kernel."""
    manager, client = _warm
    started = time.perf_counter()
    msg_id = client.execute(STUCK)
    time.sleep(command["budget"])
    manager.interrupt_kernel()
    deadline = time.perf_counter() + command["window"]
    while time.perf_counter() < deadline:
        try:
            reply = client.get_shell_msg(timeout=max(0.01, deadline - time.perf_counter()))
        except queue.Empty:
            break
        if reply["parent_header"].get("msg_id") == msg_id:
            raise RuntimeError("the stuck cell answered the interrupt")
    manager.restart_kernel(now=True)
    client.wait_for_ready(timeout=60)
    restarted = time.perf_counter() - started
    _execute(client, "1+1")
    return {"killed_s": restarted, "next_s": time.perf_counter() - started}


V1_PROTOCOL = "v1.kernel.websocket.jupyter.org"


class GatewayKernel:
    """A kernel on a Jupyter gateway, driven the way a Jupyter front end drives one: REST for
    its start, interrupt (`POST /api/kernels/<id>/interrupt`) and deletion; one channels
    websocket for the messages, in the binary v1 framing when the server offers it (as
    JupyterLab), else JSON texts; jupyter_client's Session builds and reads the messages.
    Frames are read in the calling thread and queued by channel: the client offers what
    `_execute` and `interrupt` use of jupyter_client's blocking client.

    Not jupyter_server's own GatewayKernelClient: its websocket carries no token (the shared
    gateway wants one), and its reads spin on `asyncio.sleep(0)` against a reader thread that
    needs the GIL; side by side on one gateway it took ~1.2x as long per `1+1` and delivered a
    quarter of this client's MB/s of print(). This client is the stronger baseline.
    """

    def __init__(self, url, token, kernel_name="python3"):
        import websocket  # websocket-client, which jupyter_server depends on

        self._websocket = websocket
        parsed = urllib.parse.urlsplit(url)
        self._http = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=60)
        self._auth = "token " + token
        self.kernel_id = self._rest("POST", "/api/kernels", {"name": kernel_name})["id"]
        self.session = Session(key=b"")  # the server signs what it forwards to the kernel
        scheme = "wss" if parsed.scheme == "https" else "ws"
        channels = "%s://%s/api/kernels/%s/channels?session_id=%s" % (
            scheme, parsed.netloc, self.kernel_id, self.session.session)
        self._ws = websocket.create_connection(
            channels, header=["Authorization: " + self._auth], subprotocols=[V1_PROTOCOL], timeout=60
        )
        self._ws.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._v1 = self._ws.getsubprotocol() == V1_PROTOCOL
        self._queues = collections.defaultdict(collections.deque)
        self._wait_for_ready()

    def _rest(self, method, path, body=None):
        headers = {"Authorization": self._auth, "Content-Type": "application/json"}
        self._http.request(method, path, body=None if body is None else json.dumps(body), headers=headers)
        response = self._http.getresponse()
        data = response.read()
        if response.status >= 300:
            raise RuntimeError("%s %s answered %s: %s" % (method, path, response.status, data[:300]))
        return json.loads(data) if data else None

    def _send(self, channel, msg):
        if self._v1:
            parts = [self.session.pack(msg[key]) for key in ("header", "parent_header", "metadata", "content")]
            offsets = [8 * (len(parts) + 3)]
            for part in [channel.encode()] + parts:
                offsets.append(offsets[-1] + len(part))
            words = [len(offsets).to_bytes(8, "little")] + [o.to_bytes(8, "little") for o in offsets]
            self._ws.send_binary(b"".join(words + [channel.encode()] + parts))
        else:
            self._ws.send(json.dumps(dict(msg, channel=channel), default=str))

    def _receive(self, timeout):
        self._ws.settimeout(timeout)
        try:
            data = self._ws.recv()
        except self._websocket.WebSocketTimeoutException:
            raise queue.Empty from None
        if not self._v1:
            msg = json.loads(data)
            return msg.pop("channel"), msg
        count = int.from_bytes(data[:8], "little")
        offsets = [int.from_bytes(data[8 * i : 8 * i + 8], "little") for i in range(1, count + 1)]
        parts = [data[offsets[i] : offsets[i + 1]] for i in range(count - 1)]
        msg = {key: self.session.unpack(part) for key, part in
               zip(("header", "parent_header", "metadata", "content"), parts[1:5])}
        msg["msg_id"] = msg["header"].get("msg_id")
        msg["msg_type"] = msg["header"].get("msg_type")
        return parts[0].decode(), msg

    def _get(self, channel, timeout):
        waiting = self._queues[channel]
        deadline = time.monotonic() + timeout
        while not waiting:
            arrived, msg = self._receive(max(0.001, deadline - time.monotonic()))
            self._queues[arrived].append(msg)
        return waiting.popleft()

    def get_iopub_msg(self, timeout=None):
        return self._get("iopub", 3600 if timeout is None else timeout)

    def get_shell_msg(self, timeout=None):
        return self._get("shell", 3600 if timeout is None else timeout)

    def execute(self, code, store_history=True):
        content = {"code": code, "silent": False, "store_history": store_history, "user_expressions": {},
                   "allow_stdin": False, "stop_on_error": True}
        msg = self.session.msg("execute_request", content)
        self._send("shell", msg)
        return msg["header"]["msg_id"]

    def _wait_for_ready(self, timeout=60):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            msg = self.session.msg("kernel_info_request", {})
            self._send("shell", msg)
            try:
                while True:
                    reply = self.get_shell_msg(timeout=1)
                    if reply["parent_header"].get("msg_id") == msg["header"]["msg_id"]:
                        self._queues.clear()
                        return
            except queue.Empty:
                continue
        raise RuntimeError("the gateway's kernel did not answer kernel_info within %ss" % timeout)

    def interrupt(self):
        self._rest("POST", "/api/kernels/%s/interrupt" % self.kernel_id)

    def stop(self):
        self._ws.close()
        self._rest("DELETE", "/api/kernels/%s" % self.kernel_id)


def gateway_start(command):
    global _gateway
    if _gateway is None:
        _gateway = GatewayKernel(command["url"], command["token"])
        _execute(_gateway, "1+1")
    return {"ok": True}


def gateway_stop(_):
    global _gateway
    if _gateway is not None:
        _gateway.stop()
        _gateway = None
    return {"ok": True}


COMMANDS = {
    "gateway_start": gateway_start,
    "gateway_stop": gateway_stop,
    "ladder": ladder,
    "cold": cold,
    "named_start": named_start,
    "named_stop": named_stop,
    "start": start,
    "stop": stop,
    "roundtrip": roundtrip,
    "output": output,
    "interrupt": interrupt,
    "concurrent": concurrent,
}


def main():
    for line in sys.stdin:
        command = json.loads(line)
        try:
            answer = COMMANDS[command["op"]](command)
        except Exception as error:  # report, keep serving
            answer = {"error": "%s: %s" % (type(error).__name__, error)}
            tail = _kernel_log_tail()
            if tail.strip():
                answer["error"] += "\nthe kernels' stderr ends with:\n" + tail
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
