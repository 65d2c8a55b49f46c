"""SList: the list of lines `var = !cmd` returns, with IPython's helpers."""
import os
import re


class SList(list):
    """A list of strings with shortcuts for shell output.

    .l / .list      the lines as a plain list
    .s / .spstr     the lines joined by spaces
    .n / .nlstr     the lines joined by newlines
    .p / .paths     the lines that name existing paths, as pathlib.Path
    .grep(pattern, prune=False, field=None)   lines matching a regex (case-insensitive) or callable
    .fields(*idx)   whitespace-split columns of each line
    .sort(field=None, nums=False)             a sorted copy, by a column, numerically if asked
    """

    @property
    def l(self):  # noqa: E743 - IPython's name
        return list(self)

    list = l

    @property
    def s(self):
        return " ".join(self)

    spstr = s

    @property
    def n(self):
        return "\n".join(self)

    nlstr = n

    @property
    def p(self):
        from pathlib import Path

        return [Path(line) for line in self if os.path.exists(line)]

    paths = p

    def grep(self, pattern, prune=False, field=None):
        """Lines matching `pattern` (a regex, case-insensitive, or a callable);
        `prune=True` keeps the lines that do not match; `field` matches that
        whitespace-separated column instead of the whole line."""
        if callable(pattern):
            matches = pattern
        else:
            compiled = re.compile(pattern, re.IGNORECASE)

            def matches(text):
                return compiled.search(text) is not None

        def subject(line):
            if field is None:
                return line
            parts = line.split()
            return parts[field] if -len(parts) <= field < len(parts) else ""

        return SList(line for line in self if bool(matches(subject(line))) != bool(prune))

    def fields(self, *indices):
        """Columns of each line: with no index, every line as a list of fields;
        otherwise the chosen columns joined by a space (missing ones skipped)."""
        if not indices:
            return [line.split() for line in self]
        result = SList()
        for parts in (line.split() for line in self):
            chosen = []
            for index in indices:
                try:
                    chosen.append(parts[index])
                except IndexError:
                    pass
            if chosen:
                result.append(" ".join(chosen))
        return result

    def sort(self, field=None, nums=False):
        """A sorted copy: by column `field` if given, by the digits in it if `nums`."""
        keyed = []
        for line in self:
            if field is None:
                key = line
            else:
                picked = SList([line]).fields(field)
                key = picked[0] if picked else ""
            if nums:
                digits = "".join(ch for ch in key if ch.isdigit())
                key = int(digits) if digits else 0
            keyed.append((key, line))
        keyed.sort(key=lambda pair: pair[0])
        return SList(line for _, line in keyed)
