"""The SDK's remote transport: `Sandbox(api_url=..., api_key=...)` against `cellbox serve`.

It opens one HTTP/1.1 connection to `<api_url>/sdk` with the bearer token and
asks to switch it to the `cellbox-sdk` protocol; from then on the connection
carries the same JSON-RPC lines as a local engine's stdin and stdout. One
connection is one sandbox: closing it stops the sandbox's kernels on the server.
Only the standard library is used (`socket`, `ssl`).
"""

import json
import socket
import ssl
import threading
import urllib.parse
import weakref
from typing import IO, Any, Dict, Optional, Tuple

from . import _wire
from ._transport import EngineGone, Transport, _Engine, _request
from .exceptions import AuthenticationException, InvalidArgumentException, RateLimitException, SandboxException

__all__ = ["RemoteTransport"]

#: Seconds to connect and get the server's answer to the upgrade.
_CONNECT_TIMEOUT = 30.0
#: Seconds `close()` waits for the server to end the sandbox.
_CLOSE_GRACE = 10.0
#: Calls whose parameters carry the sandbox's `envs` (a local engine starts its kernels with them).
_WITH_ENVS = (_wire.RUN_CODE, _wire.COMMANDS_START)


class RemoteTransport(Transport):
    """A sandbox on a `cellbox serve` server, over one upgraded HTTP connection."""

    def __init__(
        self, api_url: str, api_key: Optional[str], timeout: Optional[float], envs: Optional[Dict[str, str]]
    ) -> None:
        sock, reader = _connect(api_url, api_key, timeout)
        writer = sock.makefile("wb")
        self._envs = dict(envs or {})
        self._start(_Engine(reader, writer, None, api_url))
        self._finalizer = weakref.finalize(self, _close_connection, sock, writer, self._write_lock, self._engine.ended)

    def _send(self, message: Dict[str, Any]) -> None:
        if self._envs and message.get("method") in _WITH_ENVS and "id" in message:
            params = dict(message.get("params") or {})
            params["envs"] = dict(self._envs, **(params.get("envs") or {}))
            message = dict(message, params=params)
        super()._send(message)


def _connect(api_url: str, api_key: Optional[str], timeout: Optional[float]) -> Tuple[socket.socket, IO[bytes]]:
    """The upgraded connection and its reader (which may already hold the first lines)."""
    parts = urllib.parse.urlsplit(api_url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InvalidArgumentException("api_url must be an http:// or https:// URL of a cellbox server, not %r" % api_url)
    secure = parts.scheme == "https"
    port = parts.port or (443 if secure else 80)
    try:
        sock = socket.create_connection((parts.hostname, port), timeout=_CONNECT_TIMEOUT)
        if secure:
            sock = ssl.create_default_context().wrap_socket(sock, server_hostname=parts.hostname)
    except OSError as error:
        raise EngineGone("cannot connect to the cellbox server at %s: %s" % (api_url, error)) from error
    path = parts.path.rstrip("/") + "/sdk"
    if timeout:
        path += "?timeout=%s" % float(timeout)
    host = parts.hostname if parts.port is None else "%s:%d" % (parts.hostname, port)
    lines = [
        "GET %s HTTP/1.1" % path,
        "Host: %s" % host,
        "Connection: Upgrade",
        "Upgrade: cellbox-sdk",
    ]
    if api_key:
        lines.append("Authorization: Bearer %s" % api_key)
    reader = sock.makefile("rb")
    try:
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
        status, headers = _read_head(reader)
        if status != 101:
            length = int(headers.get("content-length", "0") or 0)
            body = reader.read(length) if length else b""
            raise _refusal(api_url, status, body)
    except OSError as error:
        sock.close()
        raise EngineGone("the cellbox server at %s did not answer: %s" % (api_url, error)) from error
    except BaseException:
        sock.close()
        raise
    sock.settimeout(None)
    return sock, reader


def _read_head(reader: IO[bytes]) -> Tuple[int, Dict[str, str]]:
    status_line = reader.readline(65536).decode("latin-1")
    try:
        status = int(status_line.split()[1])
    except (IndexError, ValueError):
        raise SandboxException("not an HTTP answer from the server: %r" % status_line[:100]) from None
    headers = {}
    while True:
        line = reader.readline(65536).decode("latin-1").strip()
        if not line:
            return status, headers
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()


def _refusal(api_url: str, status: int, body: bytes) -> Exception:
    try:
        message = json.loads(body.decode("utf-8"))["error"]
    except (ValueError, KeyError, TypeError):
        message = body.decode("utf-8", "replace").strip() or "HTTP %d" % status
    if status == 401:
        return AuthenticationException("the cellbox server at %s refused the api_key: %s" % (api_url, message))
    if status == 429:
        return RateLimitException("the cellbox server at %s is full: %s" % (api_url, message))
    if status == 404:
        return SandboxException("%s has no SDK endpoint: is it a cellbox server (`cellbox serve`)?" % api_url)
    return SandboxException("the cellbox server at %s refused the sandbox (HTTP %d): %s" % (api_url, status, message))


def _close_connection(sock: socket.socket, writer: IO[bytes], lock: threading.Lock, ended: threading.Event) -> None:
    """Ask the server to stop the sandbox (a `shutdown` request: a TLS
    connection cannot be half-closed); the server closing its end once the
    kernels are stopped says it is done."""
    try:
        with lock:
            writer.write(json.dumps(_request(0, _wire.SHUTDOWN, None)).encode("utf-8") + b"\n")
            writer.flush()
    except (OSError, ValueError):
        pass
    ended.wait(timeout=_CLOSE_GRACE)
    for close in (writer.close, sock.close):
        try:
            close()
        except OSError:
            pass
