"""The SDK against the real engine: `cellbox sdk-server` from target/debug
(scripts/test puts it first on PATH) and real kernels on the test
interpreter (CELLBOX_TEST_PYTHON), with pandas and matplotlib.

Run as `python -m unittest discover -s tests/sdk` from the repository root.
"""
import gc
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))

from cellbox import (  # noqa: E402
    ALL_TRAFFIC,
    Execution,
    InvalidArgumentException,
    NotFoundException,
    Sandbox,
    SandboxException,
    SandboxNetworkOpts,
    SandboxNotRunningException,
    TimeoutException,
)

PYTHON = os.environ.get("CELLBOX_TEST_PYTHON", sys.executable)
#: The folder the sandboxes work in (their kernels may write only there).
WORK = ""


def setUpModule():
    global WORK
    WORK = tempfile.mkdtemp(prefix="cellbox-sdk-test-")


def tearDownModule():
    shutil.rmtree(WORK, ignore_errors=True)


def new_sandbox(**options):
    options.setdefault("python", PYTHON)
    return Sandbox(cwd=WORK, **options)


def sandbox(test, **options):
    box = new_sandbox(**options)
    test.addCleanup(box.kill)
    return box


class SharedSandbox(unittest.TestCase):
    """Tests that share one sandbox (each starts kernels: sharing keeps the suite quick)."""

    @classmethod
    def setUpClass(cls):
        cls.box = new_sandbox()

    @classmethod
    def tearDownClass(cls):
        cls.box.kill()


class RunCodeTests(SharedSandbox):
    def test_the_last_expression_is_the_main_result(self):
        execution = self.box.run_code("x = 40\nx + 2")
        self.assertIsInstance(execution, Execution)
        self.assertEqual(execution.text, "42")
        self.assertTrue(execution.results[0].is_main_result)
        self.assertIsNone(execution.error)
        self.assertIsInstance(execution.execution_count, int)

    def test_a_list_or_dict_value_is_json_too(self):
        self.assertEqual(self.box.run_code("{'a': [1, None]}").results[0].json, {"a": [1, None]})
        self.assertEqual(self.box.run_code("['x', 2.5]").results[0].json, ["x", 2.5])
        # What JSON cannot hold exactly is text only.
        result = self.box.run_code("{(1, 2): 3}").results[0]
        self.assertIsNone(result.json)
        self.assertEqual(result.text, "{(1, 2): 3}")

    def test_state_is_kept_between_calls(self):
        self.box.run_code("kept = [1, 2]")
        self.assertEqual(self.box.run_code("len(kept)").text, "2")

    def test_logs_hold_the_chunks_and_callbacks_stream_them(self):
        seen = []
        execution = self.box.run_code(
            "import sys\nprint('out')\nprint('err', file=sys.stderr)",
            on_stdout=lambda m: seen.append(("out", m.line, m.error)),
            on_stderr=lambda m: seen.append(("err", m.line, m.error)),
        )
        self.assertEqual(execution.logs.stdout, ["out\n"])
        self.assertEqual(execution.logs.stderr, ["err\n"])
        # stdout and stderr are two streams: their relative order is not promised (as in Jupyter).
        self.assertEqual(sorted(seen), [("err", "err\n", True), ("out", "out\n", False)])

    def test_an_error_in_the_code_is_returned_not_raised(self):
        errors = []
        execution = self.box.run_code("1/0", on_error=errors.append)
        self.assertEqual(execution.error.name, "ZeroDivisionError")
        self.assertEqual(execution.error.value, "division by zero")
        self.assertIn("ZeroDivisionError", execution.error.traceback)
        self.assertEqual(errors, [execution.error])

    def test_envs_hold_for_one_call_only(self):
        self.assertEqual(self.box.run_code("import os; os.environ.get('SDK_ONCE')", envs={"SDK_ONCE": "yes"}).text, "yes")
        self.assertEqual(self.box.run_code("import os; repr(os.environ.get('SDK_ONCE'))").text, "None")

    def test_bash_and_javascript_run_in_their_own_kernels(self):
        self.assertEqual(self.box.run_code("echo from-bash", language="bash").logs.stdout, ["from-bash\n"])
        self.assertEqual(self.box.run_code("[1, 2].map((n) => n * 2).join(',')", language="js").text, "2,4")
        # Every supported Node runs TypeScript (before 22.13 with the runner's own stripper).
        self.assertEqual(self.box.run_code("const n: number = 3; n * 2", language="ts").text, "6")

    def test_a_figure_is_a_png_result_and_a_dataframe_has_html(self):
        figure = self.box.run_code("import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.show()")
        self.assertTrue(any(result.png for result in figure.results), figure)
        frame = self.box.run_code("import pandas as pd\npd.DataFrame({'a': [1, 2]})")
        self.assertIn("<table", frame.results[0].html)
        self.assertEqual(frame.results[0].data, {"a": [1, 2]})
        self.assertIn("data", frame.results[0].formats())

    def test_a_figure_carries_its_chart(self):
        figure = self.box.run_code(
            "import matplotlib.pyplot as plt\nplt.bar(['a', 'b'], [3, 5])\nplt.title('Counts')\nplt.show()"
        )
        chart = next(result.chart for result in figure.results if result.chart)
        self.assertEqual((chart.type.value, chart.title), ("bar", "Counts"))
        self.assertEqual([(bar.label, bar.value) for bar in chart.elements], [("a", 3), ("b", 5)])

    def test_a_clamped_call_names_its_artifact_and_the_logs_hold_everything(self):
        execution = self.box.run_code("for i in range(20000): print(i)")
        self.assertEqual("".join(execution.logs.stdout).splitlines(), [str(i) for i in range(20000)])
        self.assertTrue(execution.artifact.startswith("artifact://"), execution.artifact)
        self.assertIsNone(self.box.run_code("1").artifact)

    def test_text_with_a_lone_surrogate_is_refused_and_the_sandbox_goes_on(self):
        # `json` would escape it and the engine refuse the line without knowing whose it was: the
        # caller waited for ever. With callbacks the call takes the other way through the transport.
        for callbacks in ({}, {"on_stdout": lambda line: None}):
            with self.assertRaisesRegex(InvalidArgumentException, "surrogate"):
                self.box.run_code("print('\ud800')", **callbacks)
        self.assertEqual(self.box.run_code("'é' + '1'").text, "é1")
        # A high and a low surrogate in a row are one character, as the JSON escapes say.
        self.assertEqual(self.box.run_code("print('\ud83d\ude00')").logs.stdout, ["\U0001f600\n"])

    def test_language_and_context_together_are_refused(self):
        context = self.box.create_code_context()
        with self.assertRaises(InvalidArgumentException):
            self.box.run_code("1", language="python", context=context)


class TimeoutTests(SharedSandbox):
    def test_a_timeout_raises_and_leaves_the_context_usable(self):
        box = self.box
        box.run_code("before = 1")
        with self.assertRaises(TimeoutException):
            box.run_code("import time\nwhile True: time.sleep(0.05)", timeout=1)
        self.assertEqual(box.run_code("before + 1").text, "2")

    def test_a_callback_that_raises_stops_the_call_and_the_context_goes_on(self):
        box = self.box

        def stop(_message):
            raise KeyboardInterrupt

        with self.assertRaises(KeyboardInterrupt):
            box.run_code("import time\nprint('go', flush=True)\nwhile True: time.sleep(0.05)", on_stdout=stop)
        self.assertEqual(box.run_code("'still here'").text, "still here")


class ContextTests(SharedSandbox):
    def test_contexts_keep_state_apart_and_list_in_creation_order(self):
        box = self.box
        names = [context.id for context in box.list_code_contexts()]
        self.assertEqual(names[:2], ["python", "javascript"])
        first, second = box.create_code_context(), box.create_code_context()
        self.assertEqual([c.id for c in box.list_code_contexts()][-2:], [first.id, second.id])
        box.run_code("value = 'first'", context=first)
        self.assertEqual(box.run_code("value", context=first).text, "first")
        self.assertEqual(box.run_code("value", context=second).error.name, "NameError")

    def test_restart_clears_state_and_remove_forgets_the_context(self):
        box = self.box
        context = box.create_code_context()
        box.run_code("gone = 1", context=context)
        box.restart_code_context(context)
        self.assertEqual(box.run_code("gone", context=context).error.name, "NameError")
        box.remove_code_context(context.id)
        self.assertNotIn(context.id, [c.id for c in box.list_code_contexts()])
        with self.assertRaises(NotFoundException):
            box.run_code("1", context=context)

    def test_a_named_context_is_reached_by_its_name(self):
        data = self.box.create_code_context(name="data")
        self.assertEqual(data.id, "data")
        self.box.run_code("rows = 3", context="data")
        self.assertEqual(self.box.run_code("rows", context=data).text, "3")
        self.assertEqual(self.box.create_code_context(name="data"), data)
        with self.assertRaisesRegex(InvalidArgumentException, "exists for python"):
            self.box.create_code_context(language="javascript", name="data")
        with self.assertRaisesRegex(InvalidArgumentException, "letters, digits"):
            self.box.create_code_context(name="no spaces")
        self.box.remove_code_context("data")
        with self.assertRaises(NotFoundException):
            self.box.run_code("rows", context="data")

    def test_a_context_runs_in_its_folder(self):
        os.makedirs(os.path.join(WORK, "sub"), exist_ok=True)
        context = self.box.create_code_context(cwd="sub")
        self.assertEqual(self.box.run_code("import os; os.getcwd()", context=context).text, os.path.join(WORK, "sub"))
        with self.assertRaises(InvalidArgumentException):
            self.box.create_code_context(cwd="no-such-folder")


class EngineOptionTests(unittest.TestCase):
    def test_preloaded_modules_are_imported_before_the_first_cell(self):
        box = sandbox(self, preload=["fractions"], spares=0)
        self.assertEqual(box.run_code("import sys; 'fractions' in sys.modules").text, "True")


class SandboxEnvsTests(unittest.TestCase):
    """`Sandbox(envs=...)`, as in E2B: the kernels' and commands' environment, in every context;
    a call's own `envs` add to it or override it for that call only."""

    def test_the_sandbox_s_envs_reach_every_kernel_and_command(self):
        box = sandbox(self, envs={"SDK_GREETING": "hello", "SDK_OTHER": "kept"})
        python = "import os; os.environ.get('SDK_GREETING')"
        self.assertEqual(box.run_code(python).text, "hello")
        self.assertEqual(box.run_code(python, context=box.create_code_context()).text, "hello")
        self.assertEqual(box.run_code("process.env.SDK_GREETING", language="js").text, "hello")
        self.assertEqual(box.run_code("echo $SDK_GREETING", language="bash").logs.stdout, ["hello\n"])
        self.assertEqual(box.commands.run("echo $SDK_GREETING $SDK_OTHER").stdout, "hello kept\n")
        self.assertEqual(box.commands.run("echo $SDK_GREETING", background=True).wait().stdout, "hello\n")
        self.assertNotIn("SDK_GREETING", os.environ, "this process's environment is left alone")

    def test_a_call_s_envs_override_the_sandbox_s_for_that_call_only(self):
        box = sandbox(self, envs={"SDK_GREETING": "hello"})
        python = "import os; '%s %s' % (os.environ.get('SDK_GREETING'), os.environ.get('SDK_ONCE'))"
        js = "`${process.env.SDK_GREETING} ${process.env.SDK_ONCE}`"
        once = {"SDK_GREETING": "bye", "SDK_ONCE": "yes"}
        self.assertEqual(box.run_code(python, envs=once).text, "bye yes")
        self.assertEqual(box.run_code(python).text, "hello None")
        self.assertEqual(box.run_code(js, language="js", envs=once).text, "bye yes")
        self.assertEqual(box.run_code(js, language="js").text, "hello undefined")
        command = 'echo "$SDK_GREETING ${SDK_ONCE-unset}"'
        self.assertEqual(box.commands.run(command, envs=once).stdout, "bye yes\n")
        self.assertEqual(box.commands.run(command).stdout, "hello unset\n")


class KernelPythonTests(unittest.TestCase):
    """The kernels' Python is the one that imported cellbox (`sys.executable`), so a program
    run as `venv/bin/python agent.py`, the venv not activated, has its packages in its cells."""

    MARKER = "cellbox_sdk_marker_%d" % os.getpid()
    CODE = "try:\n    import {0}\n    found = {0}.VALUE\nexcept ImportError:\n    found = 'missing'\nfound"

    @classmethod
    def setUpClass(cls):
        cls.folder = tempfile.mkdtemp(prefix="cellbox-sdk-venv-")
        venv = os.path.join(cls.folder, "env")
        subprocess.run([PYTHON, "-m", "venv", "--without-pip", venv], check=True, timeout=120)
        cls.venv_python = os.path.join(venv, "bin", "python")
        where = "import sysconfig; print(sysconfig.get_path('purelib'))"
        purelib = subprocess.run([cls.venv_python, "-c", where], capture_output=True, text=True, check=True).stdout
        with open(os.path.join(purelib.strip(), cls.MARKER + ".py"), "w") as module:
            module.write("VALUE = 'from-the-venv'\n")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.folder, ignore_errors=True)

    def found(self, cases, **env):
        """What `import MARKER` gives in the first cell of a sandbox made with each of `cases`
        (`sys.executable` first set to its "executable", if given), in a program run on the
        venv's Python: the venv neither activated nor on PATH."""
        program = "\n".join(
            [
                "import json, sys",
                "sys.path.insert(0, %r)" % os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"),
                "from cellbox import Sandbox",
                "found = {}",
                "for name, options in %r.items():" % (cases,),
                "    options = dict(options)",
                "    sys.executable = options.pop('executable', sys.executable)",
                "    try:",
                "        with Sandbox(cwd=%r, spares=0, **options) as box:" % WORK,
                "            found[name] = box.run_code(%r).text" % self.CODE.format(self.MARKER),
                "    except Exception as error:",
                "        found[name] = '%s: %s' % (type(error).__name__, str(error).splitlines()[0])",
                "print(json.dumps(found), flush=True)",
                # What is checked ends here: the program's exit is another matter (it has aborted
                # now and then with the in-process engine, whatever the interpreter).
                "import os; os._exit(0)",
            ]
        )
        environment = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "CONDA_PREFIX", "CELLBOX_PYTHON")}
        environment.update(env)
        self.assertNotIn(os.path.dirname(self.venv_python), environment.get("PATH", "").split(os.pathsep))
        done = subprocess.run(
            [self.venv_python, "-c", program], cwd=WORK, env=environment, capture_output=True, text=True, timeout=180
        )
        self.assertEqual(done.returncode, 0, done.stderr)
        return json.loads(done.stdout.splitlines()[-1])

    def test_kernels_run_on_the_caller_s_python_unless_told_otherwise(self):
        found = self.found(
            {
                "default": {},
                "discovered": {"python": "discover"},
                "named": {"python": PYTHON},
                "no sys.executable": {"executable": ""},
                "sys.executable not runnable": {"executable": os.path.join(WORK, "no-such-python")},
            }
        )
        self.assertEqual(
            found,
            {
                "default": "from-the-venv",
                "discovered": "missing",
                "named": "missing",
                "no sys.executable": "missing",
                "sys.executable not runnable": "missing",
            },
        )

    def test_cellbox_python_wins_over_the_caller_s_python_and_an_argument_over_both(self):
        found = self.found({"default": {}, "named": {"python": self.venv_python}}, CELLBOX_PYTHON=PYTHON)
        self.assertEqual(found, {"default": "missing", "named": "from-the-venv"})


class BadArgumentTests(unittest.TestCase):
    def test_a_missing_python_is_reported_when_the_sandbox_is_made(self):
        with self.assertRaises(SandboxException) as raised:
            new_sandbox(python=os.path.join(WORK, "no-such-python"))
        self.assertIn("no-such-python (does not exist)", str(raised.exception))

    def test_an_unknown_sandbox_policy_is_an_invalid_argument(self):
        with self.assertRaises(InvalidArgumentException) as raised:
            new_sandbox(sandbox="bogus")
        self.assertIn('unknown sandbox mode "bogus"', str(raised.exception))

    def test_bad_run_code_arguments_are_invalid_arguments(self):
        box = sandbox(self)
        for arguments in ({"language": "cobol"}, {"timeout": -1}):
            with self.subTest(arguments=arguments), self.assertRaises(InvalidArgumentException):
                box.run_code("1", **arguments)
        self.assertEqual(box.run_code("1").text, "1")


class NetworkTests(unittest.TestCase):
    """E2B's network options, and cellbox's own `--network` settings, against
    the kernels' real network."""

    CONNECT = (
        "import socket\n"
        "try:\n"
        "    socket.create_connection(('127.0.0.1', %d), timeout=10).close()\n"
        "    reached = 'reached'\n"
        "except OSError as error:\n"
        "    reached = type(error).__name__\n"
        "reached"
    )

    #: A tunnel asked of the kernel's HTTP proxy: its status line's code.
    THROUGH_PROXY = (
        "import os, socket\n"
        "proxy = os.environ['HTTP_PROXY'].rsplit(':', 1)\n"
        "s = socket.create_connection(('127.0.0.1', int(proxy[1])), timeout=10)\n"
        "s.sendall(b'CONNECT 127.0.0.1:%d HTTP/1.1\\r\\n\\r\\n')\n"
        "s.recv(100).split(b' ')[1].decode()"
    )

    def listener(self):
        listener = socket.socket()
        self.addCleanup(listener.close)
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        return listener.getsockname()[1]

    def reaches_a_host_listener(self, **options):
        port = self.listener()
        box = sandbox(self, spares=0, **options)
        return box.run_code(self.CONNECT % port).text

    def test_denying_all_traffic_turns_the_network_off(self):
        self.assertEqual(self.reaches_a_host_listener(), "reached")
        for options in (
            {"allow_internet_access": False},
            {"network": {"deny_out": [ALL_TRAFFIC]}},
            {"network": SandboxNetworkOpts(deny_out=lambda context: [context.all_traffic])},
            {"network": "off"},
        ):
            with self.subTest(options=options):
                # ENETUNREACH on Linux (a network namespace without a network), EPERM on macOS.
                self.assertIn(self.reaches_a_host_listener(**options), ("OSError", "PermissionError"))

    @unittest.skipUnless(sys.platform.startswith("linux"), "hosts by name need Linux's network namespaces")
    def test_allowed_hosts_are_reached_through_the_proxy_and_only_they(self):
        port = self.listener()
        for network, code in (
            ({"deny_out": [ALL_TRAFFIC], "allow_out": ["127.0.0.1"]}, "200"),
            ("allow:127.0.0.1", "200"),
            ("allow:pypi", "403"),
            ({"deny_out": ["127.0.0.0/8"]}, "403"),
        ):
            with self.subTest(network=network):
                box = sandbox(self, spares=0, network=network)
                self.assertIn(box.run_code(self.CONNECT % port).text, ("ConnectionRefusedError", "OSError"))
                self.assertEqual(box.run_code(self.THROUGH_PROXY % port).text, code)

    def test_rules_the_sandbox_cannot_keep_are_refused_before_it_starts(self):
        for network, says in (
            ({"deny_out": ["10.0.0.0/8"], "allow_out": ["10.1.1.1"]}, "cannot let addresses through a denylist"),
            ({"deny_out": ALL_TRAFFIC}, "lists of addresses"),
            ("allow:pypy", "pypy"),
        ):
            with self.subTest(network=network), self.assertRaises(InvalidArgumentException) as raised:
                new_sandbox(network=network)
            self.assertIn(says, str(raised.exception))
        self.assertEqual(self.reaches_a_host_listener(network={"allow_out": ["1.1.1.1"], "dns_servers": ["9.9.9.9"]}), "reached")


class LifetimeTests(unittest.TestCase):
    def test_a_timeout_ends_an_idle_sandbox_and_never_a_busy_one(self):
        box = sandbox(self, timeout=1)
        pid = int(box.run_code("import os, time; time.sleep(3); os.getpid()").text)
        deadline = time.monotonic() + 60
        while box.is_running() and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertFalse(box.is_running(), "an idle sandbox outlived its timeout")
        self.assertFalse(_process_exists(pid), "the kernel outlived its sandbox's timeout")
        with self.assertRaisesRegex(SandboxNotRunningException, "idle for 1 s, its timeout"):
            box.run_code("1")

    def test_set_timeout_zero_lifts_the_limit_and_bad_values_are_refused(self):
        box = sandbox(self, timeout=1)
        box.set_timeout(0)
        time.sleep(2)
        self.assertTrue(box.is_running())
        for bad in (-1, "10", float("nan"), True):
            with self.subTest(bad=bad), self.assertRaises(InvalidArgumentException):
                box.set_timeout(bad)
        with self.assertRaises(InvalidArgumentException):
            new_sandbox(timeout=-5)

    def test_a_kernel_killed_by_its_cell_is_an_error_and_the_next_run_starts_afresh(self):
        box = sandbox(self, spares=0)
        box.run_code("x = 1")
        execution = box.run_code("import os, signal; print('before', flush=True); os.kill(os.getpid(), signal.SIGKILL)")
        self.assertEqual((execution.error.name, execution.error.value), ("KernelDied", "killed by signal 9 (SIGKILL)"))
        self.assertEqual(execution.logs.stdout, ["before\n"])
        self.assertEqual(box.run_code("x").error.name, "NameError")
        self.assertEqual(box.run_code("2 + 2").text, "4")

    def test_kill_ends_the_engine_and_its_kernels(self):
        box = new_sandbox()
        pid = int(box.run_code("import os; os.getpid()").text)
        self.assertTrue(box.is_running())
        self.assertTrue(box.kill())
        self.assertFalse(box.is_running())
        self.assertFalse(_process_exists(pid), "the kernel outlived kill()")

    def test_a_forgotten_sandbox_leaves_no_process_behind(self):
        box = new_sandbox()
        pid = int(box.run_code("import os; os.getpid()").text)
        # A child engine ends on its own once its input closes; one in this
        # process is stopped by the collection itself.
        engine = getattr(box._transport, "_process", None)
        del box
        gc.collect()
        if engine is not None:
            engine.wait(timeout=30)
        self.assertFalse(_process_exists(pid), "the kernel outlived its sandbox")

    def test_kill_by_id_and_a_run_waiting_meanwhile_raises_timeout(self):
        box = new_sandbox()
        box.run_code("1")
        outcome = {}

        def run():
            try:
                box.run_code("import time\nprint('started', flush=True)\ntime.sleep(300)", on_stdout=started.set_)
            except TimeoutException as error:
                outcome["error"] = error

        started = _Flag()
        thread = threading.Thread(target=run)
        thread.start()
        self.assertTrue(started.wait(60), "the cell never started")
        self.assertTrue(Sandbox.kill(box.sandbox_id))
        thread.join(60)
        self.assertIn("sandbox was killed while the request was in progress", str(outcome.get("error")))
        with self.assertRaises(NotFoundException):
            Sandbox.kill(box.sandbox_id)

    def test_connect_finds_a_live_sandbox_of_this_process(self):
        box = sandbox(self)
        box.run_code("shared = 7")
        self.assertIs(Sandbox.connect(box.sandbox_id), box)
        self.assertIs(box.connect(), box)
        with new_sandbox() as other:
            self.assertEqual(other.run_code("1").text, "1")
        self.assertFalse(other.is_running())

    def test_sandboxes_in_threads_run_at_once(self):
        boxes = [sandbox(self) for _ in range(2)]
        answers = {}

        def run(index):
            answers[index] = boxes[index].run_code("import time; time.sleep(0.2); %d" % index).text

        threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        self.assertEqual(answers, {0: "0", 1: "1"})


class _Flag(threading.Event):
    """An event whose `set_` takes (and ignores) a callback's argument."""

    def set_(self, _item=None):
        self.set()


def _process_exists(pid, wait=60.0):
    """Whether `pid` still runs after up to `wait` seconds (it is given time to go)."""
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        with open("/proc/%d/stat" % pid) as stat:
            if stat.read().rsplit(")", 1)[1].split()[0] == "Z":
                return False
        time.sleep(0.05)
    return True


if __name__ == "__main__":
    unittest.main()
