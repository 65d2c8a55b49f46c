"""`AsyncSandbox` against the real engine (see test_sandbox.py for how it runs):
awaited calls, sync and async callbacks in the loop, cancellation and kill
while a cell runs, contexts.
"""
import asyncio
import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))

from cellbox import AsyncSandbox, NotFoundException, SandboxNotRunningException, TimeoutException  # noqa: E402

PYTHON = os.environ.get("CELLBOX_TEST_PYTHON", sys.executable)


class AsyncSandboxTests(unittest.IsolatedAsyncioTestCase):
    @classmethod
    def setUpClass(cls):
        cls.work = tempfile.mkdtemp(prefix="cellbox-sdk-async-test-")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.work, ignore_errors=True)

    async def asyncSetUp(self):
        self.box = await AsyncSandbox.create(python=PYTHON, cwd=self.work)

    async def asyncTearDown(self):
        await self.box.kill()

    async def test_run_code_keeps_state_and_returns_the_main_result(self):
        await self.box.run_code("x = 1")
        execution = await self.box.run_code("x + 1")
        self.assertEqual(execution.text, "2")
        self.assertTrue(await self.box.is_running())

    async def test_sync_and_async_callbacks_run_in_the_loop(self):
        seen = []
        loop = asyncio.get_running_loop()

        async def on_stdout(message):
            self.assertIs(asyncio.get_running_loop(), loop)
            await asyncio.sleep(0)
            seen.append(("out", message.line))

        execution = await self.box.run_code(
            "import sys\nprint('a', flush=True)\nprint('e', file=sys.stderr, flush=True)\nprint('b')\n'r'",
            on_stdout=on_stdout,
            on_stderr=lambda message: seen.append(("err", message.line)),
            on_result=lambda result: seen.append(("result", result.text)),
        )
        # Prints close together may arrive as one chunk (as from Jupyter); the result comes last.
        self.assertEqual("".join(line for kind, line in seen if kind == "out"), "a\nb\n")
        self.assertIn(("err", "e\n"), seen)
        self.assertEqual(seen[-1], ("result", "r"))
        self.assertEqual("".join(execution.logs.stdout), "a\nb\n")

    async def test_an_error_goes_to_on_error_and_into_the_execution(self):
        errors = []

        async def on_error(error):
            errors.append(error)

        execution = await self.box.run_code("xyz", on_error=on_error)
        self.assertEqual(execution.error.name, "NameError")
        self.assertEqual(errors, [execution.error])

    async def test_a_timeout_raises_and_the_context_goes_on(self):
        with self.assertRaises(TimeoutException):
            await self.box.run_code("import time; time.sleep(300)", timeout=1)
        self.assertEqual((await self.box.run_code("1 + 1", timeout=60)).text, "2")

    async def test_a_cancelled_run_is_interrupted_and_the_context_goes_on(self):
        started = asyncio.Event()
        task = asyncio.ensure_future(
            self.box.run_code("import time\nprint('go', flush=True)\ntime.sleep(300)", on_stdout=lambda _m: started.set())
        )
        await asyncio.wait_for(started.wait(), 60)
        task.cancel()
        with self.assertRaises(asyncio.CancelledError):
            await task
        self.assertEqual((await self.box.run_code("'after'", timeout=60)).text, "after")

    async def test_kill_while_a_run_waits_raises_timeout(self):
        started = asyncio.Event()
        run = asyncio.ensure_future(
            self.box.run_code("import time\nprint('go', flush=True)\ntime.sleep(300)", on_stdout=lambda _m: started.set())
        )
        await asyncio.wait_for(started.wait(), 60)
        self.assertTrue(await AsyncSandbox.kill(self.box.sandbox_id))
        with self.assertRaisesRegex(TimeoutException, "sandbox was killed while the request was in progress"):
            await run
        self.assertFalse(await self.box.is_running())

    async def test_a_timeout_ends_the_sandbox_once_idle(self):
        box = await AsyncSandbox.create(python=PYTHON, cwd=self.work, timeout=30)
        self.addAsyncCleanup(box.kill)
        await box.set_timeout(1)  # from now on

        async def ended():
            while await box.is_running():
                await asyncio.sleep(0.05)

        await asyncio.wait_for(ended(), 60)
        with self.assertRaisesRegex(SandboxNotRunningException, "idle for 1 s"):
            await box.run_code("1")

    async def test_contexts(self):
        context = await self.box.create_code_context()
        contexts = await self.box.list_code_contexts()
        self.assertEqual(contexts[-1].id, context.id)
        self.assertEqual({"python", "javascript"} <= {c.language for c in contexts}, True)
        await self.box.run_code("x = 1", context=context)
        await self.box.restart_code_context(context.id)
        execution = await self.box.run_code("x", context=context)
        self.assertEqual((execution.error.name, execution.error.value), ("NameError", "name 'x' is not defined"))
        await self.box.remove_code_context(context)
        with self.assertRaises(NotFoundException):
            await self.box.run_code("1", context=context)

    async def test_async_with_and_connect(self):
        async with await AsyncSandbox.create(python=PYTHON, cwd=self.work) as other:
            self.assertIs(await AsyncSandbox.connect(other.sandbox_id), other)
            self.assertEqual((await other.run_code("6 * 7")).text, "42")
        self.assertFalse(await other.is_running())


if __name__ == "__main__":
    unittest.main()
