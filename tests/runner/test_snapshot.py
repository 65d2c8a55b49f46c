"""Unit tests of cellbox_kernel.snapshot: a session's names saved by one
process and restored by another, so nothing can come from the first one's
memory; and the file checks (truncated, corrupt, foreign, other Python).

Run as `python -m unittest` from the repository root.
"""
import hashlib
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest
from unittest import mock

RUNNER = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "runner"))
sys.path.insert(0, RUNNER)

from cellbox_kernel import snapshot  # noqa: E402

# Runs the cells (stdin) in a kernel-like `__main__` module, then saves it.
SAVE = """
import json, sys
from cellbox_kernel import snapshot, usermain
namespace = usermain.install().__dict__
exec(compile(sys.stdin.read(), "<cell>", "exec"), namespace)
print(json.dumps(snapshot.save(namespace, sys.argv[1], "test")))
"""

# Loads into a fresh module dict that is not even `sys.modules["__main__"]`,
# then runs the checks (stdin) there as a cell that fills `checks`.
LOAD = """
import json, sys, types
from cellbox_kernel import snapshot
namespace = types.ModuleType("__main__").__dict__
report = snapshot.load(sys.argv[1], namespace)
namespace["checks"] = {}
exec(compile(sys.stdin.read(), "<checks>", "exec"), namespace)
print(json.dumps({"report": report, "checks": namespace["checks"]}, default=repr))
"""

HAVE_PANDAS = all(importlib.util.find_spec(name) for name in ("pandas", "numpy"))


def _python(code, stdin, argument, pythonpath=()):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join((RUNNER,) + tuple(pythonpath)))
    done = subprocess.run(
        [sys.executable, "-c", code, argument],
        input=textwrap.dedent(stdin),
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    if done.returncode != 0:
        raise AssertionError(done.stderr)
    return json.loads(done.stdout)


class SnapshotCase(unittest.TestCase):
    def setUp(self):
        folder = tempfile.TemporaryDirectory()
        self.addCleanup(folder.cleanup)
        self.folder = folder.name
        self.path = os.path.join(folder.name, "session.snapshot")

    def save(self, cells, pythonpath=()):
        return _python(SAVE, cells, self.path, pythonpath)

    def restore(self, checks):
        """(load report, checks) from a new process."""
        out = _python(LOAD, checks, self.path)
        return out["report"], out["checks"]

    def round_trip(self, cells, checks):
        report = self.save(cells)
        self.assertEqual(report["skipped"], [])
        loaded, found = self.restore(checks)
        self.assertEqual(loaded["failed"], [])
        self.assertEqual(loaded["restored"], report["saved"])
        return found


class DefinitionsTest(SnapshotCase):
    def test_functions_keep_defaults_kwdefaults_annotations_and_docstring(self):
        found = self.round_trip(
            '''
            def scale(x, factor=2, *, offset=1) -> float:
                """Scale x."""
                return x * factor + offset
            scale.unit = "m"
            ''',
            """
            checks["call"] = scale(3)
            checks["defaults"] = list(scale.__defaults__)
            checks["kwdefaults"] = scale.__kwdefaults__
            checks["annotations"] = {k: v.__name__ for k, v in scale.__annotations__.items()}
            checks["doc"] = scale.__doc__
            checks["names"] = [scale.__name__, scale.__qualname__, scale.__module__]
            checks["attribute"] = scale.unit
            """,
        )
        self.assertEqual(found["call"], 7)
        self.assertEqual(found["defaults"], [2])
        self.assertEqual(found["kwdefaults"], {"offset": 1})
        self.assertEqual(found["annotations"], {"return": "float"})
        self.assertEqual(found["doc"], "Scale x.")
        self.assertEqual(found["names"], ["scale", "scale", "__main__"])
        self.assertEqual(found["attribute"], "m")

    def test_lambdas_and_recursive_functions(self):
        found = self.round_trip(
            """
            square = lambda x: x * x
            def fact(n):
                return 1 if n < 2 else n * fact(n - 1)
            def make_depth():
                def depth(n):
                    return 0 if n == 0 else 1 + depth(n - 1)
                return depth
            depth = make_depth()
            """,
            """
            checks["square"] = square(7)
            checks["fact"] = fact(5)
            checks["depth"] = depth(4)
            checks["self_reference"] = depth.__closure__[0].cell_contents is depth
            """,
        )
        self.assertEqual(found, {"square": 49, "fact": 120, "depth": 4, "self_reference": True})

    def test_closures_keep_their_state_and_share_their_cells(self):
        found = self.round_trip(
            """
            def make_log():
                entries = []
                def add(item):
                    entries.append(item)
                    return len(entries)
                def count():
                    return len(entries)
                return add, count
            add, count = make_log()
            add("first")
            def make_adder(n):
                return lambda x: x + n
            add5 = make_adder(5)
            """,
            """
            checks["add"] = add("second")
            checks["count"] = count()
            checks["add5"] = add5(1)
            """,
        )
        self.assertEqual(found, {"add": 2, "count": 2, "add5": 6})

    def test_restored_functions_look_up_globals_in_the_new_namespace(self):
        found = self.round_trip(
            """
            def f():
                return g()
            def g():
                return 1
            """,
            """
            checks["before"] = f()
            checks["same_dict"] = f.__globals__ is globals()
            def g():
                return 2
            checks["after"] = f()
            """,
        )
        self.assertEqual(found, {"before": 1, "same_dict": True, "after": 2})

    def test_classes_with_methods_properties_and_class_attributes(self):
        found = self.round_trip(
            """
            class Account:
                currency = "EUR"
                def __init__(self, balance):
                    self._balance = balance
                @property
                def balance(self):
                    return self._balance
                @balance.setter
                def balance(self, value):
                    self._balance = value
                @classmethod
                def empty(cls):
                    return cls(0)
                @staticmethod
                def fee(amount):
                    return amount // 100
                def describe(self):
                    return "%d %s" % (self.balance, self.currency)
            account = Account(250)
            """,
            """
            checks["same_class"] = type(account) is Account
            checks["describe"] = account.describe()
            account.balance = 300
            checks["setter"] = account.balance
            checks["classmethod"] = type(Account.empty()) is Account
            checks["staticmethod"] = Account.fee(1000)
            checks["names"] = [Account.__name__, Account.__qualname__, Account.__module__]
            """,
        )
        self.assertEqual(
            found,
            {
                "same_class": True,
                "describe": "250 EUR",
                "setter": 300,
                "classmethod": True,
                "staticmethod": 10,
                "names": ["Account", "Account", "__main__"],
            },
        )

    def test_inheritance_between_cell_classes_and_from_library_classes(self):
        found = self.round_trip(
            """
            import abc, collections
            class Shape(abc.ABC):
                @abc.abstractmethod
                def area(self): ...
                def describe(self):
                    return "%s of %g" % (type(self).__name__, self.area())
            class Square(Shape):
                def __init__(self, side):
                    self.side = side
                def area(self):
                    return self.side ** 2
                def describe(self):
                    return "a " + super().describe()
            class Counts(collections.Counter):
                def top(self):
                    return self.most_common(1)[0][0]
            square = Square(3)
            counts = Counts("abracadabra")
            """,
            """
            checks["subclass"] = issubclass(Square, Shape) and isinstance(square, Shape)
            checks["same_class"] = type(square) is Square
            checks["describe"] = square.describe()
            try:
                Shape()
                checks["abstract"] = False
            except TypeError:
                checks["abstract"] = True
            checks["metaclass"] = type(Shape).__name__
            checks["counts"] = [type(counts) is Counts, counts.top(), counts["a"]]
            """,
        )
        self.assertEqual(
            found,
            {
                "subclass": True,
                "same_class": True,
                "describe": "a Square of 9",
                "abstract": True,
                "metaclass": "ABCMeta",
                "counts": [True, "a", 5],
            },
        )

    def test_dataclasses_keep_fields_eq_and_repr(self):
        found = self.round_trip(
            """
            import dataclasses
            @dataclasses.dataclass
            class Point:
                x: int
                y: int = 0
                tags: list = dataclasses.field(default_factory=list)
            @dataclasses.dataclass(frozen=True)
            class Frozen:
                name: str
            point = Point(1, 2)
            frozen = Frozen("a")
            """,
            """
            import dataclasses
            checks["fields"] = [field.name for field in dataclasses.fields(Point)]
            checks["eq"] = point == Point(1, 2) and type(point) is Point
            checks["repr"] = repr(point)
            checks["default_factory"] = repr(Point(5))
            checks["asdict"] = dataclasses.asdict(point)
            try:
                frozen.name = "b"
            except dataclasses.FrozenInstanceError:
                checks["frozen"] = True
            """,
        )
        self.assertEqual(found["fields"], ["x", "y", "tags"])
        self.assertTrue(found["eq"])
        self.assertEqual(found["repr"], "Point(x=1, y=2, tags=[])")
        self.assertEqual(found["default_factory"], "Point(x=5, y=0, tags=[])")
        self.assertEqual(found["asdict"], {"x": 1, "y": 2, "tags": []})
        self.assertTrue(found["frozen"])

    def test_slots_nested_classes_metaclasses_and_decorated_methods(self):
        found = self.round_trip(
            """
            import functools
            class Registry(type):
                def __new__(mcls, name, bases, body):
                    cls = super().__new__(mcls, name, bases, body)
                    cls.registered = True
                    return cls
            class Plugin(metaclass=Registry):
                pass
            class Pixel:
                __slots__ = ("x", "__y")
                def __init__(self, x, y):
                    self.x, self.__y = x, y
                def y(self):
                    return self.__y
            class Outer:
                class Inner:
                    @functools.cached_property
                    def value(self):
                        return 42
            def logged(function):
                @functools.wraps(function)
                def wrapper(*args):
                    return ("logged", function(*args))
                return wrapper
            @logged
            def double(x):
                return 2 * x
            pixel, inner = Pixel(1, 2), Outer.Inner()
            """,
            """
            checks["metaclass"] = [type(Plugin) is Registry, Plugin.registered]
            checks["slots"] = [pixel.x, pixel.y(), type(pixel) is Pixel, hasattr(pixel, "__dict__")]
            checks["nested"] = [type(inner) is Outer.Inner, inner.value, Outer.Inner().value]
            checks["decorated"] = [list(double(3)), double.__wrapped__(3), double.__name__]
            """,
        )
        self.assertEqual(found["metaclass"], [True, True])
        self.assertEqual(found["slots"], [1, 2, True, False])
        self.assertEqual(found["nested"], [True, 42, 42])
        self.assertEqual(found["decorated"], [["logged", 6], 6, "double"])

    def test_namedtuples(self):
        found = self.round_trip(
            """
            import collections, typing
            Pair = collections.namedtuple("Pair", "left right")
            class Row(typing.NamedTuple):
                key: str
                value: int = 0
            pair, row = Pair(1, 2), Row("k")
            """,
            """
            checks["pair"] = [type(pair) is Pair, repr(pair), Pair(3, 4)._asdict()]
            checks["row"] = [type(row) is Row, repr(row), row._replace(value=5).value]
            """,
        )
        self.assertEqual(found["pair"], [True, "Pair(left=1, right=2)", {"left": 3, "right": 4}])
        self.assertEqual(found["row"], [True, "Row(key='k', value=0)", 5])


class ValuesTest(SnapshotCase):
    def test_modules_and_imported_names_go_by_reference(self):
        found = self.round_trip(
            """
            import json as j
            from os import path
            from json import dumps
            """,
            """
            import json, os
            checks["alias"] = j is json
            checks["submodule"] = path is os.path
            checks["function"] = dumps is json.dumps
            """,
        )
        self.assertEqual(found, {"alias": True, "submodule": True, "function": True})

    def test_objects_shared_between_names_stay_shared(self):
        found = self.round_trip(
            """
            data = [1, 2]
            same = data
            holder = {"data": data}
            class Box:
                pass
            boxes = [Box(), Box()]
            space = globals()
            first = []
            second = [first]
            first.append(second)
            """,
            """
            checks["namespace"] = space is globals()
            checks["alias"] = same is data
            checks["nested"] = holder["data"] is data
            checks["classes"] = all(type(box) is Box for box in boxes)
            checks["cycle"] = first[0] is second and second[0] is first
            """,
        )
        self.assertEqual(found, {"namespace": True, "alias": True, "nested": True, "classes": True, "cycle": True})

    @unittest.skipUnless(HAVE_PANDAS, "pandas and numpy are not installed")
    def test_pandas_and_numpy(self):
        found = self.round_trip(
            """
            import numpy as np, pandas as pd
            frame = pd.DataFrame({"a": [1, 2, 3], "b": ["x", "y", "z"]})
            array = np.arange(6).reshape(2, 3)
            """,
            """
            import pandas as pd
            checks["frame"] = frame.equals(pd.DataFrame({"a": [1, 2, 3], "b": ["x", "y", "z"]}))
            checks["array"] = array.tolist()
            checks["module"] = np.__name__
            """,
        )
        self.assertEqual(found, {"frame": True, "array": [[0, 1, 2], [3, 4, 5]], "module": "numpy"})


class SkippedTest(SnapshotCase):
    def test_unpicklable_values_are_skipped_with_a_reason_and_the_rest_saved(self):
        report = self.save(
            """
            import os
            numbers = (n for n in range(3))
            handle = open(os.devnull)
            kept = 1
            """
        )
        reasons = {entry["name"]: entry["reason"] for entry in report["skipped"]}
        self.assertEqual(sorted(reasons), ["handle", "numbers"])
        self.assertIn("generator: generators cannot be saved (TypeError: cannot pickle 'generator'", reasons["numbers"])
        self.assertIn("open files cannot be saved", reasons["handle"])
        self.assertEqual(sorted(report["saved"]), ["kept", "os"])
        self.assertEqual(report["bytes"], os.path.getsize(self.path))
        self.assertEqual(self.restore("checks['kept'] = kept")[1], {"kept": 1})

    def test_a_skipped_name_does_not_damage_what_it_shares_with_later_names(self):
        report = self.save(
            """
            inner = [1, 2]
            broken = {"inner": inner, "numbers": (n for n in range(3))}
            later = [inner]
            del inner
            """
        )
        self.assertEqual([entry["name"] for entry in report["skipped"]], ["broken"])
        self.assertEqual(self.restore("checks['later'] = later")[1], {"later": [[1, 2]]})

    def test_enum_classes_are_skipped_with_a_reason(self):
        report = self.save("import enum\nclass Color(enum.Enum):\n    RED = 1\n")
        self.assertEqual([entry["name"] for entry in report["skipped"]], ["Color"])
        self.assertIn("enum classes defined in a cell cannot be saved", report["skipped"][0]["reason"])

    def test_the_runner_names_are_left_out_and_user_underscore_names_kept(self):
        report = self.save(
            """
            from cellbox_kernel import prelude
            from cellbox_kernel.magics.history import History
            prelude.install(globals())
            history = History(globals())
            history.store_input(1, "x = 1")
            history.store_output(1, 5)
            _exit_code = 0
            _private = "mine"
            log = "rebound by the user"
            del prelude, History, history
            """
        )
        self.assertEqual(report["skipped"], [])
        self.assertEqual(sorted(report["saved"]), ["_private", "log"])

    def test_a_name_whose_module_is_gone_fails_alone(self):
        with open(os.path.join(self.folder, "vanishing_module.py"), "w") as handle:
            handle.write("class Thing:\n    pass\n")
        self.save(
            """
            import vanishing_module
            thing = vanishing_module.Thing()
            with_thing = [thing]
            kept = "yes"
            """,
            pythonpath=[self.folder],
        )
        loaded, found = self.restore("checks['kept'] = kept")
        self.assertEqual(found, {"kept": "yes"})
        self.assertEqual(loaded["restored"], ["kept"])
        reasons = {entry["name"]: entry["reason"] for entry in loaded["failed"]}
        self.assertEqual(sorted(reasons), ["thing", "vanishing_module", "with_thing"])
        self.assertIn("No module named 'vanishing_module'", reasons["thing"])
        self.assertIn("make the module importable", reasons["vanishing_module"])
        self.assertEqual(reasons["with_thing"], "it shares objects with 'thing', which could not be restored")


class FileTest(unittest.TestCase):
    def setUp(self):
        folder = tempfile.TemporaryDirectory()
        self.addCleanup(folder.cleanup)
        self.folder = folder.name
        self.path = os.path.join(folder.name, "session.snapshot")
        snapshot.save({"numbers": [1, 2, 3]}, self.path, "9.9.9")

    def rewrite(self, change):
        with open(self.path, "rb") as handle:
            data = handle.read()
        with open(self.path, "wb") as handle:
            handle.write(change(data))

    def assert_load_fails(self, *fragments):
        namespace = {}
        with self.assertRaises(snapshot.SnapshotError) as raised:
            snapshot.load(self.path, namespace)
        for fragment in fragments:
            self.assertIn(fragment, str(raised.exception))
        self.assertEqual(namespace, {})

    def test_header(self):
        header = snapshot.read_header(self.path)
        self.assertEqual(header["format"], 2)
        self.assertEqual(header["python"], "%d.%d" % sys.version_info[:2])
        self.assertEqual(header["implementation"], sys.implementation.name)
        self.assertEqual(header["cellbox"], "9.9.9")
        self.assertEqual(header["names"], 1)
        self.assertRegex(header["created"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
        self.assertEqual(snapshot.load(self.path, {})["header"], header)

    def test_save_replaces_the_file_and_leaves_no_temporary_file(self):
        report = snapshot.save({"other": "value"}, self.path, "9.9.9")
        self.assertEqual(os.listdir(self.folder), ["session.snapshot"])
        namespace = {}
        self.assertEqual(snapshot.load(self.path, namespace)["restored"], ["other"])
        self.assertEqual(namespace["other"], "value")
        self.assertEqual(report["path"], self.path)

    def test_truncated_file(self):
        self.rewrite(lambda data: data[:-5])
        self.assert_load_fails("truncated", "use a complete copy")

    def test_truncated_inside_the_magic(self):
        self.rewrite(lambda data: data[:5])
        self.assert_load_fails("truncated")

    def test_corrupted_byte(self):
        self.rewrite(lambda data: data[:-1] + bytes([data[-1] ^ 0xFF]))
        self.assert_load_fails("checksum does not match")

    def test_foreign_file(self):
        self.rewrite(lambda data: b"PK\x03\x04 some zip archive")
        self.assert_load_fails("is not a cellbox snapshot")
        with self.assertRaises(snapshot.SnapshotError):
            snapshot.read_header(self.path)

    def test_other_python_version(self):
        self.rewrite(lambda data: self.change_header(data, python="3.99"))
        this = "Python %d.%d" % sys.version_info[:2]
        self.assert_load_fails("written by Python 3.99; restore it with Python 3.99 (this kernel runs %s)" % this)
        self.assertEqual(snapshot.read_header(self.path)["python"], "3.99")

    def test_unknown_format_version(self):
        self.rewrite(lambda data: self.change_header(data, format=3))
        self.assert_load_fails("format 3", "reads formats 1 and 2", "load it with the cellbox that wrote it (9.9.9)")

    def test_format_1_with_its_sha256_is_still_read(self):
        def as_format_1(data):
            magic, header, payload = data.split(b"\n", 2)
            header = json.loads(header)
            del header["payload_crc32"]
            header.update(format=1, payload_sha256=hashlib.sha256(payload).hexdigest())
            return magic + b"\n" + json.dumps(header).encode() + b"\n" + payload

        self.rewrite(as_format_1)
        namespace = {}
        self.assertEqual(snapshot.load(self.path, namespace)["restored"], ["numbers"])
        self.assertEqual(namespace["numbers"], [1, 2, 3])
        self.rewrite(lambda data: data[:-1] + bytes([data[-1] ^ 0xFF]))
        self.assert_load_fails("checksum does not match")

    def test_a_header_without_its_checksum_is_damaged(self):
        def without_checksum(data):
            magic, header, payload = data.split(b"\n", 2)
            header = json.loads(header)
            del header["payload_crc32"]
            return magic + b"\n" + json.dumps(header).encode() + b"\n" + payload

        self.rewrite(without_checksum)
        self.assert_load_fails("is damaged", "payload_crc32")

    def test_only_values_that_need_references_are_pickled_with_them(self):
        # The referencing pickler costs a Python call per object, each float of a list included.
        made = []

        class Counting(snapshot._ReferencingPickler):
            def __init__(self, *args):
                made.append(args[0])
                super().__init__(*args)

        def local():  # defined here, so saved by value
            return 1

        data = [0.5] * 1000
        with mock.patch.object(snapshot, "_ReferencingPickler", Counting):
            snapshot.save({"floats": data, "table": {"a": [1, "b"]}, "text": "x"}, self.path, "9.9.9")
            self.assertEqual(made, [])
            snapshot.save({"floats": data, "alias": data, "holder": [data], "f": local}, self.path, "9.9.9")
            self.assertEqual(len(made), 3)  # alias and holder refer to floats; f is a definition
            # A memo too large to copy (a copy costs ~150 bytes per object) is not looked at.
            many = [str(number) for number in range(snapshot._MEMO_LOOKS + 1)]
            snapshot.save({"many": many}, self.path, "9.9.9")
            self.assertEqual(len(made), 4)
            snapshot.save({"floats": data, "alias": data, "holder": [data], "f": local}, self.path, "9.9.9")
        namespace = {}
        snapshot.load(self.path, namespace)
        self.assertIs(namespace["alias"], namespace["floats"])
        self.assertIs(namespace["holder"][0], namespace["floats"])
        self.assertEqual(namespace["f"](), 1)

    @staticmethod
    def change_header(data, **fields):
        magic, header, payload = data.split(b"\n", 2)
        changed = dict(json.loads(header), **fields)
        return magic + b"\n" + json.dumps(changed).encode() + b"\n" + payload


if __name__ == "__main__":
    unittest.main()
