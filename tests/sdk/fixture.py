"""What the SDK tests share: the interpreter their kernels use, a workspace
with a planted secret, unique names, and an async test case that makes one
`AsyncSandbox` per test. (Not a test module: `test_*.py` files import it.)
"""
import os
import shutil
import sys
import tempfile
import unittest
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))

from cellbox import AsyncSandbox  # noqa: E402

PYTHON = os.environ.get("CELLBOX_TEST_PYTHON", sys.executable)
#: How long a test waits for something that should happen at once.
DEADLINE = 30.0


def unique(prefix):
    return "%s-%s" % (prefix, uuid.uuid4().hex[:8])


class Workspace:
    """A sandbox's folder (`work`), a home beside it (`home`) holding
    `~/.ssh/id_rsa` with `secret` in it, and a folder outside both (`outside`)."""

    def __init__(self, name, secret="secret\n"):
        self.work = tempfile.mkdtemp(prefix="cellbox-sdk-%s-" % name)
        self.outside = tempfile.mkdtemp(prefix="cellbox-sdk-outside-")
        self.home = tempfile.mkdtemp(prefix="cellbox-sdk-home-")
        os.makedirs(os.path.join(self.home, ".ssh"))
        with open(os.path.join(self.home, ".ssh", "id_rsa"), "w") as key:
            key.write(secret)

    def remove(self):
        for folder in (self.work, self.outside, self.home):
            shutil.rmtree(folder, ignore_errors=True)


class AsyncSandboxCase(unittest.IsolatedAsyncioTestCase):
    """A fresh `AsyncSandbox` per test in a folder of the class's own
    (`self.work`), killed after it; `options` are its extra arguments."""

    folder = "async"
    options = {}

    @classmethod
    def setUpClass(cls):
        cls.work = tempfile.mkdtemp(prefix="cellbox-sdk-%s-" % cls.folder)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.work, ignore_errors=True)

    async def asyncSetUp(self):
        self.box = await AsyncSandbox.create(python=PYTHON, cwd=self.work, **self.options)

    async def asyncTearDown(self):
        await self.box.kill()
