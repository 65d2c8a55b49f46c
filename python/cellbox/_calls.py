"""What `sandbox.files` and `sandbox.commands` share: the sandbox's
transport, and the errors a call ends with.

They hold the transport, not the sandbox (only a weak reference to it), so
that a sandbox nobody holds is still collected and its engine stopped.
"""

import os
import weakref
from typing import Any, Dict, Optional

from ._transport import EngineGone, Transport
from .exceptions import InvalidArgumentException

__all__ = ["Calls", "check_path"]


class Calls:
    """Requests to one sandbox's engine, and the exceptions their failures become."""

    def __init__(self, sandbox: Any) -> None:
        self._transport: Transport = sandbox._transport
        self._sandbox = weakref.ref(sandbox)

    def _gone(self, error: EngineGone) -> Exception:
        """E2B's error for a sandbox killed on purpose (see `Sandbox.run_code`), else why the engine stopped."""
        sandbox = self._sandbox()
        return sandbox._gone(error) if sandbox is not None else error

    def _request(self, method: str, params: Optional[Dict[str, Any]] = None) -> Any:
        try:
            return self._transport.request(method, params)
        except EngineGone as error:
            raise self._gone(error) from error

    async def _request_async(self, method: str, params: Optional[Dict[str, Any]] = None) -> Any:
        try:
            return await self._transport.request_async(method, params)
        except EngineGone as error:
            raise self._gone(error) from error


def check_path(path: Any, what: str = "path") -> str:
    """`path` as the engine takes it: a `str` (or an `os.PathLike` of one);
    anything else is an `InvalidArgumentException` that says so."""
    if isinstance(path, os.PathLike):
        path = os.fspath(path)
    if not isinstance(path, str):
        raise InvalidArgumentException("%s must be a str (or os.PathLike), not %s" % (what, type(path).__name__))
    return path
