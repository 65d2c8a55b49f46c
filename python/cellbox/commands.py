"""`sandbox.commands`: E2B's commands API (`e2b.Sandbox.commands`) on this machine.

A command runs the way a kernel runs code: inside cellbox's OS sandbox, with
the kernels' environment and process group, and under the same interrupt
and kill handling (each command gets a kernel of its own, which the engine
disposes of once the command is over, ending whatever it left running). The
shell is `/bin/bash -c` where there is one (`/bin/sh` otherwise); the
command's stdin is empty. Relative `cwd`s start at the sandbox's folder.

`timeout` (seconds, default 60; 0 or None: the longest a cell may run, one
hour) bounds the command: past it the command is ended and
`TimeoutException` is raised. A non-zero exit raises `CommandExitException`
(with `stdout`, `stderr`, `exit_code` and `error`), from `run()` and from a
handle's `wait()`. A killed command ends with exit code -1 and error
`signal: killed`. `pid` is the shell's process id.

What differs from E2B: `user` and `request_timeout` are accepted and mean
nothing here; sending stdin (`stdin=True`, `send_stdin`, `close_stdin`,
`stream_input`) is not supported; there is no PTY (`sandbox.pty`).
"""

import asyncio
import inspect
from typing import Any, Callable, Dict, Generator, List, Optional, Tuple

from . import _wire
from ._calls import Calls, check_path
from ._command_models import CommandResult, ProcessInfo, PtyOutput, PtySize, Stderr, Stdout
from ._transport import EngineGone
from .exceptions import (
    CommandExitException,
    InvalidArgumentException,
    NotFoundException,
    SandboxException,
    TimeoutException,
)

__all__ = [
    "CommandResult",
    "ProcessInfo",
    "Stdout",
    "Stderr",
    "PtyOutput",
    "PtySize",
    "CommandHandle",
    "AsyncCommandHandle",
    "Commands",
    "AsyncCommands",
]

_NO_STDIN = (
    "a command's stdin cannot be written here: cellbox runs commands with an empty stdin (/dev/null); "
    "pipe the input in the command itself (e.g. `printf ... | cmd`) or write it to a file first"
)


def _outcome(answer: Dict[str, Any], stdout: List[str], stderr: List[str]) -> Tuple[Optional[CommandResult], Optional[Exception]]:
    """A finished command's result, or the exception its waiter raises."""
    out, err = "".join(stdout), "".join(stderr)
    if answer.get("status") == "timeout":
        return None, TimeoutException(
            "%s; raise the command's 'timeout' (0 means no limit) to wait longer" % (answer.get("error") or "the command timed out")
        )
    exit_code, error = int(answer.get("exit_code", -1)), answer.get("error")
    if exit_code != 0:
        return None, CommandExitException(stderr=err, stdout=out, exit_code=exit_code, error=error)
    return CommandResult(stderr=err, stdout=out, exit_code=exit_code, error=error), None


def _start_params(
    cmd: Any, envs: Optional[Dict[str, str]], cwd: Any, timeout: Optional[float], stdin: Optional[bool]
) -> Dict[str, Any]:
    if not isinstance(cmd, str):
        raise InvalidArgumentException("cmd must be a str, not %s" % type(cmd).__name__)
    if stdin:
        raise InvalidArgumentException("stdin=True is not supported: " + _NO_STDIN)
    params: Dict[str, Any] = {"cmd": cmd}
    if envs:
        if not isinstance(envs, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in envs.items()):
            raise InvalidArgumentException("envs must be a dict of str to str")
        params["envs"] = dict(envs)
    if cwd is not None:
        params["cwd"] = check_path(cwd, "cwd")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout < 0):
        raise InvalidArgumentException("timeout must be 0 or more seconds (0: no limit), not %r" % (timeout,))
    params["timeout"] = float(timeout or 0)
    return params


class _Handle:
    """What both handles keep: the command's ids, its output so far, and how it ended."""

    def __init__(self, commands: Any, pid: int, command_id: int, from_chunk: int, release: bool) -> None:
        self._commands = commands
        self._pid = pid
        self._id = command_id
        #: The index of the next output chunk to ask for.
        self._next_chunk = from_chunk
        #: A handle from `run` is the command's owner: once it has the result, the engine may forget the command.
        self._release = release
        self._stdout: List[str] = []
        self._stderr: List[str] = []
        self._result: Optional[CommandResult] = None
        self._failure: Optional[Exception] = None

    @property
    def pid(self) -> int:
        """The command's process id (the shell's)."""
        return self._pid

    def _wait_params(self) -> Dict[str, Any]:
        return {"id": self._id, "from_chunk": self._next_chunk, "release": self._release}

    def _take(self, params: Dict[str, Any]) -> Tuple[Optional[str], Optional[str]]:
        """Keep one `output` notification; (stdout, None) or (None, stderr)."""
        if isinstance(params.get("chunk"), int):
            self._next_chunk = params["chunk"] + 1
        text = params.get("text", "")
        if params.get("type") == "stderr":
            self._stderr.append(text)
            return None, text
        self._stdout.append(text)
        return text, None

    def _finish(self, answer: Dict[str, Any]) -> None:
        self._result, self._failure = _outcome(answer, self._stdout, self._stderr)

    def _failed(self, error: Exception) -> None:
        """The wait itself failed (the sandbox stopped, the command is unknown)."""
        self._failure = self._commands._gone(error) if isinstance(error, EngineGone) else error

    def send_stdin(self, data: Any, request_timeout: Optional[float] = None) -> Any:
        """Not supported: commands run with an empty stdin."""
        raise SandboxException(_NO_STDIN)

    def close_stdin(self, request_timeout: Optional[float] = None) -> Any:
        """Not supported: commands run with an empty stdin."""
        raise SandboxException(_NO_STDIN)


class CommandHandle(_Handle):
    """A command started with `background=True` (or found with `connect`):
    iterate it for `(stdout, stderr, pty)` tuples as output comes, `wait()`
    for its result, `kill()` it. Iterating raises `TimeoutException` when the
    command timed out; `wait()` also raises `CommandExitException`."""

    def __init__(
        self,
        commands: "Commands",
        pid: int,
        command_id: int,
        from_chunk: int = 0,
        release: bool = True,
        on_stdout: Optional[Callable[[str], Any]] = None,
        on_stderr: Optional[Callable[[str], Any]] = None,
    ) -> None:
        super().__init__(commands, pid, command_id, from_chunk, release)
        self._callbacks = (on_stdout, on_stderr)
        self._source: Optional[Generator[Dict[str, Any], None, Any]] = None
        self._done = False

    def __iter__(self) -> Generator[Tuple[Optional[str], Optional[str], None], None, None]:
        """The command's output chunks as `(stdout, None, None)` or `(None, stderr, None)`."""
        while not self._done:
            if self._source is None:
                self._source = self._commands._transport.stream(_wire.COMMANDS_WAIT, self._wait_params())
            try:
                params = next(self._source)
            except StopIteration as end:
                self._done = True
                self._finish(end.value)
                break
            except Exception as error:
                self._done = True
                self._failed(error)
                break
            except BaseException:
                # Ctrl-C: the wait was dropped; iterating again asks from the next chunk on.
                self._source = None
                raise
            out, err = self._take(params)
            yield out, err, None
        if self._failure is not None and not isinstance(self._failure, CommandExitException):
            raise self._failure

    def wait(
        self,
        on_pty: Optional[Callable[[bytes], Any]] = None,
        on_stdout: Optional[Callable[[str], Any]] = None,
        on_stderr: Optional[Callable[[str], Any]] = None,
    ) -> CommandResult:
        """Wait for the command to end, handing each chunk of output still to
        come to the callbacks (in this thread); its `CommandResult`, or
        `CommandExitException` for a non-zero exit."""
        on_stdout = on_stdout or self._callbacks[0]
        on_stderr = on_stderr or self._callbacks[1]
        for out, err, _ in self:
            if out is not None and on_stdout is not None:
                on_stdout(out)
            elif err is not None and on_stderr is not None:
                on_stderr(err)
        if self._failure is not None:
            raise self._failure
        if self._result is None:
            raise SandboxException("the handle was disconnected; find the command again with commands.connect(pid)")
        return self._result

    def kill(self) -> bool:
        """End the command (and what it started); True once it has ended, False if it was not running."""
        return bool(self._commands._request(_wire.COMMANDS_KILL, {"id": self._id}))

    def disconnect(self) -> None:
        """Stop following the command; it goes on running (`commands.connect(pid)` finds it again)."""
        if self._source is not None:
            self._source.close()
            self._source = None
        self._done = True


class AsyncCommandHandle(_Handle):
    """`CommandHandle` for asyncio: the output goes to the `on_stdout` and
    `on_stderr` given to `run` (in the event loop, awaited when they return an
    awaitable) from the moment it is made; `stdout`, `stderr`, `exit_code`
    and `error` show what has come so far."""

    def __init__(
        self,
        commands: "AsyncCommands",
        pid: int,
        command_id: int,
        from_chunk: int = 0,
        release: bool = True,
        on_stdout: Optional[Callable[[str], Any]] = None,
        on_stderr: Optional[Callable[[str], Any]] = None,
    ) -> None:
        super().__init__(commands, pid, command_id, from_chunk, release)
        self._callbacks = (on_stdout, on_stderr)
        self._task = asyncio.ensure_future(self._follow())

    @property
    def stdout(self) -> str:
        """The stdout so far."""
        return "".join(self._stdout)

    @property
    def stderr(self) -> str:
        """The stderr so far."""
        return "".join(self._stderr)

    @property
    def exit_code(self) -> Optional[int]:
        """The exit code once the command has ended (None while it runs)."""
        failure = self._failure
        if isinstance(failure, CommandExitException):
            return failure.exit_code
        return self._result.exit_code if self._result is not None else None

    @property
    def error(self) -> Optional[str]:
        """Why the command failed, once it has ended."""
        failure = self._failure
        if isinstance(failure, CommandExitException):
            return failure.error
        return self._result.error if self._result is not None else None

    def _output(self, params: Dict[str, Any]) -> Any:
        out, err = self._take(params)
        callback = self._callbacks[0] if out is not None else self._callbacks[1]
        return callback(out if out is not None else err) if callback is not None else None

    async def _follow(self) -> None:
        try:
            answer = await self._commands._transport.request_async(_wire.COMMANDS_WAIT, self._wait_params(), on_output=self._output)
            self._finish(answer)
        except Exception as error:  # kept for wait(); a callback's error ends the following too
            self._failed(error)

    async def wait(self) -> CommandResult:
        """Wait for the command to end: its `CommandResult`, or
        `CommandExitException` for a non-zero exit, `TimeoutException` past its timeout."""
        await asyncio.wait([self._task])
        if self._task.cancelled():
            raise SandboxException("the handle was disconnected; find the command again with commands.connect(pid)")
        if self._failure is not None:
            raise self._failure
        assert self._result is not None
        return self._result

    async def kill(self) -> bool:
        """End the command (and what it started); True once it has ended, False if it was not running."""
        return bool(await self._commands._request_async(_wire.COMMANDS_KILL, {"id": self._id}))

    async def disconnect(self) -> None:
        """Stop following the command; it goes on running."""
        self._task.cancel()
        await asyncio.wait([self._task])

    async def send_stdin(self, data: Any, request_timeout: Optional[float] = None) -> Any:  # type: ignore[override]
        """Not supported: commands run with an empty stdin."""
        raise SandboxException(_NO_STDIN)

    async def close_stdin(self, request_timeout: Optional[float] = None) -> Any:  # type: ignore[override]
        """Not supported: commands run with an empty stdin."""
        raise SandboxException(_NO_STDIN)


def _process(item: Dict[str, Any]) -> ProcessInfo:
    return ProcessInfo(item["pid"], item.get("tag"), item["cmd"], list(item["args"]), dict(item["envs"]), item.get("cwd"))


class Commands(Calls):
    """`sandbox.commands` (see the module's documentation)."""

    def run(
        self,
        cmd: str,
        background: Optional[bool] = None,
        envs: Optional[Dict[str, str]] = None,
        user: Optional[str] = None,
        cwd: Optional[str] = None,
        on_stdout: Optional[Callable[[str], Any]] = None,
        on_stderr: Optional[Callable[[str], Any]] = None,
        stdin: Optional[bool] = None,
        timeout: Optional[float] = 60,
        request_timeout: Optional[float] = None,
        **opts: Any,
    ) -> Any:
        """Run a shell command and wait for it (callbacks get its output as it
        comes, in this thread): its `CommandResult`. With `background=True`, a
        `CommandHandle` at once. A callback that raises (or Ctrl-C) ends the command."""
        answer = self._request(_wire.COMMANDS_START, _start_params(cmd, envs, cwd, timeout, stdin))
        handle = CommandHandle(self, answer["pid"], answer["id"], 0, True, on_stdout, on_stderr)
        if background:
            return handle
        try:
            return handle.wait()
        except (CommandExitException, TimeoutException):
            raise
        except BaseException:
            _quietly(handle.kill)
            raise

    def connect(self, pid: int, timeout: Optional[float] = 60, request_timeout: Optional[float] = None, **opts: Any) -> CommandHandle:
        """A handle on a running command, following its output from now on;
        `NotFoundException` when no command with that pid runs. (`timeout` is
        the command's own, set when it was started.)"""
        for item in self._request(_wire.COMMANDS_LIST):
            if item["pid"] == pid:
                return CommandHandle(self, pid, item["id"], item["chunks"], False)
        raise NotFoundException("no running command with pid %r" % (pid,))

    def list(self, request_timeout: Optional[float] = None) -> List[ProcessInfo]:
        """The commands running now."""
        return [_process(item) for item in self._request(_wire.COMMANDS_LIST)]

    def kill(self, pid: int, request_timeout: Optional[float] = None) -> bool:
        """End the command with this pid; True once it has ended, False if none was running."""
        return bool(self._request(_wire.COMMANDS_KILL, {"pid": int(pid)}))

    def send_stdin(self, pid: int, data: Any, request_timeout: Optional[float] = None) -> None:
        """Not supported: commands run with an empty stdin."""
        raise SandboxException(_NO_STDIN)

    def close_stdin(self, pid: int, request_timeout: Optional[float] = None) -> None:
        """Not supported: commands run with an empty stdin."""
        raise SandboxException(_NO_STDIN)

    def stream_input(self, pid: int, *args: Any, **opts: Any) -> None:
        """Not supported: commands run with an empty stdin."""
        raise SandboxException(_NO_STDIN)


class AsyncCommands(Calls):
    """`AsyncSandbox.commands`: `Commands`' methods, awaited."""

    async def run(
        self,
        cmd: str,
        background: Optional[bool] = None,
        envs: Optional[Dict[str, str]] = None,
        user: Optional[str] = None,
        cwd: Optional[str] = None,
        on_stdout: Optional[Callable[[str], Any]] = None,
        on_stderr: Optional[Callable[[str], Any]] = None,
        stdin: Optional[bool] = None,
        timeout: Optional[float] = 60,
        request_timeout: Optional[float] = None,
        **opts: Any,
    ) -> Any:
        """`Commands.run`; with `background=True` an `AsyncCommandHandle`,
        whose callbacks keep getting the output. Cancelling the awaiting task
        (or a callback that raises) ends a command run in the foreground."""
        answer = await self._request_async(_wire.COMMANDS_START, _start_params(cmd, envs, cwd, timeout, stdin))
        handle = AsyncCommandHandle(self, answer["pid"], answer["id"], 0, True, on_stdout, on_stderr)
        if background:
            return handle
        try:
            return await handle.wait()
        except (CommandExitException, TimeoutException):
            raise
        except BaseException:
            handle._task.cancel()
            await _quietly_async(handle.kill)
            raise

    async def connect(
        self,
        pid: int,
        timeout: Optional[float] = 60,
        request_timeout: Optional[float] = None,
        on_stdout: Optional[Callable[[str], Any]] = None,
        on_stderr: Optional[Callable[[str], Any]] = None,
        **opts: Any,
    ) -> AsyncCommandHandle:
        """`Commands.connect`; the callbacks get the output from now on."""
        for item in await self._request_async(_wire.COMMANDS_LIST):
            if item["pid"] == pid:
                return AsyncCommandHandle(self, pid, item["id"], item["chunks"], False, on_stdout, on_stderr)
        raise NotFoundException("no running command with pid %r" % (pid,))

    async def list(self, request_timeout: Optional[float] = None) -> List[ProcessInfo]:
        """`Commands.list`."""
        return [_process(item) for item in await self._request_async(_wire.COMMANDS_LIST)]

    async def kill(self, pid: int, request_timeout: Optional[float] = None) -> bool:
        """`Commands.kill`."""
        return bool(await self._request_async(_wire.COMMANDS_KILL, {"pid": int(pid)}))

    async def send_stdin(self, pid: int, data: Any, request_timeout: Optional[float] = None) -> None:
        """Not supported: commands run with an empty stdin."""
        raise SandboxException(_NO_STDIN)

    async def close_stdin(self, pid: int, request_timeout: Optional[float] = None) -> None:
        """Not supported: commands run with an empty stdin."""
        raise SandboxException(_NO_STDIN)

    def stream_input(self, pid: int, *args: Any, **opts: Any) -> None:
        """Not supported: commands run with an empty stdin."""
        raise SandboxException(_NO_STDIN)


def _quietly(kill: Callable[[], Any]) -> None:
    """End a command whose caller stopped waiting; a sandbox already gone ends it anyway."""
    try:
        kill()
    except Exception:
        pass


async def _quietly_async(kill: Callable[[], Any]) -> None:
    try:
        outcome = kill()
        if inspect.isawaitable(outcome):
            await outcome
    except Exception:
        pass
