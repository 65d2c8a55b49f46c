"""The engine in the SDK's own process (`cellbox._engine`): how it is chosen,
what a forked child and Ctrl-C get, and the errors for a bad choice.

tests/it/sdk.rs builds the extension and names it in CELLBOX_SDK_ENGINE.
"""
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest

from fixture import DEADLINE, PYTHON, Workspace

from cellbox import InvalidArgumentException, Sandbox, SandboxException, SandboxNotRunningException, TimeoutException
from cellbox._in_process import InProcessTransport
from cellbox._transport import LocalTransport

ENGINE = os.environ.get("CELLBOX_SDK_ENGINE", "")
HERE = os.path.dirname(os.path.abspath(__file__))


@unittest.skipUnless(os.path.isfile(ENGINE), "CELLBOX_SDK_ENGINE names no built extension (tests/it/sdk.rs sets it)")
class InProcessTests(unittest.TestCase):
    def setUp(self):
        self.workspace = Workspace("in-process")
        self.addCleanup(self.workspace.remove)

    def sandbox(self, **options):
        options.setdefault("cwd", self.workspace.work)
        box = Sandbox(python=PYTHON, **options)
        self.addCleanup(box.kill)
        return box

    def test_a_local_sandbox_runs_in_this_process_unless_a_child_is_asked_for(self):
        box = self.sandbox()
        self.assertIsInstance(box._transport, InProcessTransport)
        kernel = int(box.run_code("import os; os.getppid()").text)
        self.assertEqual(kernel, os.getpid(), "the kernel's parent is this process")
        child = self.sandbox(engine="process")
        self.assertIsInstance(child._transport, LocalTransport)
        self.assertEqual(int(child.run_code("import os; os.getppid()").text), child._transport.pid)
        with self.assertRaisesRegex(InvalidArgumentException, "engine='fast'"):
            Sandbox(python=PYTHON, cwd=self.workspace.work, engine="fast")

    def test_bad_flags_are_invalid_arguments_with_the_engine_s_words(self):
        with self.assertRaisesRegex(InvalidArgumentException, "bogus.*off, workspace-write or read-only"):
            self.sandbox(sandbox="bogus")
        with self.assertRaisesRegex(InvalidArgumentException, "missing-folder"):
            self.sandbox(cwd=os.path.join(self.workspace.work, "missing-folder"))

    def test_envs_reach_kernels_and_commands_without_changing_this_process(self):
        box = self.sandbox(envs={"SDK_TEST_VALUE": "seven"})
        self.assertEqual(box.run_code("import os; os.environ['SDK_TEST_VALUE']").text, "seven")
        self.assertEqual(box.commands.run("echo $SDK_TEST_VALUE").stdout, "seven\n")
        self.assertNotIn("SDK_TEST_VALUE", os.environ)

    def test_a_forked_child_is_told_and_the_parent_goes_on(self):
        box = self.sandbox()
        box.run_code("x = 41")
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: report what the sandboxes do, then leave at once
            signal.alarm(int(DEADLINE))  # a hang ends the child, and the parent's read
            try:
                box.run_code("x")
                said = "no error"
            except SandboxNotRunningException as error:
                said = "SandboxNotRunningException: %s" % error
            except BaseException as error:
                said = "%s: %s" % (type(error).__name__, error)
            try:
                with Sandbox(python=PYTHON, cwd=self.workspace.work) as own:
                    said += "\nown sandbox: %s, %s" % (own.run_code("6 * 7").text, type(own._transport).__name__)
                Sandbox(python=PYTHON, cwd=self.workspace.work, engine="in-process")
            except InvalidArgumentException as error:
                said += "\nin-process asked for: %s" % error
            except BaseException as error:
                said += "\nown sandbox: %s: %s" % (type(error).__name__, error)
            os.write(write_end, said.encode("utf-8"))
            os._exit(0)
        os.close(write_end)
        with os.fdopen(read_end, "rb") as reader:
            said = reader.read().decode("utf-8")
        os.waitpid(pid, 0)
        self.assertIn("SandboxNotRunningException", said)
        self.assertIn("forked child", said)
        # Its own sandboxes run their engine as a child process: the fork copied
        # locks the parent's engine threads may have held.
        self.assertIn("own sandbox: 42, LocalTransport", said)
        self.assertIn("in-process asked for: engine='in-process': this process was forked", said)
        self.assertEqual(box.run_code("x + 1").text, "42")

    def test_ctrl_c_while_waiting_stops_the_cell_and_keeps_the_context(self):
        box = self.sandbox()
        box.run_code("kept = 'state'")
        started = time.monotonic()
        # The cell is quiet (no callbacks): the caller waits inside the engine.
        timer = threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT))
        timer.start()
        try:
            with self.assertRaises(KeyboardInterrupt):
                box.run_code("import time; time.sleep(120)")
        finally:
            timer.cancel()
        # The next cell runs at once: the interrupted one was stopped, not left running.
        self.assertEqual(box.run_code("kept").text, "state")
        self.assertLess(time.monotonic() - started, DEADLINE, "Ctrl-C waited for the cell")

    def test_quiet_runs_from_many_threads_each_get_their_own_answer(self):
        # A quiet run_code is run by its caller's own thread: sixteen callers at
        # once on one context and on two, each must get its own cell's value.
        box = self.sandbox()
        other = box.create_code_context()
        answers, failures = {}, []

        def run(thread):
            try:
                for turn in range(25):
                    context = other if turn % 2 else None
                    answers[(thread, turn)] = box.run_code("%d * 1000 + %d" % (thread, turn), context=context).text
            except BaseException as error:  # reported below
                failures.append(error)

        threads = [threading.Thread(target=run, args=(thread,)) for thread in range(16)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(DEADLINE * 4)
        self.assertEqual(failures, [])
        self.assertEqual(answers, {(t, n): str(t * 1000 + n) for t in range(16) for n in range(25)})

    def test_calls_run_by_their_callers_count_toward_the_limit_of_calls_in_progress(self):
        # Quiet calls queue in one context behind a cell that waits for a file,
        # each from a thread of its own, until the engine refuses one: exactly
        # 256 (MAX_CALLS_IN_PROGRESS) are taken, and all of those end once the
        # file appears.
        box = self.sandbox()
        release = os.path.join(self.workspace.work, "release")
        started = os.path.join(self.workspace.work, "started")
        waiting = "import os, time\nopen(%r, 'w').close()\nwhile not os.path.exists(%r):\n    time.sleep(0.01)\n-1"
        outcomes, refusals, others = [], [], []
        refused = threading.Event()

        def run(code):
            try:
                outcomes.append(box.run_code(code).text)
            except SandboxException as error:
                refusals.append(str(error))
                refused.set()
            except BaseException as error:  # reported below
                others.append(error)

        threads = [threading.Thread(target=run, args=(waiting % (started, release),))]
        threads[0].start()
        deadline = time.monotonic() + DEADLINE
        while not os.path.exists(started) and time.monotonic() < deadline:
            time.sleep(0.01)
        self.assertTrue(os.path.exists(started), "the first cell never started")
        try:
            while not refused.is_set() and time.monotonic() < deadline and len(threads) < 400:
                threads.append(threading.Thread(target=run, args=("%d" % len(threads),)))
                threads[-1].start()
                if len(threads) > 250:
                    refused.wait(0.05)  # a call taken waits in the queue; a refused one returns at once
        finally:
            with open(release, "w"):
                pass
            for thread in threads:
                thread.join(DEADLINE)
        self.assertEqual(others, [])
        self.assertTrue(refusals, "no call was refused among %d" % len(threads))
        for refusal in refusals:
            self.assertIn("calls in progress", refusal)
            self.assertIn("limit is 256 calls", refusal)
        self.assertEqual(len(outcomes), 256)
        self.assertIn("-1", outcomes)

    def test_a_quiet_run_waiting_when_its_sandbox_is_killed_raises_timeout(self):
        box = self.sandbox()
        started = os.path.join(self.workspace.work, "started")
        outcome = {}

        def run():
            try:
                box.run_code("import time\nopen(%r, 'w').close()\ntime.sleep(300)" % started)
                outcome["error"] = "no error"
            except BaseException as error:  # checked below
                outcome["error"] = error

        thread = threading.Thread(target=run)
        thread.start()
        deadline = time.monotonic() + DEADLINE
        while not os.path.exists(started) and time.monotonic() < deadline:
            time.sleep(0.01)
        self.assertTrue(os.path.exists(started), "the cell never started")
        self.assertTrue(box.kill())
        thread.join(DEADLINE)
        self.assertIsInstance(outcome.get("error"), TimeoutException)
        self.assertIn("sandbox was killed while the request was in progress", str(outcome["error"]))

    def test_a_missing_extension_file_is_a_clear_error(self):
        # A fresh interpreter: the extension is loaded once per process.
        script = "import sys; sys.path.insert(0, %r)\n" % os.path.join(HERE, "..", "..", "python")
        script += "from cellbox import Sandbox\nSandbox(python=%r)\n" % PYTHON
        missing = os.path.join(tempfile.gettempdir(), "no-such-cellbox-engine.so")
        env = dict(os.environ, CELLBOX_SDK_ENGINE=missing)
        done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60)
        self.assertNotEqual(done.returncode, 0)
        self.assertIn("CELLBOX_SDK_ENGINE=%s: no such extension file" % missing, done.stderr)

    def test_an_engine_that_stops_by_itself_says_why(self):
        box = self.sandbox(timeout=1)
        box.run_code("1")
        deadline = time.monotonic() + DEADLINE
        while box.is_running() and time.monotonic() < deadline:
            time.sleep(0.05)
        with self.assertRaisesRegex(SandboxException, "idle for 1 s, its timeout"):
            box.run_code("1")


if __name__ == "__main__":
    unittest.main()
