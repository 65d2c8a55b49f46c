"""Drive `cellbox mcp` with the official Python MCP client answering sampling.

Usage: sampling.py CELLBOX_BINARY CWD SCENARIO
With CELLBOX_TEST_MCP_URL and CELLBOX_TEST_MCP_TOKEN set, the client talks to
that `cellbox serve` over streamable HTTP instead of starting `cellbox mcp`.
The client's sampling callback plays the model: it echoes what it was asked,
so the cell's output shows what reached the client.
Prints what it checked; any failed check raises, so the exit status says it all.
"""
import contextlib
import json
import os
import sys

import anyio
from mcp import Client, ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

BINARY, CWD, SCENARIO = sys.argv[1], sys.argv[2], sys.argv[3]
URL, TOKEN = os.environ.get("CELLBOX_TEST_MCP_URL"), os.environ.get("CELLBOX_TEST_MCP_TOKEN")
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


async def scenario_the_calling_client_answers(session):
    """Over HTTP one principal's connections share its default session: the caller answers, not the first."""
    async def other_model(context, params):
        prompt = params.messages[0].content.text
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text="other: " + prompt), model="other-model"
        )

    async with connect(other_model) as other:
        result = await call(other, "print(completion('to the second'))")
        assert not result.is_error and text_of(result) == "other: to the second\n", text_of(result)
        result = await call(session, "print(completion('to the first'))")
        assert not result.is_error and text_of(result) == "echo: to the first\n", text_of(result)
    print("the calling client answers ok")


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


@contextlib.asynccontextmanager
async def streams():
    """The transport's read and write streams: HTTP when a server URL is given, else a `cellbox mcp` child."""
    if URL:
        async with create_mcp_http_client(headers={"Authorization": "Bearer " + TOKEN}) as http:
            async with streamable_http_client(URL, http_client=http) as (read, write, *_):
                yield read, write
    else:
        params = StdioServerParameters(command=BINARY, args=["mcp", "--cwd", CWD], env=dict(os.environ))
        async with stdio_client(params) as (read, write):
            yield read, write


@contextlib.asynccontextmanager
async def connect(callback):
    async with streams() as (read, write):
        async with ClientSession(read, write, sampling_callback=callback) as session:
            await session.initialize()
            yield session


async def main():
    callback = None if SCENARIO.endswith("no_sampling") else model
    if SCENARIO.startswith("rounds_"):
        async with contextlib.AsyncExitStack() as stack:
            if URL:
                http = await stack.enter_async_context(
                    create_mcp_http_client(headers={"Authorization": "Bearer " + TOKEN})
                )
                target = streamable_http_client(URL, http_client=http)
            else:
                target = StdioServerParameters(command=BINARY, args=["mcp", "--cwd", CWD], env=dict(os.environ))
            client = await stack.enter_async_context(Client(target, sampling_callback=callback, mode="2026-07-28"))
            assert client.session.protocol_version == "2026-07-28", client.session.protocol_version
            await SCENARIOS[SCENARIO](client)
    else:
        async with connect(callback) as session:
            await SCENARIOS[SCENARIO](session)
    if callback is not None:
        assert ASKED, "the client was never asked"


anyio.run(main)
