"""IPython-style magics turned into plain Python before a cell is parsed.

Forms: `%name args`, `%%name args` + body (on the cell's first line),
`!cmd`, `!!cmd`, `target = !cmd` and `target = %name args`, where target
is any assignment target (names, attributes, subscripts, `a, *rest`), and
help: `obj?`, `obj??`, `?obj`, `??obj` (`%magic?` too; `a*?` searches).

Like IPython's inputtransformer2 this works on tokens: a line is only a
magic when the `tokenize` module, run over everything above it, ends at a
statement boundary, so text inside strings (triple-quoted, f-strings),
brackets and continuations is never rewritten. The magic line itself is not
Python, so it is never fed to the tokenizer (whose handling of `!` and stray
quotes differs between Python versions). Every transformed line keeps its
physical line count, so traceback line numbers stay right.

First, as IPython's `leading_indent` does, a cell indented as a whole (code
taken from a triple-quoted string) loses that indentation (see
strip_leading_indent).
"""
import io
import re
import tokenize

# Set in builtins by the kernel; the generated code calls its methods.
MAGIC_OBJECT = "__cellbox_magic__"

_CELL_MAGIC = re.compile(r"^%%(?P<name>[A-Za-z_][\w.]*)(?P<rest>.*)$")
_LINE_MAGIC = re.compile(r"^(?P<indent>[ \t]*)%(?P<name>[A-Za-z_][\w.]*)(?P<rest>.*)$")
_SHELL = re.compile(r"^(?P<indent>[ \t]*)!(?P<double>!?)(?P<cmd>.*)$")
_ASSIGN = re.compile(r"^(?P<indent>[ \t]*)(?P<target>[^=]+?)\s*=\s*(?P<kind>[!%])(?P<rest>.*)$")
_LEADING_INDENT = re.compile(r"[ \t]+")
_MAGIC_NAME = re.compile(r"^(?P<name>[A-Za-z_][\w.]*)(?P<rest>.*)$")
# A dotted name (wildcards allowed, `%`/`%%` for magics) with `?`/`??` before or after it.
# Compiled on first use: Unicode `\w` classes cost milliseconds at kernel start.
_HELP_TARGET = r"%{0,2}(?!\d)[\w*]+(?:\.(?!\d)[\w*]+)*"
_HELP_END = r"^(?P<indent>[ \t]*)(?P<name>" + _HELP_TARGET + r")(?P<marks>\?\??)[ \t]*$"
_HELP_START = r"^(?P<indent>[ \t]*)(?P<marks>\?\??)[ \t]*(?P<name>" + _HELP_TARGET + r")[ \t]*$"


def _help_match(line, start_too=True):
    """The match of a help form (`obj?`, and `?obj` when start_too), or None."""
    if "?" not in line:
        return None
    return re.match(_HELP_END, line) or (re.match(_HELP_START, line) if start_too else None)


def transform_cell(source):
    """Return `source` with every magic replaced by a call on MAGIC_OBJECT.

    Never raises: text that is not Python is left for the compiler, which
    reports it with the right line numbers. A cell without magics or leading
    indentation comes back unchanged, byte for byte; any other keeps its
    number of lines.
    """
    source = strip_leading_indent(source)
    if "%" not in source and "!" not in source and "?" not in source:
        return source
    normalized = source.replace("\r\n", "\n").replace("\r", "\n")
    # Only "\n" ends a line, as for the compiler (str.splitlines would also
    # split at form feeds and other separators that Python source may hold).
    lines = [line + "\n" for line in normalized.split("\n")]
    if normalized.endswith("\n"):
        lines.pop()
    cell = _cell_magic(lines)
    if cell is not None:
        return cell
    out = []
    changed = False
    index = 0
    while index < len(lines):
        line = lines[index]
        if _is_candidate(line) and _at_statement_start(out):
            end = _continuation_end(lines, index)
            logical = _join_continued(lines[index:end])
            replacement = _transform_line(logical)
            if replacement is not None:
                out.append(replacement + "\n" + "\n" * (end - index - 1))
                changed = True
                index = end
                continue
        out.append(line)
        index += 1
    return "".join(out) if changed else source


def strip_leading_indent(source):
    """A cell indented as a whole loses that indentation, as in IPython.

    The indentation of the first line that is neither blank nor a comment
    (the first statement, which Python wants at column 0) comes off every
    line that starts with it; other lines (a string's unindented
    continuation, a shorter blank line or comment) stay as they are. This
    is IPython's `leading_indent` up to 9.0 (which took the first non-blank
    line), and on every cell that IPython 9.1+ runs it is the same as its
    `textwrap.dedent`. Blank lines in front are kept, so tracebacks keep the
    cell's line numbers. A cell that is not indented comes back as it is.
    """
    if len(source.lstrip()) == len(source):
        return source
    lines = source.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    first = next((line for line in lines if line.strip() and not line.lstrip().startswith("#")), "")
    match = _LEADING_INDENT.match(first)
    if match is None:
        return source
    prefix = match.group(0)
    size = len(prefix)
    return "\n".join(line[size:] if line.startswith(prefix) else line for line in lines)


def _cell_magic(lines):
    """`%%name args` on the first non-blank line makes the whole cell a cell magic."""
    for position, line in enumerate(lines):
        if not line.strip():
            continue
        match = _CELL_MAGIC.match(line.rstrip("\n"))
        if match is None or _help_match(line.rstrip("\n"), start_too=False):
            return None
        body = "".join(lines[position + 1 :])
        call = "%s.cell(%r, %r, %r)" % (MAGIC_OBJECT, match.group("name"), _args(match.group("rest")), body)
        # Keep the call on the magic's line and pad so the cell keeps its length.
        return "\n" * position + call + "\n" + "\n" * (len(lines) - position - 1)
    return None


def _is_candidate(line):
    stripped = line.lstrip(" \t")
    return (
        stripped.startswith(("%", "!", "?"))
        or line.rstrip().endswith("?")
        or ("=" in line and ("!" in line or "%" in line))
    )


def _at_statement_start(previous):
    """True when the (already transformed) code above ends between statements."""
    if not previous:
        return True
    text = "".join(previous)
    try:
        for _ in tokenize.generate_tokens(io.StringIO(text).readline):
            pass
    except (tokenize.TokenError, SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def _continuation_end(lines, start):
    """The index after the last physical line of a backslash-continued line."""
    end = start
    while end < len(lines) - 1 and lines[end].rstrip("\n").endswith("\\"):
        end += 1
    return end + 1


def _join_continued(parts):
    if len(parts) == 1:
        return parts[0].rstrip("\n")
    pieces = [part.rstrip("\n").rstrip()[:-1].rstrip() for part in parts[:-1]]
    pieces.append(parts[-1].rstrip("\n").strip())
    first = pieces[0]
    return " ".join([first] + [piece.strip() for piece in pieces[1:]])


def _args(rest):
    return rest.strip()


def _help(line):
    """`obj?` / `?obj` -> %pinfo, `??` -> %pinfo2, a wildcard name -> %psearch."""
    match = _help_match(line)
    if match is None:
        return None
    name = match.group("name")
    magic = "psearch" if "*" in name else ("pinfo2" if match.group("marks") == "??" else "pinfo")
    return "%s%s.line(%r, %r)" % (match.group("indent"), MAGIC_OBJECT, magic, name)


def _transform_line(line):
    helped = _help(line)
    if helped is not None:
        return helped
    match = _SHELL.match(line)
    if match is not None:
        method = "getoutput" if match.group("double") else "system"
        return "%s%s.%s(%r)" % (match.group("indent"), MAGIC_OBJECT, method, match.group("cmd").strip())
    match = _LINE_MAGIC.match(line)
    if match is not None:
        return "%s%s.line(%r, %r)" % (
            match.group("indent"),
            MAGIC_OBJECT,
            match.group("name"),
            _args(match.group("rest")),
        )
    match = _ASSIGN.match(line)
    if match is None or not _is_assignment_target(match.group("target")):
        return None
    indent, target, rest = match.group("indent"), match.group("target").strip(), match.group("rest")
    if match.group("kind") == "!":
        value = "%s.getoutput(%r)" % (MAGIC_OBJECT, rest.strip())
    else:
        magic = _MAGIC_NAME.match(rest)
        if magic is None:
            return None
        value = "%s.line(%r, %r)" % (MAGIC_OBJECT, magic.group("name"), _args(magic.group("rest")))
    return "%s%s = %s" % (indent, target, value)


def _is_assignment_target(target):
    try:
        compile("%s = None" % target.strip(), "<target>", "exec")
    except (SyntaxError, ValueError, OverflowError, RecursionError, MemoryError):
        # The old parser (3.8) reports deep nesting as MemoryError.
        return False
    return True


def check_complete(code):
    """Is `code` a whole cell, as a REPL asks after each line?

    Returns (status, indent): "complete", "incomplete" (with the indent for
    the next line) or "invalid", like IPython's check_complete. A cell magic
    ends at a blank line; other magics at the end of their line.
    """
    lines = code.split("\n")
    if code.lstrip().startswith("%%"):
        finished = len(lines) > 2 and lines[-1].strip() == "" and lines[-2].strip() == ""
        return ("complete" if finished else "incomplete"), ""
    if code.rstrip("\n").endswith("\\"):
        return "incomplete", _indent_of(lines)
    import codeop

    try:
        compiled = codeop.compile_command(transform_cell(code), "<input>", "exec")
    except SyntaxError as error:
        if "await" in str(error):
            return "complete", ""  # top-level await: fine for the kernel
        return "invalid", ""
    except (OverflowError, ValueError):
        return "invalid", ""
    if compiled is None:
        return "incomplete", _indent_of(lines)
    # Like the interactive interpreter: a block goes on until a blank line
    # (a cell indented as a whole counts from its own left edge).
    last = [line for line in strip_leading_indent(code).split("\n") if line.strip()][-1:]
    ends_blank = len(lines) > 1 and lines[-1].strip() == "" and lines[-2].strip() == ""
    if last and last[0][:1] in (" ", "\t") and not ends_blank:
        return "incomplete", _indent_of(lines)
    return "complete", ""


def _indent_of(lines):
    for line in reversed(lines):
        if line.strip():
            indent = line[: len(line) - len(line.lstrip())]
            return indent + "    " if line.rstrip().endswith(":") else indent
    return ""
