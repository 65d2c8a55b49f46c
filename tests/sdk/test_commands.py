"""`sandbox.commands` against the real engine (see test_sandbox.py for how it
runs): exit codes, streamed output, envs and cwd, timeouts, background
handles (wait, kill, list, connect), that a stopped command leaves no process
behind, that commands run in the kernels' sandbox, and bad input.
"""
import os
import time
import unittest

from fixture import PYTHON, Workspace, unique

from cellbox import (
    CommandExitException,
    CommandHandle,
    CommandResult,
    InvalidArgumentException,
    NotFoundException,
    ProcessInfo,
    Sandbox,
    SandboxException,
    TimeoutException,
)

SPACE = None
WORK = HOME = OUTSIDE = ""


def setUpModule():
    global SPACE, WORK, HOME, OUTSIDE
    SPACE = Workspace("commands")
    WORK, HOME, OUTSIDE = SPACE.work, SPACE.home, SPACE.outside
    os.makedirs(os.path.join(WORK, "sub"))


def tearDownModule():
    SPACE.remove()


def new_sandbox(**options):
    options.setdefault("python", PYTHON)
    return Sandbox(cwd=WORK, envs={"HOME": HOME}, **options)


class SharedSandbox(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.box = new_sandbox()
        cls.commands = cls.box.commands

    @classmethod
    def tearDownClass(cls):
        cls.box.kill()

    def running_pids(self):
        return [process.pid for process in self.commands.list()]


class RunTests(SharedSandbox):
    def test_output_and_exit_code(self):
        result = self.commands.run('echo "Hello, World!"; echo oops >&2')
        self.assertEqual(result, CommandResult(stderr="oops\n", stdout="Hello, World!\n", exit_code=0, error=None))
        special = self.commands.run("""printf '%s\\n' "!@#$%^&*()_+ ünï \\"q\\" $((1 + 2))" 'it'"'"'s'""")
        self.assertEqual(special.stdout, '!@#$%^&*()_+ ünï "q" 3\nit\'s\n')
        self.assertEqual(self.commands.run("printf 'a%.0s' $(seq 8191); printf '\\342'").stdout, "a" * 8191 + "\ufffd")

    def test_a_non_zero_exit_raises_with_the_output(self):
        with self.assertRaises(CommandExitException) as raised:
            self.commands.run("echo out; echo err >&2; exit 3")
        error = raised.exception
        self.assertIsInstance(error, SandboxException)
        self.assertEqual((error.stdout, error.stderr, error.exit_code, error.error), ("out\n", "err\n", 3, None))

    def test_output_streams_to_the_callbacks_while_the_command_runs(self):
        go = os.path.join(WORK, unique("go"))
        seen = []

        def on_stdout(text):
            seen.append(("out", text))
            if "ready" in text:  # the command waits for this file: it still runs
                open(go, "w").close()

        result = self.commands.run(
            "echo ready; while [ ! -e %s ]; do sleep 0.05; done; echo done >&2" % go,
            on_stdout=on_stdout,
            on_stderr=lambda text: seen.append(("err", text)),
        )
        self.assertEqual(seen, [("out", "ready\n"), ("err", "done\n")])
        self.assertEqual((result.stdout, result.stderr), ("ready\n", "done\n"))

    def test_envs_hold_for_one_command_and_cwd_starts_at_the_sandbox_folder(self):
        self.assertEqual(self.commands.run('echo "$FOO"', envs={"FOO": "bar baz"}).stdout, "bar baz\n")
        self.assertEqual(self.commands.run('echo "[$FOO]"').stdout, "[]\n")
        self.assertEqual(self.commands.run("pwd").stdout, WORK + "\n")
        self.assertEqual(self.commands.run("pwd", cwd="sub").stdout, os.path.join(WORK, "sub") + "\n")
        self.assertEqual(self.commands.run("pwd", cwd=OUTSIDE).stdout, OUTSIDE + "\n")
        with self.assertRaisesRegex(InvalidArgumentException, "is not a folder"):
            self.commands.run("pwd", cwd="no-such-folder")

    def test_a_timeout_raises_and_ends_the_command(self):
        with self.assertRaises(TimeoutException):
            self.commands.run("sleep 300", timeout=1)
        self.assertEqual(self.commands.list(), [])
        self.assertEqual(self.commands.run("echo after").stdout, "after\n")

    def test_a_callback_that_raises_ends_the_command(self):
        def stop(_text):
            raise ValueError("enough")

        with self.assertRaisesRegex(ValueError, "enough"):
            self.commands.run("echo go; sleep 300", on_stdout=stop)
        self.assertEqual(self.commands.list(), [])


class BackgroundTests(SharedSandbox):
    def test_wait_iterate_list_and_kill(self):
        done = self.commands.run("echo bg; echo e >&2", background=True)
        self.assertIsInstance(done, CommandHandle)
        self.assertEqual(done.wait(), CommandResult(stderr="e\n", stdout="bg\n", exit_code=0, error=None))
        self.assertEqual(done.wait().stdout, "bg\n")  # the result is kept
        iterated = self.commands.run("echo one; exit 4", background=True)
        self.assertEqual(list(iterated), [("one\n", None, None)])
        with self.assertRaises(CommandExitException):
            iterated.wait()

        sleeper = self.commands.run("sleep 300", background=True)
        self.assertIsInstance(sleeper.pid, int)
        listed = [process for process in self.commands.list() if process.pid == sleeper.pid]
        self.assertEqual(len(listed), 1)
        self.assertIsInstance(listed[0], ProcessInfo)
        self.assertEqual((listed[0].args[-1], listed[0].cwd), ("sleep 300", WORK))
        self.assertTrue(self.commands.kill(sleeper.pid))
        with self.assertRaises(CommandExitException) as raised:
            sleeper.wait()
        self.assertEqual((raised.exception.exit_code, raised.exception.error), (-1, "signal: killed"))
        self.assertNotIn(sleeper.pid, self.running_pids())
        self.assertFalse(self.commands.kill(sleeper.pid))
        self.assertFalse(sleeper.kill())
        self.assertFalse(self.commands.kill(999999))

    def test_a_background_timeout_raises_from_the_handle(self):
        handle = self.commands.run("sleep 300", background=True, timeout=1)
        with self.assertRaises(TimeoutException):
            for _ in handle:
                pass

    def test_connect_follows_a_running_command(self):
        gate = os.path.join(WORK, unique("gate"))
        handle = self.commands.run("while [ ! -e %s ]; do sleep 0.05; done; echo later" % gate, background=True)
        connected = self.commands.connect(handle.pid)
        self.assertEqual(connected.pid, handle.pid)
        open(gate, "w").close()
        self.assertEqual(connected.wait().stdout, "later\n")
        self.assertEqual(handle.wait().stdout, "later\n")
        with self.assertRaises(NotFoundException):
            self.commands.connect(999999)

    def test_stdin_is_not_supported_and_says_so(self):
        with self.assertRaisesRegex(InvalidArgumentException, "stdin"):
            self.commands.run("cat", stdin=True)
        handle = self.commands.run("true", background=True)
        for call in (lambda: handle.send_stdin("x"), lambda: self.commands.send_stdin(handle.pid, "x"), handle.close_stdin):
            with self.assertRaisesRegex(SandboxException, "stdin"):
                call()
        handle.wait()


class LeftoverTests(SharedSandbox):
    """What a command started is gone once it was killed or timed out."""

    def started_child(self, handle):
        """The pid of the background child the command printed first."""
        for out, _err, _pty in handle:
            if out:
                return int(out.split()[0])
        self.fail("the command printed no pid")

    def test_a_killed_command_leaves_no_process_behind(self):
        handle = self.commands.run("sleep 300 & echo $!; wait", background=True)
        child = self.started_child(handle)
        self.assertTrue(_process_exists(child, wait=0))
        self.assertTrue(handle.kill())
        self.assertFalse(_process_exists(child), "the command's child outlived kill()")
        self.assertFalse(_process_exists(handle.pid), "the command's shell outlived kill()")

    def test_a_command_that_timed_out_leaves_no_process_behind(self):
        children = []
        with self.assertRaises(TimeoutException):
            # Long enough for the shell to print its child's pid first on a loaded machine.
            self.commands.run("sleep 300 & echo $!; wait", timeout=5, on_stdout=lambda text: children.append(int(text.split()[0])))
        self.assertEqual(len(children), 1)
        self.assertFalse(_process_exists(children[0]), "the command's child outlived its timeout")


class PolicyTests(SharedSandbox):
    """A command may do what a kernel may do, no more."""

    def test_commands_run_in_the_kernels_sandbox(self):
        probe = os.path.join(OUTSIDE, unique("probe"))
        kernel = self.box.run_code("open(%r, 'w').close()" % (probe + "-kernel"))
        try:
            self.commands.run("touch %s-command" % probe)
            command_wrote = True
        except CommandExitException as refused:
            command_wrote = False
            self.assertIn("Permission denied", refused.stderr)
        self.assertEqual(command_wrote, kernel.error is None, "a command and a kernel disagree on the sandbox")
        self.assertEqual(os.path.exists(probe + "-command"), os.path.exists(probe + "-kernel"))
        secret = self.box.run_code("open(%r).read()" % os.path.join(HOME, ".ssh", "id_rsa"))
        if secret.error is not None:  # the sandbox is enforced here: the command cannot read it either
            with self.assertRaises(CommandExitException):
                self.commands.run('cat "$HOME/.ssh/id_rsa"')
            self.assertFalse(command_wrote)


class BadInputTests(SharedSandbox):
    def test_bad_arguments_are_invalid_arguments(self):
        cases = [
            (lambda: self.commands.run(["ls"]), "cmd must be a str"),
            (lambda: self.commands.run("true", envs={"A": 1}), "envs must be a dict of str to str"),
            (lambda: self.commands.run("true", timeout=-1), "timeout must be 0 or more"),
            (lambda: self.commands.run("true", cwd=3), "cwd must be a str"),
        ]
        for call, words in cases:
            with self.subTest(words), self.assertRaises(InvalidArgumentException) as raised:
                call()
            self.assertIn(words, str(raised.exception))


class LifetimeTests(unittest.TestCase):
    def test_a_command_waiting_when_the_sandbox_is_killed_raises_timeout(self):
        box = new_sandbox(spares=0)
        handle = box.commands.run("sleep 300", background=True)
        box.kill()
        with self.assertRaisesRegex(TimeoutException, "sandbox was killed"):
            handle.wait()
        self.assertFalse(_process_exists(handle.pid), "the command outlived its sandbox")


def _process_exists(pid, wait=60.0):
    """Whether `pid` still runs after up to `wait` seconds (it is given time to go)."""
    deadline = time.monotonic() + wait
    while True:
        try:
            os.kill(pid, 0)
            with open("/proc/%d/stat" % pid) as stat:
                if stat.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return False
        except (ProcessLookupError, FileNotFoundError):
            return False
        if time.monotonic() >= deadline:
            return True
        time.sleep(0.05)


if __name__ == "__main__":
    unittest.main()
