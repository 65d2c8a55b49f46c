"""Package managers aimed at this kernel's own interpreter: `%pip` (with a
fallback to uv), `%uv`, `%conda`, `%mamba` and `%micromamba`.

Each one runs for `sys.executable` / `sys.prefix` (never whatever tool happens
to be first on PATH for another environment), streams its output, and then
evicts the modules of every distribution that changed, as `%pip` does, so
the next import loads the new code.
"""
import os
import shlex
import sys

from .. import display

# `uv pip` subcommands: `%uv install x` means `uv pip install x`.
_UV_PIP_COMMANDS = frozenset(("install", "uninstall", "list", "freeze", "show", "sync", "compile", "check", "tree"))
# As IPython: conda commands that act on an environment get `--prefix`,
# and those that would ask for confirmation get `--yes` (cells have no stdin).
_CONDA_PREFIX_COMMANDS = frozenset(("install", "list", "remove", "uninstall", "update", "upgrade"))
_CONDA_YES_COMMANDS = frozenset(("install", "remove", "uninstall", "update", "upgrade"))
_CONDA_ENV_FLAGS = frozenset(("-p", "--prefix", "-n", "--name"))
_CONDA_YES_FLAGS = frozenset(("-y", "--yes"))


def network_note():
    """Why a download may have failed: the host started this kernel with its
    network off (a sandbox), which pip's own error cannot know about."""
    mode = os.environ.get("CELLBOX_NETWORK", "on").strip().lower()
    if mode in ("off", "localhost"):
        return (
            "; the network is off for this kernel (sandbox network: %s), so nothing can be downloaded: "
            "start cellbox with --network on (or CELLBOX_NETWORK=on) to install packages" % mode
        )
    return ""


class PackageManagerError(RuntimeError):
    """The package manager is missing or exited with an error."""


class PipError(RuntimeError):
    """pip exited with an error; its output is above in the cell."""


# Shown by their bare names in tracebacks, as IPython's own errors are.
PackageManagerError.__module__ = "builtins"
PipError.__module__ = "builtins"


def has_pip():
    """Can this interpreter run `-m pip`? (A `uv venv` has no pip.)"""
    import importlib.util

    try:
        return importlib.util.find_spec("pip") is not None
    except (ImportError, ValueError):
        return False


def find_uv():
    """uv on PATH, else next to this interpreter (a venv's bin, uv's own env)."""
    import shutil

    found = shutil.which("uv")
    if found:
        return found
    for folder in (os.path.dirname(sys.executable), os.path.join(sys.prefix, "bin")):
        candidate = os.path.join(folder, "uv")
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


def pip_command(words):
    """The command `%pip words` runs: this interpreter's pip, else `uv pip`
    for this interpreter when it has no pip."""
    if has_pip():
        return [sys.executable, "-m", "pip"] + words
    uv_path = find_uv()
    if uv_path is None:
        raise PackageManagerError(
            "%%pip: %s has no pip and uv was not found (on PATH or next to the interpreter). "
            "Install pip into it (`%s -m ensurepip`), or install uv (https://docs.astral.sh/uv/) "
            "and use `%%pip` or `%%uv pip` again." % (sys.executable, sys.executable)
        )
    return _uv_pip(uv_path, words)


def _uv_pip(uv_path, words):
    return [uv_path, "pip"] + words + ["--python", sys.executable]


def pip(shell, args, frame):
    """`%pip ...`: run this interpreter's pip; then forget the modules of every
    distribution it installed or upgraded, so the next import loads the new code."""
    before = _distributions()
    command = pip_command(shlex.split(args))
    import subprocess  # here, not at start-up: most kernels start no child

    code = subprocess.call(command, stdin=subprocess.DEVNULL)
    after = _distributions()
    changed = sorted(name for name, version in after.items() if before.get(name) != version)
    evicted = _evict_modules(changed)
    import importlib

    importlib.invalidate_caches()
    display.emit_status("pip", args=args, installed=changed, evicted=evicted, exit_code=code)
    if code != 0:
        raise PipError("pip exited with status %d; its output is above%s" % (code, network_note()))
    return None


def uv(shell, args, frame):
    """`%uv pip ARGS` (or `%uv install ...`, `%uv list`, ... as `uv pip ...`):
    uv's pip interface for this interpreter. Any other `%uv ARGS` runs `uv
    ARGS` as is (e.g. `%uv --version`)."""
    words = shlex.split(args)
    uv_path = find_uv()
    if uv_path is None:
        raise PackageManagerError(
            "%uv: uv was not found on PATH or next to this interpreter. Install uv "
            "(https://docs.astral.sh/uv/), or use %pip."
        )
    if words and words[0] == "pip":
        command = _uv_pip(uv_path, words[1:])
    elif words and words[0] in _UV_PIP_COMMANDS:
        command = _uv_pip(uv_path, words)
    else:
        command = [uv_path] + words
    return run_and_evict(command, "uv", args)


def _conda_magic(tool):
    def conda_like(shell, args, frame):
        return _conda(tool, args)

    conda_like.__doc__ = "`%%%s ARGS`: run %s for this kernel's environment (`--prefix sys.prefix`)." % (tool, tool)
    return conda_like


def _conda(tool, args):
    if not os.path.exists(os.path.join(sys.prefix, "conda-meta", "history")):
        raise PackageManagerError(
            "%%%s: this kernel's Python (%s) is not in a conda environment; use %%pip instead, "
            "or start cellbox with a conda environment's python." % (tool, sys.executable)
        )
    executable = _conda_executable(tool)
    if executable is None:
        raise PackageManagerError(
            "%%%s: %s was not found (CONDA_EXE/MAMBA_EXE, next to the interpreter, or on PATH). "
            "Install it, or use %%pip." % (tool, tool)
        )
    words = shlex.split(args)
    command, rest = (words[0], words[1:]) if words else ("", [])
    extra = []
    if command in _CONDA_YES_COMMANDS and not _CONDA_YES_FLAGS.intersection(rest):
        extra.append("--yes")
    if command in _CONDA_PREFIX_COMMANDS and not _CONDA_ENV_FLAGS.intersection(rest):
        extra += ["--prefix", sys.prefix]
    return run_and_evict([executable] + ([command] if command else []) + extra + rest, tool, args)


def _conda_executable(tool):
    """As IPython finds it: $CONDA_EXE (or $MAMBA_EXE), next to the
    interpreter, then PATH."""
    variable = "MAMBA_EXE" if "mamba" in tool else "CONDA_EXE"
    configured = os.environ.get(variable)
    if configured and os.path.isfile(configured):
        return os.path.realpath(configured)
    beside = os.path.join(os.path.dirname(sys.executable), tool)
    if os.path.isfile(beside):
        return beside
    import shutil

    return shutil.which(tool)


def run_and_evict(command, op, args):
    """Run a package manager (output streaming), then evict the modules of
    every distribution it installed, upgraded or removed; raise on failure."""
    before = _distributions()
    import subprocess  # here, not at start-up: most kernels start no child

    try:
        code = subprocess.call(command, stdin=subprocess.DEVNULL)
    except OSError as error:
        raise PackageManagerError("%%%s: cannot run %s: %s" % (op, command[0], error)) from None
    after = _distributions()
    changed = sorted(name for name in set(before) | set(after) if before.get(name) != after.get(name))
    evicted = _evict_modules(changed)
    import importlib

    importlib.invalidate_caches()
    display.emit_status(op, args=args, installed=changed, evicted=evicted, exit_code=code)
    if code != 0:
        raise PackageManagerError(
            "%s exited with status %d; its output is above%s" % (os.path.basename(command[0]), code, network_note())
        )
    return None


def _normalize(name):
    import re

    return re.sub(r"[-_.]+", "-", name).lower()


def _distributions():
    """{normalized distribution name: version} of what is installed now."""
    try:
        from importlib import metadata
    except ImportError:  # pragma: no cover - Python < 3.8
        return {}
    found = {}
    for dist in metadata.distributions():
        try:
            name = dist.metadata["Name"]
        except Exception:
            continue
        if name:
            found[_normalize(name)] = dist.version
    return found


def import_names(distribution):
    """The top-level import names a distribution provides (top_level.txt, else RECORD)."""
    from importlib import metadata

    try:
        dist = metadata.distribution(distribution)
    except Exception:
        return set()
    names = set()
    top_level = dist.read_text("top_level.txt")
    if top_level:
        names.update(line.strip() for line in top_level.splitlines() if line.strip())
    for entry in dist.files or ():
        parts = entry.parts
        if not parts or parts[0].endswith((".dist-info", ".egg-info", ".data")) or parts[0] in ("..", "__pycache__"):
            continue
        head = parts[0]
        if len(parts) == 1:
            if head.endswith(".py"):
                names.add(head[:-3])
            elif head.endswith((".so", ".pyd")):
                names.add(head.split(".")[0])
        else:
            names.add(head)
    return {name for name in names if name.isidentifier()}


def _evict_modules(distributions):
    """Remove from sys.modules every module of these distributions; return the roots."""
    roots = set()
    for distribution in distributions:
        roots.update(import_names(distribution))
    for module in list(sys.modules):
        if module.split(".", 1)[0] in roots:
            del sys.modules[module]
    return sorted(roots)


LINE_MAGICS = {"pip": pip, "uv": uv}
LINE_MAGICS.update((tool, _conda_magic(tool)) for tool in ("conda", "mamba", "micromamba"))
