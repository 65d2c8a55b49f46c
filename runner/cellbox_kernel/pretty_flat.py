"""The direct path of the pretty printer: scalars, and flat containers of
scalars, laid out as IPython's layout engine would lay them out, without it.

A cell's result is most often one of these, and building their text directly
is much faster than the engine in `pretty.py`, which takes over when
`one_line` returns None.
"""

MAX_WIDTH = 79
# Containers longer than this print their first items and `...` (IPython's
# max_seq_length); sets this long are not sorted either.
MAX_ITEMS = 1000

# Exact types whose pretty text is their repr wherever they stand.
_SCALARS = frozenset((int, bool, type(None), str, bytes, complex, range))
_FLAT_ITEMS = frozenset((int, bool, type(None), str, bytes, complex, float))
_BRACKETS = {list: ("[", "]"), tuple: ("(", ")"), dict: ("{", "}"), set: ("{", "}"), frozenset: ("frozenset({", "})")}


def one_line(obj, float_text):
    """The text of a scalar, or of a flat container of scalars (shorter than
    MAX_ITEMS); None when the layout engine is needed.

    A flat container fits on one line, or else its group is the first with
    breakables, so every separator breaks: one item per line, under the
    opening bracket."""
    kind = type(obj)
    if kind in _SCALARS:
        return repr(obj)
    if kind is float:
        return _float(obj, float_text)
    if kind not in _BRACKETS or len(obj) >= MAX_ITEMS:
        return None
    floats = False
    for item in obj.values() if kind is dict else ():
        if type(item) not in _FLAT_ITEMS:
            return None
        floats = floats or type(item) is float
    for item in obj:
        if type(item) not in _FLAT_ITEMS:
            return None
        floats = floats or type(item) is float
    if not obj:
        return kind.__name__ + "()" if kind is set or kind is frozenset else repr(obj)
    if kind is not set and kind is not frozenset and (not floats or float_text is None):
        line = repr(obj)  # the same text: items' reprs joined by ", "
        if len(line) <= MAX_WIDTH:
            return line
    if kind is dict:
        words = [_item(key, float_text) + ": " + _item(value, float_text) for key, value in obj.items()]
    else:
        words = [_item(item, float_text) for item in (sorted_items(obj) if kind is set or kind is frozenset else obj)]
    opening, closing = _BRACKETS[kind]
    if kind is tuple and len(words) == 1:
        closing = ",)"
    line = opening + ", ".join(words) + closing
    if len(line) <= MAX_WIDTH:
        return line
    return opening + (",\n" + " " * len(opening)).join(words) + closing


def _item(value, float_text):
    return _float(value, float_text) if type(value) is float else repr(value)


def _float(value, float_text):
    if float_text is not None:
        text = float_text(value)
        if text:
            return text
    return repr(value)


def sorted_items(items):
    """Set items in the order IPython prints them: sorted, else sorted by
    str(), else as they come."""
    items = list(items)
    try:
        return sorted(items)
    except Exception:
        pass
    try:
        return sorted(items, key=str)
    except Exception:
        return items
