"""The models of `sandbox.files` (E2B's names, fields and order) and its
stream readers; `cellbox.filesystem` has the API and exports these too."""

from dataclasses import dataclass
from datetime import datetime, timezone
from enum import Enum
from typing import IO, Any, AsyncIterator, Callable, Dict, Iterator, Optional, Tuple, Union

try:  # Python 3.8+: typing has TypedDict
    from typing import TypedDict
except ImportError:  # pragma: no cover
    TypedDict = dict  # type: ignore

__all__ = [
    "FileType",
    "WriteInfo",
    "EntryInfo",
    "WriteEntry",
    "FilesystemEventType",
    "FilesystemEvent",
    "FileStreamReader",
    "AsyncFileStreamReader",
    "entry_from_json",
    "event_from_json",
    "write_info_from_json",
]


class FileType(Enum):
    """What a path is: a file, a folder, or a symlink whose target is missing
    (a symlink to a file or folder has its target's type)."""

    FILE = "file"
    DIR = "dir"
    SYMLINK = "symlink"


@dataclass
class WriteInfo:
    """What `write` and `write_files` return for each file: its name, type and absolute path."""

    name: str
    type: Optional[FileType]
    path: str
    #: E2B's file metadata; always None here (it is not kept).
    metadata: Optional[Dict[str, str]] = None


@dataclass(init=False)
class EntryInfo(WriteInfo):
    """A file or folder as `list`, `get_info` and `rename` describe it, with
    E2B's fields: `mode` the permission bits, `permissions` as `ls -l` shows
    them (`-rw-r--r--`), `modified_time` in UTC, `symlink_target` the resolved
    target of a symlink (else None)."""

    size: int
    mode: int
    permissions: str
    owner: str
    group: str
    modified_time: datetime
    symlink_target: Optional[str]

    # E2B's positional order; `metadata` (keyword-only there) comes last.
    def __init__(
        self,
        name: str,
        type: Optional[FileType],
        path: str,
        size: int,
        mode: int,
        permissions: str,
        owner: str,
        group: str,
        modified_time: datetime,
        symlink_target: Optional[str] = None,
        metadata: Optional[Dict[str, str]] = None,
    ) -> None:
        super().__init__(name, type, path, metadata)
        self.size = size
        self.mode = mode
        self.permissions = permissions
        self.owner = owner
        self.group = group
        self.modified_time = modified_time
        self.symlink_target = symlink_target


class WriteEntry(TypedDict):
    """One file for `write_files`: its path and its data (`str`, `bytes`, a
    file-like object, or an iterable of `bytes` chunks)."""

    path: str
    data: Union[str, bytes, IO]


class FilesystemEventType(Enum):
    """What happened to a watched entry."""

    CHMOD = "chmod"
    CREATE = "create"
    REMOVE = "remove"
    RENAME = "rename"
    WRITE = "write"


@dataclass
class FilesystemEvent:
    """One change in a watched folder: `name` is relative to it (`sub/file.txt`
    in a recursive watch); `entry` is set with `include_entry=True` when the
    entry still exists."""

    name: str
    type: FilesystemEventType
    entry: Optional[EntryInfo] = None


def entry_from_json(item: Dict[str, Any]) -> EntryInfo:
    return EntryInfo(
        name=item["name"],
        type=FileType(item["type"]),
        path=item["path"],
        size=item["size"],
        mode=item["mode"],
        permissions=item["permissions"],
        owner=item["owner"],
        group=item["group"],
        modified_time=datetime.fromtimestamp(item["modified_time"], tz=timezone.utc),
        symlink_target=item.get("symlink_target"),
    )


def event_from_json(item: Dict[str, Any]) -> FilesystemEvent:
    entry = item.get("entry")
    return FilesystemEvent(item["name"], FilesystemEventType(item["type"]), entry_from_json(entry) if entry else None)


def write_info_from_json(item: Dict[str, Any]) -> WriteInfo:
    return WriteInfo(item["name"], FileType(item["type"]), item["path"])


class FileStreamReader(Iterator[bytes]):
    """`read(path, format="stream")`: the file's bytes, a chunk per step,
    each read from the engine when it is asked for. Use it in a `with`
    block, read it to the end, or `close()` it."""

    def __init__(self, fetch: Callable[[int], Tuple[bytes, bool]], first: Tuple[bytes, bool]) -> None:
        self._fetch = fetch
        self._next: Optional[Tuple[bytes, bool]] = first
        self._offset = len(first[0])
        self._closed = False

    def __iter__(self) -> "FileStreamReader":
        return self

    def __next__(self) -> bytes:
        while not self._closed:
            if self._next is None:
                self._next = self._fetch(self._offset)
                self._offset += len(self._next[0])
            chunk, eof = self._next
            self._next = None
            if eof:
                self.close()
            if chunk:
                return chunk
        raise StopIteration

    def close(self) -> None:
        """Stop reading (nothing is held open meanwhile; safe to call again)."""
        self._closed = True

    def __enter__(self) -> "FileStreamReader":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()


class AsyncFileStreamReader(AsyncIterator[bytes]):
    """`FileStreamReader` for `AsyncSandbox.files.read(path, format="stream")`: `async for` it."""

    def __init__(self, fetch: Callable[[int], Any], first: Tuple[bytes, bool]) -> None:
        self._fetch = fetch
        self._next: Optional[Tuple[bytes, bool]] = first
        self._offset = len(first[0])
        self._closed = False

    def __aiter__(self) -> "AsyncFileStreamReader":
        return self

    async def __anext__(self) -> bytes:
        while not self._closed:
            if self._next is None:
                self._next = await self._fetch(self._offset)
                self._offset += len(self._next[0])
            chunk, eof = self._next
            self._next = None
            if eof:
                await self.aclose()
            if chunk:
                return chunk
        raise StopAsyncIteration

    async def aclose(self) -> None:
        """Stop reading (safe to call again)."""
        self._closed = True

    async def __aenter__(self) -> "AsyncFileStreamReader":
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.aclose()
