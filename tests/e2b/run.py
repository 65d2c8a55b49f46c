"""Runs E2B's vendored test suites against a fresh `cellbox serve` (driven by scripts/e2b-tests).

Starts `cellbox serve --no-auth --listen 127.0.0.1:0` with a private root folder, points E2B's
SDKs at it (E2B_API_URL, E2B_SANDBOX_URL, E2B_API_KEY), runs each suite (pytest with
tests/e2b/pytest/pytest_cellbox_e2b.py, or vitest with a wrapper config in tests/e2b/vitest),
and prints per suite passed / failed / skipped, each skip reason with its count, and the failed
tests. Exit status 1 if any test failed (or a suite did not finish), 2 on a usage error.
"""

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

E2B = Path(__file__).resolve().parent
REPO = E2B.parent.parent
VENDOR = E2B / "vendor"
SKIPS = E2B / "skips.txt"

SUITES = ["e2b-python", "code-interpreter-python", "e2b-js", "code-interpreter-js"]

# The short form (scripts/test): a fixed subset of each suite's files covering sandbox create
# and kill, run_code with results, streaming, contexts, file upload and download, commands.
SHORT = {
    "e2b-python": [
        "tests/sync/sandbox_sync/test_create.py",
        "tests/sync/sandbox_sync/commands/test_run.py",
        "tests/sync/sandbox_sync/files/test_write.py",
        "tests/sync/sandbox_sync/files/test_read.py",
        "tests/async/sandbox_async/test_kill.py",
    ],
    "code-interpreter-python": [
        "tests/sync/test_basic.py",
        "tests/sync/test_display_data.py",
        "tests/sync/test_streaming.py",
        "tests/sync/test_contexts.py",
        "tests/async/test_async_statefulness.py",
    ],
    "e2b-js": [
        "tests/sandbox/create.test.ts",
        "tests/sandbox/commands/run.test.ts",
        "tests/sandbox/files/write.test.ts",
        "tests/sandbox/files/read.test.ts",
    ],
    "code-interpreter-js": [
        "tests/basic.test.ts",
        "tests/displayData.test.ts",
        "tests/streaming.test.ts",
        "tests/contexts.test.ts",
    ],
}

# A suite that runs longer than this is stopped and counted as failed (no test may hang the run).
SUITE_TIMEOUT = {"short": 240, "full": 1800}


def start_server(binary, work, python):
    root = work / "root"
    root.mkdir()
    log = open(work / "serve.log", "w+b")
    cmd = [str(binary), "serve", "--no-auth", "--listen", "127.0.0.1:0", "--root", str(root),
           # One principal (`local`) runs every test: it may use all of the server's sandboxes.
           "--principal-share", "100"]
    if python:
        cmd += ["--python", python]
    env = dict(os.environ)
    # Private configuration and state: nothing read from or written to the user's.
    env.update(HOME=str(work / "home"), XDG_CONFIG_HOME=str(work / "home/.config"),
               XDG_STATE_HOME=str(work / "home/.local/state"), XDG_CACHE_HOME=str(work / "home/.cache"),
               XDG_DATA_HOME=str(work / "home/.local/share"), TMPDIR=str(work / "tmp"))
    (work / "home").mkdir()
    (work / "tmp").mkdir()
    proc = subprocess.Popen(cmd, cwd=root, env=env, stdin=subprocess.DEVNULL,
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + 60
    pattern = re.compile(rb"cellbox serve: MCP on http://127\.0\.0\.1:(\d+)/mcp")
    while time.monotonic() < deadline:
        log.seek(0)
        m = pattern.search(log.read())
        if m:
            return proc, int(m.group(1)), log
        if proc.poll() is not None:
            break
        time.sleep(0.1)
    log.seek(0)
    sys.stderr.write(log.read().decode(errors="replace")[-4000:])
    stop_server(proc)
    raise SystemExit("e2b-tests: cellbox serve did not start (its output is above)")


def stop_server(proc):
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def run_logged(cmd, cwd, env, out, timeout, verbose):
    """Runs cmd, its output to the file out (and the terminal with --verbose). False on timeout."""
    with open(out, "wb") as f:
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                start_new_session=True)

        def pump():
            for chunk in iter(lambda: proc.stdout.read1(65536), b""):
                f.write(chunk)
                f.flush()
                if verbose:
                    sys.stdout.buffer.write(chunk)
                    sys.stdout.flush()

        t = threading.Thread(target=pump, daemon=True)
        t.start()
        try:
            proc.wait(timeout=timeout)
            timed_out = False
        except subprocess.TimeoutExpired:
            timed_out = True
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        t.join(5)
    return not timed_out


def run_pytest(suite, files, env, work, args, timeout):
    report = work / f"{suite}.json"
    env = dict(env, E2B_HARNESS_REPORT=str(report), PYTHONPATH=str(E2B / "pytest"),
               PYTHONDONTWRITEBYTECODE="1")
    cmd = [sys.executable, "-m", "pytest", "-p", "pytest_cellbox_e2b", "-p", "no:cacheprovider",
           "-q", "-rfE", "--color=no", "--numprocesses", str(args.jobs),
           # The code-interpreter suite sets no per-test limit; the SDK suite sets 30 s.
           "--timeout", "60" if suite == "code-interpreter-python" else "30"]
    # Whole files left out (`[SUITE files]` in skips.txt): those that cannot even be imported.
    cmd += ["--ignore=" + f for f in excluded_files(suite, files)]
    cmd += files or ["tests"]
    finished = run_logged(cmd, VENDOR / suite, env, work / f"{suite}.log", timeout, args.verbose)
    tests = json.loads(report.read_text()) if report.exists() else {}
    return finished, tests


def run_vitest(suite, files, env, work, args, timeout):
    report = work / f"{suite}.json"
    env = dict(env, E2B_HARNESS_FILES=" ".join(files), E2B_HARNESS_SUITE_DIR=str(VENDOR / suite),
               E2B_HARNESS_VITE_CACHE=str(work / "vite-cache"))
    cmd = ["node", str(E2B / "node_modules/vitest/vitest.mjs"), "run",
           "--config", str(E2B / "vitest" / f"{suite}.config.mts"),
           "--reporter=default", "--reporter=json", f"--outputFile.json={report}",
           f"--maxWorkers={args.jobs}", "--no-color"]
    finished = run_logged(cmd, E2B, env, work / f"{suite}.log", timeout, args.verbose)
    tests = {}
    if report.exists():
        data = json.loads(report.read_text())
        for file_result in data.get("testResults", []):
            rel = os.path.relpath(file_result["name"], VENDOR / suite)
            if not file_result.get("assertionResults") and file_result.get("status") == "failed":
                tests[rel] = {"outcome": "failed", "when": "collect",
                              "message": file_result.get("message", "")[:2000]}
            for t in file_result.get("assertionResults", []):
                tid = " > ".join([rel, *t.get("ancestorTitles", []), t["title"]])
                status = t["status"]
                if status == "passed":
                    tests[tid] = {"outcome": "passed"}
                elif status == "failed":
                    msg = (t.get("failureMessages") or [""])[0]
                    tests[tid] = {"outcome": "failed", "message": msg[:2000]}
                else:
                    reason = (t.get("meta") or {}).get("cellboxSkip")
                    reason = "cellbox: " + reason if reason else "skipped by the suite itself (skipIf/todo)"
                    tests[tid] = {"outcome": "skipped", "reason": reason}
    return finished, tests


def excluded_files(suite, files):
    """{file: reason} of the suite's test files that skips.txt's `[SUITE files]` leaves out."""
    import fnmatch
    rules, current = [], None
    for raw in SKIPS.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            current = line[1:-1].strip()
        elif current == f"{suite} files":
            pattern, _, reason = line.partition(" | ")
            rules.append((pattern.strip(), reason.strip()))
    root = VENDOR / suite
    found = "tests/**/test_*.py" if suite.endswith("python") else "tests/**/*.test.ts"
    candidates = files or [str(p.relative_to(root)) for p in sorted(root.glob(found))]
    out = {}
    for f in candidates:
        for pattern, reason in rules:
            if fnmatch.fnmatchcase(f, pattern):
                out[f] = reason
                break
    return out


def first_line(message):
    for line in message.splitlines():
        line = line.strip()
        if line:
            return line[:300]
    return ""


def main():
    parser = argparse.ArgumentParser(prog="scripts/e2b-tests", description=__doc__.split("\n\n")[0])
    parser.add_argument("--full", action="store_true", help="every test file (default: the short subset)")
    parser.add_argument("--suite", action="append", choices=SUITES,
                        help="run only this suite (repeatable; default: all four)")
    parser.add_argument("--binary", default=os.environ.get("CELLBOX_BINARY", str(REPO / "target/debug/cellbox")))
    parser.add_argument("--python", default=os.environ.get("CELLBOX_PYTHON"),
                        help="the kernels' Python (default: this one, .venv-e2b's: matplotlib, pandas, pillow)")
    parser.add_argument("--jobs", type=int, default=2, help="tests run in parallel per suite (default 2)")
    parser.add_argument("--verbose", action="store_true", help="show each suite's output as it runs")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder (logs, reports)")
    parser.add_argument("--json", help="also write every test's outcome to this file")
    parser.add_argument("files", nargs="*", help="only these files of the (single) --suite")
    args = parser.parse_args()
    suites = args.suite or SUITES
    if args.files and len(suites) != 1:
        parser.error("files need exactly one --suite")
    binary = Path(args.binary).resolve()
    if not binary.is_file():
        parser.error(f"{binary} is missing (cargo build, or set CELLBOX_BINARY)")
    python = args.python or sys.executable
    mode = "full" if args.full else "short"

    work = Path(tempfile.mkdtemp(prefix="cellbox-e2b-tests."))
    proc, port, log = start_server(binary, work, python)
    url = f"http://127.0.0.1:{port}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("E2B_")}
    env.update(E2B_API_URL=url, E2B_SANDBOX_URL=url, E2B_API_KEY="e2b_" + "0" * 40,
               E2B_HARNESS_SKIPS=str(SKIPS), NO_COLOR="1")
    print(f"e2b-tests: cellbox serve on {url} ({binary}), {mode} form; work folder {work}", flush=True)

    results, unfinished = {}, []
    try:
        for suite in suites:
            files = args.files or ([] if args.full else SHORT[suite])
            started = time.monotonic()
            print(f"== {suite} ({len(files) or 'all'} files)", flush=True)
            runner = run_pytest if suite.endswith("python") else run_vitest
            finished, tests = runner(suite, files, dict(env, E2B_HARNESS_SUITE=suite), work, args,
                                     SUITE_TIMEOUT[mode])
            if not finished:
                unfinished.append(suite)
            if not tests:
                unfinished.append(suite) if suite not in unfinished else None
                out = (work / f"{suite}.log").read_text(errors="replace")
                print(out[-3000:])
            results[suite] = (tests, time.monotonic() - started, finished)
            if proc.poll() is not None:
                print("e2b-tests: cellbox serve exited during the run:", flush=True)
                log.seek(0)
                print(log.read().decode(errors="replace")[-3000:])
                break
    finally:
        stop_server(proc)

    any_failed = bool(unfinished)
    print()
    print("E2B test suites against cellbox serve:")
    for suite, (tests, seconds, finished) in results.items():
        counts = Counter(t["outcome"] for t in tests.values())
        note = "" if finished else "  (stopped: took over %ds)" % SUITE_TIMEOUT[mode]
        print(f"  {suite:24} {counts['passed']:4} passed {counts['failed']:4} failed "
              f"{counts['skipped']:4} skipped" + (f" {counts['xfailed']} xfailed" if counts["xfailed"] else "")
              + f"   ({seconds:.0f} s){note}")
    for suite, (tests, _, _) in results.items():
        reasons = Counter(t["reason"] for t in tests.values() if t["outcome"] == "skipped")
        left_out = Counter(excluded_files(suite, args.files or ([] if args.full else SHORT[suite])).values())
        for reason, n in left_out.items():
            reasons[f"cellbox: {reason} ({n} whole files, not loaded)"] = 0
        failed = sorted(tid for tid, t in tests.items() if t["outcome"] == "failed")
        if reasons:
            print(f"\n{suite}: skipped")
            for reason, n in sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0])):
                print(f"  {n:4}  {reason}" if n else f"     -  {reason}")
        if failed:
            any_failed = True
            print(f"\n{suite}: failed")
            for tid in failed:
                print(f"  {tid}\n        {first_line(tests[tid].get('message', ''))}")
    if unfinished:
        print(f"\ne2b-tests: did not finish: {', '.join(unfinished)} (logs in {work})")
    if args.json:
        Path(args.json).write_text(json.dumps({s: r[0] for s, r in results.items()}, indent=1, sort_keys=True))
    if args.keep or unfinished:
        print(f"e2b-tests: logs and reports kept in {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if any_failed else 0


if __name__ == "__main__":
    sys.exit(main())
