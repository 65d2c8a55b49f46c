"""The user namespace is the `__main__` module, as in IPython.

Cells run in the `__dict__` of a module registered as `sys.modules["__main__"]`,
so whatever the standard library finds through `__main__` finds the cell's
names: `pickle` and `copy` of classes and functions defined in a cell, and
`multiprocessing` / `concurrent.futures.ProcessPoolExecutor` with the fork
start method (the child inherits the module).

The module has no `__file__` and no `__spec__`, like IPython's: with the spawn
and forkserver start methods the child therefore does not try to re-run
anything as its main module (there is no file to run), so functions a child
must unpickle have to come from an importable module; one defined in a cell
fails in the child with `AttributeError: Can't get attribute ...`, exactly
as under ipykernel.

This module also tells the traceback code which errors come from the runner
itself, so the user sees only their own frames.
"""
import builtins
import sys
import types

# The names every fresh module has; `%reset` keeps them.
_MODULE_NAMES = ("__name__", "__doc__", "__package__", "__loader__", "__spec__", "__builtins__")


def install():
    """Create the user's `__main__` module and register it in sys.modules."""
    module = types.ModuleType("__main__")
    module.__dict__["__builtins__"] = builtins
    sys.modules["__main__"] = module
    return module


def clear(module):
    """Forget every user name (`%reset`), keeping the module itself registered."""
    for name in list(module.__dict__):
        if name not in _MODULE_NAMES:
            del module.__dict__[name]
    module.__dict__["__name__"] = "__main__"
    module.__dict__["__builtins__"] = builtins
    sys.modules["__main__"] = module


def raised_in(tb, directory):
    """True when the innermost frame of `tb` is code under `directory`."""
    if tb is None:
        return False
    while tb.tb_next is not None:
        tb = tb.tb_next
    return tb.tb_frame.f_code.co_filename.startswith(directory)


def is_usage_error(error, directory):
    """A magic's usage error: shown as one line, without a traceback, as
    IPython shows its UsageError. Only errors the runner raised count, so a
    user's own class of the same name keeps its traceback."""
    if not raised_in(error.__traceback__, directory):
        return False
    if type(error).__name__ == "UsageError":
        return True
    return isinstance(error, NameError) and str(error).startswith("UsageError: ")


def usage_message(error):
    """The usage error's text, without a `UsageError: ` prefix."""
    text = str(error)
    return text[len("UsageError: ") :] if text.startswith("UsageError: ") else text


def run_script(path, argv):
    """`%run path args`: run a script as `__main__` in a fresh module (with
    `__file__` and `sys.argv` set) that stands in `sys.modules["__main__"]`
    while it runs; return its names. Classes it defines keep `__module__ ==
    "__main__"`, so once its names join the user's they pickle as cell-defined
    ones do."""
    with open(path, "rb") as handle:
        source = handle.read()
    code = compile(source, path, "exec", dont_inherit=True)
    module = types.ModuleType("__main__")
    module.__dict__.update({"__file__": path, "__builtins__": builtins})
    saved_main, saved_argv = sys.modules.get("__main__"), sys.argv
    sys.modules["__main__"] = module
    sys.argv = [path] + list(argv)
    try:
        try:
            exec(code, module.__dict__)
        except SystemExit as error:
            if error.code not in (None, 0):
                raise
    finally:
        sys.argv = saved_argv
        if saved_main is not None:
            sys.modules["__main__"] = saved_main
    return module.__dict__
