"""Input and output history, as IPython keeps it: `In`, `Out`, `_`, `_N`, `_iN`.

Only cells that store history count (the ones with an execution count), and
`In[N]` is the cell numbered N (`In[0]` is ''). The magics that read it back:
`%history`/`%hist`, `%recall`/`%rep`, `%rerun`, `%save`, and the directory
history `_dh`/`%dhist`. History lives for the kernel's life (no database).

`Out` holds at most `cache_size` values (`%config InteractiveShell.cache_size`,
1000 as in IPython): a value shown once would otherwise stay alive as long as
the kernel. At the limit the oldest fifth is let go, with a note on stderr; a
size under 3 keeps none (and `_` stays as it is), as in IPython. Unlike
IPython, a size set while the kernel runs applies at once.
"""
import os
import re
import sys

from .. import display
from .framework import UsageError

_UNDERS = ("_", "__", "___")
#: IPython's default size of the output cache, and the smallest it accepts.
CACHE_SIZE = 1000
_SMALLEST_CACHE = 3


class History:
    """The lists behind `In`/`_ih`, `Out`/`_oh` and `_dh`, and the names derived from them."""

    def __init__(self, namespace):
        self.inputs = [""]
        self.outputs = {}
        self.directories = [os.getcwd()]
        self.unders = {"_": "", "__": "", "___": ""}
        self.recent = ["", "", ""]  # _i, _ii, _iii
        self.cache_size = CACHE_SIZE
        self.install(namespace)

    def install(self, namespace):
        """Put the history names into a (fresh or reset) namespace."""
        namespace.update({"In": self.inputs, "_ih": self.inputs, "Out": self.outputs, "_oh": self.outputs})
        namespace["_dh"] = self.directories
        namespace.update(self.unders)
        namespace.update({"_i": self.recent[0], "_ii": self.recent[1], "_iii": self.recent[2]})
        self.namespace = namespace

    def store_input(self, number, code):
        """Before cell `number` runs: `In[number]`, `_i<number>`, and `_i`/`_ii`/`_iii` move back."""
        inputs = self.inputs
        while len(inputs) < number:
            inputs.append("")
        inputs[number:] = [code]
        namespace = self.namespace
        recent = self.recent
        self.recent = recent = [namespace.get("_i00", ""), recent[0], recent[1]]
        namespace["_i"], namespace["_ii"], namespace["_iii"] = recent
        namespace["_i%d" % number] = code
        namespace["_i00"] = code

    def store_output(self, number, value):
        """A displayed value: `Out[number]`, `_number`, and `_`/`__`/`___` move
        back, unless the user assigned one of those names themselves."""
        if value is self.outputs or self.cache_size < _SMALLEST_CACHE:
            return
        held = len(self.outputs)
        if held >= self.cache_size:
            # A fifth, as IPython (a lowered size was applied when it was set).
            self.let_go(max(held // 5, 2))
        namespace, unders = self.namespace, self.unders
        own = False
        for name in _UNDERS:
            if name in namespace and namespace[name] is not unders[name]:
                own = True
                break
        self.unders = unders = {"_": value, "__": unders["_"], "___": unders["__"]}
        if not own:
            namespace.update(unders)
        namespace["_%d" % number] = value
        self.outputs[number] = value

    def set_cache_size(self, size):
        """`%config InteractiveShell.cache_size`: what `Out` holds beyond the new
        size is let go at once (all of it under 3, where nothing more is kept)."""
        self.cache_size = size
        keep = size if size >= _SMALLEST_CACHE else 0
        if len(self.outputs) > keep:
            self.let_go(len(self.outputs) - keep)

    def let_go(self, count):
        """Drop the `count` oldest values of `Out` and each `_N` that still
        names its value, and say so on stderr. Runs inside a cell's display:
        nothing user code did to `Out` or to `sys.stderr` may make it raise."""
        outputs, namespace = self.outputs, self.namespace
        held = len(outputs)
        # The history's own entries only: a key the user put into Out is theirs.
        oldest = sorted(key for key in outputs if type(key) is int)[:count]
        if not oldest:
            return
        for number in oldest:
            value = outputs.pop(number)
            name = "_%d" % number
            if namespace.get(name) is value:
                del namespace[name]
        try:
            sys.stderr.write(
                "[cellbox: Out held %d values (InteractiveShell.cache_size is %d); the oldest %d, Out[%d] to "
                "Out[%d], were let go]\n" % (held, self.cache_size, len(oldest), oldest[0], oldest[-1])
            )
        except Exception:  # a stream the cell closed or replaced: the values are let go all the same
            pass

    def note_directory(self):
        try:
            here = os.getcwd()
        except OSError:  # the working directory was deleted
            return
        if here != self.directories[-1]:
            self.directories.append(here)

    def entries(self, spec, current):
        """[(number, code)] for a range string like `1-3 5 7:9 ~0/2`; all when empty."""
        last = len(self.inputs) - 1 if current is None else current - 1
        if not spec.strip():
            return [(n, self.inputs[n]) for n in range(1, last + 1) if n < len(self.inputs)]
        found = []
        for part in spec.split():
            for number in _numbers(part, last):
                if 0 < number < len(self.inputs):
                    found.append((number, self.inputs[number]))
        return found


_RANGE = re.compile(r"^(?:~(?P<session>\d+)/)?(?P<start>-?\d+)?(?:(?P<sep>[-:])(?P<end>\d+)?)?$")


def _numbers(part, last):
    match = _RANGE.match(part)
    if match is None or (match.group("start") is None and match.group("sep") is None):
        raise UsageError("Bad history range %r: use N, N-M (inclusive), N:M (end excluded) or ~0/N" % part)
    if match.group("session") not in (None, "0"):
        raise UsageError("Only this kernel's history is kept: ~%s/ names an earlier session" % match.group("session"))
    start = int(match.group("start") or 1)
    if start < 0:
        start = last + 1 + start
    sep, end = match.group("sep"), match.group("end")
    if sep is None:
        return [start]
    stop = int(end) if end is not None else last
    return list(range(start, stop + 1 if sep == "-" else stop))


def _options(args, with_value, flags):
    """Options anywhere in the line: ({option: value or True}, [other words])."""
    options, rest = {}, []
    words = args.split()
    index = 0
    while index < len(words):
        word = words[index]
        if word in with_value:
            optional = with_value[word]
            following = words[index + 1] if index + 1 < len(words) else None
            if following is not None and not following.startswith("-") and not (optional and not _looks_like(following, optional)):
                options[word] = following
                index += 2
                continue
            if not optional:
                raise UsageError("%s needs a value" % word)
            options[word] = True
        elif word in flags:
            options[word] = True
        else:
            rest.append(word)
        index += 1
    return options, rest


def _looks_like(word, kind):
    return kind != "number" or word.isdigit()


def _current(shell):
    return shell.execution_count if shell._current is not None else None


def history(shell, args, frame):
    """`%history [-n] [-o] [-p] [-t] [-r] [-f FILE] [-g [PATTERN]] [-l [N]] [range ...]`:
    print this kernel's input history (ranges `1-3 5 7:9`)."""
    import fnmatch

    hist = shell.history
    aliases = {"--filename": "-f", "--grep": "-g", "--limit": "-l"}
    args = " ".join(aliases.get(word, word) for word in args.split())
    options, words = _options(args, {"-f": False, "-l": "number"}, ("-n", "-o", "-p", "-t", "-r", "-u", "-g"))
    current = _current(shell)
    numbers = options.get("-n", False)
    if "-g" in options:
        pattern = "*" + " ".join(words) + "*" if words else "*"
        entries = [(n, code) for n, code in hist.entries("", current) if fnmatch.fnmatch(code, pattern)]
        numbers = True
    elif "-l" in options:
        limit = 10 if options["-l"] is True else int(options["-l"])
        entries = hist.entries("", current)[-limit:] if limit else []
    else:
        entries = hist.entries(" ".join(words), current)
    lines = []
    for number, code in entries:
        code = code.expandtabs(4).rstrip()
        multiline = "\n" in code
        head = ("%s:%s" % (str(number).rjust(4), "\n" if multiline else " ")) if numbers else ""
        if options.get("-p"):
            head += ">>> "
            if multiline:
                code = "\n... ".join(code.splitlines()) + "\n..."
        lines.append(head + code)
        if options.get("-o") and number in hist.outputs:
            lines.append(display.mime_bundle(hist.outputs[number])[0].get("text/plain", ""))
    text = "".join(line + "\n" for line in lines)
    target = options.get("-f")
    if target:
        path = os.path.expanduser(target)
        if os.path.exists(path):
            print("Overwriting file.")
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
    else:
        print(text, end="")
    return None


def _code_of(shell, spec):
    """The code of history range(s), or of a variable holding a string."""
    entries = shell.history.entries(spec, _current(shell))
    if entries:
        return "\n".join(code.rstrip("\n") for _, code in entries)
    value = shell.user_ns.get(spec.strip())
    if isinstance(value, str):
        return value
    raise UsageError("%r was not found in history, nor as a variable holding code" % spec)


def recall(shell, args, frame):
    """`%recall [range]` / `%rep`: there is no input line to put code into, so
    the code is printed (no argument: the last result as text)."""
    args = args.strip()
    if not args:
        value = shell.user_ns.get("_", "")
        print(value if isinstance(value, str) else display.safe_repr(value))
        return None
    if args.lstrip("-").isdigit() and len(args.split()) == 1 and int(args) < 0:
        args = str(len(shell.history.inputs) - 1 + int(args))
    print(_code_of(shell, args))
    return None


def rerun(shell, args, frame):
    """`%rerun [-l N] [-g PATTERN] [range]`: run earlier cells again (no
    argument: the last one), printing what runs first."""
    import fnmatch

    options, words = _options(args, {"-l": "number", "-g": False}, ())
    current = _current(shell)
    entries = shell.history.entries("", current)
    if "-l" in options:
        entries = entries[-int(options["-l"]) :] if options["-l"] is not True else entries[-1:]
    elif "-g" in options:
        pattern = "*%s*" % options["-g"]
        entries = [entry for entry in entries if fnmatch.fnmatch(entry[1], pattern) and "rerun" not in entry[1]][-1:]
    elif words:
        entries = shell.history.entries(" ".join(words), current)
    else:
        entries = entries[-1:]
    if not entries:
        print("No lines in history match specification")
        return None
    code = "\n".join(code.rstrip("\n") for _, code in entries)
    print("=== Executing: ===\n%s\n=== Output: ===" % code)
    return shell._kernel.run_fragment(code, shell.user_ns, shell.user_ns, "<rerun>")


def save(shell, args, frame):
    """`%save [-r] [-f] [-a] FILE range`: write history ranges to FILE (`.py`
    is added when missing). An existing file needs -f (overwrite) or -a (append)."""
    options, words = _options(args, {}, ("-r", "-f", "-a"))
    if len(words) < 2:
        raise UsageError("usage: %save [-r] [-f] [-a] FILE range ...")
    name = os.path.expanduser(words[0])
    if not name.endswith((".py", ".ipy")):
        name += ".ipy" if options.get("-r") else ".py"
    code = _code_of(shell, " ".join(words[1:]))
    append = options.get("-a", False)
    if os.path.exists(name) and not append and not options.get("-f"):
        raise UsageError("File `%s` exists: pass -f to overwrite it or -a to append to it" % name)
    with open(name, "a" if append else "w", encoding="utf-8") as handle:
        if not append:
            handle.write("# coding: utf-8\n")
        handle.write(code + "\n")
    print("The following commands were written to file `%s`:\n%s" % (name, code))
    display.emit_status("save", path=os.path.abspath(name), chars=len(code))
    return None


def dhist(shell, args, frame):
    """`%dhist [N | N M]`: the folders this kernel has been in."""
    directories = shell.history.directories
    words = args.split()
    start, stop = 0, len(directories)
    if len(words) == 1:
        start = max(stop - int(words[0]), 0)
    elif len(words) == 2:
        start, stop = int(words[0]), int(words[1])
    print("Directory history (kept in _dh)")
    for number in range(start, min(stop, len(directories))):
        print("%d: %s" % (number, directories[number]))
    return None


LINE_MAGICS = {"history": history, "hist": history, "recall": recall, "rep": recall, "rerun": rerun, "save": save, "dhist": dhist}
