"""Branching a sandbox's Python contexts, cellbox's own beyond E2B's API:
`fork_code_context` copies a context's kernel (every variable and object,
in milliseconds) into a new context, `undo` takes back runs made with
`run_code(..., checkpoint=True)`, and `snapshot`/`restore` save a context's
variables to a file and bring them back, later or in another sandbox.

Python contexts on Linux; other contexts and systems raise
`SandboxException` with the reason."""

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Union

from . import _wire
from ._outputs import context_id
from .models import Context

__all__ = ["AsyncBranches", "SnapshotInfo", "SyncBranches"]


@dataclass
class SnapshotInfo:
    """What `snapshot` saved or `restore` restored."""

    #: The snapshot file.
    path: str
    #: The names saved, or restored.
    names: List[str]
    #: Names left out, each with the reason: {"name": ..., "reason": ...}
    #: (after `restore`, also the settings' magic lines that failed to replay).
    left_out: List[Dict[str, str]] = field(default_factory=list)
    #: The file's size (`snapshot` only).
    bytes: Optional[int] = None
    #: The settings magics had made, replayed as these magic lines, e.g.
    #: ["%precision 2"] (`restore` only).
    settings: List[str] = field(default_factory=list)

    @classmethod
    def from_json(cls, answer: Dict[str, Any]) -> "SnapshotInfo":
        return cls(
            answer["path"],
            list(answer.get("names", [])),
            list(answer.get("left_out", [])),
            answer.get("bytes"),
            list(answer.get("settings", [])),
        )


def _params(context: Union[None, Context, str], **more: Any) -> Dict[str, Any]:
    params = {key: value for key, value in more.items() if value is not None}
    if context is not None:
        params["context_id"] = context_id(context)
    return params


class SyncBranches:
    """The branch methods of `Sandbox`."""

    _transport: Any

    def fork_code_context(self, context: Union[None, Context, str] = None, name: Optional[str] = None) -> Context:
        """A new context whose kernel is a copy of `context`'s (default: the
        Python one) as it is now, after its running code; both then go on
        independently. Threads the code started are not copied."""
        answer = self._transport.request(_wire.FORK_CONTEXT, _params(context, name=name))
        return Context.from_json(answer["context"])

    def undo(self, context: Union[None, Context, str] = None, steps: int = 1) -> int:
        """Put `context`'s kernel back to its state before its last `steps`
        runs made with `checkpoint=True`; how many more can be undone."""
        return int(self._transport.request(_wire.UNDO, _params(context, steps=steps))["left"])

    def snapshot(self, path: str, context: Union[None, Context, str] = None) -> SnapshotInfo:
        """Save `context`'s variables (functions and classes defined in code
        too) to `path`, relative to the context's folder."""
        return SnapshotInfo.from_json(self._transport.request(_wire.SNAPSHOT, _params(context, path=path)))

    def restore(self, path: str, context: Union[None, Context, str] = None) -> SnapshotInfo:
        """Load the variables saved at `path` into `context` (started if needed)."""
        return SnapshotInfo.from_json(self._transport.request(_wire.RESTORE, _params(context, path=path)))


class AsyncBranches:
    """The branch methods of `AsyncSandbox`, awaited."""

    _transport: Any

    async def fork_code_context(self, context: Union[None, Context, str] = None, name: Optional[str] = None) -> Context:
        answer = await self._transport.request_async(_wire.FORK_CONTEXT, _params(context, name=name))
        return Context.from_json(answer["context"])

    async def undo(self, context: Union[None, Context, str] = None, steps: int = 1) -> int:
        return int((await self._transport.request_async(_wire.UNDO, _params(context, steps=steps)))["left"])

    async def snapshot(self, path: str, context: Union[None, Context, str] = None) -> SnapshotInfo:
        return SnapshotInfo.from_json(await self._transport.request_async(_wire.SNAPSHOT, _params(context, path=path)))

    async def restore(self, path: str, context: Union[None, Context, str] = None) -> SnapshotInfo:
        return SnapshotInfo.from_json(await self._transport.request_async(_wire.RESTORE, _params(context, path=path)))
