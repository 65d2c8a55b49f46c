"""cellbox's branch calls on the SDK, against the real engine: fork a code
context, undo runs made with `checkpoint=True`, snapshot a context's
variables to a file and restore them in another sandbox."""
import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))

from fixture import PYTHON, AsyncSandboxCase  # noqa: E402

from cellbox import InvalidArgumentException, NotFoundException, Sandbox, SandboxException, SnapshotInfo  # noqa: E402


def value(box, code, context=None):
    execution = box.run_code(code, context=context)
    assert execution.error is None, execution.error
    return execution.text


class BranchTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.work = tempfile.mkdtemp(prefix="cellbox-sdk-branches-")
        cls.box = Sandbox(python=PYTHON, cwd=cls.work)

    @classmethod
    def tearDownClass(cls):
        cls.box.kill()
        shutil.rmtree(cls.work, ignore_errors=True)

    def test_a_forked_context_starts_with_the_state_and_then_diverges(self):
        source = self.box.create_code_context(name="fork-source")
        value(self.box, "rows = [1, 2]\nimport threading, time\n"
              "threading.Thread(target=time.sleep, args=(60,), daemon=True).start()", source)
        copy = self.box.fork_code_context(source, name="fork-copy")
        self.assertEqual(copy.id, "fork-copy")
        self.assertEqual(copy.language, "python")
        value(self.box, "rows.append(3)", copy)
        self.assertEqual(value(self.box, "rows", copy), "[1, 2, 3]")
        self.assertEqual(value(self.box, "rows", source), "[1, 2]")
        self.assertIn("fork-copy", [context.id for context in self.box.list_code_contexts()])
        with self.assertRaises(InvalidArgumentException):
            self.box.fork_code_context(source, name="fork-copy")

    def test_a_javascript_context_cannot_be_forked(self):
        with self.assertRaises(InvalidArgumentException) as raised:
            self.box.fork_code_context("javascript", name="js-copy")
        self.assertIn("only Python contexts", str(raised.exception))

    def test_undo_takes_back_checkpointed_runs(self):
        context = self.box.create_code_context(name="undo")
        value(self.box, "total = 10", context)
        self.box.run_code("total += 5", context=context, checkpoint=True)
        self.box.run_code("total = None", context=context, checkpoint=True)
        self.assertEqual(self.box.undo(context, steps=2), 0)
        self.assertEqual(value(self.box, "total", context), "10")
        with self.assertRaises(NotFoundException):
            self.box.undo(context)

    def test_a_snapshot_restores_in_another_sandbox(self):
        context = self.box.create_code_context(name="snap")
        value(self.box, "def double(x):\n    return 2 * x\nsaved = {'k': double(21)}\nlines = (x for x in 'ab')", context)
        value(self.box, "%precision 3", context)
        info = self.box.snapshot("state.cellbox", context)
        self.assertIsInstance(info, SnapshotInfo)
        self.assertEqual(sorted(info.names), ["double", "saved"])
        self.assertEqual([entry["name"] for entry in info.left_out], ["lines"])
        self.assertGreater(info.bytes, 0)
        self.assertTrue(os.path.exists(os.path.join(self.work, "state.cellbox")))
        with Sandbox(python=PYTHON, cwd=self.work) as other:
            restored = other.restore("state.cellbox")
            self.assertEqual(sorted(restored.names), ["double", "saved"])
            self.assertEqual(restored.settings, ["%precision 3"])
            self.assertEqual(restored.left_out, [])
            self.assertEqual(value(other, "double(4), saved, 1/3"), "(8, {'k': 42}, 0.333)")
            with self.assertRaises(SandboxException) as raised:
                other.restore("missing.cellbox")
            self.assertIn("missing.cellbox", str(raised.exception))


class AsyncBranchTests(AsyncSandboxCase):
    folder = "async-branches"

    async def test_fork_undo_and_snapshot_are_awaited_too(self):
        await self.box.run_code("n = 1")
        copy = await self.box.fork_code_context(name="a-copy")
        await self.box.run_code("n = 2", context=copy, checkpoint=True)
        self.assertEqual(await self.box.undo(copy), 0)
        self.assertEqual((await self.box.run_code("n", context=copy)).text, "1")
        info = await self.box.snapshot("a.cellbox", copy)
        self.assertEqual(info.names, ["n"])
        restored = await self.box.restore("a.cellbox")
        self.assertEqual(restored.names, ["n"])
        self.assertEqual(restored.settings, [])


if __name__ == "__main__":
    unittest.main()
