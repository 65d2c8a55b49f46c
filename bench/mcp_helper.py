"""MCP servers for the cellbox benchmark, driven through the official Python MCP client.

Each input line is a JSON command; each answer is one JSON line. A server is
{"command": PATH, "args": [...], "env": {...}, "cwd": DIR}; timings are taken
here, around the client's calls, so the pipe to the orchestrator is not part
of them. Commands:
  {"op": "tools", "server": S}                       the server's tools: name, description, input schema
  {"op": "cold", "server": S, "tool": T, "arguments": A, "expect": X}
                                                     spawn S, initialize, call T(A) until its text holds X;
                                                     ms from the spawn to that result (the stop is not timed)
  {"op": "run", "argv": [...], "env": {...}, "expect": X}
                                                     start a command; ms until its stdout holds X (the
                                                     exit is not timed): the CLI's spawn → first result
  {"op": "start", "name": K, "server": S, "tool": T, "arguments": A, "expect": X}
                                                     keep server S running as K (its first call made)
  {"op": "roundtrip", "name": K, "n": N}             N calls of K's tool; ms each
  {"op": "stop"}                                     stop every kept server

`mcp` 2.x starts a server in a session of its own; a server that then opens a
pseudo-terminal for a child of its own (mcp-repl does) makes it its own
controlling terminal, and the child cannot take it. Such a server is started
through `sh -c` (the caller's business), so it is not the session's leader.
"""
import contextlib
import json
import subprocess
import sys
import time

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


def _params(server):
    return StdioServerParameters(
        command=server["command"], args=server.get("args", []), env=server.get("env"), cwd=server.get("cwd")
    )


def _text(result):
    return "".join(getattr(block, "text", "") for block in result.content)


async def _open(stack, server):
    """Spawn the server and finish the MCP handshake; the stack stops it."""
    read, write = await stack.enter_async_context(stdio_client(_params(server), errlog=_devnull()))
    session = await stack.enter_async_context(ClientSession(read, write))
    await session.initialize()
    return session


def _devnull():
    return open("/dev/null", "w")  # the servers' own logs are not part of the table


async def _call(session, command):
    result = await session.call_tool(command["tool"], command["arguments"])
    text = _text(result)
    if result.is_error or command["expect"] not in text:
        raise RuntimeError("%s answered %r" % (command["tool"], text[:300]))
    return text


class Helper:
    def __init__(self):
        self.kept = {}  # name -> (exit stack, session, the command that started it)

    async def tools(self, command):
        async with contextlib.AsyncExitStack() as stack:
            session = await _open(stack, command["server"])
            listed = (await session.list_tools()).tools
            return {"tools": [{"name": t.name, "description": t.description} for t in listed]}

    async def cold(self, command):
        async with contextlib.AsyncExitStack() as stack:
            started = time.perf_counter()
            session = await _open(stack, command["server"])
            await _call(session, command)
            elapsed = (time.perf_counter() - started) * 1000.0
        return {"ms": elapsed}

    async def run(self, command):
        started = time.perf_counter()
        child = subprocess.Popen(command["argv"], env=command.get("env"), stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
        seen = b""
        expect = command["expect"].encode()
        while expect not in seen:
            chunk = await anyio.to_thread.run_sync(child.stdout.readline)
            if not chunk:
                child.wait()
                raise RuntimeError("%s ended (status %s) having printed %r" % (command["argv"][0], child.returncode, seen[-300:]))
            seen += chunk
        elapsed = (time.perf_counter() - started) * 1000.0
        child.stdout.read()
        child.wait()
        return {"ms": elapsed}

    async def start(self, command):
        stack = contextlib.AsyncExitStack()
        await stack.__aenter__()
        try:
            session = await _open(stack, command["server"])
            await _call(session, command)
        except BaseException:
            await stack.aclose()
            raise
        self.kept[command["name"]] = (stack, session, command)
        return {"ok": True}

    async def roundtrip(self, command):
        _, session, call = self.kept[command["name"]]
        times = []
        for _ in range(command["n"]):
            started = time.perf_counter()
            await _call(session, call)
            times.append((time.perf_counter() - started) * 1000.0)
        return {"ms": times}

    async def stop(self, _):
        # Stopped in the reverse order of their starts (their task groups nest).
        while self.kept:
            _, (stack, _, _) = self.kept.popitem()
            await stack.aclose()
        return {"ok": True}


def _describe(error):
    """The innermost causes of a failure (task groups wrap them)."""
    inner = getattr(error, "exceptions", None)
    if inner:
        return "; ".join(_describe(e) for e in inner)
    return "%s: %s" % (type(error).__name__, error)


async def main():
    helper = Helper()
    while True:
        line = await anyio.to_thread.run_sync(sys.stdin.readline)
        if not line:
            break
        command = json.loads(line)
        try:
            answer = await getattr(helper, command["op"])(command)
        except Exception as error:  # report, keep serving
            answer = {"error": _describe(error)}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()
    await helper.stop(None)


if __name__ == "__main__":
    anyio.run(main)
