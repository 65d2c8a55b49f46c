"""Drive `cellbox mcp` started with sandbox flags through the official Python
MCP client: the instructions must tell the model what it may write and that
it has no network, and a cell must really be confined.

Usage: sandbox_client.py CELLBOX_BINARY CWD SECRET_PATH
"""
import os
import sys

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

BINARY, CWD, SECRET = sys.argv[1], sys.argv[2], sys.argv[3]


def text_of(result):
    return "".join(block.text for block in result.content if block.type == "text")


async def main():
    args = ["mcp", "--cwd", CWD, "--sandbox", "workspace-write", "--network", "off", "--memory-limit", "2G"]
    params = StdioServerParameters(command=BINARY, args=args, env=dict(os.environ))
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            text = init.instructions or ""
            assert "may write only under " + CWD in text, text
            assert "no network access" in text, text
            assert "2 GiB" in text, text
            code = "try:\n    open(%r).read()\nexcept PermissionError:\n    print('denied')" % SECRET
            result = await session.call_tool("eval", {"cells": [{"code": code}]})
            assert text_of(result) == "denied\n", text_of(result)
            print("sandboxed mcp ok")


anyio.run(main)
