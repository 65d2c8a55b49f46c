"""What every magic group shares: the error a misused magic raises, option
parsing, and the table convention.

A group module is a set of small functions, one per magic, listed in
`LINE_MAGICS` ({name: function(shell, args, frame)}) and `CELL_MAGICS`
({name: function(shell, args, body, frame)}). `shell` is the `get_ipython()`
object (`cellbox_kernel.shell`), which gives the kernel, the magic tables and
the state kept between cells; `frame` is the frame of the code that ran the
magic, whose namespace is the user's.
"""
import functools


class UsageError(Exception):
    """A magic was called with arguments it cannot use."""


# Shown by its bare name in tracebacks, as IPython's own is.
UsageError.__module__ = "builtins"


def misuse(message):
    """The error the oldest magics (%cd, %env, %load, %run, %timeit, ...) raise
    when misused: a NameError whose message starts with `UsageError: `. The
    executor shows it exactly as a UsageError; kept so their error stays the
    same exception type it always was."""
    return NameError("UsageError: " + message)


def bind(shell, function):
    """A table entry for a group's magic: the function with the shell filled
    in. Its docstring (what %magic lists) and source (`%pinfo2 %name`) are the
    function's own."""

    @functools.wraps(function)
    def magic(*args):
        return function(shell, *args)

    return magic


def split_options(args, with_value, flags):
    """Leading `-x value` / `-x` options of a magic line; returns (options, rest)."""
    options = {}
    rest = args.lstrip()
    while rest.startswith("-"):
        head, _, tail = rest.partition(" ")
        key = head[1:2]
        if head[:2] in ("--",):
            break
        if key in with_value:
            value = head[2:]
            if not value:
                value, _, tail = tail.lstrip().partition(" ")
            options[key] = value
        elif key in flags and len(head) == 2:
            options[key] = True
        else:
            break
        rest = tail.lstrip()
    return options, rest


def unquote(text):
    """A path argument without the quotes around it, if it has them."""
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text
