"""How `run_code`'s output notifications become its `Execution`, and the
caller's callbacks run, in arrival order."""

import time
from typing import Any, Dict, List, Optional, Tuple, Union

from .models import Context, Execution, ExecutionError, OutputMessage, Result

__all__ = ["Handlers", "context_id"]


class Handlers:
    """Builds the `Execution` from `output` notifications and calls the
    caller's callbacks in arrival order; `output` returns what the callback
    returned, for an async caller to await."""

    def __init__(self, execution: Execution, on_stdout: Any, on_stderr: Any, on_result: Any, on_error: Any) -> None:
        self.execution = execution
        self.callbacks: Dict[str, Any] = {"stdout": on_stdout, "stderr": on_stderr, "result": on_result, "error": on_error}

    def output(self, params: Dict[str, Any]) -> Any:
        kind = params.get("type")
        item, stored = self._item(kind, params)
        if stored is not None:
            stored.append(item.line if isinstance(item, OutputMessage) else item)
        callback = self.callbacks.get(kind or "")
        if item is not None and callback is not None:
            return callback(item)
        return None

    def _item(self, kind: Optional[str], params: Dict[str, Any]) -> Tuple[Any, Optional[List[Any]]]:
        """The SDK object an output stands for, and the list of the execution it joins."""
        logs = self.execution.logs
        if kind == "stdout":
            return OutputMessage(params.get("text", ""), time.time_ns(), False), logs.stdout
        if kind == "stderr":
            return OutputMessage(params.get("text", ""), time.time_ns(), True), logs.stderr
        if kind == "result":
            return Result.from_bundle(params.get("bundle") or {}, bool(params.get("is_main_result"))), self.execution.results
        if kind == "error":
            error = ExecutionError(params.get("name", ""), params.get("value", ""), params.get("traceback", ""))
            if self.execution.error is None:  # the first error is the execution's
                self.execution.error = error
            return error, None
        return None, None


def context_id(context: Union[Context, str]) -> str:
    return context if isinstance(context, str) else context.id
