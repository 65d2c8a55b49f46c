"""Cell helpers that call back into the host: completion, agent, tool, and
the fan-out helpers parallel and pipeline (with async variants).

While a call is in flight the host pauses the cell's time budget and starts a
fresh window when it returns, so a long fan-out is not cut by the timeout;
the cell's own work still counts. The model reads these docstrings.
"""
import contextvars
import threading

from .bridge import BRIDGE, BridgeError
from .schema_check import SchemaError, parse_json, validate

# parallel() without max_concurrency: the host limits concurrency too.
_DEFAULT_CONCURRENCY = 8


def _args(**fields):
    return {key: value for key, value in fields.items() if value is not None}


def _shaped(text, schema):
    return text if schema is None else validate(parse_json(text), schema)


def _completion_args(prompt, model, system, schema, max_tokens, temperature):
    return _args(
        prompt=str(prompt), model=model, system=system, schema=schema, max_tokens=max_tokens, temperature=temperature
    )


def _completion_value(value, schema):
    text = value.get("text", "") if isinstance(value, dict) else value
    return _shaped(text, schema)


def completion(prompt, *, model=None, system=None, schema=None, max_tokens=None, temperature=None):
    """Ask the host's model once; return its text. With `schema` (a JSON
    Schema dict) the answer is parsed and validated and the object returned
    (SchemaError names the failing path). Raises BridgeError on host errors."""
    value = BRIDGE.call("completion", _completion_args(prompt, model, system, schema, max_tokens, temperature))
    return _completion_value(value, schema)


async def acompletion(prompt, *, model=None, system=None, schema=None, max_tokens=None, temperature=None):
    """`await acompletion(...)`: completion() for coroutines."""
    args = _completion_args(prompt, model, system, schema, max_tokens, temperature)
    return _completion_value(await BRIDGE.call_async("completion", args), schema)


def _agent_args(prompt, agent, model, label, schema, handle):
    return _args(prompt=str(prompt), agent=agent, model=model, label=label, schema=schema, handle=bool(handle))


def _agent_value(value, agent, schema, handle):
    if not isinstance(value, dict):
        value = {"text": "" if value is None else str(value)}
    text = value.get("text", "")
    data = _shaped(text, schema)
    if not handle:
        return data
    node = {
        "text": text,
        "output": value.get("output", text),
        "handle": value.get("handle"),
        "id": value.get("id"),
        "agent": value.get("agent", agent),
    }
    if schema is not None:
        node["data"] = data
    return node


def agent(prompt, *, agent="task", model=None, label=None, schema=None, handle=False):
    """Run one sub-agent on `prompt` and return its final text (the parsed,
    validated object with `schema`). With handle=True return a node dict
    {"text", "output", "handle", "id", "agent"} (+ "data" with schema) whose
    `handle` is an agent://<id> URI the host can read back."""
    value = BRIDGE.call("agent", _agent_args(prompt, agent, model, label, schema, handle))
    return _agent_value(value, agent, schema, handle)


async def aagent(prompt, *, agent="task", model=None, label=None, schema=None, handle=False):
    """`await aagent(...)`: agent() for coroutines."""
    value = await BRIDGE.call_async("agent", _agent_args(prompt, agent, model, label, schema, handle))
    return _agent_value(value, agent, schema, handle)


def tool(name, **args):
    """Call a tool the host exposes by `name` with keyword arguments; return its result."""
    return BRIDGE.call("tool", {"name": str(name), "args": args})


async def atool(name, **args):
    """`await atool(...)`: tool() for coroutines."""
    return await BRIDGE.call_async("tool", {"name": str(name), "args": args})


def parallel(thunks, *, max_concurrency=None):
    """Run zero-argument callables concurrently (threads, each in a copy of
    the caller's context); return their results in input order. If any
    raised, the exception of the lowest index is re-raised."""
    thunks = list(thunks)
    limit = max(1, int(max_concurrency or _DEFAULT_CONCURRENCY))
    results = [None] * len(thunks)
    errors = {}
    slots = threading.Semaphore(limit)
    finished = threading.Condition()
    done = [0]

    def run(index, thunk, context):
        try:
            results[index] = context.run(thunk)
        except BaseException as error:  # re-raised in the caller
            errors[index] = error
        finally:
            slots.release()
            with finished:
                done[0] += 1
                finished.notify_all()

    for index, thunk in enumerate(thunks):
        slots.acquire()
        if errors:
            slots.release()
            break
        worker = threading.Thread(
            target=run, args=(index, thunk, contextvars.copy_context()), name="cellbox-parallel", daemon=True
        )
        worker.start()
    else:
        index = len(thunks)
    started = index if errors else len(thunks)
    with finished:
        while done[0] < started:
            finished.wait()
    if errors:
        raise errors[min(errors)]
    return results


def pipeline(items, *stages):
    """Pass every item through each stage in turn, each stage applied to all
    items concurrently (parallel) and finished before the next begins."""
    items = list(items)
    for stage in stages:
        items = parallel([_bind(stage, item) for item in items])
    return items


def _bind(function, item):
    return lambda: function(item)


async def aparallel(awaitables, *, max_concurrency=None):
    """`await aparallel([...])`: run coroutines (or zero-argument coroutine
    functions) concurrently, at most `max_concurrency` at a time; results in
    input order, the lowest-index exception re-raised."""
    import asyncio

    limit = asyncio.Semaphore(max(1, int(max_concurrency or _DEFAULT_CONCURRENCY)))

    async def one(item):
        async with limit:
            return await (item() if callable(item) else item)

    outcomes = await asyncio.gather(*(one(item) for item in awaitables), return_exceptions=True)
    for outcome in outcomes:
        if isinstance(outcome, BaseException):
            raise outcome
    return list(outcomes)


async def apipeline(items, *stages):
    """`await apipeline(items, *stages)`: pipeline() with async stages."""
    items = list(items)
    for stage in stages:
        items = await aparallel([_bind(stage, item) for item in items])
    return items


__all__ = [
    "completion",
    "acompletion",
    "agent",
    "aagent",
    "tool",
    "atool",
    "parallel",
    "aparallel",
    "pipeline",
    "apipeline",
    "BridgeError",
    "SchemaError",
]
