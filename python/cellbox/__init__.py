"""cellbox's Python SDK: `from cellbox import Sandbox`, a local code
interpreter whose API is E2B Code Interpreter's (`e2b_code_interpreter`), so
code written for it runs after changing only the import.

    from cellbox import Sandbox

    with Sandbox() as sandbox:
        execution = sandbox.run_code("1 + 1")
        print(execution.text)  # 2

`AsyncSandbox` is the same for asyncio (`await AsyncSandbox.create()`).
The kernels run on this machine, started by the `cellbox` binary installed
with this package, under cellbox's OS sandbox.
"""

from ._transport import EngineGone
from .exceptions import *  # noqa: F401,F403 - E2B exports its exceptions at the top level
from .exceptions import __all__ as _exceptions
from .models import *  # noqa: F401,F403
from .models import __all__ as _models
from .sandbox import AsyncSandbox, Sandbox
from ._branches import SnapshotInfo
from ._e2b_types import *  # noqa: F401,F403 - the rest of E2B's top-level names
from ._e2b_types import __all__ as _e2b_types
from ._cloud import *  # noqa: F401,F403
from ._cloud import __all__ as _cloud_names
from .filesystem import (
    AsyncWatchHandle,
    EntryInfo,
    FilesystemEvent,
    FilesystemEventType,
    FileType,
    WatchHandle,
    WriteEntry,
    WriteInfo,
)
from .commands import (
    AsyncCommandHandle,
    CommandHandle,
    CommandResult,
    ProcessInfo,
    PtyOutput,
    PtySize,
    Stderr,
    Stdout,
)

# `sandbox.files` and `sandbox.commands` models, at the top level as E2B has them.
_files_and_commands = [
    "FileType",
    "EntryInfo",
    "WriteInfo",
    "WriteEntry",
    "FilesystemEvent",
    "FilesystemEventType",
    "WatchHandle",
    "AsyncWatchHandle",
    "CommandResult",
    "CommandHandle",
    "AsyncCommandHandle",
    "ProcessInfo",
    "Stdout",
    "Stderr",
    "PtyOutput",
    "PtySize",
]

__all__ = ["Sandbox", "AsyncSandbox", "EngineGone", "SnapshotInfo"] + list(_models) + list(_exceptions) + _files_and_commands
__all__ += list(_e2b_types) + list(_cloud_names)
