"""The models of `sandbox.commands` (E2B's names, fields and order);
`cellbox.commands` has the API and exports these too. They import nothing
from the package, so `cellbox.exceptions` can build `CommandExitException`
on `CommandResult` as E2B does."""

from dataclasses import dataclass
from typing import Dict, List, Optional

__all__ = ["CommandResult", "ProcessInfo", "Stdout", "Stderr", "PtyOutput", "PtySize"]

Stdout = str
"""A chunk of a command's stdout."""
Stderr = str
"""A chunk of a command's stderr."""
PtyOutput = bytes
"""PTY output (there is no PTY here; the name exists for code that imports it)."""


@dataclass
class PtySize:
    """A PTY's size (there is no PTY here; the class exists for code that imports it)."""

    rows: int
    cols: int


@dataclass
class CommandResult:
    """A finished command: all its stdout and stderr, its exit code, and
    `error` (why it failed, when it did not simply exit non-zero)."""

    stderr: str
    stdout: str
    exit_code: int
    error: Optional[str]


@dataclass
class ProcessInfo:
    """A running command as `commands.list()` shows it: the shell's `pid`,
    `cmd` the shell and `args` its arguments (`["-c", command]`)."""

    pid: int
    tag: Optional[str]
    cmd: str
    args: List[str]
    envs: Dict[str, str]
    cwd: Optional[str]
