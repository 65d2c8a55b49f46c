"""`Sandbox` and `AsyncSandbox`: E2B Code Interpreter's API on a local cellbox engine.

Code written for `e2b_code_interpreter.Sandbox` (or `AsyncSandbox`) runs
after changing only the import. A sandbox is the engine process it starts
(see `_transport`); its code contexts are the engine's sessions, each with
its own kernels. E2B's cloud-only arguments are accepted; what they mean here
is written beside each.

The two classes share everything but waiting: `_Requests` builds each
request and reads each answer, and the classes only send and wait, in a
thread or on an event loop.
"""

import asyncio
import functools
import inspect
import os
import sys
import uuid
import weakref
from typing import Any, Callable, Dict, List, Optional, Union

from . import _wire
from ._cloud import MembersElsewhere, SandboxMembersElsewhere
from ._e2b_types import network_setting
from ._remote import RemoteTransport
from ._in_process import open_local
from ._transport import EngineGone, Transport
from .commands import AsyncCommands, Commands
from .exceptions import (
    InvalidArgumentException,
    SandboxException,
    SandboxNotFoundException,
    format_execution_timeout_error,
    format_sandbox_killed_error,
)
from .filesystem import AsyncFilesystem, Filesystem
from ._branches import AsyncBranches, SyncBranches
from ._outputs import Handlers as _Handlers
from ._outputs import context_id as _context_id
from .models import Context, Execution, ExecutionError, OutputMessage, Result

__all__ = ["Sandbox", "AsyncSandbox"]

#: Sandboxes of this process by id, so `connect(id)` and `kill(id)` find
#: one. Weak: a sandbox nobody holds is collected, and its engine stops.
_LIVE: "weakref.WeakValueDictionary[str, Any]" = weakref.WeakValueDictionary()

#: E2B's default `run_code` timeout, in seconds (0: no limit).
_DEFAULT_RUN_TIMEOUT = 300

#: `python=` for the engine's own choice: `$CELLBOX_PYTHON`, else the interpreter `cellbox doctor` finds.
_DISCOVER = "discover"
#: The variable that names the kernels' Python, for every cellbox front end.
_PYTHON_VAR = "CELLBOX_PYTHON"


def _kernel_python(python: Optional[str], local: bool) -> Optional[str]:
    """The `--python` of a sandbox given `python=`: that interpreter; none (the engine's
    choice) for `"discover"`, for a remote sandbox and when `$CELLBOX_PYTHON` is set; else the
    interpreter running this program, when it is a Python that can be run."""
    if python == _DISCOVER:
        return None
    if python is not None or not local or os.environ.get(_PYTHON_VAR, "").strip():
        return python
    return _running_python()


def _running_python() -> Optional[str]:
    """`sys.executable`, unless it is empty, cannot be run or is not a Python (a program that
    embeds the interpreter, such as uWSGI, may name itself)."""
    executable = sys.executable
    if not executable or not os.path.isfile(executable) or not os.access(executable, os.X_OK):
        return None
    if not os.path.basename(executable).lower().startswith(("python", "pypy")):
        return None
    return os.path.abspath(executable)


def _timeout_params(timeout: Optional[float]) -> Dict[str, Any]:
    """`set_timeout`'s parameters (seconds; 0: no limit), or what is wrong with `timeout`."""
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout >= 0:
        raise InvalidArgumentException("timeout must be 0 (no limit) or more seconds, not %r" % (timeout,))
    return {"seconds": float(timeout)}


class _ClassOrInstance:
    """A method that works on a sandbox (`box.kill()`) and on the class with
    a sandbox id (`Sandbox.kill(sandbox_id)`), as E2B's do."""

    def __init__(self, on_instance: Callable[..., Any]) -> None:
        self.on_instance = on_instance
        functools.update_wrapper(self, on_instance)  # type: ignore[arg-type]

    def __get__(self, instance: Any, owner: Any) -> Callable[..., Any]:
        if instance is not None:
            return functools.partial(self.on_instance, instance)
        return functools.partial(_by_id, owner, self.on_instance)


def _by_id(owner: Any, method: Callable[..., Any], sandbox_id: Any, *args: Any, **kwargs: Any) -> Any:
    # `Sandbox.kill(sandbox)` is `sandbox.kill()`, as in Python generally.
    sandbox = sandbox_id if isinstance(sandbox_id, owner) else _LIVE.get(sandbox_id)
    if sandbox is None or not isinstance(sandbox, owner):
        raise SandboxNotFoundException("no running sandbox %r in this process" % sandbox_id)
    return method(sandbox, *args, **kwargs)


def _engine_args(
    allow_internet_access: bool,
    network: Union[None, str, Dict[str, Any]],
    sandbox: Optional[str],
    python: Optional[str],
    preload: Union[None, str, List[str]],
    spares: Optional[int],
    timeout: Optional[float],
) -> List[str]:
    """The `cellbox sdk-server` flags for a sandbox's arguments (`python` as `_kernel_python` chose)."""
    args: List[str] = []
    if timeout:
        args += ["--idle-timeout", str(_timeout_params(timeout)["seconds"])]
    if python is not None:
        args += ["--python", python]
    if preload:
        args += ["--preload", preload if isinstance(preload, str) else ",".join(preload)]
    if spares is not None:
        args += ["--spares", str(int(spares))]
    setting = network_setting(allow_internet_access, network)
    if setting is not None:
        args += ["--network", setting]
    if sandbox is not None:
        args += ["--sandbox", sandbox]
    return args


def _open_transport(
    opts: Dict[str, Any], args: List[str], cwd: Optional[str], envs: Optional[Dict[str, str]], timeout: Optional[float]
) -> Transport:
    """A local engine, or with `api_url` a sandbox on that `cellbox serve` server."""
    api_url = opts.get("api_url")
    if api_url is None:
        return open_local(opts.get("engine"), args, cwd, envs)
    chosen_by_server = [flag for flag in args if flag.startswith("--") and flag != "--idle-timeout"]
    if cwd is not None:
        chosen_by_server.append("cwd")
    if chosen_by_server:
        raise InvalidArgumentException(
            "%s: a remote sandbox runs as its server was started (set them as `cellbox serve` flags), "
            "not per sandbox" % ", ".join(flag.lstrip("-") for flag in chosen_by_server)
        )
    return RemoteTransport(api_url, opts.get("api_key"), timeout, envs)


def _create_options(
    template: Optional[str],
    timeout: Optional[int],
    metadata: Optional[Dict[str, str]],
    envs: Optional[Dict[str, str]],
    secure: Optional[bool],
    allow_internet_access: Optional[bool],
    network: Union[None, str, Dict[str, Any]],
    opts: Dict[str, Any],
) -> Dict[str, Any]:
    """`create`'s arguments as the constructor's (None: the constructor's default)."""
    given = {
        "template": template,
        "timeout": timeout,
        "metadata": metadata,
        "envs": envs,
        "secure": secure,
        "allow_internet_access": allow_internet_access,
        "network": network,
    }
    options = {key: value for key, value in given.items() if value is not None}
    options.update(opts)
    return options


class _Requests:
    """The requests of a sandbox and the reading of their answers, whatever waits for them."""

    def __init__(self, transport: Transport, metadata: Optional[Dict[str, str]], timeout: Optional[int]) -> None:
        self._transport = transport
        self._sandbox_id = "local-" + uuid.uuid4().hex[:12]
        self._killed = False
        self.metadata = dict(metadata or {})
        _LIVE[self._sandbox_id] = self

    @property
    def sandbox_id(self) -> str:
        """This sandbox's id (for `connect` and `kill` by id, in this process)."""
        return self._sandbox_id

    def _refused(self, error: Exception) -> Exception:
        """What the caller learns when the engine would not start: the engine
        is stopped; a bad argument (the engine's usage error, exit status 2)
        is an `InvalidArgumentException`, with the engine's words."""
        self._stop()
        if isinstance(error, EngineGone) and self._transport.exit_code == 2:
            lines = [line for line in self._transport.stderr.splitlines() if line.strip()]
            reason = lines[0] if lines else str(error)
            return InvalidArgumentException(reason[len("error: ") :] if reason.startswith("error: ") else reason)
        return error

    def _connected(self) -> Any:
        if not self._running():
            raise SandboxNotFoundException("sandbox %r is not running" % self._sandbox_id)
        return self

    def _running(self) -> bool:
        return self._transport.alive

    def _stop(self) -> bool:
        was_running = self._transport.alive
        self._killed = True
        self._transport.close()
        _LIVE.pop(self._sandbox_id, None)
        return was_running

    @staticmethod
    def _run_params(
        code: str,
        language: Optional[str],
        context: Union[None, Context, str],
        envs: Optional[Dict[str, str]],
        timeout: Optional[float],
        checkpoint: Optional[bool] = None,
    ) -> Dict[str, Any]:
        if language and context:
            raise InvalidArgumentException("give run_code a language or a context, not both")
        if timeout is None:
            timeout = _DEFAULT_RUN_TIMEOUT
        params: Dict[str, Any] = {"code": code, "timeout": float(timeout)}
        if language:
            params["language"] = language
        if context:
            params["context_id"] = _context_id(context)
        if envs:
            params["envs"] = dict(envs)
        if checkpoint is not None:
            params["checkpoint"] = bool(checkpoint)
        return params

    def _gone(self, error: EngineGone) -> Exception:
        """What a call learns when the engine ended under it: E2B's error for a
        sandbox killed on purpose, else why the engine stopped."""
        return format_sandbox_killed_error() if self._killed else error

    @staticmethod
    def _closing(answer: Dict[str, Any], execution: Execution) -> Optional[Dict[str, Any]]:
        """An `error` output the answer stands for, when no traceback came (the
        kernel died or the run was stopped): only its name and reason."""
        error = answer.get("error")
        if execution.error is None and answer.get("status") in ("error", "killed", "cancelled") and error:
            return {"type": "error", "name": error["name"], "value": error["value"], "traceback": ""}
        return None

    @staticmethod
    def _finish(answer: Dict[str, Any], execution: Execution) -> Execution:
        execution.execution_count = answer.get("execution_count")
        # cellbox's own: where the full output is kept when it was clamped (`cellbox artifact URI`).
        execution.artifact = answer.get("artifact")
        if answer.get("status") == "timeout":
            raise format_execution_timeout_error()
        return execution

    @staticmethod
    def _context_params(cwd: Optional[str], language: Optional[str], name: Optional[str]) -> Dict[str, str]:
        given = (("cwd", cwd), ("language", language), ("name", name))
        return {key: value for key, value in given if value is not None}


class Sandbox(_Requests, SyncBranches, MembersElsewhere, metaclass=SandboxMembersElsewhere):
    """A local code interpreter: Python, JavaScript/TypeScript and bash cells
    in long-lived kernels, under cellbox's OS sandbox.

    `template`, `metadata`, `secure`, `api_key`, `domain`, `debug`, `proxy`,
    `request_timeout`, `mcp`, `lifecycle`, `volume_mounts` and `logger` have
    no local meaning and are ignored. `envs` are the environment variables
    of every kernel, in every context, and of every command (`run_code`'s
    and `commands.run`'s own `envs` add to them or override them for that
    call only); this program's environment is left as it is;
    `allow_internet_access=False` (or `network={"deny_out": [ALL_TRAFFIC]}`)
    turns the kernels' network off; other network rules are refused, since
    the network is on or off as a whole. `timeout` is the sandbox's idle
    lifetime: once that many seconds pass without a call in progress or a
    command running, its kernels are stopped and later calls raise
    `SandboxNotRunningException` (E2B counts it from creation, busy or not).
    Without it, a local sandbox lives until `kill()`, the end of its `with`
    block, garbage collection or the end of the program.

    cellbox's own arguments: `cwd` is the folder kernels run in (default: the
    current one; contexts' relative `cwd`s start there), `sandbox` the OS
    sandbox policy (`workspace-write`, the default, `read-only` or `off`),
    `python` the interpreter for Python cells: by default the one running
    this program (`sys.executable`, so a venv's packages are in its cells
    whether or not the venv is activated), unless `CELLBOX_PYTHON` names
    one; `"discover"` asks for the engine's own choice (`CELLBOX_PYTHON`,
    else the interpreter `cellbox doctor` finds), which is also what an
    empty or unusable `sys.executable` (an embedded interpreter) gets; a
    remote sandbox's kernels run on its server's choice. `preload` modules
    every Python kernel starts with already imported (e.g. `["numpy",
    "pandas"]`: imported once in a fork server; Linux), `spares` how many
    warm kernels are kept ready per kernel kind (default 1; 0: none),
    `engine` where the engine runs:
    `"in-process"` (the default where the wheel's extension is installed:
    the fastest calls) or `"process"` (a child process of its own: a crash
    in the engine cannot end this program).
    """

    default_template = "code-interpreter-v1"

    def __init__(
        self,
        template: Optional[str] = None,
        timeout: Optional[int] = None,
        metadata: Optional[Dict[str, str]] = None,
        envs: Optional[Dict[str, str]] = None,
        secure: bool = True,
        allow_internet_access: bool = True,
        network: Union[None, str, Dict[str, Any]] = None,
        *,
        cwd: Optional[str] = None,
        sandbox: Optional[str] = None,
        python: Optional[str] = None,
        preload: Union[None, str, List[str]] = None,
        spares: Optional[int] = None,
        **opts: Any,
    ) -> None:
        python = _kernel_python(python, local=opts.get("api_url") is None)
        args = _engine_args(allow_internet_access, network, sandbox, python, preload, spares, timeout)
        super().__init__(_open_transport(opts, args, cwd, envs, timeout), metadata, timeout)
        try:
            self._transport.request(_wire.INITIALIZE)
        except (EngineGone, SandboxException) as error:
            raise self._refused(error) from None

    # -- lifecycle -------------------------------------------------------

    @classmethod
    def create(
        cls,
        template: Optional[str] = None,
        timeout: Optional[int] = None,
        metadata: Optional[Dict[str, str]] = None,
        envs: Optional[Dict[str, str]] = None,
        secure: Optional[bool] = None,
        allow_internet_access: Optional[bool] = None,
        mcp: Any = None,
        network: Union[None, str, Dict[str, Any]] = None,
        *cloud_only: Any,
        **opts: Any,
    ) -> "Sandbox":
        """A new sandbox (E2B 2.x's way to make one; `Sandbox(...)` works
        too), with E2B's arguments in E2B's order; `cloud_only` (iam,
        lifecycle, volume_mounts, logger, idempotency_key) are ignored."""
        return cls(**_create_options(template, timeout, metadata, envs, secure, allow_internet_access, network, opts))

    @_ClassOrInstance
    def connect(self, timeout: Optional[int] = None, **opts: Any) -> "Sandbox":
        """This sandbox, if it runs; `Sandbox.connect(sandbox_id)` finds a
        running sandbox of this process by its id. `timeout`: as `set_timeout`."""
        sandbox = self._connected()
        if timeout:
            sandbox.set_timeout(timeout)
        return sandbox

    def is_running(self, request_timeout: Optional[float] = None) -> bool:
        return self._running()

    @_ClassOrInstance
    def set_timeout(self, timeout: int, **opts: Any) -> None:
        """End the sandbox once it has been idle `timeout` seconds from now
        on (no call in progress, no command running); 0: never."""
        self._transport.request(_wire.SET_TIMEOUT, _timeout_params(timeout))

    @_ClassOrInstance
    def kill(self, **opts: Any) -> bool:
        """Stop the engine and every kernel; False when it was not running.
        A `run_code` waiting meanwhile raises `TimeoutException`."""
        return self._stop()

    def __enter__(self) -> "Sandbox":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.kill()

    # -- files and commands ----------------------------------------------

    @functools.cached_property
    def files(self) -> Filesystem:
        """The files of this machine, with E2B's `sandbox.files` API; relative
        paths start at the sandbox's folder (see `cellbox.filesystem`)."""
        return Filesystem(self)

    @functools.cached_property
    def commands(self) -> Commands:
        """Shell commands run under the kernels' sandbox, with E2B's
        `sandbox.commands` API (see `cellbox.commands`)."""
        return Commands(self)

    # -- code ------------------------------------------------------------

    def run_code(
        self,
        code: str,
        language: Optional[str] = None,
        context: Union[None, Context, str] = None,
        on_stdout: Optional[Callable[[OutputMessage], Any]] = None,
        on_stderr: Optional[Callable[[OutputMessage], Any]] = None,
        on_result: Optional[Callable[[Result], Any]] = None,
        on_error: Optional[Callable[[ExecutionError], Any]] = None,
        envs: Optional[Dict[str, str]] = None,
        timeout: Optional[float] = None,
        request_timeout: Optional[float] = None,
        *,
        checkpoint: Optional[bool] = None,
    ) -> Execution:
        """Run `code`; an error in it is the result's `error`, never raised.
        `timeout` (seconds, default 300, 0: no limit) bounds the run: past
        it the cell is interrupted, the context stays usable, and
        `TimeoutException` is raised. Callbacks run in this thread, in
        order, while the cell runs; one that raises stops the cell.
        `request_timeout` is ignored (no connection is waited for).
        `checkpoint=True` (cellbox's own) lets `undo()` take this run back."""
        params = self._run_params(code, language, context, envs, timeout, checkpoint)
        execution = Execution()
        handlers = _Handlers(execution, on_stdout, on_stderr, on_result, on_error)
        try:
            # Without callbacks, recording the outputs is all there is to do
            # with them, and the reader thread may do it.
            quiet = not any(handlers.callbacks.values())
            answer = self._transport.request(_wire.RUN_CODE, params, on_output=handlers.output, output_in_caller=not quiet)
        except EngineGone as error:
            raise self._gone(error) from error
        closing = self._closing(answer, execution)
        if closing is not None:
            handlers.output(closing)
        return self._finish(answer, execution)

    # -- contexts --------------------------------------------------------

    def create_code_context(
        self,
        cwd: Optional[str] = None,
        language: Optional[str] = None,
        request_timeout: Optional[float] = None,
        *,
        name: Optional[str] = None,
    ) -> Context:
        """A new context (own kernel and state); `cwd` relative to the sandbox's folder.
        `name` (cellbox's own) is the context's id, so `run_code(..., context="data")`
        reaches it; asking for a name in use returns that context when the language
        and `cwd` match, and raises `InvalidArgumentException` otherwise."""
        params = self._context_params(cwd, language, name)
        return Context.from_json(self._transport.request(_wire.CREATE_CONTEXT, params))

    def list_code_contexts(self) -> List[Context]:
        return [Context.from_json(item) for item in self._transport.request(_wire.LIST_CONTEXTS)]

    def restart_code_context(self, context: Union[Context, str]) -> None:
        """Start the context's kernel afresh: its state is gone, the context stays."""
        self._transport.request(_wire.RESTART_CONTEXT, {"context_id": _context_id(context)})

    def remove_code_context(self, context: Union[Context, str]) -> None:
        self._transport.request(_wire.REMOVE_CONTEXT, {"context_id": _context_id(context)})


class AsyncSandbox(_Requests, AsyncBranches, MembersElsewhere, metaclass=SandboxMembersElsewhere):
    """`Sandbox` for asyncio: make one with `await AsyncSandbox.create(...)`
    (same arguments); every method is a coroutine. Callbacks may be plain
    functions or coroutine functions; they run in the event loop, in order.
    Cancelling a `run_code` task interrupts its cell."""

    default_template = Sandbox.default_template

    def __init__(
        self,
        template: Optional[str] = None,
        timeout: Optional[int] = None,
        metadata: Optional[Dict[str, str]] = None,
        envs: Optional[Dict[str, str]] = None,
        secure: bool = True,
        allow_internet_access: bool = True,
        network: Union[None, str, Dict[str, Any]] = None,
        *,
        cwd: Optional[str] = None,
        sandbox: Optional[str] = None,
        python: Optional[str] = None,
        preload: Union[None, str, List[str]] = None,
        spares: Optional[int] = None,
        **opts: Any,
    ) -> None:
        """Starts the engine; `create` also waits until it answers."""
        python = _kernel_python(python, local=opts.get("api_url") is None)
        args = _engine_args(allow_internet_access, network, sandbox, python, preload, spares, timeout)
        super().__init__(_open_transport(opts, args, cwd, envs, timeout), metadata, timeout)

    # -- lifecycle -------------------------------------------------------

    @classmethod
    async def create(
        cls,
        template: Optional[str] = None,
        timeout: Optional[int] = None,
        metadata: Optional[Dict[str, str]] = None,
        envs: Optional[Dict[str, str]] = None,
        secure: Optional[bool] = None,
        allow_internet_access: Optional[bool] = None,
        mcp: Any = None,
        network: Union[None, str, Dict[str, Any]] = None,
        *cloud_only: Any,
        **opts: Any,
    ) -> "AsyncSandbox":
        """A new sandbox, once its engine answers (see `Sandbox.create`)."""
        sandbox = cls(**_create_options(template, timeout, metadata, envs, secure, allow_internet_access, network, opts))
        try:
            await sandbox._transport.request_async(_wire.INITIALIZE)
        except (EngineGone, SandboxException) as error:
            raise sandbox._refused(error) from None
        return sandbox

    @_ClassOrInstance
    async def connect(self, timeout: Optional[int] = None, **opts: Any) -> "AsyncSandbox":
        """`Sandbox.connect`, awaited."""
        sandbox = self._connected()
        if timeout:
            await sandbox.set_timeout(timeout)
        return sandbox

    async def is_running(self, request_timeout: Optional[float] = None) -> bool:
        return self._running()

    @_ClassOrInstance
    async def set_timeout(self, timeout: int, **opts: Any) -> None:
        """`Sandbox.set_timeout`, awaited."""
        await self._transport.request_async(_wire.SET_TIMEOUT, _timeout_params(timeout))

    @_ClassOrInstance
    async def kill(self, **opts: Any) -> bool:
        """Stop the engine and every kernel (waiting in a worker thread, not
        in the loop); a `run_code` awaiting meanwhile raises `TimeoutException`."""
        return await asyncio.get_running_loop().run_in_executor(None, self._stop)

    async def __aenter__(self) -> "AsyncSandbox":
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.kill()

    # -- files and commands ----------------------------------------------

    @functools.cached_property
    def files(self) -> AsyncFilesystem:
        """`Sandbox.files` for asyncio: every method is a coroutine."""
        return AsyncFilesystem(self)

    @functools.cached_property
    def commands(self) -> AsyncCommands:
        """`Sandbox.commands` for asyncio: every method is a coroutine."""
        return AsyncCommands(self)

    # -- code ------------------------------------------------------------

    async def run_code(
        self,
        code: str,
        language: Optional[str] = None,
        context: Union[None, Context, str] = None,
        on_stdout: Optional[Callable[[OutputMessage], Any]] = None,
        on_stderr: Optional[Callable[[OutputMessage], Any]] = None,
        on_result: Optional[Callable[[Result], Any]] = None,
        on_error: Optional[Callable[[ExecutionError], Any]] = None,
        envs: Optional[Dict[str, str]] = None,
        timeout: Optional[float] = None,
        request_timeout: Optional[float] = None,
        *,
        checkpoint: Optional[bool] = None,
    ) -> Execution:
        """`Sandbox.run_code`, awaited."""
        params = self._run_params(code, language, context, envs, timeout, checkpoint)
        execution = Execution()
        handlers = _Handlers(execution, on_stdout, on_stderr, on_result, on_error)
        try:
            answer = await self._transport.request_async(_wire.RUN_CODE, params, on_output=handlers.output)
        except EngineGone as error:
            raise self._gone(error) from error
        closing = self._closing(answer, execution)
        if closing is not None:
            outcome = handlers.output(closing)
            if inspect.isawaitable(outcome):
                await outcome
        return self._finish(answer, execution)

    # -- contexts --------------------------------------------------------

    async def create_code_context(
        self,
        cwd: Optional[str] = None,
        language: Optional[str] = None,
        request_timeout: Optional[float] = None,
        *,
        name: Optional[str] = None,
    ) -> Context:
        """`Sandbox.create_code_context`, awaited."""
        answer = await self._transport.request_async(_wire.CREATE_CONTEXT, self._context_params(cwd, language, name))
        return Context.from_json(answer)

    async def list_code_contexts(self) -> List[Context]:
        return [Context.from_json(item) for item in await self._transport.request_async(_wire.LIST_CONTEXTS)]

    async def restart_code_context(self, context: Union[Context, str]) -> None:
        await self._transport.request_async(_wire.RESTART_CONTEXT, {"context_id": _context_id(context)})

    async def remove_code_context(self, context: Union[Context, str]) -> None:
        await self._transport.request_async(_wire.REMOVE_CONTEXT, {"context_id": _context_id(context)})
