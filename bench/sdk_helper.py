"""The Python SDK (`from cellbox import Sandbox`) for the cellbox benchmark.

Each input line is a JSON command; each answer is one JSON line. Timings are
taken here, around the SDK's own calls, as a program using the SDK sees them.
The SDK is imported from the repository's python/ folder and starts the
`cellbox` binary in BIN (the benchmark's own build: put first on PATH, where
the SDK looks after its own scripts folder) or, with "engine": "in-process",
loads the benchmark's build of the in-process engine from ENGINE_FILE. Commands:
  {"op": "cold", "python": PY, "cwd": DIR, "binary_dir": BIN, "engine": E, "engine_file": ENGINE_FILE}
                                             Sandbox(python=PY, cwd=DIR, engine=E) → run_code("1+1").text == "2";
                                             ms from the constructor's call to that text (kill not timed)
  {"op": "start", ...as cold...}             keep one sandbox (its first cell run)
  {"op": "roundtrip", "n": N}                N warm run_code("1+1") calls of the kept sandbox; ms each
  {"op": "stop"}                             kill the kept sandbox
"""
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

from cellbox import Sandbox  # noqa: E402


def one_plus_one(sandbox):
    text = sandbox.run_code("1+1").text
    if text != "2":
        raise RuntimeError("run_code('1+1') gave %r" % text)


def main():
    kept = None
    for line in sys.stdin:
        command = json.loads(line)
        op = command["op"]
        binary_dir = command.get("binary_dir")
        if binary_dir and not os.environ.get("PATH", "").startswith(binary_dir + os.pathsep):
            os.environ["PATH"] = binary_dir + os.pathsep + os.environ.get("PATH", "")
        if command.get("engine_file"):
            os.environ["CELLBOX_SDK_ENGINE"] = command["engine_file"]
        try:
            if op == "cold":
                started = time.perf_counter()
                sandbox = Sandbox(python=command["python"], cwd=command["cwd"], engine=command["engine"])
                one_plus_one(sandbox)
                answer = {"ms": (time.perf_counter() - started) * 1000}
                sandbox.kill()
            elif op == "start":
                kept = Sandbox(python=command["python"], cwd=command["cwd"], engine=command["engine"])
                one_plus_one(kept)
                answer = {}
            elif op == "roundtrip":
                times = []
                for _ in range(command["n"]):
                    started = time.perf_counter()
                    one_plus_one(kept)
                    times.append((time.perf_counter() - started) * 1000)
                answer = {"ms": times}
            elif op == "stop":
                if kept is not None:
                    kept.kill()
                    kept = None
                answer = {}
            else:
                answer = {"error": "unknown op %r" % op}
        except Exception as error:  # the orchestrator reports it
            answer = {"error": "%s: %s" % (type(error).__name__, error)}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
