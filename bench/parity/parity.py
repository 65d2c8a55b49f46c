"""Notebook parity: run each notebook's code cells through ipykernel and through `cellbox mcp`.

For every notebook in the corpus, one ipykernel kernel (started with this interpreter) and one
`cellbox mcp` session (driven by the official MCP client, one `eval` call per cell) run the code
cells in order, each in its own fresh working directory. Per cell we compare:

- the status (ok / error), and
- the normalised text: stdout, stderr, results and displays, in order (see `normalise`).

A cell that works under ipykernel but fails under cellbox is a parity failure: the exit status is 1
when there is any. So is a cell whose result reads differently under cellbox: when ipykernel shows a
cell's `execute_result` by its `text/plain` (not by its HTML or image), that text must end cellbox's
text of the cell, before whatever followed the result there (figures drawn at the cell's end).
Addresses (`0x…`), folders and timings are normalised as for the whole text; a cell whose result
cannot repeat (a clock, unseeded randomness, string hashing) carries the tag `nondeterministic`, and
its result is not compared. A cell tagged `raises-exception` (the Jupyter tag for "this cell fails
on purpose") must fail under ipykernel, and an untagged one must work there; otherwise the corpus
itself is wrong, which also gives exit status 1.

`--self-check` runs ipykernel on both sides instead: every cell must then compare identical, which
checks the harness and its normalisation rather than cellbox.

Usage: parity.py [--corpus DIR] [--only NAME[,NAME]] [--cellbox PATH] [--json] [--out DIR] [--self-check]
"""
import argparse
import asyncio
import json
import os
import queue
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CELL_TIMEOUT = 60

# ---------------------------------------------------------------------------------------------
# Normalisation. Both sides go through the same steps; each one removes a difference that is
# not about behaviour.

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
ADDRESS = re.compile(r"0x[0-9a-fA-F]+")
# Durations printed by %time, %%time, %timeit and %prun: "1.23 ms", "456 ns", "0.001 seconds".
DURATION = re.compile(r"\d+(?:\.\d+)?(?:e[+-]?\d+)? ?(?:ns|µs|μs|us|ms|s|sec|seconds)\b")
# cellbox shows an image as "[image 1: image/png 640×480]"; ipykernel's side is rendered the same way.
IMAGE_PLACEHOLDER = re.compile(r"\[image \d+: image/[a-z+]+ [^\]]*\]")
# The report of %prun: its counts, rows and their order depend on timing and on the profiler's
# own frames, so the whole report (summary line to the end of its table) becomes "<profile>".
PROFILE_SUMMARY = re.compile(r"^\s*\d+ function calls.* in .*$")
PROFILE_HEADER = re.compile(r"^\s*ncalls\s+tottime\s+percall")
# %timeit's warning when one run was much slower than another: it comes and goes with machine load.
SLOW_RUN = re.compile(r"^The slowest run took [\d.]+ times longer than the fastest")


def normalise(text, cwd):
    """The text both sides are compared on (each step is explained inline)."""
    text = ANSI.sub("", text)  # colours are presentation
    text = text.replace(os.path.realpath(cwd), "<cwd>").replace(cwd, "<cwd>")  # each side has its own folder
    text = ADDRESS.sub("0x…", text)  # object addresses differ per process
    text = IMAGE_PLACEHOLDER.sub("[image]", text)
    lines = []
    profile = None  # None, "head" (after the summary line) or "table" (after the column header)
    for line in text.split("\n"):
        if PROFILE_SUMMARY.match(line):
            lines.append("<profile>")
            profile = "head"
            continue
        if profile == "head" and PROFILE_HEADER.match(line):
            profile = "table"
        if profile is not None:
            if profile == "table" and not line.strip():
                profile = None
            continue
        if SLOW_RUN.match(line):
            continue
        lines.append(DURATION.sub("<t>", line).rstrip())  # timings vary run to run
    return "\n".join(lines).strip("\n")


def error_line(ename, evalue):
    """An error as "ZeroDivisionError: division by zero": frame layout and file names differ, so
    tracebacks are not compared; a SyntaxError's "(file, line N)" suffix names the cell's file."""
    evalue = re.sub(r" \([^()]*, line \d+\)$", "", evalue or "")
    return "{}: {}".format(ename, evalue) if evalue else str(ename)


# ---------------------------------------------------------------------------------------------
# Notebooks


def load_cells(path):
    with open(path, encoding="utf-8") as handle:
        notebook = json.load(handle)
    cells = []
    for cell in notebook.get("cells", []):
        if cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        if isinstance(source, list):
            source = "".join(source)
        tags = cell.get("metadata", {}).get("tags", [])
        cells.append(
            {"code": source, "expect_error": "raises-exception" in tags, "deterministic": "nondeterministic" not in tags}
        )
    return cells


# ---------------------------------------------------------------------------------------------
# ipykernel side


def display_text(data):
    """One display's text, picked the way cellbox picks it: image, markdown, plain, then HTML."""
    for mime in ("image/png", "image/jpeg"):
        if mime in data:
            return "[image]"
    if "text/markdown" in data:
        return data["text/markdown"]
    plain = data.get("text/plain", "")
    default_repr = re.fullmatch(r"<[\w.]+ object(?: at 0x[0-9a-fA-F]+)?>", plain.strip())
    if "text/html" in data and (not plain or default_repr):
        return data["text/html"]
    return plain


class Ipykernel:
    """One ipykernel kernel on this interpreter, started through a throwaway kernel spec."""

    def __init__(self, cwd):
        from jupyter_client.manager import KernelManager

        self.spec_dir = tempfile.mkdtemp(prefix="parity-spec-")
        kernel_dir = os.path.join(self.spec_dir, "kernels", "parity")
        os.makedirs(kernel_dir)
        argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
        with open(os.path.join(kernel_dir, "kernel.json"), "w") as handle:
            json.dump({"argv": argv, "display_name": "parity", "language": "python"}, handle)
        os.environ["JUPYTER_PATH"] = self.spec_dir
        # IPC sockets in our own folder: no TCP ports, and no warning about unencrypted TCP.
        ipc = os.path.join(self.spec_dir, "kernel")
        self.manager = KernelManager(kernel_name="parity", transport="ipc", ip=ipc)
        self.manager.start_kernel(cwd=cwd)
        self.client = self.manager.client()
        self.client.start_channels()
        self.client.wait_for_ready(timeout=60)

    def run(self, code):
        """(status, raw text, result) of one cell; text is stream, results, displays, pager and error in
        order; result is None or (the result's text, the text that followed it)."""
        msg_id = self.client.execute(code)
        parts = []
        result_at = None  # the index of the execute_result in parts
        deadline = time.monotonic() + CELL_TIMEOUT
        timed_out = False
        while True:
            try:
                msg = self.client.get_iopub_msg(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                if timed_out:
                    return "timeout", "".join(parts), None
                # Like cellbox's timeout: interrupt, so the kernel is free for the next cell.
                timed_out = True
                self.manager.interrupt_kernel()
                deadline = time.monotonic() + 10
                continue
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            kind, content = msg["msg_type"], msg["content"]
            if kind == "stream":
                parts.append(content["text"])
            elif kind in ("execute_result", "display_data"):
                text = display_text(content["data"])
                if kind == "execute_result" and text == content["data"].get("text/plain"):
                    result_at = len(parts)  # a result shown by its text (not its HTML or image)
                parts.append(text if text.endswith("\n") else text + "\n")
            elif kind == "clear_output":
                parts.clear()
                result_at = None
            elif kind == "status" and content["execution_state"] == "idle":
                break
        reply = self.client.get_shell_msg(timeout=CELL_TIMEOUT)
        while reply["parent_header"].get("msg_id") != msg_id:
            reply = self.client.get_shell_msg(timeout=CELL_TIMEOUT)
        for payload in reply["content"].get("payload", []):
            if payload.get("source") == "page":
                page = payload["data"].get("text/plain", "")
                parts.append(page if page.endswith("\n") else page + "\n")
        status = reply["content"]["status"]
        if timed_out:
            return "timeout", "".join(parts), None
        if status == "error":
            parts.append(error_line(reply["content"].get("ename"), reply["content"].get("evalue")) + "\n")
            return "error", "".join(parts), None
        result = None if result_at is None else (parts[result_at], "".join(parts[result_at + 1 :]))
        return "ok", "".join(parts), result

    def close(self):
        self.client.stop_channels()
        self.manager.shutdown_kernel(now=True)
        shutil.rmtree(self.spec_dir, ignore_errors=True)


def run_ipykernel(cells, cwd):
    kernel = Ipykernel(cwd)
    try:
        return [kernel.run(cell["code"]) for cell in cells]
    finally:
        kernel.close()


# ---------------------------------------------------------------------------------------------
# cellbox side


def cellbox_error_text(text, error):
    """cellbox's text with its traceback reduced to the error line, like ipykernel's side."""
    if not error:
        return text
    # What the cell wrote before its traceback is output; the traceback becomes the error line.
    marker = text.find("Traceback (most recent call last)")
    head = text[:marker] if marker >= 0 else ""
    return head + error_line(error.get("ename"), error.get("evalue")) + "\n"


async def run_cellbox_async(binary, cells, cwd, artifacts):
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    env = dict(os.environ)
    env["CELLBOX_PYTHON"] = sys.executable
    env["CELLBOX_ARTIFACTS_DIR"] = artifacts
    params = StdioServerParameters(command=binary, args=["mcp", "--cwd", cwd], env=env)
    results = []
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            for cell in cells:
                arguments = {"cells": [{"code": cell["code"], "timeout": CELL_TIMEOUT}]}
                try:
                    result = await session.call_tool("eval", arguments)
                except Exception as exc:  # the server died or broke the protocol: the rest cannot run
                    failure = "cellbox mcp failed: {}: {}\n".format(type(exc).__name__, exc)
                    results += [("crashed", failure, None)] * (len(cells) - len(results))
                    break
                text = "".join(block.text for block in result.content if block.type == "text")
                details = (result.structured_content or {}).get("cells") or [{}]
                status = details[0].get("status", "error" if result.is_error else "ok")
                results.append((status, text, details[0].get("error")))
    return results


def innermost(exc):
    """The first leaf of an exception group (anyio wraps the MCP client's errors in groups)."""
    while getattr(exc, "exceptions", None):
        exc = exc.exceptions[0]
    return exc


def run_cellbox(binary, cells, cwd, artifacts):
    try:
        raw = asyncio.run(run_cellbox_async(binary, cells, cwd, artifacts))
    except Exception as exc:
        leaf = innermost(exc)
        sys.exit("could not run `{} mcp`: {}: {} (check the binary, or pass --cellbox PATH)".format(
            binary, type(leaf).__name__, leaf))
    out = []
    for status, text, error in raw:
        if text == "(no output)\n":  # cellbox's placeholder for a cell that printed nothing
            text = ""
        if status != "ok":
            text = cellbox_error_text(text, error)
        out.append((status, text, None))
    return out


# ---------------------------------------------------------------------------------------------
# Comparison and report


def first_line(text):
    for line in text.splitlines():
        if line.strip():
            return line.strip()[:160]
    return "(no output)"


def summary_line(text, status):
    """The first line, and for a failed cell also its last (the error line), when they differ."""
    first = first_line(text)
    if status == "ok":
        return first
    last = first_line(text.splitlines()[-1]) if text.strip() else first
    return first if first == last else "{} … {}".format(first, last)


def first_difference(left, right):
    """The first line where two texts differ, from each side ("(end)" past the last line)."""
    a, b = left.splitlines(), right.splitlines()
    for index in range(max(len(a), len(b))):
        x = a[index] if index < len(a) else "(end)"
        y = b[index] if index < len(b) else "(end)"
        if x != y:
            return x.strip()[:160] or "(blank)", y.strip()[:160] or "(blank)"
    return "", ""


def result_shown(result, text, cwd):
    """Whether the other side's (normalised) `text` of a cell shows ipykernel's `result` = (result
    text, text after it) as its result: the result ends the text once what followed it is taken off.
    Returns (same, the result's normalised text, the other side's lines in its place)."""
    expected, after = (normalise(part, cwd) for part in result)
    body = text
    if after:
        if not body.endswith(after):
            return False, expected, "(what follows the result differs)"
        body = body[: -len(after)].rstrip("\n")
    same = body == expected or body.endswith("\n" + expected)
    shown = "\n".join(body.split("\n")[-max(1, expected.count("\n") + 1) :])
    return same, expected, shown


def compare_notebook(name, cells, jupyter, cellbox, cwds):
    rows = []
    for index, (cell, (j_status, j_text, j_result), (e_status, e_text, _)) in enumerate(
        zip(cells, jupyter, cellbox), 1
    ):
        j_norm = normalise(j_text, cwds[0])
        e_norm = normalise(e_text, cwds[1])
        result = None
        if j_result is not None and e_status == "ok" and cell["deterministic"]:
            same, expected, shown = result_shown(j_result, e_norm, cwds[0])
            result = {"same": same, "ipykernel": expected, "cellbox": shown}
        rows.append(
            {
                "cell": index,
                "code": cell["code"],
                "expect_error": cell["expect_error"],
                "ipykernel": {"status": j_status, "text": j_norm},
                "cellbox": {"status": e_status, "text": e_norm},
                "same_status": j_status == e_status,
                "same_text": j_status == e_status and j_norm == e_norm,
                "result": result,
            }
        )
    regressions = [r for r in rows if r["ipykernel"]["status"] == "ok" and r["cellbox"]["status"] != "ok"]
    corpus_errors = [r for r in rows if (r["ipykernel"]["status"] != "ok") != r["expect_error"]]
    return {
        "notebook": name,
        "cells": len(rows),
        "ipykernel_ok": sum(r["ipykernel"]["status"] == "ok" for r in rows),
        "cellbox_ok": sum(r["cellbox"]["status"] == "ok" for r in rows),
        "fail_under_cellbox": len(regressions),
        "same_text": sum(r["same_text"] for r in rows),
        "results_compared": sum(r["result"] is not None for r in rows),
        "result_differences": [
            {"cell": r["cell"], "code": first_line(r["code"]), "ipykernel": r["result"]["ipykernel"],
             "cellbox": r["result"]["cellbox"]}
            for r in rows
            if r["result"] is not None and not r["result"]["same"]
        ],
        "regressions": [
            {
                "cell": r["cell"],
                "code": first_line(r["code"]),
                "ipykernel": summary_line(r["ipykernel"]["text"], r["ipykernel"]["status"]),
                "cellbox": summary_line(r["cellbox"]["text"], r["cellbox"]["status"]),
            }
            for r in regressions
        ],
        "text_differences": [
            dict(
                zip(
                    ("cell", "code", "ipykernel", "cellbox"),
                    (r["cell"], first_line(r["code"]))
                    + first_difference(r["ipykernel"]["text"], r["cellbox"]["text"]),
                )
            )
            for r in rows
            if r["same_status"] and not r["same_text"]
        ],
        "corpus_errors": [
            {
                "cell": r["cell"],
                "code": first_line(r["code"]),
                "ipykernel": summary_line(r["ipykernel"]["text"], r["ipykernel"]["status"]),
            }
            for r in corpus_errors
        ],
        "rows": rows,
    }


def totals(reports):
    cells = sum(r["cells"] for r in reports)
    same = sum(r["same_text"] for r in reports)
    ok = sum(r["ipykernel_ok"] for r in reports)
    fail = sum(r["fail_under_cellbox"] for r in reports)
    return {
        "notebooks": len(reports),
        "cells": cells,
        "ipykernel_ok": ok,
        "cellbox_ok": sum(r["cellbox_ok"] for r in reports),
        "fail_under_cellbox": fail,
        "fail_share": round(fail / ok, 4) if ok else 0.0,
        "same_text": same,
        "same_text_share": round(same / cells, 4) if cells else 0.0,
        "corpus_errors": sum(len(r["corpus_errors"]) for r in reports),
        "results_compared": sum(r["results_compared"] for r in reports),
        "result_differences": sum(len(r["result_differences"]) for r in reports),
    }


def markdown(reports, total, python, binary):
    out = ["# Notebook parity: cellbox vs ipykernel", ""]
    out.append("Interpreter: `{}` (Python {}); cellbox: `{}`".format(python, sys.version.split()[0], binary))
    out.append("")
    out.append("| notebook | cells | ok under ipykernel | fail under cellbox only | identical text |")
    out.append("| --- | ---: | ---: | ---: | ---: |")
    for r in reports:
        out.append(
            "| {} | {} | {} | {} | {} ({:.0%}) |".format(
                r["notebook"], r["cells"], r["ipykernel_ok"], r["fail_under_cellbox"], r["same_text"],
                r["same_text"] / r["cells"] if r["cells"] else 0,
            )
        )
    out.append(
        "| **all** | {cells} | {ipykernel_ok} | {fail_under_cellbox} ({fail_share:.1%}) | {same_text} ({same_text_share:.1%}) |".format(
            **total
        )
    )
    failing = [(r["notebook"], g) for r in reports for g in r["regressions"]]
    if failing:
        out += ["", "## Cells that work under ipykernel and fail under cellbox", ""]
        for name, g in failing:
            out.append("- `{}` cell {}: `{}`".format(name, g["cell"], g["code"]))
            out.append("  - ipykernel: `{}`".format(g["ipykernel"]))
            out.append("  - cellbox: `{}`".format(g["cellbox"]))
    results = [(r["notebook"], d) for r in reports for d in r["result_differences"]]
    out += ["", "Results compared: {results_compared}, differing: {result_differences}.".format(**total)]
    if results:
        out += ["", "## Cells whose result text differs", ""]
        for name, d in results:
            out.append("- `{}` cell {}: `{}`".format(name, d["cell"], d["code"]))
            out.append("  - ipykernel: `{}`".format(d["ipykernel"][:400].replace("\n", "⏎")))
            out.append("  - cellbox: `{}`".format(d["cellbox"][:400].replace("\n", "⏎")))
    differing = [(r["notebook"], d) for r in reports for d in r["text_differences"]]
    if differing:
        out += ["", "## Cells with the same status and different text (first differing line)", ""]
        for name, d in differing:
            out.append("- `{}` cell {}: `{}` — ipykernel `{}`, cellbox `{}`".format(
                name, d["cell"], d["code"], d["ipykernel"], d["cellbox"]))
    broken = [(r["notebook"], c) for r in reports for c in r["corpus_errors"]]
    if broken:
        out += ["", "## Corpus errors (status under ipykernel differs from the cell's `raises-exception` tag)", ""]
        for name, c in broken:
            out.append("- `{}` cell {}: `{}` → `{}`".format(name, c["cell"], c["code"], c["ipykernel"]))
    return "\n".join(out) + "\n"


def shown(path):
    """A path as the report shows it: relative to the repository when inside it."""
    if os.path.isabs(path) and path.startswith(ROOT + os.sep):
        return os.path.relpath(path, ROOT)
    return path


def find_cellbox(explicit):
    """The binary to test: the one given, else the debug build when it is the only build (parity
    does not depend on optimisation, and a release build takes minutes), else a fresh release build."""
    if explicit:
        if not os.access(explicit, os.X_OK):
            sys.exit("--cellbox {}: not an executable file".format(explicit))
        return os.path.abspath(explicit)
    release = os.path.join(ROOT, "target", "release", "cellbox")
    debug = os.path.join(ROOT, "target", "debug", "cellbox")
    if os.path.exists(debug) and not os.path.exists(release):
        return debug
    built = subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT)
    if built.returncode != 0:
        sys.exit("cargo build --release failed; pass --cellbox PATH to use another binary")
    return release


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", default=os.path.join(ROOT, "tests", "notebooks"))
    parser.add_argument("--only", help="comma-separated notebook names (without .ipynb)")
    parser.add_argument("--cellbox", help="the cellbox binary (default: target/debug when it is the only build, else target/release, rebuilt)")
    parser.add_argument("--json", action="store_true", help="print the JSON report instead of the table")
    parser.add_argument("--out", default=os.path.join(ROOT, "bench", "results"), help="folder for parity.{json,md}")
    parser.add_argument("--no-write", action="store_true", help="do not write the report files")
    parser.add_argument(
        "--self-check", action="store_true", help="ipykernel on both sides: checks the harness; all must be identical"
    )
    args = parser.parse_args()

    names = sorted(f[: -len(".ipynb")] for f in os.listdir(args.corpus) if f.endswith(".ipynb"))
    if args.only:
        wanted = set(args.only.split(","))
        unknown = wanted - set(names)
        if unknown:
            sys.exit("no such notebook in {}: {}".format(args.corpus, ", ".join(sorted(unknown))))
        names = [n for n in names if n in wanted]
    if not names:
        sys.exit("no notebooks in " + args.corpus)
    binary = "ipykernel (self-check)" if args.self_check else find_cellbox(args.cellbox)
    # cellbox's environment filter does not pass this on, so without it ipykernel alone would skip
    # writing __pycache__ folders, which `!ls` cells then list on one side only.
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

    reports = []
    scratch = tempfile.mkdtemp(prefix="parity-")
    try:
        for name in names:
            cells = load_cells(os.path.join(args.corpus, name + ".ipynb"))
            cwds = [os.path.join(scratch, name, side) for side in ("ipykernel", "cellbox")]
            for cwd in cwds:
                os.makedirs(cwd)
            started = time.monotonic()
            jupyter = run_ipykernel(cells, cwds[0])
            middle = time.monotonic()
            if args.self_check:
                cellbox = run_ipykernel(cells, cwds[1])
            else:
                cellbox = run_cellbox(binary, cells, cwds[1], os.path.join(scratch, name, "artifacts"))
            report = compare_notebook(name, cells, jupyter, cellbox, cwds)
            report["seconds"] = {"ipykernel": round(middle - started, 2), "cellbox": round(time.monotonic() - middle, 2)}
            reports.append(report)
            if not args.json:
                print(
                    "{:<28} {:>3} cells  {:>3} ok under ipykernel  {:>3} fail under cellbox only  {:>3} identical"
                    "  {:>3}/{:<3} results differ  ({:.1f} s + {:.1f} s)".format(
                        name, report["cells"], report["ipykernel_ok"], report["fail_under_cellbox"], report["same_text"],
                        len(report["result_differences"]), report["results_compared"],
                        report["seconds"]["ipykernel"], report["seconds"]["cellbox"],
                    ),
                    flush=True,
                )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    total = totals(reports)
    document = {
        "python": shown(sys.executable),
        "python_version": sys.version.split()[0],
        "cellbox": shown(binary),
        "total": total,
        "notebooks": reports,
    }
    text = markdown(reports, total, shown(sys.executable), shown(binary))
    if not args.no_write:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "parity.json"), "w", encoding="utf-8") as handle:
            json.dump(document, handle, indent=1, ensure_ascii=False)
        with open(os.path.join(args.out, "parity.md"), "w", encoding="utf-8") as handle:
            handle.write(text)
    if args.json:
        print(json.dumps(document, indent=1, ensure_ascii=False))
    else:
        print()
        print(text)
    if args.self_check and total["same_text"] != total["cells"]:
        print("self-check: {} cells differ between two ipykernel runs".format(total["cells"] - total["same_text"]))
        return 1
    return 1 if total["fail_under_cellbox"] or total["corpus_errors"] or total["result_differences"] else 0


if __name__ == "__main__":
    sys.exit(main())
