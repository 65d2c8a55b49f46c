"""Unit tests of the fork server's Python side: preload refusals, the state a
child must not share with its siblings, and one real fork through the socket
protocol (the host's part played by the test).

Run as `python -m unittest` with runner/ on sys.path.
"""
import json
import os
import socket
import subprocess
import sys
import tempfile
import textwrap
import unittest

RUNNER = os.path.join(os.path.dirname(__file__), "..", "..", "runner")
sys.path.insert(0, RUNNER)


def _run_isolated(code, path):
    """Run `code` in a fresh interpreter with `path` and the runner importable."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([RUNNER, path]))
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        raise AssertionError(done.stderr)
    return done.stdout.strip()


class PreloadTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)

    def module(self, name, code):
        with open(os.path.join(self.dir.name, name + ".py"), "w") as f:
            f.write(textwrap.dedent(code))

    def preload(self, *names):
        code = "from cellbox_kernel.zygote import preload; print(preload(%r))" % (list(names),)
        return _run_isolated(code, self.dir.name)

    def test_plain_modules_are_accepted(self):
        self.module("plain_mod", "VALUE = 1\n")
        self.assertEqual(self.preload("json", "plain_mod"), "None")

    def test_a_module_that_leaves_a_thread_is_refused_by_name(self):
        self.module("threaded_mod", "import threading, time\nthreading.Thread(target=time.sleep, args=(60,), daemon=True, name='bg').start()\n")
        message = self.preload("json", "threaded_mod")
        self.assertIn("preloading 'threaded_mod' left 1 thread(s) running (bg)", message)
        self.assertIn("Import it in a cell instead", message)

    def test_a_failing_import_names_the_module_and_the_error(self):
        self.module("broken_mod", "raise RuntimeError('no luck')\n")
        self.assertEqual(self.preload("broken_mod"), "preloading 'broken_mod' failed: RuntimeError: no luck")
        self.assertIn("ModuleNotFoundError", self.preload("zyg_no_such_module"))


class FreshStateTest(unittest.TestCase):
    def test_a_forked_child_gets_new_random_state_and_temp_folder(self):
        code = textwrap.dedent(
            """
            import os, random, tempfile
            from cellbox_kernel import zygote
            random.seed(7)
            tempfile.gettempdir()
            read, write = os.pipe()
            pid = os.fork()
            if pid == 0:
                random.seed(7)
                zygote._fresh_state()
                os.write(write, ("%r %r" % (random.random(), tempfile.tempdir)).encode())
                os._exit(0)
            os.waitpid(pid, 0)
            child_value, child_tempdir = os.read(read, 200).decode().split(" ", 1)
            random.seed(7)
            print(child_value != repr(random.random()), child_tempdir)
            """
        )
        self.assertEqual(_run_isolated(code, ""), "True None")


class ServeTest(unittest.TestCase):
    """The zygote as the host sees it: ready, a fork with fds, the exit report."""

    def test_fork_request_and_exit_report(self):
        host, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        child_fd = child.fileno()
        zygote = subprocess.Popen(
            [sys.executable, os.path.join(RUNNER, "runner.py"), "--zygote", "--zygote-fd", str(child_fd), "--preload", "json"],
            pass_fds=(child_fd,),
            stdin=subprocess.DEVNULL,
        )
        child.close()
        self.addCleanup(zygote.wait, 10)
        self.addCleanup(host.close)
        ready = json.loads(host.recv(65536))
        self.assertEqual(ready["type"], "ready")
        self.assertEqual(ready["pid"], zygote.pid)
        # A kernel whose runner fails at once (no frames fd is a pipe to us):
        # what matters here is the fork, the fds and the exit report.
        pipes = [os.pipe() for _ in range(5)]
        request_read, request_write = pipes[0]
        os.close(request_write)  # end of input: the runner's main loop ends
        child_ends = [request_read] + [write for _, write in pipes[1:]]
        request = {
            "type": "fork",
            "id": 1,
            "cwd": tempfile.gettempdir(),
            "env": {"ZYG": "1", "PATH": os.environ.get("PATH", "")},
            "argv": ["runner.py", "--frames-fd", "3", "--diagnostics-fd", "4"],
        }
        fds = bytes(0).join(fd.to_bytes(4, sys.byteorder) for fd in child_ends)
        host.sendmsg([json.dumps(request).encode()], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds)])
        forked = json.loads(host.recv(65536))
        self.assertEqual((forked["type"], forked["id"]), ("forked", 1))
        for fd in child_ends:
            os.close(fd)
        exit_report = json.loads(host.recv(65536))
        self.assertEqual(exit_report, {"type": "exit", "pid": forked["pid"], "code": 0, "signal": None})
        # The child became a runner: its handshake came through the frames pipe.
        ready_frame = json.loads(os.read(pipes[3][0], 65536).decode().splitlines()[0])
        self.assertEqual((ready_frame["type"], ready_frame["pid"]), ("ready", forked["pid"]))
        host.shutdown(socket.SHUT_RDWR)
        self.assertEqual(zygote.wait(10), 0)


if __name__ == "__main__":
    unittest.main()
