"""cellbox as a LangChain tool: any LangChain agent or chat model with tool
calling can run Python in a sandboxed, stateful kernel.

    pip install cellbox langchain-core
    python examples/sdk/langchain_tool.py

With OPENAI_API_KEY set and `pip install langchain-openai`, a chat model is
given the tool and asked a question; without it, the tool is called directly.
"""

import os

from langchain_core.tools import StructuredTool

from cellbox import Sandbox
from tool_loop import observation  # the same text a plain loop gives the model


def python_tool(sandbox: Sandbox) -> StructuredTool:
    """A `python` tool that runs its `code` argument in `sandbox` (state persists between calls)."""

    def run_python(code: str) -> str:
        """Run Python code in a persistent kernel; returns what it printed, its last value, or its error."""
        return observation(sandbox.run_code(code, timeout=60))

    return StructuredTool.from_function(run_python, name="python")


def ask(question: str, sandbox: Sandbox) -> str:
    """A chat model with the tool, looping until it answers without a tool call."""
    from langchain_core.messages import HumanMessage, ToolMessage
    from langchain_openai import ChatOpenAI

    tool = python_tool(sandbox)
    model = ChatOpenAI(model=os.environ.get("OPENAI_MODEL", "gpt-4o-mini")).bind_tools([tool])
    messages = [HumanMessage(question)]
    for _ in range(8):
        reply = model.invoke(messages)
        messages.append(reply)
        if not reply.tool_calls:
            return reply.content
        for call in reply.tool_calls:
            messages.append(ToolMessage(tool.invoke(call["args"]), tool_call_id=call["id"]))
    return "(no answer after 8 steps)"


if __name__ == "__main__":
    with Sandbox() as sandbox:
        if os.environ.get("OPENAI_API_KEY"):
            print(ask("What is the 20th Fibonacci number? Compute it.", sandbox))
        else:
            tool = python_tool(sandbox)
            print(tool.invoke({"code": "import math\nprint(math.factorial(20))"}))
