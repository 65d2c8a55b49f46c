"""The runner package's modules import each other without cycles.

The graph is read from the source (each module's `import` statements,
function-level ones included: a cycle that only closes inside a function is
still two modules that cannot be understood, or moved, one without the other).
Imports by name at run time (`importlib.import_module`) are not seen.
"""
import ast
import os
import unittest

RUNNER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "runner")
PACKAGE = "cellbox_kernel"


def module_files(root, package):
    """{module name: path} of every .py file of `package` under `root`."""
    found = {}
    top = os.path.join(root, package)
    for folder, folders, files in os.walk(top):
        folders[:] = sorted(name for name in folders if name != "__pycache__")
        parts = os.path.relpath(folder, root).split(os.sep)
        for name in sorted(files):
            if name.endswith(".py"):
                stem = name[: -len(".py")]
                found[".".join(parts if stem == "__init__" else parts + [stem])] = os.path.join(folder, name)
    return found


def imported_modules(name, path, modules):
    """The modules of the package that the module `name` imports."""
    with open(path, "rb") as handle:
        tree = ast.parse(handle.read(), path)
    is_package = os.path.basename(path) == "__init__.py"
    found = set()

    def add(target):
        while target and target not in modules:  # `pkg.module.name` imports `pkg.module`
            target = target.rpartition(".")[0]
        if target:
            found.add(target)

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".")
                if not is_package:
                    base = base[:-1]
                base = base[: len(base) - (node.level - 1)]
                if node.module:
                    base = base + node.module.split(".")
                base = ".".join(base)
            else:
                base = node.module or ""
            for alias in node.names:
                # `from pkg import module` imports the module; `from module import name`, the module.
                add(base + "." + alias.name if base + "." + alias.name in modules else base)
    found.discard(name)
    return found


def import_graph(root=RUNNER, package=PACKAGE):
    modules = module_files(root, package)
    return {name: imported_modules(name, path, modules) for name, path in modules.items()}


def find_cycle(graph):
    """One cycle as [a, b, ..., a], or None."""
    state = {}  # name -> "open" while on the path, "done" after
    path = []

    def visit(node):
        state[node] = "open"
        path.append(node)
        for target in sorted(graph.get(node, ())):
            if state.get(target) == "open":
                return path[path.index(target) :] + [target]
            if target not in state:
                cycle = visit(target)
                if cycle:
                    return cycle
        path.pop()
        state[node] = "done"
        return None

    for node in sorted(graph):
        if node not in state:
            cycle = visit(node)
            if cycle:
                return cycle
    return None


class ImportCycleTest(unittest.TestCase):
    def test_the_runner_package_has_no_import_cycle(self):
        graph = import_graph()
        self.assertIn("cellbox_kernel.main", graph)
        cycle = find_cycle(graph)
        self.assertIsNone(cycle, "import cycle: %s" % " -> ".join(cycle or ()))

    def test_magic_groups_import_only_the_framework_of_their_package(self):
        graph = import_graph()
        for name, targets in graph.items():
            if name.startswith("cellbox_kernel.magics.") and name != "cellbox_kernel.magics.dispatch":
                siblings = {target for target in targets if target.startswith("cellbox_kernel.magics.")}
                with self.subTest(module=name):
                    self.assertLessEqual(siblings, {"cellbox_kernel.magics.framework"})

    def test_cycles_are_found(self):
        self.assertEqual(find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}), ["a", "b", "c", "a"])
        self.assertIsNone(find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}))

    def test_relative_imports_resolve_to_modules(self):
        modules = {"p": "", "p.a": "", "p.sub": "", "p.sub.b": "", "p.sub.c": ""}
        source = "from .. import a\nfrom ..a import thing\nfrom . import c\nfrom .c import name\nimport p.sub.b\n"
        with _source_file(source) as path:
            self.assertEqual(imported_modules("p.sub.b", path, modules), {"p.a", "p.sub.c"})
        with _source_file("from . import a, sub\nfrom .sub import b\n", "__init__.py") as path:
            self.assertEqual(imported_modules("p", path, modules), {"p.a", "p.sub", "p.sub.b"})


class _source_file:
    """A temporary file holding `source`, named `filename`."""

    def __init__(self, source, filename="module.py"):
        self._source, self._filename = source, filename

    def __enter__(self):
        import tempfile

        self._folder = tempfile.TemporaryDirectory()
        path = os.path.join(self._folder.name, self._filename)
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(self._source)
        return path

    def __exit__(self, *exc):
        self._folder.cleanup()


if __name__ == "__main__":
    unittest.main()
