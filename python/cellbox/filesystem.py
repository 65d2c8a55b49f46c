"""`sandbox.files`: E2B's filesystem API (`e2b.Sandbox.files`) on this machine.

The engine reads and writes the files itself (`files.*` requests). Relative
paths start at the sandbox's folder (its `cwd`); absolute ones are used as
given. Unless the sandbox was started with `sandbox="off"`, the files API
obeys the kernels' sandbox policy: a secret location (`~/.ssh`, `~/.aws`,
...) cannot be read, and nothing can be written, removed, renamed or made
outside the writable folders (the sandbox's folder and `CELLBOX_ALLOW_WRITE`
ones in `workspace-write`); such a call raises `SandboxException` naming the
policy and how to opt out.

`user`, `request_timeout`, `gzip`, `use_octet_stream`, `stream_idle_timeout`
and `allow_network_mounts` are accepted and mean nothing here. File metadata
(`metadata=`) is not kept: asking for it is an `InvalidArgumentException`.
"""

import asyncio
import base64
import inspect
from typing import IO, Any, Callable, Dict, Iterator, List, Optional, Tuple, Union

from . import _wire
from ._calls import Calls, check_path
from ._file_models import (
    AsyncFileStreamReader,
    EntryInfo,
    FileStreamReader,
    FilesystemEvent,
    FilesystemEventType,
    FileType,
    WriteEntry,
    WriteInfo,
    entry_from_json,
    event_from_json,
    write_info_from_json,
)
from ._transport import EngineGone
from .exceptions import (
    FileNotFoundException,
    InvalidArgumentException,
    NotFoundException,
    SandboxException,
    TimeoutException,
)

__all__ = [
    "FileType",
    "WriteInfo",
    "EntryInfo",
    "WriteEntry",
    "FilesystemEventType",
    "FilesystemEvent",
    "FileStreamReader",
    "AsyncFileStreamReader",
    "WatchHandle",
    "AsyncWatchHandle",
    "Filesystem",
    "AsyncFilesystem",
]

#: Bytes per `files.read` or `files.write` request: whole files travel in
#: chunks, so no message grows with the file.
_CHUNK = 4 << 20
#: Seconds an async watch's request waits in the engine for a first event.
_WATCH_WAIT = 1.0
_FORMATS = ("text", "bytes", "stream")


def _check_format(format: Any) -> None:
    if format not in _FORMATS:
        raise InvalidArgumentException('format must be "text", "bytes" or "stream", not %r' % (format,))


def _check_depth(depth: Any) -> int:
    if depth is None:
        return 1
    if isinstance(depth, bool) or not isinstance(depth, int):
        raise InvalidArgumentException("depth must be an int, not %s" % type(depth).__name__)
    if depth < 1:
        raise InvalidArgumentException("depth should be at least 1, not %d" % depth)
    return depth


def _check_metadata(metadata: Optional[Dict[str, str]]) -> None:
    if metadata:
        raise InvalidArgumentException("file metadata is not kept by cellbox's files API; write without metadata=")


def _entries(files: Any) -> List[Tuple[str, Any]]:
    """`write_files`' entries as (path, data), checked before anything is written."""
    if isinstance(files, (str, bytes, dict)):
        raise InvalidArgumentException("files must be a list of WriteEntry dicts ({'path': ..., 'data': ...})")
    out = []
    for entry in files:
        if not isinstance(entry, dict) or "path" not in entry or "data" not in entry:
            raise InvalidArgumentException("each file must be a WriteEntry dict with 'path' and 'data', not %r" % (entry,))
        out.append((check_path(entry["path"]), entry["data"]))
    return out


def _in_memory(data: Any) -> Optional[bytes]:
    """The bytes of `str`/`bytes`-like data; None for a stream."""
    if isinstance(data, str):
        return data.encode("utf-8")
    if isinstance(data, (bytes, bytearray, memoryview)):
        return bytes(data)
    return None


def _chunks(data: Any, path: str) -> Iterator[bytes]:
    """A file-like object or an iterable of bytes, read a chunk at a time."""
    if hasattr(data, "read"):
        while True:
            chunk = data.read(_CHUNK)
            if not chunk:
                return
            yield chunk.encode("utf-8") if isinstance(chunk, str) else bytes(chunk)
    elif hasattr(data, "__iter__") and not isinstance(data, (dict, str)):
        for chunk in data:
            piece = _in_memory(chunk)
            if piece is None:
                raise InvalidArgumentException("the data of %s holds a %s, not bytes" % (path, type(chunk).__name__))
            yield piece
    else:
        raise InvalidArgumentException(
            "unsupported data type for %s: %s (give str, bytes, a file-like object or an iterable of bytes)"
            % (path, type(data).__name__)
        )


def _file(path: str, data: bytes, append: bool = False) -> Dict[str, Any]:
    return {"path": path, "data": base64.b64encode(data).decode("ascii"), "append": append}


def _not_found(error: NotFoundException) -> FileNotFoundException:
    return FileNotFoundException(str(error))


class WatchHandle:
    """What `watch_dir` returns: `get_new_events()` gives the changes since the
    watch began or since the last call; `stop()` ends the watch."""

    def __init__(self, files: "Filesystem", watcher_id: str) -> None:
        self._files = files
        self._watcher_id = watcher_id
        self._closed = False

    def get_new_events(self, request_timeout: Optional[float] = None) -> List[FilesystemEvent]:
        """The events since the last call (or the start), compared with the folder as it is now."""
        if self._closed:
            raise SandboxException("the watcher is already stopped")
        answer = self._files._request(_wire.FILES_WATCH_EVENTS, {"watcher_id": self._watcher_id})
        return [event_from_json(item) for item in answer]

    def stop(self, request_timeout: Optional[float] = None) -> None:
        """End the watch; `get_new_events` raises afterwards."""
        if not self._closed:
            self._closed = True
            self._files._request(_wire.FILES_UNWATCH, {"watcher_id": self._watcher_id})


class AsyncWatchHandle:
    """What `AsyncSandbox.files.watch_dir` returns: `on_event` is called (in
    the event loop, awaited when it returns an awaitable) for each change
    until `stop()`, the watch's `timeout` or an error; `on_exit` then gets
    None, a `TimeoutException` or the error."""

    def __init__(
        self,
        files: "AsyncFilesystem",
        watcher_id: str,
        on_event: Callable[[FilesystemEvent], Any],
        on_exit: Optional[Callable[[Optional[Exception]], Any]],
        timeout: Optional[float],
    ) -> None:
        self._files = files
        self._watcher_id = watcher_id
        self._on_event = on_event
        self._on_exit = on_exit
        self._timeout = timeout
        self._task = asyncio.ensure_future(self._watch())

    async def stop(self) -> None:
        """End the watch (`on_exit` gets None)."""
        self._task.cancel()
        await asyncio.wait([self._task])
        await self._unwatch()

    async def _unwatch(self) -> None:
        try:
            await self._files._request_async(_wire.FILES_UNWATCH, {"watcher_id": self._watcher_id})
        except (EngineGone, SandboxException):
            pass  # the sandbox is gone, and its watchers with it

    async def _watch(self) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._timeout if self._timeout else None
        error: Optional[Exception] = None
        try:
            while True:
                wait = _WATCH_WAIT if deadline is None else max(0.0, min(_WATCH_WAIT, deadline - loop.time()))
                answer = await self._files._request_async(
                    _wire.FILES_WATCH_EVENTS, {"watcher_id": self._watcher_id, "wait": wait}
                )
                for item in answer:
                    outcome = self._on_event(event_from_json(item))
                    if inspect.isawaitable(outcome):
                        await outcome
                if deadline is not None and loop.time() >= deadline:
                    raise TimeoutException("the watch ended after its timeout of %s s (0 means no limit)" % self._timeout)
        except asyncio.CancelledError:
            await self._exited(None)
            raise
        except Exception as failure:  # it ends the watch: on_exit is told
            error = failure
        await self._unwatch()
        await self._exited(error)

    async def _exited(self, error: Optional[Exception]) -> None:
        if self._on_exit is None:
            return
        try:
            outcome = self._on_exit(error)
            if inspect.isawaitable(outcome):
                await outcome
        except Exception:
            pass  # the last callback of a background task: nobody could catch it


class _Files(Calls):
    """The files requests and their answers, whatever waits for them."""

    def _request(self, method: str, params: Optional[Dict[str, Any]] = None) -> Any:
        try:
            return super()._request(method, params)
        except NotFoundException as error:
            raise _not_found(error) from None

    async def _request_async(self, method: str, params: Optional[Dict[str, Any]] = None) -> Any:
        try:
            return await super()._request_async(method, params)
        except NotFoundException as error:
            raise _not_found(error) from None

    @staticmethod
    def _chunk(answer: Dict[str, Any]) -> Tuple[bytes, bool]:
        return base64.b64decode(answer["data"]), bool(answer["eof"])

    @staticmethod
    def _read_params(path: str, offset: int) -> Dict[str, Any]:
        return {"path": path, "offset": offset, "length": _CHUNK}

    @staticmethod
    def _decoded(data: bytearray, format: str) -> Union[str, bytearray]:
        return data.decode("utf-8", "replace") if format == "text" else data

    @staticmethod
    def _watch_params(path: Any, recursive: bool, include_entry: bool) -> Dict[str, Any]:
        return {"path": check_path(path), "recursive": bool(recursive), "include_entry": bool(include_entry)}


class Filesystem(_Files):
    """`sandbox.files` (see the module's documentation)."""

    def read(
        self,
        path: str,
        format: str = "text",
        user: Optional[str] = None,
        request_timeout: Optional[float] = None,
        gzip: bool = False,
        stream_idle_timeout: Optional[float] = None,
    ) -> Any:
        """The file's content: `str` (`format="text"`, UTF-8, undecodable bytes
        replaced), `bytearray` (`"bytes"`) or a `FileStreamReader` (`"stream"`).
        A missing file raises `FileNotFoundException`."""
        _check_format(format)
        path = check_path(path)

        def fetch(offset: int) -> Tuple[bytes, bool]:
            return self._chunk(self._request(_wire.FILES_READ, self._read_params(path, offset)))

        first = fetch(0)
        if format == "stream":
            return FileStreamReader(fetch, first)
        data = bytearray(first[0])
        eof = first[1]
        while not eof:
            chunk, eof = fetch(len(data))
            data += chunk
        return self._decoded(data, format)

    def write(
        self,
        path: str,
        data: Union[str, bytes, IO, Any],
        user: Optional[str] = None,
        request_timeout: Optional[float] = None,
        gzip: bool = False,
        use_octet_stream: Optional[bool] = None,
        metadata: Optional[Dict[str, str]] = None,
    ) -> WriteInfo:
        """Write a file, replacing it and making its folders; `data` is `str`
        (UTF-8), `bytes`, a file-like object or an iterable of `bytes` (sent
        a chunk at a time)."""
        return self.write_files([{"path": path, "data": data}], metadata=metadata)[0]

    def write_files(
        self,
        files: List[WriteEntry],
        user: Optional[str] = None,
        request_timeout: Optional[float] = None,
        gzip: bool = False,
        use_octet_stream: Optional[bool] = None,
        metadata: Optional[Dict[str, str]] = None,
    ) -> List[WriteInfo]:
        """Write several files; those given as `str`/`bytes` go in one request,
        each checked against the sandbox policy before any is written."""
        _check_metadata(metadata)
        entries = _entries(files)
        if all(_in_memory(data) is not None for _, data in entries):
            batch = [_file(path, _in_memory(data) or b"") for path, data in entries]
            return [write_info_from_json(item) for item in self._request(_wire.FILES_WRITE, {"files": batch})] if batch else []
        written = []
        for path, data in entries:
            content = _in_memory(data)
            pieces = iter([content]) if content is not None else _chunks(data, path)
            answer = self._request(_wire.FILES_WRITE, {"files": [_file(path, next(pieces, b""))]})
            for piece in pieces:
                self._request(_wire.FILES_WRITE, {"files": [_file(path, piece, append=True)]})
            written.append(write_info_from_json(answer[0]))
        return written

    def list(
        self, path: str, depth: Optional[int] = 1, user: Optional[str] = None, request_timeout: Optional[float] = None
    ) -> List[EntryInfo]:
        """The entries under a folder to `depth` levels (1: its own), depth-first in name order."""
        params = {"path": check_path(path), "depth": _check_depth(depth)}
        return [entry_from_json(item) for item in self._request(_wire.FILES_LIST, params)]

    def exists(self, path: str, user: Optional[str] = None, request_timeout: Optional[float] = None) -> bool:
        """Whether a file, folder or symlink is there."""
        return bool(self._request(_wire.FILES_EXISTS, {"path": check_path(path)}))

    def get_info(self, path: str, user: Optional[str] = None, request_timeout: Optional[float] = None) -> EntryInfo:
        """The entry at `path`; `FileNotFoundException` when there is none."""
        return entry_from_json(self._request(_wire.FILES_GET_INFO, {"path": check_path(path)}))

    def remove(self, path: str, user: Optional[str] = None, request_timeout: Optional[float] = None) -> None:
        """Remove a file, or a folder with everything in it; a missing path is no error."""
        self._request(_wire.FILES_REMOVE, {"path": check_path(path)})

    def rename(
        self, old_path: str, new_path: str, user: Optional[str] = None, request_timeout: Optional[float] = None
    ) -> EntryInfo:
        """Move a file or folder; returns the entry at its new path."""
        params = {"old_path": check_path(old_path, "old_path"), "new_path": check_path(new_path, "new_path")}
        return entry_from_json(self._request(_wire.FILES_RENAME, params))

    def make_dir(self, path: str, user: Optional[str] = None, request_timeout: Optional[float] = None) -> bool:
        """Make a folder and its parents; False when it was there already."""
        return bool(self._request(_wire.FILES_MAKE_DIR, {"path": check_path(path)}))

    def watch_dir(
        self,
        path: str,
        user: Optional[str] = None,
        request_timeout: Optional[float] = None,
        recursive: bool = False,
        include_entry: bool = False,
        allow_network_mounts: bool = False,
    ) -> WatchHandle:
        """Watch a folder (the whole tree when `recursive`); read the changes
        with the handle's `get_new_events()`, end with `stop()`. The engine
        compares the folder with what it last saw (see "Files" in docs/python-sdk.md)."""
        answer = self._request(_wire.FILES_WATCH, self._watch_params(path, recursive, include_entry))
        return WatchHandle(self, answer["watcher_id"])


class AsyncFilesystem(_Files):
    """`AsyncSandbox.files`: `Filesystem`'s methods, awaited."""

    async def read(
        self,
        path: str,
        format: str = "text",
        user: Optional[str] = None,
        request_timeout: Optional[float] = None,
        gzip: bool = False,
        stream_idle_timeout: Optional[float] = None,
    ) -> Any:
        """`Filesystem.read`; `format="stream"` gives an `AsyncFileStreamReader`."""
        _check_format(format)
        path = check_path(path)

        async def fetch(offset: int) -> Tuple[bytes, bool]:
            return self._chunk(await self._request_async(_wire.FILES_READ, self._read_params(path, offset)))

        first = await fetch(0)
        if format == "stream":
            return AsyncFileStreamReader(fetch, first)
        data = bytearray(first[0])
        eof = first[1]
        while not eof:
            chunk, eof = await fetch(len(data))
            data += chunk
        return self._decoded(data, format)

    async def write(
        self,
        path: str,
        data: Union[str, bytes, IO, Any],
        user: Optional[str] = None,
        request_timeout: Optional[float] = None,
        gzip: bool = False,
        use_octet_stream: Optional[bool] = None,
        metadata: Optional[Dict[str, str]] = None,
    ) -> WriteInfo:
        """`Filesystem.write`; `data` may also be an async iterable of `bytes`."""
        return (await self.write_files([{"path": path, "data": data}], metadata=metadata))[0]

    async def write_files(
        self,
        files: List[WriteEntry],
        user: Optional[str] = None,
        request_timeout: Optional[float] = None,
        gzip: bool = False,
        use_octet_stream: Optional[bool] = None,
        metadata: Optional[Dict[str, str]] = None,
    ) -> List[WriteInfo]:
        """`Filesystem.write_files`."""
        _check_metadata(metadata)
        entries = _entries(files)
        if all(_in_memory(data) is not None for _, data in entries):
            batch = [_file(path, _in_memory(data) or b"") for path, data in entries]
            return [write_info_from_json(item) for item in await self._request_async(_wire.FILES_WRITE, {"files": batch})] if batch else []
        written = []
        for path, data in entries:
            content = _in_memory(data)
            if content is not None:
                answer = await self._request_async(_wire.FILES_WRITE, {"files": [_file(path, content)]})
            elif hasattr(data, "__aiter__"):
                answer = await self._request_async(_wire.FILES_WRITE, {"files": [_file(path, b"")]})
                async for chunk in data:
                    piece = _in_memory(chunk)
                    if piece is None:
                        raise InvalidArgumentException("the data of %s holds a %s, not bytes" % (path, type(chunk).__name__))
                    await self._request_async(_wire.FILES_WRITE, {"files": [_file(path, piece, append=True)]})
            else:
                pieces = _chunks(data, path)
                answer = await self._request_async(_wire.FILES_WRITE, {"files": [_file(path, next(pieces, b""))]})
                for piece in pieces:
                    await self._request_async(_wire.FILES_WRITE, {"files": [_file(path, piece, append=True)]})
            written.append(write_info_from_json(answer[0]))
        return written

    async def list(
        self, path: str, depth: Optional[int] = 1, user: Optional[str] = None, request_timeout: Optional[float] = None
    ) -> List[EntryInfo]:
        """`Filesystem.list`."""
        params = {"path": check_path(path), "depth": _check_depth(depth)}
        return [entry_from_json(item) for item in await self._request_async(_wire.FILES_LIST, params)]

    async def exists(self, path: str, user: Optional[str] = None, request_timeout: Optional[float] = None) -> bool:
        """`Filesystem.exists`."""
        return bool(await self._request_async(_wire.FILES_EXISTS, {"path": check_path(path)}))

    async def get_info(self, path: str, user: Optional[str] = None, request_timeout: Optional[float] = None) -> EntryInfo:
        """`Filesystem.get_info`."""
        return entry_from_json(await self._request_async(_wire.FILES_GET_INFO, {"path": check_path(path)}))

    async def remove(self, path: str, user: Optional[str] = None, request_timeout: Optional[float] = None) -> None:
        """`Filesystem.remove`."""
        await self._request_async(_wire.FILES_REMOVE, {"path": check_path(path)})

    async def rename(
        self, old_path: str, new_path: str, user: Optional[str] = None, request_timeout: Optional[float] = None
    ) -> EntryInfo:
        """`Filesystem.rename`."""
        params = {"old_path": check_path(old_path, "old_path"), "new_path": check_path(new_path, "new_path")}
        return entry_from_json(await self._request_async(_wire.FILES_RENAME, params))

    async def make_dir(self, path: str, user: Optional[str] = None, request_timeout: Optional[float] = None) -> bool:
        """`Filesystem.make_dir`."""
        return bool(await self._request_async(_wire.FILES_MAKE_DIR, {"path": check_path(path)}))

    async def watch_dir(
        self,
        path: str,
        on_event: Callable[[FilesystemEvent], Any],
        on_exit: Optional[Callable[[Optional[Exception]], Any]] = None,
        user: Optional[str] = None,
        request_timeout: Optional[float] = None,
        timeout: Optional[float] = 60,
        recursive: bool = False,
        include_entry: bool = False,
        allow_network_mounts: bool = False,
    ) -> AsyncWatchHandle:
        """Watch a folder, calling `on_event` for each change until `stop()`
        or `timeout` seconds (default 60; 0 or None: no limit)."""
        if not callable(on_event):
            raise InvalidArgumentException("on_event must be a callable, not %s" % type(on_event).__name__)
        answer = await self._request_async(_wire.FILES_WATCH, self._watch_params(path, recursive, include_entry))
        return AsyncWatchHandle(self, answer["watcher_id"], on_event, on_exit, timeout)
