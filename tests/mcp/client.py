"""Drive `cellbox mcp` with the official Python MCP client, one scenario per run.

Usage: client.py CELLBOX_BINARY CWD SCENARIO
CELLBOX_BINARY is a path, or else a command line split like a shell would
(`"uvx --offline --from ./cellbox.whl cellbox"`); `mcp --cwd CWD` is appended.
Prints what it checked; any failed check raises, so the exit status says it all.
"""
import os
import shlex
import sys

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from cancelling import cancel_a_running_call

BINARY, CWD, SCENARIO = sys.argv[1], sys.argv[2], sys.argv[3]


def text_of(result):
    return "".join(block.text for block in result.content if block.type == "text")


async def call(session, cells, **extra):
    arguments = {"cells": cells}
    arguments.update(extra)
    return await session.call_tool("eval", arguments)


async def scenario_tools(session, init):
    assert "persistent kernel" in (init.instructions or ""), init.instructions
    tools = {tool.name: tool for tool in (await session.list_tools()).tools}
    assert set(tools) == {"eval", "eval_reset", "eval_export_notebook", "eval_wait", "eval_cancel", "eval_sessions", "eval_fork", "eval_undo", "eval_snapshot", "eval_restore"}, tools
    assert "path" in tools["eval_export_notebook"].input_schema["properties"]
    schema = tools["eval"].input_schema
    assert "cells" in schema["properties"], schema
    assert "magics" in tools["eval"].description
    # Annotations as the tools behave: eval runs any code (may reach the network, not idempotent);
    # a reset repeated changes nothing more; every tool keeps its title.
    hints = {name: tool.annotations for name, tool in tools.items()}
    assert all(tool.title and hints[name] and hints[name].title == tool.title for name, tool in tools.items()), hints
    changing = ("eval", "eval_reset", "eval_export_notebook", "eval_cancel")
    assert all(hints[n].read_only_hint is False and hints[n].destructive_hint is True for n in changing), hints
    assert hints["eval_sessions"].read_only_hint is True and hints["eval_sessions"].idempotent_hint is True, hints
    assert hints["eval_wait"].destructive_hint is False and hints["eval_wait"].idempotent_hint is False, hints
    assert hints["eval"].open_world_hint is True and hints["eval"].idempotent_hint is False, hints["eval"]
    assert hints["eval_reset"].idempotent_hint is True and hints["eval_reset"].open_world_hint is False, hints
    assert tools["eval"].meta["anthropic/maxResultSizeChars"] >= 50000, tools["eval"].meta
    print("tools ok:", sorted(tools))


async def scenario_state(session, init):
    first = await call(session, [{"code": "counter = 41"}])
    assert not first.is_error, text_of(first)
    second = await call(session, [{"code": "counter + 1"}])
    assert text_of(second) == "42\n", text_of(second)
    cells = second.structured_content["cells"]
    assert cells[0]["status"] == "ok" and cells[0]["execution_count"] == 2, cells
    reset = await session.call_tool("eval_reset", {})
    assert "restarted" in text_of(reset), text_of(reset)
    after = await call(session, [{"code": "'counter' in dir()"}])
    assert text_of(after) == "False\n", text_of(after)
    print("state ok")


async def scenario_error(session, init):
    result = await call(session, [{"code": "x = 1", "title": "ok"}, {"code": "1/0", "title": "boom"}, {"code": "2"}])
    assert result.is_error
    text = text_of(result)
    assert "ZeroDivisionError" in text and "Cell 2 (boom) failed" in text, text
    statuses = [cell["status"] for cell in result.structured_content["cells"]]
    assert statuses == ["ok", "error", "skipped"], statuses
    bad = await session.call_tool("eval", {"cells": [{"cod": "1"}]})
    assert bad.is_error and "cod" in text_of(bad), text_of(bad)
    print("error ok")


async def scenario_check(session, init):
    tools = await session.list_tools()
    schema = [tool for tool in tools.tools if tool.name == "eval"][0].input_schema
    assert "check" in schema["properties"], schema["properties"].keys()
    cells = [{"code": "checked = 1"}, {"code": "y = (\n"}, {"code": "print('unseen')"}]
    result = await call(session, cells, check="syntax")
    assert result.is_error
    text = text_of(result)
    assert "Cell 2, line 1" in text and "^" in text and "unseen" not in text, text
    statuses = [cell["status"] for cell in result.structured_content["cells"]]
    assert statuses == ["skipped", "error", "skipped"], statuses
    after = await call(session, [{"code": "'checked' in dir()"}])
    assert text_of(after).strip() == "False", text_of(after)
    linted = await call(session, [{"code": "import os\nprint('ran')"}], check="lint")
    assert not linted.is_error, text_of(linted)
    notes = linted.structured_content["notes"]
    assert "ran" in text_of(linted) and any("F401" in note for note in notes), notes
    print("check ok")


async def scenario_plot(session, init):
    code = "import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.title('cellbox')"
    result = await call(session, [{"code": code}])
    assert not result.is_error, text_of(result)
    images = [block for block in result.content if block.type == "image"]
    assert len(images) == 1, result.content
    assert images[0].mime_type == "image/png"
    import base64

    assert base64.b64decode(images[0].data)[:8] == b"\x89PNG\r\n\x1a\n"
    print("plot ok:", len(images[0].data), "base64 bytes")


async def scenario_artifact(session, init):
    result = await call(session, [{"code": "for i in range(100000): print('line', i)"}])
    text = text_of(result)
    assert "elided; full output: artifact://" in text, text[:500]
    assert len(text) < 60 * 1024
    uri = result.structured_content["artifact"]
    listed = [str(r.uri) for r in (await session.list_resources()).resources]
    assert uri in listed, listed
    page = await session.read_resource(uri)
    body = page.contents[0].text
    assert body.startswith("line 0\nline 1\n"), body[:100]
    assert "more bytes; read " + uri + "?offset=" in body[-200:], body[-200:]
    offset = body.rsplit("?offset=", 1)[1].split()[0]
    rest = await session.read_resource(uri + "?offset=" + offset)
    assert rest.contents[0].text.endswith("line 99999\n"), rest.contents[0].text[-100:]
    print("artifact ok:", uri)


async def scenario_progress(session, init):
    messages = []

    async def on_progress(progress, total, message):
        messages.append(message)

    code = "import time\nfor step in range(6):\n    print('step', step, flush=True)\n    time.sleep(0.3)"
    result = await session.call_tool("eval", {"cells": [{"code": code}]}, progress_callback=on_progress)
    assert not result.is_error, text_of(result)
    steps = [m for m in messages if m and m.startswith("step ")]
    assert len(steps) >= 3, messages
    print("progress ok:", messages)


async def scenario_cancel(session, init):
    result = await cancel_a_running_call(session)
    assert not result.is_error, text_of(result)
    assert text_of(result) == "'still here'\n", text_of(result)
    print("cancel ok")


async def scenario_close(session, init):
    result = await call(session, [{"code": "import os, subprocess\np = subprocess.Popen(['sleep', '60'])\nos.getpid()"}])
    pid = int(text_of(result).strip())
    with open(os.path.join(CWD, "kernel.pid"), "w") as handle:
        handle.write(str(pid))
    print("close: kernel pid", pid)


async def scenario_notebook(session, init):
    import json

    import nbformat

    empty = await session.call_tool("eval_export_notebook", {})
    assert empty.is_error and "has not run any cell" in text_of(empty), text_of(empty)
    await call(session, [{"code": "x = 40"}, {"code": "print('x is', x)\nx + 2"}])
    await session.call_tool("eval_reset", {})
    await call(session, [{"code": "import matplotlib.pyplot as plt\nplt.plot([1, 2]);"}])
    returned = await session.call_tool("eval_export_notebook", {})
    assert not returned.is_error, text_of(returned)
    notebook = nbformat.reads(text_of(returned), as_version=4)
    nbformat.validate(notebook)
    sources = [cell.source for cell in notebook.cells]
    assert sources == ["x = 40", "print('x is', x)\nx + 2", "import matplotlib.pyplot as plt\nplt.plot([1, 2]);"], sources
    assert [cell.execution_count for cell in notebook.cells] == [1, 2, 1]
    outputs = notebook.cells[1].outputs
    assert outputs[0].output_type == "stream" and outputs[0].text == "x is 40\n", outputs
    assert outputs[1].output_type == "execute_result" and outputs[1].data["text/plain"] == "42", outputs
    assert "image/png" in notebook.cells[2].outputs[-1].data
    saved = await session.call_tool("eval_export_notebook", {"path": "session.ipynb"})
    assert not saved.is_error and "Saved 3 cell(s)" in text_of(saved), text_of(saved)
    path = os.path.join(CWD, "session.ipynb")
    nbformat.validate(nbformat.read(path, as_version=4))
    with open(path) as handle:
        assert json.load(handle)["nbformat_minor"] == 5
    bad = await session.call_tool("eval_export_notebook", {"path": 3})
    assert bad.is_error and "path must be" in text_of(bad), text_of(bad)
    print("notebook ok")


async def scenario_javascript(session, init):
    assert "JavaScript" in (init.instructions or ""), init.instructions
    tools = {tool.name: tool for tool in (await session.list_tools()).tools}
    languages = tools["eval"].input_schema["$defs"]["Language"]
    assert "js" in str(languages) and "py" in str(languages), languages
    result = await call(
        session, [{"code": "x = 'from py'", "language": "py"}, {"code": "const y = [1, 2].map((n) => n * 2); y", "language": "js"}]
    )
    assert not result.is_error, text_of(result)
    assert "[ 2, 4 ]" in text_of(result), text_of(result)
    again = await call(session, [{"code": "y.length", "language": "js"}, {"code": "x", "language": "py"}])
    assert "2\n" in text_of(again) and "'from py'" in text_of(again), text_of(again)
    print("javascript ok")


async def scenario_javascript_only(session, init):
    tools = {tool.name: tool for tool in (await session.list_tools()).tools}
    languages = tools["eval"].input_schema["$defs"]["Language"]
    # The language values offered (descriptions may mention Jupyter, which spells "py").
    assert "'py'" not in str(languages) and "'js'" in str(languages), languages
    assert "Python is not available" in tools["eval"].description, tools["eval"].description
    result = await call(session, [{"code": "typeof require"}])
    assert text_of(result) == "'function'\n", text_of(result)
    print("javascript only ok")


async def scenario_one_plus_one(session, init):
    tools = {tool.name for tool in (await session.list_tools()).tools}
    assert "eval" in tools, tools
    result = await call(session, [{"code": "1 + 1"}])
    assert not result.is_error and text_of(result) == "2\n", text_of(result)
    print("one plus one ok")


async def scenario_schemas(session, init):
    """Every tool's real results, successes and errors, validate against the tool's declared
    outputSchema, and carry the model-facing text (and image references) in structuredContent too."""
    import jsonschema

    tools = {tool.name: tool for tool in (await session.list_tools()).tools}
    assert all(tool.output_schema for tool in tools.values()), [t.name for t in tools.values() if not t.output_schema]
    checked = {}

    def check(name, result):
        jsonschema.validate(result.structured_content, tools[name].output_schema)
        assert result.structured_content["text"] == text_of(result), (name, result.structured_content, text_of(result))
        images = [index for index, block in enumerate(result.content) if block.type == "image"]
        refs = [image["content_index"] for image in result.structured_content.get("images", [])]
        assert refs == images, (name, refs, images)
        checked.setdefault(name, set()).add("error" if result.is_error else "ok")
        return result

    check("eval", await call(session, [{"code": "print('hello from cellbox')\n6 * 7"}]))
    check("eval", await call(session, [{"code": "1/0"}]))
    check("eval", await call(session, [{"cod": "1"}]))
    plot = check("eval", await call(session, [{"code": "import matplotlib.pyplot as plt\nplt.plot([1, 2]);"}]))
    assert plot.structured_content["images"][0]["mime_type"] == "image/png", plot.structured_content
    long = check("eval", await call(session, [{"code": "for i in range(20000): print(i)"}]))
    assert "artifact://" in long.structured_content["text"] and long.structured_content["truncated"], long.structured_content
    running = check("eval", await call(session, [{"code": "import time; print('started'); time.sleep(30)"}], wait=0.5))
    run = running.structured_content["run"]
    assert running.structured_content["running"] is True, running.structured_content
    # Cancelled once the cell runs (it printed), not after a guess at how long that takes.
    seen = running.structured_content["text"]
    for _ in range(300):
        if "started" in seen:
            break
        seen += check("eval_wait", await session.call_tool("eval_wait", {"run": run, "wait": 0.2})).structured_content["text"]
    assert "started" in seen, seen
    check("eval_wait", await session.call_tool("eval_wait", {"run": run, "wait": 0.2}))
    cancelled = check("eval_cancel", await session.call_tool("eval_cancel", {"run": run}))
    # A cancelled run ends in error (its cell was interrupted), with its output so far.
    assert cancelled.is_error and "started" in cancelled.structured_content["text"], cancelled.structured_content
    check("eval_wait", await session.call_tool("eval_wait", {"run": "run://no-such-run"}))
    check("eval_cancel", await session.call_tool("eval_cancel", {"run": "run://no-such-run"}))
    check("eval_sessions", await session.call_tool("eval_sessions", {}))
    check("eval_fork", await session.call_tool("eval_fork", {"name": "schema-branch"}))
    check("eval_fork", await session.call_tool("eval_fork", {"name": "../bad"}))
    check("eval", await call(session, [{"code": "undo_me = 1"}], checkpoint=True))
    check("eval_undo", await session.call_tool("eval_undo", {}))
    check("eval_undo", await session.call_tool("eval_undo", {"steps": 0}))
    check("eval_snapshot", await session.call_tool("eval_snapshot", {"path": "s.cellbox"}))
    check("eval_snapshot", await session.call_tool("eval_snapshot", {}))
    check("eval_restore", await session.call_tool("eval_restore", {"path": "s.cellbox", "session": "restored"}))
    check("eval_restore", await session.call_tool("eval_restore", {"path": "no-such.cellbox"}))
    check("eval_export_notebook", await session.call_tool("eval_export_notebook", {}))
    check("eval_export_notebook", await session.call_tool("eval_export_notebook", {"path": "s.ipynb"}))
    check("eval_export_notebook", await session.call_tool("eval_export_notebook", {"path": 3}))
    check("eval_reset", await session.call_tool("eval_reset", {}))
    check("eval_reset", await session.call_tool("eval_reset", {"session": "no spaces allowed?"}))
    assert set(checked) == set(tools), (checked, set(tools))
    both = [name for name in checked if name not in ("eval_sessions", "eval_cancel")]
    assert all(checked[name] == {"ok", "error"} for name in both), checked
    print("schemas ok:", {name: sorted(kinds) for name, kinds in sorted(checked.items())})


SCENARIOS = {name[len("scenario_"):]: fn for name, fn in globals().items() if name.startswith("scenario_")}


async def main():
    command, *prefix = [BINARY] if os.path.exists(BINARY) else shlex.split(BINARY)
    params = StdioServerParameters(command=command, args=prefix + ["mcp", "--cwd", CWD], env=dict(os.environ))
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            await SCENARIOS[SCENARIO](session, init)


anyio.run(main)
