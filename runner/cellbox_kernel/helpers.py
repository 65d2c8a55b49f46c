"""The environment and file helpers of every kernel's namespace (`env`,
`read`, `write`, `log`, `phase`), built around the kernel's own
`emit_status`.

Standard library only and no relative imports: the Jupyter gateway backend
sends this file's source to kernels that have no cellbox runner, so both
kinds of kernel offer the very same helpers. The model reads the docstrings:
keep them short and exact.
"""
import os


def make_helpers(emit_status):
    """Return (env, read, write, log, phase), reporting through `emit_status(op, **fields)`."""

    def env(key=None, value=None):
        """Environment variables: env() -> dict of all, env(key) -> value or None,
        env(key, value) sets it for this kernel and its child processes."""
        if key is None:
            return dict(os.environ)
        if value is None:
            return os.environ.get(key)
        os.environ[key] = str(value)
        emit_status("env", key=key)
        return os.environ[key]

    def read(path, offset=1, limit=None):
        """Return the text of a file, from line `offset` (1-based), at most `limit` lines."""
        with open(os.path.expanduser(path), "r", encoding="utf-8", errors="replace") as handle:
            lines = handle.readlines()
        start = max(int(offset), 1) - 1
        chosen = lines[start:] if limit is None else lines[start : start + int(limit)]
        text = "".join(chosen)
        emit_status("read", path=str(path), chars=len(text), lines=len(chosen))
        return text

    def write(path, content):
        """Write text to a file (parent folders are created); return the number of characters."""
        path = os.path.expanduser(path)
        parent = os.path.dirname(path)
        if parent:
            os.makedirs(parent, exist_ok=True)
        with open(path, "w", encoding="utf-8") as handle:
            count = handle.write(content)
        emit_status("write", path=str(path), chars=count)
        return count

    def log(message):
        """Record a progress message as a status event (shown apart from stdout)."""
        emit_status("log", message=str(message))

    def phase(title):
        """Mark the start of a named phase of work in the cell's status events."""
        emit_status("phase", title=str(title))

    return env, read, write, log, phase
