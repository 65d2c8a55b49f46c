"""The SDK's examples (examples/sdk/) run as written, on the real engine: the
plain tool loop with its scripted model, and the LangChain tool (real
langchain-core from PyPI, called as an agent would call it).
"""
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "examples", "sdk"))

import langchain_tool  # noqa: E402
import tool_loop  # noqa: E402

from cellbox import Sandbox  # noqa: E402

PYTHON = os.environ.get("CELLBOX_TEST_PYTHON", sys.executable)


class ExampleTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.box = Sandbox(python=PYTHON)

    @classmethod
    def tearDownClass(cls):
        cls.box.kill()

    def test_the_tool_loop_answers_from_what_its_code_computed(self):
        answer = tool_loop.solve("What is the mean of the squares of 1..10?", sandbox=self.box)
        self.assertEqual(answer, "The mean is 38.5.")

    def test_the_langchain_tool_runs_code_and_keeps_state(self):
        tool = langchain_tool.python_tool(self.box)
        self.assertEqual(tool.name, "python")
        self.assertIn("code", tool.args_schema.model_json_schema()["properties"])
        self.assertEqual(tool.invoke({"code": "kept = 6 * 7\nprint('set')"}), "stdout:\nset\n")
        self.assertEqual(tool.invoke({"code": "kept"}), "value: 42")
        self.assertEqual(tool.invoke({"code": "1/0"}), "error: ZeroDivisionError: division by zero")


if __name__ == "__main__":
    unittest.main()
