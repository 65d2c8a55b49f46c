"""Cell magics that hand the cell to something else: a display (`%%html`,
`%%markdown`, `%%latex`, `%%svg`, `%%javascript`/`%%js`) or another program
(`%%script CMD`, `%%python`, `%%python3`, `%%perl`, `%%ruby`, `%%pypy`), and
`%%bash` / `%%sh`.

Display bundles carry IPython's MIME types and its `text/plain`
(`<IPython.core.display.HTML object>`, ...), so a front end sees what Jupyter
would send. Scripts get the cell on their stdin, as IPython's `%%script`
does, and their output streams into the cell.
"""
import os
import shlex

from .. import display
from .framework import UsageError

# IPython's display classes: (magic names, MIME type, class name for text/plain).
_DISPLAYS = (
    (("html",), "text/html", "HTML"),
    (("markdown",), "text/markdown", "Markdown"),
    (("latex",), "text/latex", "Latex"),
    (("svg",), "image/svg+xml", "SVG"),
    (("javascript", "js"), "application/javascript", "Javascript"),
)

# `%%name` runs `name` with the cell on stdin (IPython's default script magics;
# `%%bash` and `%%sh` keep their own older implementation).
_INTERPRETERS = ("perl", "ruby", "python", "python2", "python3", "pypy")


def _display_magic(name, mime, class_name):
    def show(shell, args, body, frame):
        words = shlex.split(args)
        metadata = None
        if name == "html" and "--isolated" in words:
            metadata = {"text/html": {"isolated": True}}
            words.remove("--isolated")
        if words:
            raise UsageError("%%%%%s: unrecognized arguments: %s" % (name, " ".join(words)))
        bundle = {"text/plain": "<IPython.core.display.%s object>" % class_name, mime: _svg(body) if name == "svg" else body}
        display.publish("display", bundle, metadata)
        return None

    show.__doc__ = "`%%%%%s`: display the cell as %s." % (name, mime)
    return show


def _svg(text):
    """IPython's SVG keeps only the <svg> element of the document (no XML
    prolog, doctype or trailing text); text that does not parse is shown as
    written."""
    try:
        from xml.dom import minidom

        nodes = minidom.parseString(text.encode("utf-8")).getElementsByTagName("svg")
        return nodes[0].toxml() if nodes else text
    except Exception:
        return text


def _script_parser():
    import argparse  # here, not at start-up

    class ArgumentParser(argparse.ArgumentParser):
        def error(self, message):
            raise UsageError(message)

    parser = ArgumentParser(prog="%%script", add_help=False)
    parser.add_argument("--out")
    parser.add_argument("--err")
    parser.add_argument("--bg", action="store_true")
    parser.add_argument("--proc")
    parser.add_argument("--no-raise-error", action="store_false", dest="raise_error")
    return parser


def script(shell, args, body, frame):
    """`%%script [--out VAR] [--err VAR] [--no-raise-error] CMD [args]`: run CMD
    with the cell on its stdin. A failing program raises CalledProcessError
    (unless `--no-raise-error`), as in IPython 9."""
    options, command = _script_parser().parse_known_args(shlex.split(args))
    if options.bg or options.proc:
        raise UsageError(
            "%%script --bg (and --proc) is not supported: cellbox cells run one at a time and a "
            "background script would outlive its cell. Run it in the foreground, or start it "
            "yourself with subprocess.Popen."
        )
    if not command:
        raise UsageError("%%script needs a program to run, e.g. %%script python3")
    return _run(command, body, frame, options)


def _interpreter_magic(name):
    def run_with(shell, args, body, frame):
        options, extra = _script_parser().parse_known_args(shlex.split(args))
        if options.bg or options.proc:
            return script(shell, args, body, frame)  # the same clear error
        return _run([name] + extra, body, frame, options)

    run_with.__doc__ = "`%%%%%s`: run the cell with %s (a shortcut for `%%%%script %s`)." % (name, name, name)
    return run_with


def _run(command, body, frame, options):
    """Run the program with the cell on stdin. Its output goes straight to the
    cell's fds (captured like any child's), except a stream kept in a variable."""
    import subprocess  # here, not at start-up: most kernels start no child

    if not body.endswith("\n"):
        body += "\n"
    try:
        process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE if options.out else None,
            stderr=subprocess.PIPE if options.err else None,
        )
    except OSError as error:
        raise UsageError(
            "%%%%script: cannot run %r: %s. Install it, or give its full path: %%%%script /path/to/%s"
            % (command[0], error.strerror or error, os.path.basename(command[0]))
        ) from None
    try:
        out, err = process.communicate(body.encode("utf-8", "replace"))
    except KeyboardInterrupt:
        process.terminate()
        process.wait()
        raise
    for name, data in ((options.out, out), (options.err, err)):
        if name:
            frame.f_globals[name] = data.decode("utf-8", "replace")
    display.emit_status("script", command=command, exit_code=process.returncode)
    if options.raise_error and process.returncode != 0:
        raise subprocess.CalledProcessError(process.returncode, body)
    return None


def bash(shell, args, body, frame):
    return _shell_script(shell, ["bash"] + shlex.split(args), body)


def sh(shell, args, body, frame):
    return _shell_script(shell, ["sh"] + shlex.split(args), body)


def _shell_script(shell, command, body):
    """The older implementation: the cell is `-c`'s argument, stdin is empty,
    and the exit code lands in `_exit_code` (no error is raised)."""
    import subprocess  # here, not at start-up: most kernels start no child

    code = subprocess.call(command + ["-c", body], stdin=subprocess.DEVNULL)
    shell._kernel.namespace["_exit_code"] = code
    display.emit_status("shell", shell=command[0], exit_code=code)
    return None


CELL_MAGICS = {"bash": bash, "sh": sh, "script": script}
CELL_MAGICS.update((name, _display_magic(name, mime, class_name)) for names, mime, class_name in _DISPLAYS for name in names)
CELL_MAGICS.update((name, _interpreter_magic(name)) for name in _INTERPRETERS)
