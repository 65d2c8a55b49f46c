"""The text/plain of a cell result as IPython shows it, without IPython.

IPython's displayhook prints a result through `IPython.lib.pretty` (the
reference here is IPython 9.18). Its rules, written again here:

- Types print as `module.qualname` (`int` for builtins), functions as
  `<function module.qualname(signature)>`, objects with the default repr as
  `<module.Class at 0x…>`, regular expressions as `re.compile(r'…', re.FLAGS)`,
  exceptions as `Name(args)`.
- Lists, tuples, dicts, sets and frozensets (and their subclasses that keep
  the builtin repr), `defaultdict`, `OrderedDict`, `deque`, `Counter`,
  `UserList`, `SimpleNamespace`, `os.environ` and `mappingproxy` are laid out
  within 79 columns: when a line would be longer, the outermost groups break
  first, one item per line, indented under the opening bracket. Sets are
  sorted (by `str` when their items do not compare); dicts keep their order;
  a container holding itself shows `[...]`, `{...}`, `Name(...)`.
- An object whose class defines `_repr_pretty_(p, cycle)` is printed by it;
  `p` has IPython's printer API (`text`, `breakable`, `break_`, `pretty`,
  `begin_group`/`end_group`, `group`, `indent`, `indentation`, ...).
- Any other class that defines `__repr__` (a builtin subclass with its own
  repr, numpy arrays, DataFrames) prints its repr, each of its lines after the
  first starting at the current indentation.

Scalars and flat containers of scalars take the direct path of `pretty_flat`.
`%pprint` turns all this off (`enabled`): results are then their repr().
"""
import sys
from collections import deque

from .pretty_flat import MAX_ITEMS, MAX_WIDTH, one_line, sorted_items

enabled = True  # %pprint: when off, a result's text/plain is its repr()


def toggle():
    """Turn pretty printing over (`%pprint`); returns IPython's message."""
    global enabled
    enabled = not enabled
    return "Pretty printing has been turned %s" % ("ON" if enabled else "OFF")


def result_text(obj, float_text=None):
    """The text/plain of a cell result: pretty unless %pprint turned it off.

    `float_text(value)` formats floats (%precision), or returns None for repr."""
    if not enabled:
        return repr(obj)
    line = one_line(obj, float_text)
    return line if line is not None else _laid_out(obj, float_text, MAX_WIDTH)


def pretty(obj, float_text=None, max_width=MAX_WIDTH):
    """What `IPython.lib.pretty.pretty(obj)` returns."""
    if max_width == MAX_WIDTH:
        line = one_line(obj, float_text)
        if line is not None:
            return line
    return _laid_out(obj, float_text, max_width)


def _laid_out(obj, float_text, max_width):
    printer = Printer(max_width, float_text)
    printer.pretty(obj)
    printer.flush()
    return "".join(printer.output)


def _attribute(obj, name, default=None):
    try:
        return getattr(obj, name, default)
    except Exception:
        return default


class _Group:
    """Breakables opened together: they all break, or none does."""

    __slots__ = ("depth", "breakables", "broken")

    def __init__(self, depth):
        self.depth = depth
        self.breakables = deque()
        self.broken = False


class _Breakable:
    """A place that is either `separator` or a newline and `indent` spaces."""

    __slots__ = ("separator", "width", "indent", "group")

    def __init__(self, separator, indent, group):
        self.separator = separator
        self.width = len(separator)
        self.indent = indent
        self.group = group


class Printer:
    """The printer handed to `_repr_pretty_(p, cycle)` methods.

    Text waits in a buffer until it is known whether the breakables in it
    stay on the line; when the pending line passes `max_width`, the shallowest
    open group that has breakables is broken (among groups at one depth, the
    queue's bookkeeping is IPython's, so layouts come out the same).
    """

    def __init__(self, max_width=MAX_WIDTH, float_text=None, newline="\n", max_seq_length=MAX_ITEMS):
        self.max_width = max_width
        self.newline = newline
        self.max_seq_length = max_seq_length
        self.verbose = False
        self.output = []
        self.output_width = 0
        self.buffer = deque()
        self.buffer_width = 0
        self.indentation = 0
        root = _Group(0)
        self.group_stack = [root]
        self._levels = [[root]]
        self.stack = []
        self._float_text = float_text

    # The layout engine.

    def text(self, obj):
        """Add text that never breaks."""
        width = len(obj)
        if self.buffer:
            self.buffer.append(obj)
            self.buffer_width += width
            self._fit()
        else:
            self.output.append(obj)
            self.output_width += width

    def breakable(self, sep=" "):
        """Add `sep`, or a newline if this group breaks."""
        group = self.group_stack[-1]
        if group.broken:
            self._newline()
            return
        breakable = _Breakable(sep, self.indentation, group)
        group.breakables.append(breakable)
        self.buffer.append(breakable)
        self.buffer_width += breakable.width
        self._fit()

    def break_(self):
        """A newline here, whatever the width."""
        group = self._next_to_break()
        if group is not None:
            self._release(group)
        self._newline()

    def begin_group(self, indent=0, open=""):
        """Open a group (after the text `open`); lines it breaks are indented
        by `indent` more."""
        if open:
            self.text(open)
        group = _Group(self.group_stack[-1].depth + 1)
        self.group_stack.append(group)
        while len(self._levels) <= group.depth:
            self._levels.append([])
        self._levels[group.depth].append(group)
        self.indentation += indent

    def end_group(self, dedent=0, close=""):
        """Close the innermost group, then add the text `close`."""
        self.indentation -= dedent
        group = self.group_stack.pop()
        if not group.breakables:
            self._forget(group)
        if close:
            self.text(close)

    def flush(self):
        """Write out everything still buffered."""
        for item in self.buffer:
            self._write(item)
        self.buffer.clear()
        self.buffer_width = 0

    def group(self, indent=0, open="", close=""):
        """`with p.group(indent, open, close):` — begin_group/end_group."""
        return _Scope(self, indent, open, close)

    def indent(self, indent):
        """`with p.indent(n):` — lines broken inside are indented n more."""
        return _Scope(self, indent, None, None)

    def _newline(self):
        self.flush()
        self.output.append(self.newline + " " * self.indentation)
        self.output_width = self.indentation
        self.buffer_width = 0

    def _fit(self):
        while self.output_width + self.buffer_width > self.max_width:
            group = self._next_to_break()
            if group is None:
                return
            self._release(group)

    def _release(self, group):
        """Write the buffer up to the group's last breakable and the text after it."""
        buffer = self.buffer
        while group.breakables:
            item = buffer.popleft()
            self.output_width = self._write(item)
            self.buffer_width -= len(item) if type(item) is str else item.width
        while buffer and type(buffer[0]) is str:
            item = buffer.popleft()
            self.output_width = self._write(item)
            self.buffer_width -= len(item)

    def _write(self, item):
        """Output one buffered item; returns the column after it."""
        if type(item) is str:
            self.output.append(item)
            return self.output_width + len(item)
        group = item.group
        group.breakables.popleft()
        if group.broken:
            self.output.append(self.newline + " " * item.indent)
            return item.indent
        if not group.breakables:
            self._forget(group)
        self.output.append(item.separator)
        return self.output_width + item.width

    def _next_to_break(self):
        """Mark the group to break next and take it off the queue, or None.

        At the shallowest depth that has a group with breakables, the newest
        such group breaks; the entry taken off that depth's list is the one
        at the mirrored position (as IPython's queue does). Depths without
        breakables are marked broken and emptied on the way."""
        for level in self._levels:
            last = len(level) - 1
            for position in range(last, -1, -1):
                group = level[position]
                if group.breakables:
                    del level[last - position]
                    group.broken = True
                    return group
            for group in level:
                group.broken = True
            del level[:]
        return None

    def _forget(self, group):
        try:
            self._levels[group.depth].remove(group)
        except ValueError:
            pass

    def _enumerate(self, items):
        """enumerate(items), ending with `...` after max_seq_length items."""
        for index, item in enumerate(items):
            if self.max_seq_length and index >= self.max_seq_length:
                self.text(",")
                self.breakable()
                self.text("...")
                return
            yield index, item

    # Objects.

    def pretty(self, obj):
        """Print `obj` by its rules (see the module's docstring)."""
        key = id(obj)
        cycle = key in self.stack
        self.stack.append(key)
        self.begin_group()
        try:
            if key in _SINGLETONS:
                self._repr(obj, cycle)
                return
            cls = _attribute(obj, "__class__") or type(obj)
            for base in _mro(cls):
                rule = _RULES.get(base)
                if rule is None:
                    rule = self._rule_by_name(base)
                if rule is not None:
                    rule(self, obj, cycle)
                    return
                namespace = base.__dict__
                if "_repr_pretty_" in namespace:
                    method = base._repr_pretty_
                    if callable(method):
                        method(obj, self, cycle)
                        return
                if base is not object and "__repr__" in namespace and callable(_attribute(base, "__repr__")):
                    self._repr(obj, cycle)
                    return
            self._default(obj, cycle)
        finally:
            self.end_group()
            self.stack.pop()

    def _rule_by_name(self, cls):
        key = (_attribute(cls, "__module__"), _attribute(cls, "__name__"))
        rule = _RULES_BY_NAME.get(key)
        if rule is None and self._float_text is not None and key == ("numpy", "float64"):
            return Printer._float
        return rule

    def _repr(self, obj, cycle):
        lines = repr(obj).splitlines()
        self.begin_group()
        try:
            for number, line in enumerate(lines):
                if number:
                    self.break_()
                self.text(line)
        finally:
            self.end_group()

    def _float(self, obj, cycle):
        text = self._float_text(obj) if self._float_text is not None else None
        if text:
            self.text(text)
        else:
            self._repr(obj, cycle)

    def _default(self, obj, cycle):
        cls = _attribute(obj, "__class__") or type(obj)
        if _attribute(cls, "__repr__") is not object.__repr__:
            self._repr(obj, cycle)
            return
        self.begin_group(1, "<")
        self.pretty(cls)
        self.text(" at 0x%x" % id(obj))
        if cycle:
            self.text(" ...")
        self.end_group(1, ">")

    def _call(self, name, args, keywords=()):
        """`name(arg, ..., key=value, ...)`, laid out as one object would be."""
        self.begin_group()
        try:
            opening = name + "("
            self.begin_group(len(opening), opening)
            first = True
            for arg in args:
                if not first:
                    self.text(",")
                    self.breakable()
                first = False
                self.pretty(arg)
            for keyword, value in keywords:
                if not first:
                    self.text(",")
                    self.breakable()
                first = False
                self.begin_group(len(keyword) + 1, keyword + "=")
                self.pretty(value)
                self.end_group(len(keyword) + 1)
            self.end_group(len(opening), ")")
        finally:
            self.end_group()

    def _items(self, opening, closing, obj, cycle):
        if cycle:
            self.text(opening + "..." + closing)
            return
        self._listed(opening, closing, obj, isinstance(obj, tuple) and len(obj) == 1)

    def _members(self, opening, closing, obj, cycle):
        if cycle:
            self.text(opening + "..." + closing)
            return
        if not len(obj):
            self.text(type(obj).__name__ + "()")
            return
        items = obj if self.max_seq_length and len(obj) >= self.max_seq_length else sorted_items(obj)
        self._listed(opening, closing, items, False)

    def _listed(self, opening, closing, items, one_tuple):
        """`opening` items separated by `, ` or line breaks `closing` (`(x,)` for a one-tuple)."""
        self.begin_group(len(opening), opening)
        for index, item in self._enumerate(items):
            if index:
                self.text(",")
                self.breakable()
            self.pretty(item)
        if one_tuple:
            self.text(",")
        self.end_group(len(opening), closing)

    def _mapping(self, opening, closing, obj, cycle):
        if cycle:
            self.text("{...}")
            return
        self.begin_group(len(opening), opening)
        for index, key in self._enumerate(obj.keys()):
            if index:
                self.text(",")
                self.breakable()
            self.pretty(key)
            self.text(": ")
            self.pretty(obj[key])
        self.end_group(len(opening), closing)

    def _type(self, obj, cycle):
        defining = [base for base in _mro(type(obj)) if "__repr__" in vars(base)][:1]
        if defining != [type]:
            self._repr(obj, cycle)
            return
        module = _attribute(obj, "__module__")
        try:
            name = obj.__qualname__
            if not isinstance(name, str):
                raise TypeError(name)
        except Exception:
            name = obj.__name__
            if not isinstance(name, str):
                name = "<unknown type>"
        self.text(name if module in _BUILTIN_MODULES else module + "." + name)

    def _function(self, obj, cycle):
        name = _attribute(obj, "__qualname__", obj.__name__)
        module = obj.__module__
        if module and module not in _BUILTIN_MODULES:
            name = module + "." + name
        try:
            name += str(_signature(obj))
        except ValueError:
            pass
        self.text("<function %s>" % name)

    def _exception(self, obj, cycle):
        cls = obj.__class__
        name = getattr(cls, "__qualname__", cls.__name__)
        if cls.__module__ not in ("exceptions", "builtins"):
            name = "%s.%s" % (cls.__module__, name)
        self._call(name, getattr(obj, "args", ()))

    def _super(self, obj, cycle):
        self.begin_group(8, "<super: ")
        self.pretty(obj.__thisclass__)
        self.text(",")
        self.breakable()
        self.pretty(obj.__self__)
        self.end_group(8, ">")

    def _pattern(self, obj, cycle):
        source = repr(obj.pattern)
        if source[:1] in "uU":
            source = "ur" + source[1:]
        else:
            source = "r" + source
        args = [_Text(source.replace("\\\\", "\\"))]
        if obj.flags:
            args.append(_Text(*_flag_words(obj.flags)))
        self._call("re.compile", args)

    def _namespace(self, obj, cycle):
        if cycle:
            self._call("namespace", [_Text("...")])
        else:
            self._call("namespace", (), obj.__dict__.items())

    def _constructor(self, obj, cycle, arguments):
        """`Class(args, key=value)` for a collections type, `arguments(obj)`
        giving (args, keywords); `Class(...)` inside itself."""
        name = obj.__class__.__name__
        if cycle:
            self._call(name, [_Text("...")])
        else:
            self._call(name, *arguments(obj))


class _Scope:
    """The context manager of Printer.group and Printer.indent."""

    def __init__(self, printer, indent, open, close):
        self.printer, self.step, self.open, self.close = printer, indent, open, close

    def __enter__(self):
        if self.open is None:
            self.printer.indentation += self.step
        else:
            self.printer.begin_group(self.step, self.open)
        return self.printer

    def __exit__(self, *exc):
        if self.close is None:
            self.printer.indentation -= self.step
        else:
            self.printer.end_group(self.step, self.close)
        return False


class _Text:
    """Printed as its words, as they are (`...`, a raw string literal, flags)."""

    def __init__(self, *words):
        self.words = words

    def _repr_pretty_(self, p, cycle):
        for word in self.words:
            p.text(word)


_FLAG_NAMES = ("IGNORECASE", "LOCALE", "MULTILINE", "DOTALL", "UNICODE", "VERBOSE", "DEBUG")


def _flag_words(flags):
    import re

    words = []
    for name in _FLAG_NAMES:
        if flags & getattr(re, name):
            if words:
                words.append("|")
            words.append("re." + name)
    return words


def _signature(function):
    import inspect

    if sys.version_info >= (3, 14):
        # Annotations are evaluated lazily there (PEP 649): unresolved names stay as written.
        from annotationlib import Format  # novermin

        return inspect.signature(function, annotation_format=Format.FORWARDREF)  # novermin
    return inspect.signature(function)


def _mro(cls):
    mro = getattr(cls, "__mro__", None)
    return mro if mro is not None else (cls,)


_BUILTIN_MODULES = (None, "__builtin__", "builtins", "exceptions")
_SINGLETONS = frozenset(map(id, (None, True, False, Ellipsis, NotImplemented)))


def _rules():
    import os
    import re
    import types

    def items(opening, closing):
        return lambda printer, obj, cycle: printer._items(opening, closing, obj, cycle)

    def members(opening, closing):
        return lambda printer, obj, cycle: printer._members(opening, closing, obj, cycle)

    def mapping(opening, closing):
        return lambda printer, obj, cycle: printer._mapping(opening, closing, obj, cycle)

    rules = {
        int: Printer._repr,
        float: Printer._float,
        str: Printer._repr,
        bytes: Printer._repr,
        range: Printer._repr,
        slice: Printer._repr,
        tuple: items("(", ")"),
        list: items("[", "]"),
        dict: mapping("{", "}"),
        set: members("{", "}"),
        frozenset: members("frozenset({", "})"),
        super: Printer._super,
        type(re.compile("")): Printer._pattern,
        type: Printer._type,
        types.FunctionType: Printer._function,
        types.BuiltinFunctionType: Printer._function,
        types.MethodType: Printer._repr,
        types.SimpleNamespace: Printer._namespace,
        types.MappingProxyType: mapping("mappingproxy({", "})"),
        BaseException: Printer._exception,
    }
    if type(os.environ) is not dict:
        rules[type(os.environ)] = mapping("environ{", "}")
    return rules


_RULES = _rules()


def _constructor(arguments):
    return lambda printer, obj, cycle: printer._constructor(obj, cycle, arguments)


# Matched by the (module, name) of a class in the MRO, as IPython matches these.
_RULES_BY_NAME = {
    ("datetime", "datetime"): Printer._repr,
    ("datetime", "timedelta"): Printer._repr,
    ("collections", "defaultdict"): _constructor(lambda obj: ([obj.default_factory, dict(obj)], ())),
    ("collections", "OrderedDict"): _constructor(lambda obj: ([list(obj.items())] if len(obj) else [], ())),
    ("collections", "deque"): _constructor(
        lambda obj: ([list(obj)], () if obj.maxlen is None else [("maxlen", obj.maxlen)])
    ),
    ("collections", "Counter"): _constructor(lambda obj: ([dict(obj.most_common())] if len(obj) else [], ())),
    ("collections", "UserList"): _constructor(lambda obj: ([obj.data], ())),
}
