"""The snapshot file: its first line, its JSON header and the checks before a load.

A magic line, a header line (format, Python version and implementation,
cellbox version, creation time, names count, payload length and CRC-32, and the
shell's settings as magic lines), then the payload (snapshot.py). Marshalled
code ties a snapshot to one Python minor version and implementation. Format 1,
with a sha256 instead of the CRC (60 ms per 10 MB without OpenSSL, against 4),
is still read.
"""
import json
import os
import sys
import zlib

MAGIC = b"CELLBOX-SNAPSHOT\n"
FORMAT_VERSION = 2
PYTHON = "%d.%d" % sys.version_info[:2]
_READS = (1, 2)  # the formats this cellbox loads
_MAX_HEADER = 1 << 16
_CHECKSUM = {1: "payload_sha256", 2: "payload_crc32"}  # the header key of each format's checksum


class SnapshotError(Exception):
    """The file is not a snapshot this kernel can load; the message says why and what to do."""


def read_header(path):
    """The header of the snapshot at `path`, without reading its payload; it
    does not check whether this kernel's Python can load the snapshot."""
    with open(path, "rb") as handle:
        return _read_header(handle, path)


def write_atomically(path, chunks):
    """Write to a temporary file in the same folder, fsync, then rename over `path`."""
    folder, base = os.path.split(path)
    import tempfile

    descriptor, temporary = tempfile.mkstemp(dir=folder, prefix="." + base + ".", suffix=".tmp")
    try:
        with os.fdopen(descriptor, "wb") as handle:
            for chunk in chunks:
                handle.write(chunk)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise


def read(handle, path):
    """(header, payload) of the snapshot in `handle` if this kernel can load it, else SnapshotError."""
    header = _read_header(handle, path)
    _check_interpreter(header, path)
    payload = handle.read()
    expected = header["payload_bytes"]
    if len(payload) < expected:
        raise SnapshotError(
            "snapshot %s is truncated: it has %d of its %d payload bytes (it was cut short while being written "
            "or copied); use a complete copy" % (path, len(payload), expected)
        )
    if len(payload) > expected or _checksum(header["format"], payload) != header[_CHECKSUM[header["format"]]]:
        raise SnapshotError("snapshot %s is corrupt: its checksum does not match; use an intact copy" % path)
    return header, payload


def _read_header(handle, path):
    magic = handle.read(len(MAGIC))
    if magic != MAGIC:
        if magic and MAGIC.startswith(magic):
            raise SnapshotError("snapshot %s is truncated: it ends inside its first line; use a complete copy" % path)
        raise SnapshotError("%s is not a cellbox snapshot (it does not start with %r)" % (path, MAGIC.decode()))
    line = handle.readline(_MAX_HEADER)
    try:
        header = json.loads(line) if line.endswith(b"\n") else None
    except (ValueError, RecursionError):
        header = None
    if not isinstance(header, dict):
        raise SnapshotError("snapshot %s is truncated or damaged: its header is incomplete; use an intact copy" % path)
    if header.get("format") not in _READS:
        message = "snapshot %s has format %r; this cellbox reads formats %s: load it with the cellbox that wrote it (%s)"
        readable = " and ".join(str(version) for version in _READS)
        raise SnapshotError(message % (path, header.get("format"), readable, header.get("cellbox", "unknown")))
    keys = ("python", "implementation", "payload_bytes", _CHECKSUM[header["format"]])
    if not set(keys) <= header.keys() or not isinstance(header["payload_bytes"], int):
        raise SnapshotError("snapshot %s is damaged: its header lacks %s" % (path, ", ".join(sorted(keys))))
    return header


def _checksum(version, payload):
    if version == 1:
        import hashlib  # only for an older cellbox's files: OpenSSL's start-up would slow every wake

        return hashlib.sha256(payload).hexdigest()
    return zlib.crc32(payload)


def _check_interpreter(header, path):
    """Marshalled code only loads in the Python minor version (and implementation) that wrote it."""
    written = _interpreter(header["implementation"], header["python"])
    running = _interpreter(sys.implementation.name, PYTHON)
    if written != running:
        message = "snapshot %s was written by %s; restore it with %s (this kernel runs %s)"
        raise SnapshotError(message % (path, written, written, running))


def _interpreter(implementation, version):
    return "Python %s" % version if implementation == "cpython" else "%s %s" % (implementation, version)
