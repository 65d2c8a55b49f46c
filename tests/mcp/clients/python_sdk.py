"""The official Python SDK client (`mcp`) drives `cellbox mcp` over stdio.

Usage: python_sdk.py BINARY CASES_JSON
CASES_JSON is {"name": {"cells": [...]}, ...}; prints one JSON object: the SDK's version and,
per case, the CallToolResult exactly as ClientSession.call_tool hands it to the host (by alias:
content, structuredContent, isError).
"""
import json
import sys
from importlib.metadata import version

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


async def main(binary, cases):
    results = {}
    params = StdioServerParameters(command=binary, args=["mcp"])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            # As hosts do: list the tools, so call_tool checks structuredContent against outputSchema.
            await session.list_tools()
            for name, arguments in cases.items():
                try:
                    result = await session.call_tool("eval", arguments)
                    results[name] = result.model_dump(mode="json", by_alias=True, exclude_none=True)
                except Exception as error:  # the SDK refused the result (e.g. outputSchema)
                    results[name] = {"client_error": f"{type(error).__name__}: {error}"}
    return results


if __name__ == "__main__":
    binary, cases = sys.argv[1], json.loads(sys.argv[2])
    results = anyio.run(main, binary, cases)
    print(json.dumps({"version": version("mcp"), "results": results}))
