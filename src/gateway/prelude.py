"""evalkit's helpers in a Jupyter kernel: the same names and status events as
in evalkit's own kernels, built on IPython's display."""


def _evalkit_install_prelude(namespace):
    import os

    from IPython.display import display as _display

    def emit_status(op, **fields):
        """Send a structured status event (`application/x-evalkit-status`)."""
        event = {"op": op}
        event.update(fields)
        _display({"application/x-evalkit-status": event, "text/plain": "[%s]" % op}, raw=True)

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

    for helper in (emit_status, env, read, write, log, phase):
        namespace[helper.__name__] = helper
    namespace["display"] = _display


_evalkit_install_prelude(globals())
del _evalkit_install_prelude
