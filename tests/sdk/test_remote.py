"""The SDK against `cellbox serve`: `Sandbox(api_url=..., api_key=...)` behaves as a local one."""
import os
import secrets
import shutil
import subprocess
import tempfile
import unittest

from fixture import PYTHON, unique

from cellbox import AsyncSandbox, Sandbox
from cellbox.exceptions import (
    AuthenticationException,
    InvalidArgumentException,
    RateLimitException,
    SandboxException,
    TimeoutException,
)


def _binary():
    return shutil.which("cellbox") or "cellbox"


class RemoteServer:
    """`cellbox serve` on a free loopback port, with one token (principal `env`)."""

    def __init__(self, *flags):
        self.root = tempfile.mkdtemp(prefix="cellbox-sdk-remote-")
        self.token = "cbx_" + secrets.token_urlsafe(24)
        env = dict(os.environ, CELLBOX_SERVE_TOKEN=self.token, CELLBOX_PYTHON=PYTHON)
        self.process = subprocess.Popen(
            [_binary(), "serve", "--listen", "127.0.0.1:0", "--root", self.root, "--spares", "0",
             "--tokens", os.path.join(self.root, "no-tokens.json")] + list(flags),
            env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        said = []
        for line in self.process.stderr:  # it names its address once it accepts
            said.append(line)
            if line.startswith("cellbox serve: MCP on "):
                self.url = line.split(" on ", 1)[1].split(",", 1)[0][: -len("/mcp")]
                break
        else:
            raise RuntimeError("cellbox serve did not start: " + "".join(said))

    def stop(self):
        self.process.terminate()
        self.process.communicate(timeout=60)
        shutil.rmtree(self.root, ignore_errors=True)


class WithServer:
    """One server for the whole test class."""

    @classmethod
    def setUpClass(cls):
        cls.server = RemoteServer()

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()


class RemoteSandboxTest(WithServer, unittest.TestCase):
    def sandbox(self, **options):
        box = Sandbox(api_url=self.server.url, api_key=self.server.token, **options)
        self.addCleanup(box.kill)
        return box

    def test_run_code_streams_and_returns_as_locally(self):
        box = self.sandbox(envs={"GREETING": "hello"})
        lines = []
        execution = box.run_code(
            "import os\nprint(os.environ['GREETING'])\n[1, 2]", on_stdout=lambda message: lines.append(message.line)
        )
        self.assertEqual(lines, ["hello\n"])
        self.assertEqual(execution.logs.stdout, ["hello\n"])
        self.assertEqual(execution.text, "[1, 2]")
        self.assertEqual(execution.results[0].json, [1, 2])
        failed = box.run_code("1/0")
        self.assertEqual(failed.error.name, "ZeroDivisionError")
        # Per-call envs win over the sandbox's, for that call only.
        self.assertIn("bye", box.run_code("os.environ['GREETING']", envs={"GREETING": "bye"}).text)
        self.assertIn("hello", box.run_code("os.environ['GREETING']").text)

    def test_the_sandbox_s_envs_reach_its_commands(self):
        box = self.sandbox(envs={"GREETING": "hello", "OTHER": "kept"})
        self.assertEqual(box.commands.run("echo $GREETING").stdout, "hello\n")
        # A command's own envs win over the sandbox's, for that command only.
        self.assertEqual(box.commands.run("echo $GREETING $OTHER", envs={"GREETING": "bye"}).stdout, "bye kept\n")
        handle = box.commands.run("echo $GREETING", background=True)
        self.assertEqual(handle.wait().stdout, "hello\n")

    def test_files_and_commands_are_rooted_in_the_principals_folder(self):
        box = self.sandbox()
        name = unique("note") + ".txt"
        box.files.write(name, "remote text")
        self.assertEqual(box.files.read(name), "remote text")
        self.assertTrue(os.path.exists(os.path.join(self.server.root, "env", name)))
        result = box.commands.run("cat " + name)
        self.assertEqual(result.stdout, "remote text")
        # Another principal's folder, made after this sandbox started: closed to files and to code.
        other = os.path.join(self.server.root, unique("other"))
        os.makedirs(other)
        with open(os.path.join(other, "private.txt"), "w") as file:
            file.write("not yours")
        relative = os.path.join("..", os.path.basename(other), "private.txt")
        with self.assertRaises(SandboxException) as refused:
            box.files.read(relative)
        self.assertIn("other principals", str(refused.exception))
        self.assertIn("PermissionError", box.run_code("open(%r).read()" % relative).error.name)
        with self.assertRaises(SandboxException) as outside:
            box.create_code_context(cwd=os.path.join("..", os.path.basename(other)))
            box.run_code("1", context=box.list_code_contexts()[-1])
        self.assertIn("outside the workspace", str(outside.exception))

    def test_sandboxes_are_apart_and_a_killed_one_says_so(self):
        first, second = self.sandbox(), self.sandbox()
        first.run_code("only_here = 1")
        self.assertEqual(second.run_code("only_here").error.name, "NameError")
        first.kill()
        self.assertFalse(first.is_running())
        # As locally (and in E2B): a killed sandbox's calls raise the "killed" timeout error.
        with self.assertRaises(TimeoutException):
            first.run_code("1")
        self.assertEqual(second.run_code("2+2").text, "4")

    def test_a_wrong_key_and_server_side_options_are_refused(self):
        with self.assertRaises(AuthenticationException) as refused:
            Sandbox(api_url=self.server.url, api_key="cbx_wrong")
        self.assertIn("not valid", str(refused.exception))
        with self.assertRaises(AuthenticationException):
            Sandbox(api_url=self.server.url)
        with self.assertRaises(InvalidArgumentException) as local_only:
            Sandbox(api_url=self.server.url, api_key=self.server.token, cwd="/tmp")
        self.assertIn("cellbox serve", str(local_only.exception))
        with self.assertRaises(InvalidArgumentException):
            Sandbox(api_url="ftp://example.invalid", api_key="x")

    def test_an_unreachable_server_is_a_clear_error(self):
        closed = socket_port_closed()
        with self.assertRaises(SandboxException) as gone:
            Sandbox(api_url="http://127.0.0.1:%d" % closed, api_key="x")
        self.assertIn("cannot connect", str(gone.exception))


class FullServerTest(unittest.TestCase):
    def test_a_full_server_refuses_with_the_rate_limit_error_until_a_place_frees(self):
        server = RemoteServer("--max-sandboxes", "1")
        self.addCleanup(server.stop)
        first = Sandbox(api_url=server.url, api_key=server.token)
        with self.assertRaises(RateLimitException) as full:
            Sandbox(api_url=server.url, api_key=server.token)
        self.assertIn("limit of 1 open SDK sandboxes", str(full.exception))
        first.kill()
        # kill() returns once the server has ended the sandbox, so its place is free.
        second = Sandbox(api_url=server.url, api_key=server.token)
        self.addCleanup(second.kill)
        self.assertEqual(second.run_code("1+1").text, "2")


def socket_port_closed():
    """A loopback port nothing listens on (bound, then released)."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class AsyncRemoteSandboxTest(WithServer, unittest.IsolatedAsyncioTestCase):
    async def test_async_run_code_with_callbacks(self):
        box = await AsyncSandbox.create(api_url=self.server.url, api_key=self.server.token)
        try:
            seen = []

            async def on_stdout(message):
                seen.append(message.line)

            execution = await box.run_code("print('from afar'); 6*7", on_stdout=on_stdout)
            self.assertEqual(seen, ["from afar\n"])
            self.assertEqual(execution.text, "42")
        finally:
            await box.kill()


if __name__ == "__main__":
    unittest.main()
