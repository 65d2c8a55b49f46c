"""Drive `cellbox mcp` with the official Python MCP client answering sampling.

Usage: sampling.py CELLBOX_BINARY CWD SCENARIO
The client's sampling callback plays the model: it echoes what it was asked,
so the cell's output shows what reached the client.
Prints what it checked; any failed check raises, so the exit status says it all.
"""
import json
import os
import sys

import anyio
from mcp import Client, ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client

BINARY, CWD, SCENARIO = sys.argv[1], sys.argv[2], sys.argv[3]
ASKED = []


def text_of(result):
    return "".join(block.text for block in result.content if block.type == "text")


async def model(context, params):
    """Answer like a model would: JSON when asked for it, else an echo; slow when told to be."""
    prompt = params.messages[0].content.text
    ASKED.append({"prompt": prompt, "system": params.system_prompt, "max_tokens": params.max_tokens})
    if "slow" in prompt:
        await anyio.sleep(2)
    if "JSON Schema" in prompt:
        answer = json.dumps({"answer": 42})
    else:
        answer = "echo: " + prompt + (" | system: " + params.system_prompt if params.system_prompt else "")
    return types.CreateMessageResult(
        role="assistant", content=types.TextContent(type="text", text=answer), model="fake-model"
    )


async def call(session, code, **extra):
    arguments = {"cells": [{"code": code, **extra}]}
    return await session.call_tool("eval", arguments)


async def scenario_completion(session):
    result = await call(session, "print(completion('hello there', system='be brief'))")
    assert not result.is_error and text_of(result) == "echo: hello there | system: be brief\n", text_of(result)
    status = result.structured_content["status_events"]
    assert any(e["event"].get("call") == "completion" and e["event"].get("model") == "fake-model" for e in status), status
    print("completion ok")


async def scenario_schema_and_agent(session):
    code = "print(completion('count', schema={'type': 'object', 'required': ['answer']})['answer'])\n" \
        "print(agent('sort these', agent='worker', label='sorter'))"
    result = await call(session, code)
    out = text_of(result)
    assert not result.is_error, out
    first, second = out.splitlines()[:2]
    assert first == "42", out
    assert second.startswith("echo: sort these | system: ") and "worker" in second and "sorter" in second, out
    print("schema and agent ok")


async def scenario_named_session(session):
    result = await session.call_tool("eval", {"cells": [{"code": "print(completion('from data'))"}], "session": "data"})
    assert not result.is_error and text_of(result) == "echo: from data\n", text_of(result)
    print("named session ok")


async def scenario_paused_timeout(session):
    # The answer takes 2 s; the cell's own budget is 1 s and pauses while the client answers.
    # A first cell warms the kernel, so the budget is spent on the call alone.
    warm = await call(session, "1 + 1")
    assert not warm.is_error, text_of(warm)
    result = await call(session, "print(completion('slow please'))", timeout=1)
    assert not result.is_error and text_of(result) == "echo: slow please\n", text_of(result)
    print("paused timeout ok")


async def scenario_no_sampling(session):
    result = await call(session, "completion('hi')")
    out = text_of(result)
    assert result.is_error and "BridgeError" in out and "does not offer sampling" in out, out
    print("no sampling ok")


# On protocol 2026-07-28 the server may not send requests: the same cells are
# answered in input-required rounds that the client drives on its own.
async def scenario_rounds_completion(session):
    await scenario_completion(session)
    await scenario_schema_and_agent(session)


async def scenario_rounds_paused_timeout(session):
    await scenario_paused_timeout(session)


async def scenario_rounds_no_sampling(session):
    await scenario_no_sampling(session)


SCENARIOS = {name[len("scenario_"):]: fn for name, fn in globals().items() if name.startswith("scenario_")}


async def main():
    params = StdioServerParameters(command=BINARY, args=["mcp", "--cwd", CWD], env=dict(os.environ))
    callback = None if SCENARIO.endswith("no_sampling") else model
    if SCENARIO.startswith("rounds_"):
        async with Client(params, sampling_callback=callback, mode="2026-07-28") as client:
            assert client.session.protocol_version == "2026-07-28", client.session.protocol_version
            await SCENARIOS[SCENARIO](client)
    else:
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write, sampling_callback=callback) as session:
                await session.initialize()
                await SCENARIOS[SCENARIO](session)
    if callback is not None:
        assert ASKED, "the client was never asked"


anyio.run(main)
