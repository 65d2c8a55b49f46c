"""Drive `cellbox mcp` with every real MCP client installed here; print a per-client table.

Usage: run.py --binary PATH [--short] [--clients a,b]   (scripts/mcp-clients installs the clients)

Each client calls `eval` four ways (output, error, image, long output) and each result is checked
where the client leaves it:
  - content: the text blocks carry the output (and an image block the PNG);
  - structuredContent: `text` is the same text as the content's text blocks, and `images` lists
    `{mime_type, ...}` for each image;
  - shown: what this client puts in front of the model (an SDK's host gets the CallToolResult;
    a CLI prints something on stdout) has the output too.
An error must also come back as isError: true. Exit status 1 on any failed check.
"""
import argparse
import base64
import json
import re
import os
import secrets
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
NODE_BIN = HERE / "node_modules" / ".bin"
TIMEOUT = 240

CASES = {
    "output": {"cells": [{"code": "print('hello from cellbox'); 6*7"}]},
    "error": {"cells": [{"code": "1/0"}]},
    "image": {"cells": [{"code": "import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\nplt.plot([1, 2])\nplt.show()"}]},
    "long": {"cells": [{"code": "for i in range(20000): print(i)"}]},
}
SHORT_CASES = ("output",)


def expect(case, text):
    """The problems with TEXT as the output of CASE (an empty list when it is right)."""
    text = text or ""
    if case == "output":
        wanted = ["hello from cellbox", "42"]
    elif case == "error":
        wanted = ["ZeroDivisionError"]
    elif case == "image":
        wanted = []
    else:  # long: clamped, head and tail kept, the rest behind an artifact link
        wanted = ["0\n1\n2\n", "19999\n", "artifact://"]
    problems = [f"missing {w!r}" for w in wanted if w not in text]
    if case == "long" and "\n10000\n" in text:
        problems.append("not clamped (line 10000 is there)")
    return problems


def text_blocks(result):
    return "".join(b.get("text", "") for b in result.get("content") or [] if b.get("type") == "text")


def png_blocks(result):
    blocks = [b for b in result.get("content") or [] if b.get("type") == "image"]
    return [b for b in blocks if b.get("mimeType") == "image/png" and base64.b64decode(b.get("data", ""))[:4] == b"\x89PNG"]


def check_result(case, result):
    """Checks of a whole CallToolResult (a dict by the protocol's names): content and structuredContent."""
    problems = []
    if "client_error" in result:
        return ["client refused the result: " + result["client_error"][:300]]
    text = text_blocks(result)
    problems += ["content: " + p for p in expect(case, text)]
    if (case == "error") != bool(result.get("isError")):
        problems.append(f"isError is {result.get('isError')!r}")
    structured = result.get("structuredContent")
    if not isinstance(structured, dict):
        problems.append("no structuredContent")
    else:
        if structured.get("text") != text:
            problems.append(f"structuredContent.text {str(structured.get('text'))[:60]!r} is not the content's text")
        if case == "image":
            images = structured.get("images")
            if not (isinstance(images, list) and any(isinstance(i, dict) and i.get("mime_type") == "image/png" for i in images)):
                problems.append(f"structuredContent.images has no image/png: {str(images)[:80]}")
    if case == "image" and not png_blocks(result):
        problems.append("content: no image/png block")
    return problems


def run(command, env, timeout=TIMEOUT):
    started = time.monotonic()
    proc = subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout)
    return proc, time.monotonic() - started


def sdk_client(kind, extra=()):
    """The official SDKs: the host gets the CallToolResult, content and structuredContent both.
    `extra` goes after the script's arguments (the TypeScript one's --url/--token)."""

    def drive(binary, cases, env):
        if kind == "python":
            command = [sys.executable, str(HERE / "python_sdk.py"), binary, json.dumps(cases)]
        else:
            command = ["node", str(HERE / "ts_sdk.mjs"), binary, json.dumps(cases)] + list(extra)
        proc, _ = run(command, env)
        if proc.returncode != 0:
            raise RuntimeError(proc.stderr[-1500:])
        answer = json.loads(proc.stdout)
        rows = {}
        for case, result in answer["results"].items():
            rows[case] = check_result(case, result)
        return answer["version"], rows

    return drive


def node_version(package):
    return json.loads((HERE / "node_modules" / package / "package.json").read_text())["version"]


def inspector(binary, cases, env, target=None):
    """`mcp-inspector --cli … --method tools/call`: prints the whole result as JSON on stdout.
    TARGET is what follows `--cli` (default: `BINARY mcp` over stdio)."""
    rows = {}
    for case, arguments in cases.items():
        command = [str(NODE_BIN / "mcp-inspector"), "--cli"] + (target or [binary, "mcp"]) + [
                   "--method", "tools/call", "--tool-name", "eval", "--tool-args-json", json.dumps(arguments),
                   "--format", "json", "-q"]
        proc, _ = run(command, env)
        try:
            result = json.loads(proc.stdout)
        except ValueError:
            rows[case] = [f"stdout is not JSON (exit {proc.returncode}): {proc.stdout[-200:]!r} {proc.stderr[-300:]!r}"]
            continue
        if isinstance(result, dict) and "result" in result and "content" not in result:
            result = result["result"]  # --format json may wrap the result
        problems = check_result(case, result)
        if result.get("taskId") and result.get("status"):
            problems.insert(0, f"got a task handle (status {result.get('status')!r}), not the result")
        # Shown: the printed JSON, both fields; the checks above cover what it prints.
        rows[case] = problems
    return node_version("@modelcontextprotocol/inspector"), rows


class Served:
    """`cellbox serve` on a free loopback port for the time of a `with`, with one token given in
    CELLBOX_SERVE_TOKEN: `url` and `token` once it accepts."""

    def __init__(self, binary, env):
        self.binary, self.env = binary, env
        self.token = "cbx_" + secrets.token_urlsafe(24)

    def __enter__(self):
        self.root = tempfile.TemporaryDirectory()
        root = self.root.name
        server_env = dict(self.env, CELLBOX_SERVE_TOKEN=self.token)
        self.server = subprocess.Popen(
            [self.binary, "serve", "--listen", "127.0.0.1:0", "--root", root, "--tokens", os.path.join(root, "none.json")],
            env=server_env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        said = []
        for line in self.server.stderr:  # the server names its address once it accepts
            said.append(line)
            if line.startswith("cellbox serve: MCP on "):
                self.url = line.split(" on ", 1)[1].split(",", 1)[0]
                return self
        self.__exit__(None, None, None)
        raise RuntimeError("cellbox serve did not start: " + "".join(said)[-1500:])

    def __exit__(self, *exc):
        self.server.terminate()
        self.server.communicate(timeout=TIMEOUT)
        self.root.cleanup()


def inspector_http(binary, cases, env):
    """The Inspector's CLI over streamable HTTP against `cellbox serve`, the token as a bearer header."""
    with Served(binary, env) as served:
        target = [served.url, "--transport", "http", "--header", "Authorization: Bearer " + served.token]
        return inspector(binary, cases, env, target)


def ts_sdk_http(binary, cases, env):
    """The TypeScript SDK's streamable HTTP client against `cellbox serve`."""
    with Served(binary, env) as served:
        return sdk_client("ts", ["--url", served.url, "--token", served.token])(binary, cases, env)


def mcporter(binary, cases, env):
    """`mcporter call --stdio …`: prints structuredContent (its `json` member when it has one) by
    default, the text blocks with --output text; exit 1 on isError; --save-images writes images."""
    rows = {}
    for case, arguments in cases.items():
        base = [str(NODE_BIN / "mcporter"), "call", "--stdio", binary, "--stdio-arg", "mcp", "eval",
                "--args", json.dumps(arguments), "--timeout", str(TIMEOUT * 1000)]
        problems = []
        with tempfile.TemporaryDirectory() as images:
            shown, _ = run(base + ["--save-images", images], env)
            saved = [p for p in Path(images).rglob("*") if p.is_file() and p.read_bytes()[:4] == b"\x89PNG"]
        text, _ = run(base + ["--output", "text"], env)
        problems += ["--output text: " + p for p in expect(case, text.stdout)]
        problems += ["shown (default output): " + p for p in expect(case, printed_text(shown.stdout))]
        if (case == "error") != (shown.returncode == 1):
            problems.append(f"exit status {shown.returncode}")
        if case == "image" and not saved:
            problems.append("--save-images wrote no PNG")
        try:
            structured = json.loads(shown.stdout)
        except ValueError:
            structured = None
        # Two runs, two servers: the artifact ids differ, the rest must not.
        same = isinstance(structured, dict) and without_ids(structured.get("text", "")) == without_ids(text.stdout)
        if not same:
            problems.append(f"structuredContent.text is not the content's text (default output {shown.stdout[:60]!r})")
        rows[case] = problems
    return node_version("mcporter"), rows


def without_ids(text):
    """`text` with each artifact:// id blanked and trailing newlines dropped."""
    return re.sub(r"artifact://[^\s\]]+", "artifact://<id>", text).rstrip("\n")


def printed_text(stdout):
    """A CLI's printed JSON read back as the model reads it (escapes undone), or the text as is."""
    try:
        value = json.loads(stdout)
    except ValueError:
        return stdout
    return json.dumps(value, ensure_ascii=False).encode().decode("unicode_escape", errors="replace")


def fastmcp_cli(binary, cases, env):
    """`fastmcp call --command … --target eval`: prints structuredContent as JSON when the result
    has it, the text blocks otherwise, "Error: <text>" on isError (fastmcp/cli/client.py,
    _format_call_result_text); --json prints the whole result (snake_case keys)."""
    from importlib.metadata import version

    fastmcp = Path(sys.executable).parent / "fastmcp"
    rows = {}
    for case, arguments in cases.items():
        problems = []
        base = [str(fastmcp), "call", "--command", f"{binary} mcp", "--target", "eval", "--input-json", json.dumps(arguments)]
        shown, _ = run(base, env)
        problems += ["shown (stdout): " + p for p in expect(case, printed_text(shown.stdout))]
        raw, _ = run(base + ["--json"], env)
        try:
            result = json.loads(raw.stdout)
            names = {"is_error": "isError", "structured_content": "structuredContent"}
            result = {names.get(k, k): v for k, v in result.items()}
            for block in result.get("content") or []:
                if "mime_type" in block:
                    block["mimeType"] = block.pop("mime_type")
        except (ValueError, AttributeError):
            result = {"client_error": f"--json stdout is not JSON (exit {raw.returncode}): {raw.stdout[-200:]!r} {raw.stderr[-300:]!r}"}
        problems += check_result(case, result)
        rows[case] = problems
    return version("fastmcp"), rows


CLIENTS = {
    # name: (driver, what the client shows the model)
    "python-sdk": (sdk_client("python"), "CallToolResult: content + structuredContent (host's pick)"),
    "typescript-sdk": (sdk_client("ts"), "CallToolResult: content + structuredContent (host's pick)"),
    "inspector-cli": (inspector, "whole result JSON (content + structuredContent)"),
    "inspector-cli-http": (inspector_http, "whole result JSON, over `cellbox serve` (streamable HTTP)"),
    "typescript-sdk-http": (ts_sdk_http, "CallToolResult, over `cellbox serve` (streamable HTTP)"),
    "mcporter": (mcporter, "structuredContent.json, else structuredContent, before text"),
    "fastmcp-cli": (fastmcp_cli, "structuredContent as JSON (content text on isError)"),
}
SHORT_CLIENTS = ("python-sdk", "typescript-sdk", "inspector-cli-http", "typescript-sdk-http")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--short", action="store_true")
    parser.add_argument("--clients", help="comma-separated subset of: " + ", ".join(CLIENTS))
    parser.add_argument("--verbose", action="store_true", help="print each failed check")
    args = parser.parse_args()
    names = args.clients.split(",") if args.clients else list(SHORT_CLIENTS if args.short else CLIENTS)
    cases = {name: CASES[name] for name in (SHORT_CASES if args.short else CASES)}
    env = dict(os.environ)
    columns = list(CASES)
    table = []
    details = []
    failed = False
    for name in names:
        driver, shown = CLIENTS[name]
        started = time.monotonic()
        try:
            version, rows = driver(args.binary, cases, env)
        except Exception as error:  # the client could not run at all
            version, rows = "?", {case: [f"client failed: {error}"] for case in cases}
        marks = []
        for case in columns:
            if case not in rows:
                marks.append("-")
                continue
            ok = not rows[case]
            failed |= not ok
            marks.append("✓" if ok else "✗")
            details += [f"  {name} {case}: {problem}" for problem in rows[case]]
        table.append([name, version, shown] + marks + [f"{time.monotonic() - started:.0f}s"])
    header = ["client", "version", "field shown to the model"] + columns + ["time"]
    widths = [max(len(str(row[i])) for row in table + [header]) for i in range(len(header))]
    for row in [header] + table:
        print("  ".join(str(cell).ljust(width) for cell, width in zip(row, widths)).rstrip())
    if details:
        print("failed checks:")
        print("\n".join(details if args.verbose else details[:40]))
    passed = sum(row[3:-1].count("✓") for row in table)
    failures = sum(row[3:-1].count("✗") for row in table)
    print(f"mcp-clients: {passed} passed, {failures} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
