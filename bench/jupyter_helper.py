"""The Jupyter baseline for the cellbox benchmark, driven over stdin/stdout.

Each input line is a JSON command; each answer is one JSON line. Timings are
measured here, around jupyter_client calls, so the pipe to the orchestrator
is not part of them. Commands:
  {"op": "cold", "code": C}              start a kernel, run C (default 1+1) to its result, return ms; stop it
  {"op": "start"} / {"op": "stop"}       the warm kernel for the other scenarios
  {"op": "roundtrip", "n": N}            N x execute("1+1") + wait for idle; ms each
  {"op": "output", "code": C}            run C, drain iopub; seconds, bytes received, messages
  {"op": "interrupt"}                    ms from interrupt to the execute reply of `while True: pass`
  {"op": "concurrent", "kernels": K, "cells": N}   K kernels x N cells at once; latencies
  {"op": "ladder", "budget": B, "window": W}  a cell ignoring SIGINT: interrupt after B s, restart after
                                         W more s; seconds to the restart, and to the next cell's answer
"""
import json
import queue
import sys
import threading
import time

from jupyter_client.manager import KernelManager

_warm = None


def _start():
    manager = KernelManager(kernel_name="python3")
    manager.start_kernel()
    client = manager.client()
    client.start_channels()
    client.wait_for_ready(timeout=60)
    return manager, client


def _stop(pair):
    manager, client = pair
    client.stop_channels()
    manager.shutdown_kernel(now=True)


def _execute(client, code, timeout=600):
    """Run code; return (stdout bytes received, iopub messages) once idle."""
    msg_id = client.execute(code, store_history=False)
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
            return received, messages


def cold(command):
    started = time.perf_counter()
    pair = _start()
    msg_id = pair[1].execute(command.get("code", "1+1"))
    while True:
        msg = pair[1].get_iopub_msg(timeout=60)
        if msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == "execute_result":
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


def roundtrip(command):
    times = []
    for _ in range(command["n"]):
        started = time.perf_counter()
        _execute(_warm[1], "1+1")
        times.append((time.perf_counter() - started) * 1000.0)
    return {"ms": times}


def output(command):
    started = time.perf_counter()
    received, messages = _execute(_warm[1], command["code"])
    return {"seconds": time.perf_counter() - started, "bytes": received, "messages": messages}


def interrupt(_):
    client = _warm[1]
    msg_id = client.execute("while True: pass")
    while True:  # wait until it is running
        msg = client.get_iopub_msg(timeout=30)
        if msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == "execute_input":
            break
    time.sleep(0.2)
    started = time.perf_counter()
    _warm[0].interrupt_kernel()
    while True:
        reply = client.get_shell_msg(timeout=30)
        if reply["parent_header"].get("msg_id") == msg_id:
            break
    elapsed = (time.perf_counter() - started) * 1000.0
    _execute(client, "1")  # drain to idle
    return {"ms": elapsed}


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


COMMANDS = {
    "ladder": ladder,
    "cold": cold,
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
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
