"""Warm run_code("1+1") three ways, interleaved in one process so they share
the machine's state: the SDK's child engine over pipes (what ships), the
engine in this process through the PyO3 prototype, and the library's own
call made from Rust inside that prototype (the floor both are held to).

Usage: measure.py [ROUNDS] [CALLS]   (default 10 rounds of 200 calls each)
"""
import os
import statistics
import sys
import tempfile
import time

import cellbox_inprocess
from cellbox import Sandbox

ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 10
CALLS = int(sys.argv[2]) if len(sys.argv) > 2 else 200


def timed(call, n):
    times = []
    for _ in range(n):
        started = time.perf_counter()
        call()
        times.append((time.perf_counter() - started) * 1000)
    return times


def summary(name, times, floor):
    times = sorted(times)
    median = statistics.median(times)
    p90 = times[int(len(times) * 0.9)]
    print("%-40s median %.3f ms  p90 %.3f ms  %.3fx the library" % (name, median, p90, median / floor))


def main():
    cwd = tempfile.mkdtemp(prefix="cellbox-inprocess-")
    python = os.environ.get("CELLBOX_PYTHON", sys.executable)
    sandbox = Sandbox(cwd=cwd)
    engine = cellbox_inprocess.Engine(cwd, python)
    child, inside, library = [], [], []
    assert sandbox.run_code("1+1").text == "2" and engine.run_code("1+1") == "2\n"
    timed(lambda: sandbox.run_code("1+1"), 100)
    timed(lambda: engine.run_code("1+1"), 100)
    for _ in range(ROUNDS):
        child += timed(lambda: sandbox.run_code("1+1"), CALLS)
        inside += timed(lambda: engine.run_code("1+1"), CALLS)
        library += engine.library_ms("1+1", CALLS)
    floor = statistics.median(library)
    summary("cellbox library (Rust, in the prototype)", library, floor)
    summary("SDK, child engine over pipes", child, floor)
    summary("SDK, engine in-process (PyO3 prototype)", inside, floor)
    sandbox.kill()
    engine.close()


main()
