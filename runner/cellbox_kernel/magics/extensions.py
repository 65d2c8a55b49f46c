"""Extensions: %load_ext, %unload_ext and %reload_ext (the shell does the
loading: `cellbox_kernel.shell`)."""
from .framework import UsageError


def load_ext(shell, args, frame):
    """`%load_ext module`: load an IPython extension (its load_ipython_extension(ip))."""
    name = args.strip()
    if not name:
        raise UsageError("Missing module name.")
    if shell.load_extension(name) == "already loaded":
        print('The %s extension is already loaded. To reload it, use:\n  %%reload_ext %s' % (name, name))
    return None


def unload_ext(shell, args, frame):
    """`%unload_ext module`: call the extension's unload_ipython_extension(ip)."""
    name = args.strip()
    if not name:
        raise UsageError("Missing module name.")
    outcome = shell.unload_extension(name)
    if outcome == "no unload function":
        print("The %s extension doesn't define how to unload it." % name)
    elif outcome == "not loaded":
        print("The %s extension is not loaded." % name)
    return None


def reload_ext(shell, args, frame):
    """`%reload_ext module`: unload, re-import and load an extension again."""
    name = args.strip()
    if not name:
        raise UsageError("Missing module name.")
    shell.reload_extension(name)
    return None


LINE_MAGICS = {"load_ext": load_ext, "unload_ext": unload_ext, "reload_ext": reload_ext}
