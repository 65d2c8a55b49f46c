"""Expanding Python values into shell lines and magic arguments, as IPython does.

IPython formats the line with a `string.Formatter`: the text is split into
literal segments and `{expression}` fields (`{{`/`}}` are literal braces).
Fields are evaluated wherever they stand. In each literal segment, `$name`
(or `$name.attr`) is replaced only when an even number of single quotes
follows it up to the end of that segment, so `'$name'` inside single quotes
stays as written for the shell; `$$name` becomes a literal `$name`.

One difference, on purpose: IPython leaves the whole line untouched when any
piece fails to evaluate; here only that piece is left as written, so
`!echo $HOME {n}` still expands `{n}` and the shell still sees `$HOME`.
"""
import re
import string

_DOLLAR = re.compile(r"(.*?)\$(\$?[\w\.]+)(?=([^']*'[^']*')*[^']*$)")


def expand(command, frame):
    """`command` with `{expr}` fields and `$name` references filled in from
    the frame's namespace."""
    global_ns, local_ns = frame.f_globals, frame.f_locals
    try:
        pieces = list(string.Formatter().parse(command))
    except ValueError:  # an unbalanced brace: only `$name` is expanded
        return _expand_dollars(command, global_ns, local_ns)
    out = []
    for literal, field, spec, conversion in pieces:
        out.append(_expand_dollars(literal, global_ns, local_ns))
        if field is not None:
            out.append(_field(field, spec, conversion, global_ns, local_ns))
    return "".join(out)


def _field(field, spec, conversion, global_ns, local_ns):
    # As IPython's FullEvalFormatter: a `:` belongs to the expression (slices).
    expression = field + (":" + spec if spec else "")
    try:
        value = eval(expression, global_ns, local_ns)
        if conversion == "r":
            return repr(value)
        if conversion == "a":
            return ascii(value)
        return str(value)
    except Exception:
        return "{%s%s%s}" % (field, "!" + conversion if conversion else "", ":" + spec if spec else "")


def _expand_dollars(text, global_ns, local_ns):
    if "$" not in text:
        return text
    out = []
    position = 0
    for match in _DOLLAR.finditer(text):
        before, name = match.group(1, 2)
        out.append(text[position : match.start()] + before)
        if name.startswith("$"):
            out.append(name)  # `$$name` is a literal `$name`
        else:
            out.append(_lookup(name, global_ns, local_ns))
        position = match.end()
    out.append(text[position:])
    return "".join(out)


def _lookup(name, global_ns, local_ns):
    """The value of `name` (dotted), else `$name` as written. A trailing `.`
    ends a sentence, not an attribute access."""
    stripped = name.rstrip(".")
    if stripped and (stripped[0].isalpha() or stripped[0] == "_"):
        try:
            return str(eval(stripped, global_ns, local_ns)) + name[len(stripped) :]
        except Exception:
            pass
    return "$" + name
