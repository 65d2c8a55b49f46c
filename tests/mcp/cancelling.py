"""The cancellation scenario both MCP transports run (stdio in client.py,
streamable HTTP in tests/serve/client.py): the client gives up on a call once
its cell runs, and the next call finds the kernel and its state."""
import anyio


def _text(result):
    return "".join(block.text for block in result.content if block.type == "text")


async def cancel_a_running_call(session):
    """Define `kept`, give up on a call whose cell sleeps an hour, then read
    `kept`: returns that last call's result."""
    result = await session.call_tool("eval", {"cells": [{"code": "kept = 'still here'"}]})
    assert not result.is_error, _text(result)
    # The client gives up once the cell runs (its line came as progress), not
    # after a guess at how long that takes.
    running = anyio.Event()

    async def on_progress(progress, total, message):
        if message and message.startswith("sleeping"):
            running.set()

    async def long_call():
        code = "import time\nprint('sleeping', flush=True)\ntime.sleep(3600)"
        await session.call_tool("eval", {"cells": [{"code": code}]}, progress_callback=on_progress)

    async with anyio.create_task_group() as group:
        group.start_soon(long_call)
        await running.wait()
        group.cancel_scope.cancel()
    # The server interrupts the cell; the kernel and its state survive. The next
    # call waits for the interrupted cell to end, within its own timeout: a cell
    # the server failed to interrupt would hold it up past that (it sleeps an hour).
    return await session.call_tool("eval", {"cells": [{"code": "kept"}], "timeout": 60})
