"""E2B's official Python SDKs (`e2b`, `e2b_code_interpreter`), unmodified, against `cellbox serve`.

Usage: e2b_client.py URL API_KEY SCENARIO. The SDKs get only E2B_API_URL, E2B_SANDBOX_URL and
E2B_API_KEY. Prints one JSON object of what the scenario saw; tests/it/e2b.rs checks it.
"""

import json
import os
import sys
import threading
import time


def main():
    url, key, scenario = sys.argv[1:4]
    os.environ.update(E2B_API_URL=url, E2B_SANDBOX_URL=url, E2B_API_KEY=key)
    os.environ.pop("E2B_DEBUG", None)
    print(json.dumps(SCENARIOS[scenario]()))


def code_interpreter():
    from e2b_code_interpreter import Sandbox

    seen = {}
    started = time.perf_counter()
    sandbox = Sandbox.create(envs={"GREETING": "hello"}, metadata={"purpose": "test"})
    first = sandbox.run_code("1 + 1")
    seen["time_to_interactive_ms"] = (time.perf_counter() - started) * 1000
    seen["first"] = first.text
    streamed = []
    execution = sandbox.run_code(
        "import os\nfor i in range(3): print(i)\nos.environ['GREETING']",
        on_stdout=lambda message: streamed.append(message.line),
    )
    seen["streamed"] = streamed
    seen["env"] = execution.text
    seen["per_call_env"] = sandbox.run_code("import os; os.environ.get('ONLY_HERE')", envs={"ONLY_HERE": "yes"}).text
    seen["per_call_env_after"] = sandbox.run_code("import os; os.environ.get('ONLY_HERE')").text
    # An indented cell, as code in a triple-quoted string is.
    seen["indented"] = sandbox.run_code("\n    x = 40\n    x + 2\n    ").text
    chart = sandbox.run_code(
        "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3], [1, 4, 9])\nplt.title('squares')\nplt.show()"
    )
    seen["chart_formats"] = [result.formats() for result in chart.results]
    seen["chart_type"] = chart.results[0].chart.type if chart.results and chart.results[0].chart else None
    error = sandbox.run_code("1 / 0")
    seen["error"] = [error.error.name, error.error.value] if error.error else None
    context = sandbox.create_code_context(cwd="/home/user")
    sandbox.run_code("y = 7", context=context)
    seen["context_state"] = sandbox.run_code("y * 6", context=context).text
    seen["context_cwd"] = context.cwd
    # Code finds its folder where E2B's does: the kernel, the shell, a context's kernel and JS.
    seen["kernel_cwd"] = sandbox.run_code("import os; os.getcwd() + ' ' + os.environ['HOME']").text
    seen["context_kernel_cwd"] = sandbox.run_code("import os; os.getcwd()", context=context).text
    seen["shell_pwd"] = sandbox.commands.run("pwd; echo $HOME").stdout
    seen["js_cwd"] = sandbox.run_code("process.cwd()", language="js").text
    seen["contexts"] = sorted(c.id for c in sandbox.list_code_contexts())
    seen["js"] = sandbox.run_code("[1, 2, 3].map(x => x * 2).join(',')", language="js").text
    seen["listed"] = [info.sandbox_id for info in Sandbox.list(query=None).next_items()]
    seen["sandbox_id"] = sandbox.sandbox_id
    info = sandbox.get_info()
    seen["metadata"] = info.metadata
    sandbox.set_timeout(120)
    seen["end_after_timeout_s"] = round((sandbox.get_info().end_at - info.started_at).total_seconds())
    seen["killed"] = sandbox.kill()
    seen["running_after_kill"] = sandbox.is_running()
    return seen


def files_and_commands():
    from e2b import Sandbox

    import httpx

    seen = {}
    sandbox = Sandbox.create(envs={"FROM_SANDBOX": "sbx"})
    sandbox.files.write("notes/a.txt", "alpha")
    seen["read"] = sandbox.files.read("/home/user/notes/a.txt")
    seen["written_many"] = [w.path for w in sandbox.files.write_files([
        {"path": "b.bin", "data": b"\x00\x01\x02"},
        {"path": "notes/c.txt", "data": "gamma"},
    ])]
    seen["bytes"] = list(sandbox.files.read("b.bin", format="bytes"))
    seen["list"] = sorted(e.name for e in sandbox.files.list("notes"))
    seen["exists"] = [sandbox.files.exists("notes/a.txt"), sandbox.files.exists("nope.txt")]
    seen["make_dir"] = [sandbox.files.make_dir("d"), sandbox.files.make_dir("d")]
    seen["renamed"] = sandbox.files.rename("notes/a.txt", "d/a.txt").path
    info = sandbox.files.get_info("d/a.txt")
    seen["info"] = [info.name, info.type.value, info.size, info.path]
    try:
        sandbox.files.read("missing.txt")
        seen["missing"] = "read"
    except Exception as error:  # the SDK's FileNotFoundException
        seen["missing"] = type(error).__name__
    seen["signed_download"] = httpx.get(sandbox.download_url("d/a.txt")).text
    upload = httpx.post(sandbox.upload_url("up.txt"), files={"file": ("up.txt", b"uploaded")})
    seen["signed_upload"] = [upload.status_code, sandbox.files.read("up.txt")]
    forged = sandbox.download_url("d/a.txt").replace("signature=v1_", "signature=v1_x")
    seen["forged_download"] = httpx.get(forged).status_code
    big = "0123456789" * 900_000
    sandbox.files.write("big.txt", big)
    seen["big_round_trip"] = sandbox.files.read("big.txt") == big

    watcher = sandbox.files.watch_dir("/home/user")
    sandbox.files.write("watched.txt", "w")
    events = []
    deadline = time.monotonic() + 20
    while not any(e.name == "watched.txt" for e in events) and time.monotonic() < deadline:
        events.extend(watcher.get_new_events())
    watcher.stop()
    seen["watched"] = any(e.name == "watched.txt" for e in events)

    result = sandbox.commands.run("echo out; echo err >&2; echo $FROM_SANDBOX $FROM_CALL", envs={"FROM_CALL": "call"})
    seen["run"] = [result.stdout, result.stderr, result.exit_code]
    seen["cwd_run"] = sandbox.commands.run("ls", cwd="/home/user/d").stdout
    try:
        sandbox.commands.run("exit 3")
        seen["exit"] = None
    except Exception as error:  # CommandExitException
        seen["exit"] = getattr(error, "exit_code", None)
    background = sandbox.commands.run("sleep 600", background=True)
    seen["listed_pids"] = background.pid in [p.pid for p in sandbox.commands.list()]
    seen["killed"] = background.kill()
    waited = sandbox.commands.run("read line; echo got:$line", background=True, stdin=True)
    sandbox.commands.send_stdin(waited.pid, "hi\n")
    seen["stdin"] = waited.wait().stdout
    chunks = []
    sandbox.commands.run("for i in 1 2 3; do echo line$i; done", on_stdout=chunks.append)
    seen["streamed"] = "".join(chunks)
    # What a process writes is where a kernel may write: the sandbox's folder, not beside it.
    outside = sandbox.commands.run("touch ../escape-marker 2>&1; echo status:$?", cwd="/home/user").stdout
    seen["outside_write"] = outside
    seen["killed_sandbox"] = sandbox.kill()
    return seen


def interrupt_on_disconnect():
    from e2b_code_interpreter import Sandbox

    seen = {}
    sandbox = Sandbox.create()
    sandbox.run_code("kept = 'state'")
    try:
        sandbox.run_code("import time; time.sleep(600)", timeout=2)
        seen["first"] = "finished"
    except Exception as error:  # TimeoutException: the client gave up and closed the request
        seen["first"] = type(error).__name__
    started = time.monotonic()
    seen["after"] = sandbox.run_code("kept", timeout=60).text
    seen["after_s"] = time.monotonic() - started
    sandbox.kill()
    return seen


def killed_during_cell():
    from e2b_code_interpreter import Sandbox

    sandbox = Sandbox.create()
    outcome = {}

    def run():
        try:
            sandbox.run_code("import time; time.sleep(600)", timeout=120)
            outcome["cell"] = "finished"
        except Exception as error:
            outcome["cell"] = type(error).__name__

    thread = threading.Thread(target=run)
    thread.start()
    time.sleep(1)
    outcome["killed"] = sandbox.kill()
    thread.join(60)
    outcome["thread_done"] = not thread.is_alive()
    return outcome


SCENARIOS = {
    "code_interpreter": code_interpreter,
    "files_and_commands": files_and_commands,
    "interrupt_on_disconnect": interrupt_on_disconnect,
    "killed_during_cell": killed_during_cell,
}

if __name__ == "__main__":
    main()
