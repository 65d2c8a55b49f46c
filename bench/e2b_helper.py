"""E2B's official Python SDK (`e2b_code_interpreter`), unmodified, against `cellbox serve`, for the
cellbox benchmark.

Each input line is a JSON command; each answer is one JSON line. Timings are taken here, around the
SDK's own calls, as a program using it sees them. The SDK is pointed at the server by E2B_API_URL,
E2B_SANDBOX_URL and E2B_API_KEY only. Commands:
  {"op": "cold", "url": URL}   Sandbox.create() → run_code("1+1").text == "2"; ms from the create call
                               to that text (kill not timed)
  {"op": "stop"}               nothing to stop: answers and ends
"""
import json
import os
import sys
import time


def main():
    for line in sys.stdin:
        command = json.loads(line)
        try:
            if command["op"] == "cold":
                url = command["url"]
                os.environ.update(E2B_API_URL=url, E2B_SANDBOX_URL=url, E2B_API_KEY="e2b_" + "0" * 40)
                from e2b_code_interpreter import Sandbox

                started = time.perf_counter()
                sandbox = Sandbox.create()
                text = sandbox.run_code("1+1").text
                elapsed = (time.perf_counter() - started) * 1000
                sandbox.kill()
                if text != "2":
                    raise RuntimeError("run_code('1+1') gave %r" % text)
                answer = {"ms": elapsed}
            elif command["op"] == "stop":
                print(json.dumps({}), flush=True)
                return
            else:
                raise ValueError("unknown op %r" % command["op"])
        except Exception as error:  # reported to the benchmark, which stops with it
            answer = {"error": "%s: %s" % (type(error).__name__, error)}
        print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    main()
