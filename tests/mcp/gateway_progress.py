"""Drive `cellbox mcp` on a gateway whose kernels are slow to start, with the
official Python MCP client: the wait shows up as progress notifications.

Usage: gateway_progress.py CELLBOX_BINARY CWD SCENARIO
"""
import os
import sys

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

BINARY, CWD, SCENARIO = sys.argv[1], sys.argv[2], sys.argv[3]


async def scenario_start_progress(session):
    messages = []

    async def on_progress(progress, total, message):
        messages.append(message)

    result = await session.call_tool("eval", {"cells": [{"code": "print('ready')"}]}, progress_callback=on_progress)
    text = "".join(block.text for block in result.content if block.type == "text")
    # The session's first result says the sandbox does not reach a gateway kernel.
    assert not result.is_error and text.startswith("ready\n") and "outside cellbox's sandbox" in text, text
    waits = [m for m in messages if m and "on gateway… (" in m]
    assert len(waits) >= 2, messages
    print("start progress ok:", messages)


async def main():
    # No warm spare: one still starting (slowly, here) when the client leaves could outlive the server.
    args = ["mcp", "--cwd", CWD, "--spares", "0"]
    params = StdioServerParameters(command=BINARY, args=args, env=dict(os.environ))
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            await globals()["scenario_" + SCENARIO](session)


anyio.run(main)
