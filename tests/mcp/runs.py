"""Drive runs and named sessions of `cellbox mcp` with the official Python MCP client.

Usage: runs.py CELLBOX_BINARY CWD SCENARIO
Prints what it checked; any failed check raises, so the exit status says it all.
"""
import os
import sys
import time

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

BINARY, CWD, SCENARIO = sys.argv[1], sys.argv[2], sys.argv[3]


def text_of(result):
    return "".join(block.text for block in result.content if block.type == "text")


def gate(name, seconds=300):
    """Python that waits for the file `name` (at most `seconds`, so a failed test leaves no cell running for
    long), so the test decides when a cell ends."""
    path = os.path.join(CWD, name)
    return (
        "import os, time\n"
        "deadline = time.monotonic() + %d\n"
        "while not os.path.exists(%r) and time.monotonic() < deadline:\n"
        "    time.sleep(0.05)\n" % (seconds, path)
    )


def release(name):
    with open(os.path.join(CWD, name), "w"):
        pass


async def timed(coroutine):
    started = time.monotonic()
    result = await coroutine
    return result, time.monotonic() - started


async def read_until(session, first, needle):
    """The text of the run `first` started, read with eval_wait until it holds `needle` (the cell got
    there, which a `wait` of any length does not promise on a loaded machine)."""
    text = text_of(first)
    deadline = time.monotonic() + 60
    while needle not in text:
        assert time.monotonic() < deadline, text
        more = await session.call_tool("eval_wait", {"run": first.structured_content["run"], "wait": 0.5})
        text += text_of(more)
    return text


async def scenario_wait(session, init):
    assert "eval_wait" in (init.instructions or "") and "`wait`" in init.instructions, init.instructions
    tools = {tool.name: tool for tool in (await session.list_tools()).tools}
    assert "wait" in tools["eval"].input_schema["properties"], tools["eval"].input_schema
    assert "session" in tools["eval"].input_schema["properties"]
    code = "print('training started', flush=True)\n" + gate("go") + "print('released')\n'done'"
    first, elapsed = await timed(session.call_tool("eval", {"cells": [{"code": code, "timeout": 600}], "wait": 2}))
    assert elapsed >= 1.5, elapsed  # the server waited its whole wait
    assert not first.is_error, text_of(first)
    run = first.structured_content["run"]
    assert run.startswith("run://") and first.structured_content["running"], first.structured_content
    assert run in text_of(first), text_of(first)
    assert "training started" in await read_until(session, first, "training started")

    messages = []

    async def on_progress(progress, total, message):
        messages.append(message)

    # Nothing finishes: the wait blocks for its whole length on the server and brings nothing old back.
    quiet, elapsed = await timed(session.call_tool("eval_wait", {"run": run, "wait": 1.5}, progress_callback=on_progress))
    assert elapsed >= 1.4, elapsed
    assert quiet.structured_content["running"] and "training started" not in text_of(quiet), text_of(quiet)

    async def open_the_gate():
        await anyio.sleep(1)
        release("go")

    async with anyio.create_task_group() as group:
        group.start_soon(open_the_gate)
        done, elapsed = await timed(session.call_tool("eval_wait", {"run": run, "wait": 120}))
    # Back when the run ended, not after the whole wait (the margin is the client's own work on a busy machine).
    assert elapsed < 60, elapsed
    assert not done.is_error and not done.structured_content["running"], text_of(done)
    assert text_of(done) == "released\n'done'\n", text_of(done)
    assert done.structured_content["cells"][0]["status"] == "ok"
    gone = await session.call_tool("eval_wait", {"run": run})
    assert gone.is_error and "no run" in text_of(gone), text_of(gone)
    print("wait ok:", run)


async def scenario_cancel(session, init):
    await session.call_tool("eval", {"cells": [{"code": "kept = 'still here'"}]})
    cells = [{"code": "import time\nprint('sleeping', flush=True)\ntime.sleep(60)", "timeout": 120}, {"code": "print('never')"}]
    first = await session.call_tool("eval", {"cells": cells, "wait": 1})
    run = first.structured_content["run"]
    # Cancelled once the cell runs (it printed), not after a guess at how long that takes.
    await read_until(session, first, "sleeping")
    # (Had the interrupt failed, the cell would end after its 60 s as ok, not cancelled.)
    cancelled = await session.call_tool("eval_cancel", {"run": run})
    assert cancelled.is_error, text_of(cancelled)
    statuses = [cell["status"] for cell in cancelled.structured_content["cells"]]
    assert statuses == ["cancelled", "skipped"], cancelled.structured_content
    assert "KeyboardInterrupt" in text_of(cancelled) and "never" not in text_of(cancelled), text_of(cancelled)
    after = await session.call_tool("eval", {"cells": [{"code": "kept"}]})
    assert text_of(after) == "'still here'\n", text_of(after)
    print("cancel ok")


async def scenario_queue(session, init):
    first = await session.call_tool("eval", {"cells": [{"code": gate("go") + "print('first')"}], "wait": 1})
    run = first.structured_content["run"]
    refused = await session.call_tool("eval", {"cells": [{"code": "'second'"}], "wait": 0})
    assert refused.is_error and "busy" in text_of(refused) and run in text_of(refused), text_of(refused)
    queued = await session.call_tool("eval", {"cells": [{"code": "'second'"}], "wait": 1})
    assert queued.structured_content["queued_behind"] == run, queued.structured_content
    assert "Queued behind " + run in text_of(queued), text_of(queued)
    listed = await session.call_tool("eval_sessions", {})
    default = listed.structured_content["sessions"][0]
    assert default["name"] == "default" and default["busy"] and default["run"] == run, listed.structured_content
    release("go")
    mine = await session.call_tool("eval_wait", {"run": queued.structured_content["run"], "wait": 30})
    text = text_of(mine)
    assert text.startswith("'second'\n") and "queued behind " + run in text, text
    earlier = await session.call_tool("eval_wait", {"run": run, "wait": 30})
    assert text_of(earlier) == "first\n", text_of(earlier)
    print("queue ok")


async def scenario_sessions(session, init):
    await session.call_tool("eval", {"cells": [{"code": "import os\nname = 'data'", "title": "load"}], "session": "data"})
    await session.call_tool("eval", {"cells": [{"code": "name = 'scratch'"}], "session": "scratch"})
    data = await session.call_tool("eval", {"cells": [{"code": "name"}], "session": "data"})
    scratch = await session.call_tool("eval", {"cells": [{"code": "name"}], "session": "scratch"})
    assert text_of(data) == "'data'\n" and text_of(scratch) == "'scratch'\n", (text_of(data), text_of(scratch))
    default = await session.call_tool("eval", {"cells": [{"code": "'name' in dir()"}]})
    assert text_of(default) == "False\n", text_of(default)
    pids = {}
    for name in ("data", "scratch"):
        result = await session.call_tool("eval", {"cells": [{"code": "import os; os.getpid()"}], "session": name})
        pids[name] = int(text_of(result))
    assert pids["data"] != pids["scratch"], pids
    listed = await session.call_tool("eval_sessions", {})
    sessions = {entry["name"]: entry for entry in listed.structured_content["sessions"]}
    assert set(sessions) == {"default", "data", "scratch"}, sessions
    entry = sessions["data"]
    assert entry["languages"] == ["python"] and not entry["busy"] and entry["resident_bytes"] > 0, entry
    assert entry["kernels"][0]["pid"] == pids["data"] and entry["kernels"][0]["cwd"], entry
    assert entry["started_unix"] > 0 and entry["last_cell"] == "import os; os.getpid()", entry
    assert "data: idle" in text_of(listed), text_of(listed)
    reset = await session.call_tool("eval_reset", {"session": "scratch"})
    assert "restarted" in text_of(reset), text_of(reset)
    gone = await session.call_tool("eval", {"cells": [{"code": "'name' in dir()"}], "session": "scratch"})
    kept = await session.call_tool("eval", {"cells": [{"code": "name"}], "session": "data"})
    assert text_of(gone) == "False\n" and text_of(kept) == "'data'\n", (text_of(gone), text_of(kept))
    bad = await session.call_tool("eval", {"cells": [{"code": "1"}], "session": "../x"})
    assert bad.is_error and "session must be" in text_of(bad), text_of(bad)
    print("sessions ok")


async def scenario_fork(session, init):
    tools = {tool.name: tool for tool in (await session.list_tools()).tools}
    fork_tool = tools["eval_fork"]
    assert fork_tool.annotations.destructive_hint is False and fork_tool.output_schema, fork_tool
    start = (
        "import threading, time\ndata = [1, 2]\n"
        "threading.Thread(target=time.sleep, args=(600,), name='bg', daemon=True).start()"
    )
    await session.call_tool("eval", {"cells": [{"code": start}]})
    forked = await session.call_tool("eval_fork", {"name": "branch"})
    assert not forked.is_error and "Forked" in text_of(forked), text_of(forked)
    details = forked.structured_content
    assert details["session"] == "branch" and details["source"] == "default", details
    assert details["lost_threads"] == ["bg"] and details["milliseconds"] > 0, details
    assert "required" not in fork_tool.output_schema or fork_tool.output_schema["required"] == ["text"], fork_tool
    assert text_of(forked) == details["text"], details
    changed = await session.call_tool("eval", {"cells": [{"code": "data.append(3); data"}], "session": "branch"})
    kept = await session.call_tool("eval", {"cells": [{"code": "data"}]})
    assert text_of(changed) == "[1, 2, 3]\n" and text_of(kept) == "[1, 2]\n", (text_of(changed), text_of(kept))
    listed = await session.call_tool("eval_sessions", {})
    sessions = {entry["name"]: entry for entry in listed.structured_content["sessions"]}
    assert "branch" in sessions and sessions["branch"]["languages"] == ["python"], sessions
    assert sessions["branch"]["kernels"][0]["pid"] != sessions["default"]["kernels"][0]["pid"], sessions
    again = await session.call_tool("eval_fork", {"name": "branch"})
    assert again.is_error and "already exists" in text_of(again), text_of(again)
    empty = await session.call_tool("eval_fork", {"session": "nothing", "name": "x"})
    assert empty.is_error and "no running Python kernel" in text_of(empty), text_of(empty)
    unnamed = await session.call_tool("eval_fork", {})
    assert unnamed.is_error and '"name" must name' in text_of(unnamed), text_of(unnamed)
    # A busy session: refused at once with wait false, copied after the cell with the default wait.
    busy = await session.call_tool("eval", {"cells": [{"code": gate("fork-gate") + "late = True"}], "session": "branch", "wait": 0})
    refused = await session.call_tool("eval_fork", {"session": "branch", "name": "b2", "wait": False})
    assert refused.is_error and "is running a cell" in text_of(refused), text_of(refused)
    release("fork-gate")
    waited = await session.call_tool("eval_fork", {"session": "branch", "name": "b2"})
    assert not waited.is_error, text_of(waited)
    late = await session.call_tool("eval", {"cells": [{"code": "late, data"}], "session": "b2"})
    assert text_of(late) == "(True, [1, 2, 3])\n", text_of(late)
    assert busy.structured_content["run"], busy.structured_content
    print("fork ok:", details["milliseconds"], "ms")


async def scenario_undo(session, init):
    tools = {tool.name: tool for tool in (await session.list_tools()).tools}
    assert "checkpoint" in tools["eval"].input_schema["properties"], tools["eval"].input_schema
    assert tools["eval_undo"].annotations.destructive_hint is True, tools["eval_undo"]
    off = await session.call_tool("eval_undo", {})
    assert off.is_error and "checkpoints are off" in text_of(off), text_of(off)
    await session.call_tool("eval", {"cells": [{"code": "rows = [1, 2, 3]"}], "checkpoint": True})
    await session.call_tool("eval", {"cells": [{"code": "rows.clear()"}], "checkpoint": True})
    crash = await session.call_tool("eval", {"cells": [{"code": "import os; os.kill(os.getpid(), 9)"}], "checkpoint": True})
    assert crash.is_error, text_of(crash)
    undone = await session.call_tool("eval_undo", {"steps": 2})
    assert not undone.is_error and undone.structured_content["steps"] == 2, text_of(undone)
    assert undone.structured_content["left"] == 0, undone.structured_content
    back = await session.call_tool("eval", {"cells": [{"code": "rows"}]})
    assert text_of(back) == "[1, 2, 3]\n", text_of(back)
    too_far = await session.call_tool("eval_undo", {"steps": 5})
    assert too_far.is_error and "checkpoint" in text_of(too_far), text_of(too_far)
    print("undo ok")


async def scenario_snapshot(session, init):
    code = "def greet(name):\n    return 'hi ' + name\nnumbers = [1, 2]\nstream = (n for n in numbers)"
    await session.call_tool("eval", {"cells": [{"code": code}, {"code": "%precision 2"}], "session": "src"})
    saved = await session.call_tool("eval_snapshot", {"session": "src", "path": "state.cellbox"})
    assert not saved.is_error, text_of(saved)
    details = saved.structured_content
    assert set(details["names"]) == {"greet", "numbers"} and details["bytes"] > 0, details
    assert details["left_out"][0]["name"] == "stream" and "generator" in details["left_out"][0]["reason"], details
    assert "Not saved: stream" in text_of(saved), text_of(saved)
    restored = await session.call_tool("eval_restore", {"session": "dst", "path": "state.cellbox"})
    assert not restored.is_error and set(restored.structured_content["names"]) == {"greet", "numbers"}, text_of(restored)
    assert "Settings replayed: %precision 2." in text_of(restored), text_of(restored)
    assert restored.structured_content["settings"] == ["%precision 2"], restored.structured_content
    used = await session.call_tool("eval", {"cells": [{"code": "greet('x'), numbers, 1/3"}], "session": "dst"})
    assert text_of(used) == "('hi x', [1, 2], 0.33)\n", text_of(used)
    with open(os.path.join(CWD, "state.cellbox"), "r+b") as handle:
        handle.truncate(os.path.getsize(handle.name) - 5)
    broken = await session.call_tool("eval_restore", {"session": "dst", "path": "state.cellbox"})
    assert broken.is_error and "truncated" in text_of(broken), text_of(broken)
    print("snapshot ok")


async def scenario_silent_progress(session, init):
    """A cell silent for 12 s still gets progress notifications at least every 10 s."""
    stamps = []
    started = time.monotonic()

    async def on_progress(progress, total, message):
        stamps.append((time.monotonic() - started, message))

    code = "import time\ntime.sleep(12)\n'awake'"
    result = await session.call_tool("eval", {"cells": [{"code": code}]}, progress_callback=on_progress)
    assert text_of(result) == "'awake'\n", text_of(result)
    # Gaps between notifications only: the call's own end also includes the client's work on the result
    # (it validates it against the tool's schema), which a busy machine can stretch by seconds.
    times = [0.0] + [stamp for stamp, _ in stamps]
    gaps = [later - earlier for earlier, later in zip(times, times[1:])]
    assert max(gaps) <= 10 and times[-1] >= 12 - 10, stamps
    assert any("still running" in (message or "") for _, message in stamps), stamps
    print("silent progress ok:", stamps)


SCENARIOS = {name[len("scenario_"):]: fn for name, fn in globals().items() if name.startswith("scenario_")}


async def main():
    params = StdioServerParameters(command=BINARY, args=["mcp", "--cwd", CWD], env=dict(os.environ))
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            await SCENARIOS[SCENARIO](session, init)


anyio.run(main)
