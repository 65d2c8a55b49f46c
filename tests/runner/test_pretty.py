"""The runner's pretty printer (cellbox_kernel.pretty) against IPython's own.

`PrettyMatchesIPython` generates a large set of values (the forms of issue 31,
nested, recursive, builtin subclasses with and without their own `__repr__`,
wide and narrow, random nestings, numpy and pandas objects when importable)
and requires our text to equal `IPython.lib.pretty.pretty(value)` for each:
the same objects go to both, so memory addresses match too. It is skipped
when IPython is not importable. The other tests run without IPython.

Run as `python -m unittest` with runner/ on sys.path.
"""
import collections
import datetime
import decimal
import enum
import fractions
import functools
import os
import random
import re
import sys
import types
import unittest
from collections import Counter, OrderedDict, UserList, defaultdict, deque, namedtuple

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "runner"))

from cellbox_kernel import display, pretty  # noqa: E402

try:
    from IPython.core.formatters import PlainTextFormatter
    from IPython.lib.pretty import pretty as ipython_pretty
except ImportError:
    ipython_pretty = None


# Classes of every kind the rules tell apart.
class Plain:
    pass


class WithRepr:
    def __repr__(self):
        return "WithRepr()"


class MultiLineRepr:
    def __repr__(self):
        return "first line\nsecond line\n  third, indented"


class Outer:
    class Inner:
        pass


class Pair:
    """Has IPython's _repr_pretty_, using the printer's whole API."""

    def __init__(self, left, right):
        self.left, self.right = left, right

    def _repr_pretty_(self, p, cycle):
        if cycle:
            p.text("Pair(...)")
            return
        with p.group(5, "Pair(", ")"):
            p.pretty(self.left)
            p.text(",")
            p.breakable()
            with p.indent(2):
                p.pretty(self.right)
            p.breakable("")
            p.begin_group(1, "<")
            p.text("end")
            p.end_group(1, ">")


class Broken:
    """A _repr_pretty_ that forces newlines."""

    def _repr_pretty_(self, p, cycle):
        p.text("Broken:")
        with p.indent(4):
            p.break_()
            p.pretty(list(range(5)))
            p.break_()
            p.text("done")


class ListWithRepr(list):
    def __repr__(self):
        return "ListWithRepr(%s)" % list.__repr__(self)


class ListPlain(list):
    pass


class DictPlain(dict):
    pass


class DictWithRepr(dict):
    def __repr__(self):
        return "DictWithRepr(%s)" % dict.__repr__(self)


class TuplePlain(tuple):
    pass


class SetPlain(set):
    pass


class FrozenPlain(frozenset):
    pass


class IntPlain(int):
    pass


class IntWithRepr(int):
    def __repr__(self):
        return "IntWithRepr(%d)" % int(self)


class StrPlain(str):
    pass


class StrMultiLine(str):
    def __repr__(self):
        return "StrMultiLine:\n" + str.__repr__(self)


class FloatPlain(float):
    pass


class MyDefaultDict(defaultdict):
    pass


class MyOrderedDict(OrderedDict):
    pass


class MyCounter(Counter):
    pass


class MyDeque(deque):
    pass


class MyError(ValueError):
    pass


class Color(enum.Enum):
    RED = 1
    GREEN = 2


class Meta(type):
    def __repr__(cls):
        return "<Meta class %s>" % cls.__name__


class WithMeta(metaclass=Meta):
    pass


class Base:
    def method(self):
        return super()


class Child(Base):
    def method(self):
        return super()


Point = namedtuple("Point", "x y")


def function(x, y=2, *args, z, **kwargs):
    pass


def annotated(a: int, b: "list[str]" = None) -> dict:
    pass


async def coroutine_function():
    pass


def generator():
    yield 1


def atoms():
    """Scalars, short and long."""
    return [
        0, 1, -1, 10 ** 30, 1.5, -0.0, float("nan"), float("inf"), 1e300, 2 + 3j, True, False, None,
        "", "a", "it's", 'say "hi"', "line\nbreak\ttab", "é ü 中文 \U0001f600", "x" * 120,
        b"", b"bytes\x00\xff", bytearray(b"ab"), Ellipsis, NotImplemented, range(10), slice(1, 2, 3),
        decimal.Decimal("1.10"), fractions.Fraction(1, 3), datetime.date(2020, 1, 2),
        datetime.datetime(2020, 1, 2, 3, 4, 5), datetime.timedelta(days=1, seconds=5),
        IntPlain(5), IntWithRepr(6), StrPlain("sub"), StrMultiLine("multi"), FloatPlain(2.5),
        Color.RED, Point(1, 2),
    ]


def callables():
    def local(a, *, b=3):
        pass

    return [
        len, print, "a".split, [].append, dict.fromkeys, str.join, int, type, object, Plain, WithRepr,
        Outer.Inner, Color, WithMeta, MyError, collections.abc.Iterable, function, annotated, local,
        lambda x: x, lambda: None, coroutine_function, generator, Plain().__init__, Base().method,
        functools.partial(function, 1), staticmethod(function), classmethod(function), property(len),
        Counter.most_common, re.compile, os.path.join, sorted, iter, getattr,
    ]


def objects():
    return [
        object(), Plain(), WithRepr(), MultiLineRepr(), Outer.Inner(), iter({}), iter([]), iter(()),
        iter({1}), reversed([1]), generator(), Pair(1, 2), Pair("x" * 50, ["y" * 20] * 4), Broken(),
        Child().method(), Base().method(), types.SimpleNamespace(a=1, b="two", c=[3] * 30),
        types.SimpleNamespace(), types.MappingProxyType({"a": 1, "b": [1, 2]}), os.environ,
        ValueError("bad"), KeyError("k", 2), MyError("mine"), OSError(2, "No such file"), Exception(),
        StopIteration(), re.compile("a+"), re.compile(r"\d+\s*", re.I | re.M), re.compile(b"ab+"),
        re.compile("x", re.ASCII), re.compile("(?x) a  b # c", re.DOTALL), re.compile("'q\"\\\\"),
        re.compile("y" * 90, re.S | re.I), compile("1", "<s>", "eval"), sys, re, memoryview(b"ab"),
        frozenset(), set(), {}, [], (), (1,), ((),), [[]], {(): []},
    ]


def containers():
    values = []
    for size in (0, 1, 2, 5, 12, 20, 26, 27, 30, 60):
        values.append(list(range(size)))
        values.append(tuple(range(size)))
        values.append({i: str(i) * 3 for i in range(size)})
        values.append(set(range(size * 7, 0, -7)))
        values.append(frozenset("abcdefghijklmnopqrstuvwxyz"[:size]))
        values.append(["word%d" % i for i in range(size)])
        values.append(deque(range(size)))
        values.append(deque(range(size), maxlen=size + 3))
        values.append(Counter("mississippi" * size))
        values.append(OrderedDict((str(i), i) for i in range(size)))
        values.append(defaultdict(list, {i: [i] * i for i in range(size)}))
        values.append(UserList(range(size)))
    values += [
        list(range(1200)), set(range(1200)), {i: i for i in range(1100)}, tuple(range(1001)),
        {3, "a", 1.5, None}, {"b", "a", "c"}, {(2, 1), (1, 2)}, {frozenset({1}), frozenset({2})},
        {"k": {"nested": {"deep": list(range(40))}}}, [{"a": 1}, {"b": [1, 2, {"c": "d" * 70}]}],
        [["x" * 30, "y" * 30], ["z" * 30]], [1.5, 2.25, float("nan")], {1.5: 2.5}, [b"x" * 80],
        defaultdict(int), defaultdict(None, {1: 2}), defaultdict(lambda: 0, {1: 2}), OrderedDict(),
        Counter(), deque(), deque(maxlen=0), UserList(), ListWithRepr([1, 2]), ListPlain([1, 2]),
        ListPlain(range(40)), DictPlain(a=1), DictPlain({i: i for i in range(30)}), DictWithRepr(a=1),
        TuplePlain((1,)), TuplePlain(range(40)), SetPlain(), SetPlain({3, 1, 2}), FrozenPlain(),
        FrozenPlain({2, 1}), MyDefaultDict(set, {1: {2}}), MyOrderedDict(a=1), MyCounter("aab"),
        MyDeque([1, 2], 5), [Point(i, i) for i in range(10)], [MultiLineRepr(), MultiLineRepr()],
        {"multi": MultiLineRepr(), "plain": Plain()}, [Plain() for _ in range(6)],
        [len, print, function], {"pattern": re.compile("a+" * 30)}, [ValueError("x" * 40)] * 3,
        [IntPlain(1), StrPlain("s"), FloatPlain(1.0)], {Color.RED: Color.GREEN},
        (datetime.date(2020, 1, 1),) * 5, [Pair(i, [i] * i) for i in range(8)], [Broken(), Broken()],
        types.SimpleNamespace(inner=types.SimpleNamespace(x=list(range(30)))),
    ]
    return values


def recursive():
    values = []
    a = [1, 2]
    a.append(a)
    values.append(a)
    d = {"x": 1}
    d["self"] = d
    values.append(d)
    values.append([d, a, (a, d)])
    b = []
    c = [b]
    b.append(c)
    values.append(b)
    values.append((a,))
    dd = defaultdict(list)
    dd["me"] = dd
    values.append(dd)
    dq = deque([1])
    dq.append(dq)
    values.append(dq)
    od = OrderedDict(a=1)
    od["me"] = od
    values.append(od)
    counter = Counter(a=1)
    counter["me"] = counter
    values.append(counter)
    ns = types.SimpleNamespace(a=1)
    ns.me = ns
    values.append(ns)
    lp = ListPlain([1])
    lp.append(lp)
    values.append(lp)
    dp = DictPlain()
    dp[1] = dp
    values.append(dp)
    ul = UserList([1])
    ul.append(ul)
    values.append(ul)
    pair = Pair(1, None)
    pair.right = [pair, pair]
    values.append(pair)
    obj = Plain()
    values.append([obj, obj, [obj]])
    long_cycle = ["x" * 30 for _ in range(4)]
    long_cycle.append(long_cycle)
    values.append(long_cycle)
    return values


def random_values(count, seed):
    """Random nestings of every container form, so that the layout meets
    every width around the 79 columns."""
    rng = random.Random(seed)
    leaves = [
        lambda: rng.randint(-10 ** rng.randint(0, 12), 10 ** rng.randint(0, 12)),
        lambda: "s" * rng.randint(0, 40),
        lambda: rng.choice([None, True, 1.25, b"b", Plain(), WithRepr(), MultiLineRepr(), len, Color.RED]),
        lambda: rng.random(),
    ]

    def build(depth):
        if depth <= 0 or rng.random() < 0.3:
            return rng.choice(leaves)()
        size = rng.choice([0, 1, 2, 3, 4, 6, 9, 12])
        children = [build(depth - 1) for _ in range(size)]
        form = rng.randrange(12)
        if form == 0:
            return children
        if form == 1:
            return tuple(children)
        if form == 2:
            return {"k%d%s" % (i, "_" * rng.randint(0, 20)): child for i, child in enumerate(children)}
        if form == 3:
            return set(rng.randint(0, 10 ** rng.randint(1, 15)) for _ in children)
        if form == 4:
            return deque(children, maxlen=rng.choice([None, size + 1]))
        if form == 5:
            return OrderedDict(("key%d" % i, child) for i, child in enumerate(children))
        if form == 6:
            return defaultdict(list, enumerate(children))
        if form == 7:
            return Counter({"c%d" % i: rng.randint(0, 100) for i in range(size)})
        if form == 8:
            return types.SimpleNamespace(**{"attr%d" % i: child for i, child in enumerate(children)})
        if form == 9:
            return Pair(children, size)
        if form == 10:
            return ListPlain(children)
        return frozenset("f%d" % rng.randint(0, 10 ** 6) for _ in children)

    return [build(rng.randint(1, 4)) for _ in range(count)]


def library_values():
    values = []
    try:
        import numpy as np
    except ImportError:
        return values
    values += [
        np.arange(5), np.arange(2000), np.zeros((3, 4)), np.eye(3)[:, :, None], np.float64(1.5),
        np.int64(7), np.bool_(True), np.dtype("f8"), np.array(["a", "b"]), [np.arange(3), np.eye(2)],
        {"array": np.arange(40).reshape(4, 10)}, np.float32(2.5), np.ma.masked_array([1, 2], [0, 1]),
    ]
    try:
        import pandas as pd
    except ImportError:
        return values
    frame = pd.DataFrame({"a": range(5), "b": list("vwxyz")})
    values += [
        frame, frame["a"], frame.index, pd.Timestamp("2020-01-01"), pd.Timedelta("1D"),
        [frame, frame], {"frame": frame.head(2)}, pd.Categorical(["a", "b"]), frame.dtypes,
    ]
    return values


def all_values():
    values = atoms() + callables() + objects() + containers() + recursive() + library_values()
    values += [[value] for value in atoms() + callables() + objects()]
    values += [{"key": value, "other": [value, value]} for value in containers()[:80]]
    values += random_values(2500, 31)
    return values


def engine(value, float_text=None):
    """Our text through the layout engine, skipping the one-line path."""
    printer = pretty.Printer(float_text=float_text)
    printer.pretty(value)
    printer.flush()
    return "".join(printer.output)


@unittest.skipIf(ipython_pretty is None, "IPython is not importable: the comparison with IPython.lib.pretty is skipped")
class PrettyMatchesIPython(unittest.TestCase):
    def compare(self, values, ours, theirs):
        mismatches, compared = [], 0
        for value in values:
            try:
                expected = theirs(value)
            except Exception as error:
                expected = "raises %s" % type(error).__name__
            try:
                got = ours(value)
            except Exception as error:
                got = "raises %s" % type(error).__name__
            compared += 1
            if got != expected:
                mismatches.append((type(value).__name__, expected, got))
        return compared, mismatches

    def check(self, values, ours, theirs, label):
        compared, mismatches = self.compare(values, ours, theirs)
        sys.stderr.write("\n%s: %d values, %d identical\n" % (label, compared, compared - len(mismatches)))
        report = "\n".join("%s:\n  IPython: %r\n  ours:    %r" % item for item in mismatches[:8])
        self.assertEqual(mismatches, [], "%d of %d differ:\n%s" % (len(mismatches), compared, report))

    def test_every_value_prints_as_ipython_prints_it(self):
        self.check(all_values(), pretty.pretty, ipython_pretty, "pretty() against IPython.lib.pretty")

    def test_the_layout_engine_alone_agrees(self):
        self.check(all_values(), engine, ipython_pretty, "layout engine against IPython.lib.pretty")

    def test_narrow_and_wide_widths_agree(self):
        values = containers() + recursive() + random_values(400, 7)
        for width in (1, 10, 40, 120):
            self.check(
                values,
                lambda value, width=width: pretty.pretty(value, max_width=width),
                lambda value, width=width: ipython_pretty(value, max_width=width),
                "width %d" % width,
            )

    def test_precision_formats_floats_as_ipython_formatter(self):
        formatter = PlainTextFormatter()
        formatter.float_precision = "3"
        values = [1.0, 2.5, [1.23456, {"x": 2.0}], (0.1,) * 30, FloatPlain(1.5), {"a": [0.5] * 40}]
        self.check(values, lambda value: pretty.pretty(value, lambda f: "%.3f" % f), formatter, "%precision 3")


class PrettyRules(unittest.TestCase):
    """Known texts, without IPython."""

    def test_types_and_functions(self):
        self.assertEqual(pretty.pretty(int), "int")
        self.assertEqual(pretty.pretty(Outer.Inner), __name__ + ".Outer.Inner")
        self.assertEqual(pretty.pretty(len), "<function len(obj, /)>")
        self.assertEqual(pretty.pretty(function), "<function %s.function(x, y=2, *args, z, **kwargs)>" % __name__)

    def test_default_repr_and_patterns(self):
        obj = Plain()
        self.assertEqual(pretty.pretty(obj), "<%s.Plain at 0x%x>" % (__name__, id(obj)))
        self.assertEqual(pretty.pretty(re.compile("a+")), "re.compile(r'a+', re.UNICODE)")
        self.assertEqual(pretty.pretty(re.compile(r"\d", re.I)), "re.compile(r'\\d', re.IGNORECASE|re.UNICODE)")

    def test_wrapping(self):
        self.assertEqual(pretty.pretty(list(range(3))), "[0, 1, 2]")
        text = pretty.pretty(list(range(30)))
        self.assertEqual(text.splitlines()[:2], ["[0,", " 1,"])
        self.assertEqual(pretty.pretty({"k": ["v" * 40, "w" * 40]}), "{'k': ['" + "v" * 40 + "',\n  '" + "w" * 40 + "']}")
        self.assertEqual(pretty.pretty(deque([1], maxlen=2)), "deque([1], maxlen=2)")
        self.assertEqual(pretty.pretty(defaultdict(list, a=[1])), "defaultdict(list, {'a': [1]})")

    def test_sets_sorted_and_cycles(self):
        self.assertEqual(pretty.pretty({"b", "a"}), "{'a', 'b'}")
        self.assertEqual(pretty.pretty({2, "a"}), "{2, 'a'}")
        self.assertEqual(pretty.pretty(set()), "set()")
        self.assertEqual(pretty.pretty(frozenset({1})), "frozenset({1})")
        cycle = [1]
        cycle.append(cycle)
        self.assertEqual(pretty.pretty(cycle), "[1, [...]]")
        self.assertEqual(pretty.pretty(recursive()[1]), "{'x': 1, 'self': {...}}")

    def test_subclasses(self):
        self.assertEqual(pretty.pretty(ListPlain([1])), "[1]")
        self.assertEqual(pretty.pretty(ListWithRepr([1])), "ListWithRepr([1])")
        self.assertEqual(pretty.pretty(SetPlain()), "SetPlain()")
        self.assertEqual(pretty.pretty(MyCounter("aab")), "MyCounter({'a': 2, 'b': 1})")

    def test_repr_pretty_gets_a_printer(self):
        self.assertEqual(pretty.pretty(Pair(1, 2)), "Pair(1, 2<end>)")
        # break_() marks the enclosing groups broken, so the list breaks too (as in IPython).
        self.assertEqual(pretty.pretty(Broken()), "Broken:\n    [0,\n     1,\n     2,\n     3,\n     4]\n    done")

    def test_one_line_path_matches_the_engine(self):
        wide = [list(range(100)), tuple(range(50)), {i: str(i) * 5 for i in range(40)}, frozenset(range(99))]
        wide += [{"w%d" % i for i in range(60)}, ("x" * 80,), ["x" * 80, 1], list(range(999)), list(range(1000))]
        for value in [1, 2.5, "s", None, True, (1,), (), [1, "a", None], {1: 2.5}, {3, 1}, frozenset(), [0] * 26] + wide:
            self.assertEqual(pretty.pretty(value), engine(value), value)
        self.assertEqual(pretty.pretty([1.5, 2.0], lambda f: "%.1f" % f), "[1.5, 2.0]")
        self.assertEqual(pretty.pretty([0.5] * 40, lambda f: "%.3f" % f), engine([0.5] * 40, lambda f: "%.3f" % f))

    def test_pprint_toggle_and_result_text(self):
        self.assertEqual(pretty.result_text(int), "int")
        try:
            self.assertEqual(pretty.toggle(), "Pretty printing has been turned OFF")
            self.assertEqual(pretty.result_text(int), "<class 'int'>")
            self.assertEqual(pretty.toggle(), "Pretty printing has been turned ON")
        finally:
            pretty.enabled = True

    def test_pprint_magic_turns_result_text_to_repr_and_back(self):
        import contextlib
        import io

        from cellbox_kernel.magics import config

        shell = types.SimpleNamespace(settings=config.Settings())
        shell.settings.float_format = "%.1f"
        display.float_text = shell.settings.format_float
        try:
            self.assertEqual(display.mime_bundle([0.25])[0]["text/plain"], "[0.2]")
            printed = io.StringIO()
            with contextlib.redirect_stdout(printed):
                config.pprint(shell, "", None)
            self.assertEqual(printed.getvalue(), "Pretty printing has been turned OFF\n")
            self.assertEqual(display.mime_bundle(int)[0]["text/plain"], "<class 'int'>")
            self.assertEqual(display.mime_bundle([0.25])[0]["text/plain"], "[0.25]")
            self.assertEqual(display.mime_bundle(0.25)[0]["text/plain"], "0.25")
            with contextlib.redirect_stdout(printed):
                config.pprint(shell, "", None)
            self.assertEqual(printed.getvalue().splitlines()[-1], "Pretty printing has been turned ON")
            self.assertEqual(display.mime_bundle(int)[0]["text/plain"], "int")
        finally:
            display.float_text = None
            pretty.enabled = True

    def test_result_bundle_uses_it_and_display_does_not(self):
        self.assertEqual(display.mime_bundle(int)[0]["text/plain"], "int")
        self.assertEqual(display.mime_bundle({"b", "a"})[0]["text/plain"], "{'a', 'b'}")
        self.assertEqual(display.mime_bundle(2)[0], {"text/plain": "2"})


if __name__ == "__main__":
    unittest.main()
