"""The exceptions of the E2B-compatible SDK.

Code written for E2B catches `e2b.TimeoutException`,
`e2b_code_interpreter.SandboxException` and so on; for that code to work
against cellbox unchanged, the same class names must exist with the same
inheritance (note that `AuthenticationException`, `BuildException`,
`VolumeException` and `SecretException` are deliberately *not*
`SandboxException`s there, so they are not here either). Classes that have no
meaning for a local engine are still defined, so that `except` clauses naming
them keep importing; cellbox never raises those.

The `format_*` functions build the `TimeoutException`s of `run_code`, so that
every caller words a given timeout the same way.
"""

from typing import Optional

from ._command_models import CommandResult

__all__ = [
    "SandboxException",
    "TimeoutException",
    "InvalidArgumentException",
    "NotEnoughSpaceException",
    "NotFoundException",
    "FileNotFoundException",
    "SandboxNotFoundException",
    "VolumeNotFoundException",
    "VolumePathNotFoundException",
    "GitUpstreamException",
    "TemplateException",
    "RateLimitException",
    "CommandExitException",
    "AuthenticationException",
    "GitAuthException",
    "BuildException",
    "FileUploadException",
    "VolumeException",
    "SecretException",
    "SecretNotFoundException",
    "SandboxNotRunningException",
    "SandboxUnreachableException",
    "GuestUnresponsiveException",
    "ServiceBusyException",
    "DockerfileSyntaxError",
    "NotLocalException",
    "PermissionDeniedException",
    "EngineTooOldException",
]


class SandboxException(Exception):
    """Base class of cellbox's sandbox errors; raised as is when the engine reports a failure no subclass describes."""


class TimeoutException(SandboxException):
    """Raised when an execution outlives run_code's `timeout`, a request outlives `request_timeout`, or the sandbox stops mid-request."""


class InvalidArgumentException(SandboxException):
    """Raised for arguments cellbox cannot act on, e.g. both `language` and `context` passed to run_code."""


class NotEnoughSpaceException(SandboxException):
    """Raised when a write inside the sandbox fails because the disk is full."""


class NotFoundException(SandboxException):
    """Raised when a code context (or other resource) does not exist; catch this to cover every subclass below."""


class FileNotFoundException(NotFoundException):
    """Raised when a path given to the sandbox's files API does not exist."""


class SandboxNotFoundException(NotFoundException):
    """Raised when a sandbox id refers to no running cellbox sandbox, e.g. after it was killed."""


class VolumeNotFoundException(NotFoundException):
    """Not raised by cellbox (E2B volumes have no local equivalent)."""


class VolumePathNotFoundException(NotFoundException):
    """Not raised by cellbox (E2B volumes have no local equivalent)."""


class GitUpstreamException(SandboxException):
    """Not raised by cellbox (E2B's git helper has no local equivalent)."""


class TemplateException(SandboxException):
    """Not raised by cellbox (there are no sandbox templates locally)."""


class RateLimitException(SandboxException):
    """Not raised by cellbox (there is no remote API to rate-limit)."""


class CommandExitException(SandboxException, CommandResult):
    """Raised by `commands.run` when the command exits with a non-zero code;
    it is the command's `CommandResult` too, as in E2B."""

    # An exception is equal only to itself, and hashable (sets of exceptions in
    # logging and exception-group code), not compared field by field as a
    # `CommandResult` is.
    __eq__ = SandboxException.__eq__
    __hash__ = SandboxException.__hash__

    # The same parameters, in the same order, as E2B's CommandResult, so code
    # that builds one or reads `exit_code` / `stderr` from it works unchanged.
    def __init__(self, stderr: str, stdout: str, exit_code: int, error: Optional[str] = None) -> None:
        # Passing the fields to Exception keeps `args` complete, which pickling
        # (e.g. across multiprocessing) needs to rebuild the exception.
        super().__init__(stderr, stdout, exit_code, error)
        self.stderr = stderr
        self.stdout = stdout
        self.exit_code = exit_code
        self.error = error

    def __str__(self) -> str:
        return f"command exited with code {self.exit_code}; stderr:\n{self.stderr}"

    def __repr__(self) -> str:
        return f"CommandExitException(stderr={self.stderr!r}, stdout={self.stdout!r}, exit_code={self.exit_code!r}, error={self.error!r})"


class AuthenticationException(Exception):
    """Not raised by cellbox (a local engine needs no API key)."""


class GitAuthException(AuthenticationException):
    """Not raised by cellbox (E2B's git helper has no local equivalent)."""


class BuildException(Exception):
    """Not raised by cellbox (there are no template builds locally)."""


class FileUploadException(BuildException):
    """Not raised by cellbox (there are no template builds locally)."""


class VolumeException(Exception):
    """Not raised by cellbox (E2B volumes have no local equivalent)."""


class SecretException(Exception):
    """Not raised by cellbox (E2B secrets have no local equivalent)."""


class SecretNotFoundException(SecretException):
    """Not raised by cellbox (E2B secrets have no local equivalent)."""


class SandboxNotRunningException(TimeoutException):
    """Raised when the sandbox's engine has stopped on its own (it crashed or
    was killed from outside) while a call needed it."""


class SandboxUnreachableException(TimeoutException):
    """Not raised by cellbox (a local engine is never merely unreachable)."""


class GuestUnresponsiveException(SandboxException):
    """Not raised by cellbox (it has no paused VMs to resume)."""


class ServiceBusyException(Exception):
    """Not raised by cellbox (no cloud service places its sandboxes)."""


class DockerfileSyntaxError(ValueError):
    """Not raised by cellbox (it builds no templates)."""


def format_request_timeout_error() -> TimeoutException:
    """The error for a request to the engine that took longer than `request_timeout`."""
    return TimeoutException("the request to the sandbox timed out; raise 'request_timeout' to wait longer")


def format_execution_timeout_error() -> TimeoutException:
    """The error for a run_code execution that took longer than its `timeout`."""
    return TimeoutException("the execution timed out; raise run_code's 'timeout' (0 means no limit) to wait longer")


def format_sandbox_killed_error() -> TimeoutException:
    """The error for a sandbox that stopped while a request was waiting on it."""
    # Callers match on "sandbox was killed while the request was in progress"
    # (E2B's tests do), so that phrase must stay intact.
    return TimeoutException(
        "The sandbox was killed while the request was in progress, because it timed out or was killed on purpose; "
        "a longer sandbox lifetime can be set with 'timeout' at creation or with set_timeout()"
    )


class NotLocalException(SandboxException, AttributeError):
    """cellbox's own: raised when code reaches a part of E2B's SDK that only
    its cloud serves (`Template`, `Sandbox.list`, …), saying what to use
    instead. It is an `AttributeError` too, so `hasattr` says False."""


class PermissionDeniedException(SandboxException, PermissionError):
    """cellbox's own: raised when the sandbox policy refuses a call, such as a
    read of a secret location or a write outside the writable folders (the
    message says which rule, and how to lift it). It is a `PermissionError` too."""


class EngineTooOldException(SandboxException, NotImplementedError):
    """cellbox's own: raised when the engine does not know a method this SDK
    sends: the engine (the `cellbox` binary, or the `cellbox serve` server of
    a remote sandbox) is older than the SDK."""
