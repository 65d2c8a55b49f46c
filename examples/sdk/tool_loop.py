"""A plain agent tool loop on cellbox's Python SDK.

A model answers with Python to run; the code runs in a sandboxed, stateful
kernel; what it printed, returned or raised goes back to the model as the
next message, until the model answers without code. This is the loop agent
frameworks wrap, written out.

    python examples/sdk/tool_loop.py "What is the mean of the squares of 1..10?"

With OPENAI_API_KEY set (and `pip install openai`), the model is
OPENAI_MODEL (default gpt-4o-mini) at OPENAI_BASE_URL; without it, a
scripted model stands in, so the example runs anywhere.
"""

import os
import sys

from cellbox import Execution, Sandbox

SYSTEM = (
    "You solve tasks by writing Python. Answer with exactly one ```python block to run it, "
    "or with a plain-text final answer. State persists between blocks."
)


def observation(execution: Execution) -> str:
    """What the model reads after its code ran: output, the value, the error."""
    parts = []
    if execution.logs.stdout:
        parts.append("stdout:\n" + "".join(execution.logs.stdout))
    if execution.logs.stderr:
        parts.append("stderr:\n" + "".join(execution.logs.stderr))
    if execution.text is not None:
        parts.append("value: " + execution.text)
    if execution.error is not None:
        parts.append("error: %s: %s" % (execution.error.name, execution.error.value))
    return "\n".join(parts) or "(no output)"


def code_in(reply: str):
    """The Python block of a model's reply, or None for a final answer."""
    start = reply.find("```python")
    if start < 0:
        return None
    end = reply.find("```", start + 9)
    return reply[start + 9 : end if end >= 0 else None].strip()


def scripted_model(messages):
    """Stands in for a model: two steps of code, then an answer from what came back."""
    steps = [
        "```python\nsquares = [n * n for n in range(1, 11)]\nprint(len(squares), 'squares')\n```",
        "```python\nsum(squares) / len(squares)\n```",
    ]
    turns = sum(1 for message in messages if message["role"] == "assistant")
    if turns < len(steps):
        return steps[turns]
    return "The mean is " + messages[-1]["content"].rsplit("value: ", 1)[-1].strip() + "."


def openai_model(messages):
    from openai import OpenAI  # only when a key is configured

    client = OpenAI()
    reply = client.chat.completions.create(model=os.environ.get("OPENAI_MODEL", "gpt-4o-mini"), messages=messages)
    return reply.choices[0].message.content or ""


def solve(task: str, model=scripted_model, sandbox: Sandbox = None, max_steps: int = 8) -> str:
    """Run the loop for `task`; the final answer."""
    owned = sandbox is None
    sandbox = sandbox or Sandbox()
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": task}]
    try:
        for _ in range(max_steps):
            reply = model(messages)
            messages.append({"role": "assistant", "content": reply})
            code = code_in(reply)
            if code is None:
                return reply
            execution = sandbox.run_code(code, timeout=60)
            messages.append({"role": "user", "content": observation(execution)})
        return "(no answer after %d steps)" % max_steps
    finally:
        if owned:
            sandbox.kill()


if __name__ == "__main__":
    question = " ".join(sys.argv[1:]) or "What is the mean of the squares of 1..10?"
    print(solve(question, openai_model if os.environ.get("OPENAI_API_KEY") else scripted_model))
