"""`AsyncSandbox.files` and `AsyncSandbox.commands` against the real engine
(see test_sandbox.py for how it runs): awaited calls, async streams, watch
callbacks in the loop, command callbacks, background handles, kill, timeout
and cancellation.
"""
import asyncio
import os
import tempfile
import unittest

from fixture import DEADLINE, AsyncSandboxCase, unique

from cellbox import (
    AsyncCommandHandle,
    AsyncWatchHandle,
    CommandExitException,
    FileNotFoundException,
    FilesystemEventType,
    FileType,
    InvalidArgumentException,
    SandboxException,
    TimeoutException,
)

class AsyncFilesTests(AsyncSandboxCase):
    folder = "async-files"
    options = {"spares": 0}

    async def asyncSetUp(self):
        await super().asyncSetUp()
        self.files = self.box.files

    async def test_round_trips_and_entries(self):
        folder = unique("async")
        info = await self.files.write(folder + "/a.txt", "ünï text")
        self.assertEqual((info.name, info.type, info.path), ("a.txt", FileType.FILE, os.path.join(self.work, folder, "a.txt")))
        self.assertEqual(await self.files.read(folder + "/a.txt"), "ünï text")
        await self.files.write(folder + "/b.bin", bytes(range(256)))
        self.assertEqual(bytes(await self.files.read(folder + "/b.bin", format="bytes")), bytes(range(256)))

        async def chunks():
            for piece in (b"async ", b"chunks"):
                yield piece

        await self.files.write(folder + "/c.txt", chunks())
        async with await self.files.read(folder + "/c.txt", format="stream") as stream:
            self.assertEqual(b"".join([chunk async for chunk in stream]), b"async chunks")
        infos = await self.files.write_files([{"path": folder + "/d/e.txt", "data": "e"}, {"path": folder + "/f.txt", "data": b"f"}])
        self.assertEqual([i.name for i in infos], ["e.txt", "f.txt"])
        listed = await self.files.list(folder, depth=2)
        self.assertEqual([e.name for e in listed], ["a.txt", "b.bin", "c.txt", "d", "e.txt", "f.txt"])
        self.assertTrue(await self.files.exists(folder + "/d/e.txt"))
        self.assertFalse(await self.files.make_dir(folder + "/d"))
        renamed = await self.files.rename(folder + "/f.txt", folder + "/g.txt")
        self.assertEqual(renamed.name, "g.txt")
        self.assertEqual((await self.files.get_info(folder + "/g.txt")).size, 1)
        await self.files.remove(folder + "/d")
        self.assertFalse(await self.files.exists(folder + "/d"))

    async def test_errors(self):
        with self.assertRaises(FileNotFoundException):
            await self.files.read(unique("missing"))
        with self.assertRaises(FileNotFoundException):
            await self.files.watch_dir(unique("missing"), on_event=lambda event: None)
        with self.assertRaises(InvalidArgumentException):
            await self.files.read("x", format="lines")
        with self.assertRaises(InvalidArgumentException):
            await self.files.watch_dir(".", on_event=None)
        with self.assertRaisesRegex(SandboxException, "workspace-write"):
            await self.files.write(os.path.join(tempfile.gettempdir(), unique("outside")), "no")

    async def test_watch_calls_on_event_in_the_loop_until_stopped(self):
        folder = unique("watched")
        await self.files.make_dir(folder + "/nested")
        loop = asyncio.get_running_loop()
        seen = asyncio.Event()
        events, exits = [], []

        async def on_event(event):
            self.assertIs(asyncio.get_running_loop(), loop)
            events.append(event)
            if event.type == FilesystemEventType.WRITE and event.name == "nested/file.txt":
                seen.set()

        handle = await self.files.watch_dir(folder, on_event=on_event, on_exit=exits.append, recursive=True, include_entry=True)
        self.assertIsInstance(handle, AsyncWatchHandle)
        await self.files.write(folder + "/nested/file.txt", "watched")
        await asyncio.wait_for(seen.wait(), DEADLINE)
        written = [e for e in events if e.type == FilesystemEventType.WRITE][0]
        self.assertEqual(written.entry.path, os.path.join(self.work, folder, "nested", "file.txt"))
        await handle.stop()
        self.assertEqual(exits, [None])

    async def test_a_watch_ends_at_its_timeout(self):
        ended = asyncio.Event()
        exits = []

        def on_exit(error):
            exits.append(error)
            ended.set()

        await self.files.watch_dir(".", on_event=lambda event: None, on_exit=on_exit, timeout=1)
        await asyncio.wait_for(ended.wait(), DEADLINE)
        self.assertIsInstance(exits[0], TimeoutException)


class AsyncCommandsTests(AsyncSandboxCase):
    folder = "async-commands"

    async def asyncSetUp(self):
        await super().asyncSetUp()
        self.commands = self.box.commands

    async def test_run_streams_to_sync_and_async_callbacks(self):
        seen = []

        async def on_stdout(text):
            await asyncio.sleep(0)
            seen.append(("out", text))

        result = await self.commands.run(
            'echo "$GREETING"; echo err >&2', envs={"GREETING": "hi"}, on_stdout=on_stdout, on_stderr=lambda text: seen.append(("err", text))
        )
        self.assertEqual((result.stdout, result.stderr, result.exit_code), ("hi\n", "err\n", 0))
        self.assertEqual(sorted(seen), [("err", "err\n"), ("out", "hi\n")])
        with self.assertRaises(CommandExitException) as raised:
            await self.commands.run("echo no >&2; exit 7")
        self.assertEqual((raised.exception.exit_code, raised.exception.stderr), (7, "no\n"))
        with self.assertRaises(TimeoutException):
            await self.commands.run("sleep 300", timeout=1)

    async def test_background_handles(self):
        gate = os.path.join(self.work, unique("gate"))
        out = []
        handle = await self.commands.run(
            "echo started; while [ ! -e %s ]; do sleep 0.05; done; echo finished" % gate, background=True, on_stdout=out.append
        )
        self.assertIsInstance(handle, AsyncCommandHandle)
        self.assertIn(handle.pid, [p.pid for p in await self.commands.list()])
        self.assertIsNone(handle.exit_code)
        open(gate, "w").close()
        result = await handle.wait()
        self.assertEqual((result.stdout, handle.stdout, handle.exit_code), ("started\nfinished\n", "started\nfinished\n", 0))
        self.assertEqual("".join(out), "started\nfinished\n")

        sleeper = await self.commands.run("sleep 300", background=True)
        self.assertTrue(await sleeper.kill())
        with self.assertRaises(CommandExitException):
            await sleeper.wait()
        self.assertEqual((sleeper.exit_code, sleeper.error), (-1, "signal: killed"))
        self.assertFalse(await self.commands.kill(sleeper.pid))
        self.assertEqual(await self.commands.list(), [])

    async def test_a_cancelled_run_ends_its_command(self):
        started = asyncio.Event()
        task = asyncio.ensure_future(self.commands.run("echo go; sleep 300", on_stdout=lambda text: started.set()))
        await asyncio.wait_for(started.wait(), DEADLINE)
        task.cancel()
        with self.assertRaises(asyncio.CancelledError):
            await task
        self.assertEqual(await self.commands.list(), [])
        self.assertEqual((await self.commands.run("echo after")).stdout, "after\n")


if __name__ == "__main__":
    unittest.main()
