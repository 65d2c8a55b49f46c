"""Pre-run checks: compile a call's cells without running any, and lint them.

The host sends one `check` request with every Python cell of a call before
the first one runs (only when the caller asked for checks). Each cell is
compiled after the magic transform, exactly as it would be run, so `%time x`
and `!ls` pass; nothing is executed and the namespace is only read. With
`lint`, `ruff check` (beside the interpreter, else on PATH) reads each cell
that compiles; its findings come back as data, for notes beside the result.
"""
import ast
import builtins
import json
import os
import re
import shutil
import subprocess
import sys
import traceback

from .transform import transform_cell

_TOP_LEVEL_AWAIT = getattr(ast, "PyCF_ALLOW_TOP_LEVEL_AWAIT", 0)
_FILE_LINE = re.compile(r'^  File "<cell (\d+)>", line (\d+)')
_QUOTED_NAME = re.compile(r"`([^`]+)`")
# How long one ruff run may take, in seconds.
RUFF_TIMEOUT = 20
# Findings kept per cell (the host says how many more there were).
MAX_FINDINGS = 50


def check_cells(cells, lint, namespace):
    """Return (cells, notes): one {"error", "findings"} per (number, code)."""
    try:
        results = []
        compiled = []
        for number, code in cells:
            source = transform_cell(code)
            error = syntax_error(number, source)
            results.append({"error": error, "findings": []})
            compiled.append(source if error is None else None)
        notes = []
        if lint and not any(result["error"] for result in results):
            notes = _lint(cells, compiled, results, namespace)
        return results, notes
    except Exception as error:  # the check must never take the kernel down
        return [], ["The pre-run check failed (%s: %s); the cells ran unchecked." % (type(error).__name__, error)]


def syntax_error(number, source):
    """The compile error of `source` (a transformed cell) as a dict, or None."""
    filename = "<cell %d>" % number
    try:
        compile(source, filename, "exec", _TOP_LEVEL_AWAIT, dont_inherit=True)
    except (SyntaxError, ValueError, OverflowError, MemoryError, RecursionError) as error:
        lines = []
        for part in traceback.format_exception_only(type(error), error):
            lines.extend(part.splitlines(True))
        # IPython names the cell, not a file: "Cell 2, line 3".
        if lines:
            match = _FILE_LINE.match(lines[0])
            if match is not None:
                lines[0] = "  Cell %s, line %s\n" % (match.group(1), match.group(2))
        try:
            # A SyntaxError's str() adds "(<cell 2>, line 3)": the traceback says where.
            evalue = error.msg if isinstance(error, SyntaxError) and error.msg else str(error)
        except Exception:
            evalue = "<unprintable %s>" % type(error).__name__
        line = getattr(error, "lineno", None)
        return {
            "ename": type(error).__name__,
            "evalue": evalue,
            "traceback": lines,
            "line": line if isinstance(line, int) else None,
        }
    return None


def find_ruff():
    """`ruff` beside the interpreter (its venv's bin), else on PATH, else None."""
    names = ["ruff.exe", "ruff"] if os.name == "nt" else ["ruff"]
    for folder in {os.path.dirname(sys.executable), os.path.dirname(os.path.realpath(sys.executable))}:
        for name in names:
            path = os.path.join(folder, name)
            if os.path.isfile(path) and os.access(path, os.X_OK):
                return path
    return shutil.which("ruff")


def _lint(cells, compiled, results, namespace):
    ruff = find_ruff()
    if ruff is None:
        return [
            "Lint: ruff was not found (beside %s or on PATH), so the cells were not linted; "
            "`pip install ruff` in the kernel's environment enables it." % sys.executable
        ]
    known = set(namespace) | set(dir(builtins))
    notes = []
    for (number, _code), source, result in zip(cells, compiled, results):
        findings, problem = _ruff(ruff, number, source)
        if problem is not None:
            notes.append("Lint: ruff failed on cell %d: %s" % (number, problem))
            break
        # Names the kernel already holds, or that an earlier cell of the call
        # binds, are defined when this cell runs: not "undefined" then.
        result["findings"] = [f for f in findings if not _defined_elsewhere(f, known)][:MAX_FINDINGS]
        known |= _bound_names(source)
    return notes


def _ruff(ruff, number, source):
    """(findings, None), or ([], why ruff could not be run)."""
    command = [
        ruff,
        "check",
        "--no-cache",
        "--exit-zero",
        "--output-format",
        "json",
        "--stdin-filename",
        "cell_%d.py" % number,
        "-",
    ]
    try:
        done = subprocess.run(
            command,
            input=source.encode("utf-8", "replace"),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            timeout=RUFF_TIMEOUT,
        )
    except subprocess.TimeoutExpired:
        return [], "it took longer than %d s" % RUFF_TIMEOUT
    except OSError as error:
        return [], str(error)
    if done.returncode != 0:
        message = done.stderr.decode("utf-8", "replace").strip().splitlines()
        return [], (message[-1] if message else "exit status %d" % done.returncode)
    try:
        reported = json.loads(done.stdout.decode("utf-8", "replace") or "[]")
    except ValueError:
        return [], "its output was not JSON"
    findings = []
    for item in reported if isinstance(reported, list) else []:
        if not isinstance(item, dict):
            continue
        location = item.get("location") or {}
        findings.append(
            {
                "line": _int(location.get("row")),
                "column": _int(location.get("column")),
                "code": item.get("code") or "",
                "message": str(item.get("message") or ""),
            }
        )
    findings.sort(key=lambda f: (f["line"], f["column"]))
    return findings, None


def _int(value):
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _defined_elsewhere(finding, known):
    if finding["code"] != "F821":
        return False
    match = _QUOTED_NAME.search(finding["message"])
    return match is not None and match.group(1) in known


def _bound_names(source):
    """Names a cell binds anywhere (assignments, defs, imports, for targets)."""
    try:
        tree = ast.parse(source)
    except Exception:
        return set()
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                names.add((alias.asname or alias.name).split(".")[0])
    return names
