"""The warm round-trip floor: the least a Python NDJSON loop over pipes can do.

Reads a line, json.loads it, compiles and evaluates its code, json.dumps the
value, writes a line. The benchmark drives it with the same Rust client
pattern it uses for cellbox.
"""
import json
import sys


def main():
    read = sys.stdin.buffer.readline
    write = sys.stdout.buffer.write
    flush = sys.stdout.buffer.flush
    namespace = {}
    while True:
        line = read()
        if not line:
            return
        request = json.loads(line)
        value = eval(compile(request["code"], "<floor>", "eval"), namespace)
        write((json.dumps({"id": request["id"], "value": repr(value)}) + "\n").encode("utf-8"))
        flush()


main()
