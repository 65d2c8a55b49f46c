"""Drive `cellbox serve` with the official Python MCP client over streamable HTTP.

Usage: client.py URL TOKEN SCENARIO
Prints one JSON object with what the scenario saw; a failed check raises, so the
exit status says it all.
"""
import json
import os
import sys

import anyio
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

# The scenarios both transports share live beside the stdio client.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "mcp"))
from cancelling import cancel_a_running_call  # noqa: E402

URL, TOKEN, SCENARIO = sys.argv[1], sys.argv[2], sys.argv[3]


def text_of(result):
    return "".join(block.text for block in result.content if block.type == "text")


async def eval_text(client, code, **extra):
    arguments = {"cells": [{"code": code}]}
    arguments.update(extra)
    result = await client.call_tool("eval", arguments)
    return text_of(result), result


async def scenario_define(session):
    """Set state in the default and a named session; return an artifact id of a long output."""
    text, _ = await eval_text(session, "x = 41\nx + 1")
    assert "42" in text, text
    text, _ = await eval_text(session, "secret_in_s1 = 'alice-only'", session="s1")
    _, long = await eval_text(session, "for i in range(20000): print(i)")
    pid, _ = await eval_text(session, "import os; os.getpid()")
    return {"artifact": long.structured_content["artifact"], "kernel_pid": int(pid)}


async def scenario_persisted(session):
    """A second connection of the same principal sees the first one's state."""
    text, _ = await eval_text(session, "x")
    assert "41" in text, text
    text, _ = await eval_text(session, "secret_in_s1", session="s1")
    assert "alice-only" in text, text
    return {}


async def scenario_isolated(session):
    """Another principal's kernels know nothing of alice's state."""
    text, result = await eval_text(session, "x")
    assert result.is_error and "NameError" in text, text
    text, result = await eval_text(session, "secret_in_s1", session="s1")
    assert result.is_error and "NameError" in text, text
    text, _ = await eval_text(session, "import os; os.getcwd()")
    return {"cwd": text.strip().strip("'")}


async def scenario_read(session):
    """Read the artifact named on stdin's JSON; return what came back."""
    uri = json.loads(sys.stdin.read())["artifact"]
    try:
        result = await session.read_resource(uri)
        return {"read": "".join(getattr(c, "text", "") for c in result.contents)[:40]}
    except Exception as error:  # the server's JSON-RPC error, as the SDK raises it
        return {"error": str(error)}


async def scenario_progress(session):
    """Progress over HTTP as over stdio: the cell waits for a file that only
    the first progress notification creates (stdin: {"gate": path})."""
    gate = json.loads(sys.stdin.read())["gate"]
    messages = []

    async def on_progress(progress, total, message):
        messages.append(message)
        if not os.path.exists(gate):
            open(gate, "w").close()

    code = "import os, time\nwhile not os.path.exists(%r):\n    time.sleep(0.02)\n'done'" % gate
    result = await session.call_tool("eval", {"cells": [{"code": code}]}, progress_callback=on_progress)
    assert "done" in text_of(result), text_of(result)
    # The cell could not end before a notification arrived: progress streams during the call.
    assert messages, messages
    return {"progress": messages[:3]}


async def scenario_run(session):
    """Run the code on stdin's JSON ({"code": ..., and "cwd" or "session" if given});
    return the text and whether it is an error."""
    request = json.loads(sys.stdin.read())
    extra = {key: request[key] for key in ("cwd", "session") if key in request}
    if "language" in request:
        extra["cells"] = [{"code": request["code"], "language": request["language"]}]
    text, result = await eval_text(session, request["code"], **extra)
    return {"text": text, "is_error": bool(result.is_error)}


async def scenario_reset(session):
    """Stop this principal's default session's kernel."""
    result = await session.call_tool("eval_reset", {})
    return {"text": text_of(result)}


async def scenario_cancel(session):
    """A call the client gives up on (notifications/cancelled over HTTP) interrupts its cell; state stays."""
    result = await cancel_a_running_call(session)
    text = text_of(result)
    assert not result.is_error and "still here" in text, text
    return {"kept": text.strip()}


async def main():
    scenario = globals()["scenario_" + SCENARIO]
    async with create_mcp_http_client(headers={"Authorization": "Bearer " + TOKEN}) as http:
        async with streamable_http_client(URL, http_client=http) as (read, write, *_):
            async with ClientSession(read, write) as session:
                await session.initialize()
                await session.list_tools()
                return await scenario(session)


print(json.dumps(anyio.run(main)))
