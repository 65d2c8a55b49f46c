"""The SDK against E2B's own Code Interpreter package (e2b-code-interpreter from
PyPI, installed for the tests, never run against its cloud): the names code
written for it imports exist here, exceptions keep its inheritance, and each
method accepts every argument E2B's does, in the same positions.
"""
import inspect
import os
import sys
import typing
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))

import e2b as e2b_base  # noqa: E402
import e2b_code_interpreter as e2b  # noqa: E402
from e2b.sandbox_async.commands.command import Commands as E2BAsyncCommands  # noqa: E402
from e2b.sandbox_async.commands.command_handle import AsyncCommandHandle as E2BAsyncCommandHandle  # noqa: E402
from e2b.sandbox_async.filesystem.filesystem import Filesystem as E2BAsyncFilesystem  # noqa: E402
from e2b.sandbox_async.filesystem.watch_handle import AsyncWatchHandle as E2BAsyncWatchHandle  # noqa: E402
from e2b.sandbox_sync.commands.command import Commands as E2BCommands  # noqa: E402
from e2b.sandbox_sync.commands.command_handle import CommandHandle as E2BCommandHandle  # noqa: E402
from e2b.sandbox_sync.filesystem.filesystem import Filesystem as E2BFilesystem  # noqa: E402
from e2b.sandbox_sync.filesystem.watch_handle import WatchHandle as E2BWatchHandle  # noqa: E402
import e2b_code_interpreter.charts as e2b_charts  # noqa: E402

import cellbox  # noqa: E402
import cellbox.charts  # noqa: E402,F401
import cellbox.commands  # noqa: E402
import cellbox.filesystem  # noqa: E402

METHODS = (
    "create",
    "connect",
    "run_code",
    "create_code_context",
    "list_code_contexts",
    "restart_code_context",
    "remove_code_context",
    "kill",
    "set_timeout",
    "is_running",
)

# `sandbox.files`, `sandbox.commands` and their handles: E2B's class, ours.
API_CLASSES = (
    (E2BFilesystem, cellbox.filesystem.Filesystem),
    (E2BAsyncFilesystem, cellbox.filesystem.AsyncFilesystem),
    (E2BCommands, cellbox.commands.Commands),
    (E2BAsyncCommands, cellbox.commands.AsyncCommands),
    (E2BCommandHandle, cellbox.CommandHandle),
    (E2BAsyncCommandHandle, cellbox.AsyncCommandHandle),
    (E2BWatchHandle, cellbox.WatchHandle),
    (E2BAsyncWatchHandle, cellbox.AsyncWatchHandle),
)


def _classes(module, base=object):
    return {name: value for name, value in vars(module).items() if isinstance(value, type) and issubclass(value, base)}


class NamesTests(unittest.TestCase):
    def test_every_exception_exists_with_the_same_bases(self):
        for name, theirs in _classes(e2b, BaseException).items():
            with self.subTest(name):
                ours = getattr(cellbox, name, None)
                self.assertIsNotNone(ours, "cellbox has no %s" % name)
                for base in theirs.__mro__[1:]:
                    if base.__module__ in ("builtins",) or hasattr(cellbox, base.__name__):
                        expected = getattr(cellbox, base.__name__, base)
                        self.assertTrue(issubclass(ours, expected), "%s is not a %s" % (name, base.__name__))

    def test_sandboxes_and_models_exist(self):
        names = ["Sandbox", "AsyncSandbox", "Context", "Execution", "ExecutionError", "Result", "MIMEType"]
        names += ["Logs", "OutputHandler", "OutputMessage", "RunCodeLanguage"]
        for name in names:
            with self.subTest(name):
                self.assertTrue(hasattr(e2b, name), "the contract changed: e2b_code_interpreter has no %s" % name)
                self.assertTrue(hasattr(cellbox, name), "cellbox has no %s" % name)

    def test_every_top_level_name_of_e2b_s_package_exists(self):
        exported = set(getattr(e2b, "__all__", ())) | set(e2b_base.__all__)
        exported |= {name for name in vars(e2b) if not name.startswith("_")}
        exported = {name for name in exported if not inspect.ismodule(getattr(e2b, name))}
        self.assertIn("Template", exported, "the contract changed: E2B exports no Template")
        missing = sorted(name for name in exported if not hasattr(cellbox, name))
        self.assertEqual(missing, [], "cellbox lacks these names of e2b_code_interpreter")
        star = {}
        exec("from cellbox import *", star)
        self.assertEqual(sorted(exported - set(star)), [], "`from cellbox import *` lacks these names")

    def test_cloud_services_import_and_annotate_but_refuse_use(self):
        def uses(template: typing.Optional[cellbox.Template], network: cellbox.SandboxNetworkOpts) -> cellbox.Volume:
            raise AssertionError("not called")

        self.assertIs(typing.get_type_hints(uses)["return"], cellbox.Volume)
        self.assertFalse(isinstance(object(), cellbox.Template))
        refusals = [
            lambda: cellbox.Template(),
            lambda: cellbox.Template.build,
            lambda: cellbox.AsyncVolume.create("data"),
            lambda: cellbox.Secret.list(),
            lambda: cellbox.SandboxPaginator(),
            lambda: cellbox.wait_for_port(8080),
            lambda: cellbox.get_signature("/a", "read", "user"),
        ]
        for refusal in refusals:
            with self.assertRaises(cellbox.SandboxException) as caught:
                refusal()
            self.assertIn("has no counterpart in a local cellbox sandbox", str(caught.exception))
            self.assertIn("Coming from E2B", str(caught.exception))
        self.assertEqual(cellbox.ALL_TRAFFIC, e2b.ALL_TRAFFIC)
        self.assertEqual(cellbox.SandboxState.RUNNING, "running")
        options = cellbox.SandboxNetworkOpts(deny_out=[cellbox.ALL_TRAFFIC])
        self.assertEqual(options, {"deny_out": ["0.0.0.0/0"]})

    def test_each_member_of_e2b_s_sandboxes_exists_or_says_what_to_use_instead(self):
        for cls in ("Sandbox", "AsyncSandbox"):
            ours, theirs = getattr(cellbox, cls), getattr(e2b, cls)
            unmade = object.__new__(ours)  # the members are looked up, never called
            elsewhere = [name for name in dir(theirs) if not name.startswith("_") and name not in dir(ours)]
            self.assertIn("get_info", elsewhere, "the contract changed: cellbox has get_info now")
            for name in elsewhere:
                for owner in (ours, unmade):
                    with self.subTest(cls=cls, member=name, on="class" if owner is ours else "sandbox"):
                        self.assertFalse(hasattr(owner, name))
                        with self.assertRaises(cellbox.NotLocalException) as caught:
                            getattr(owner, name)
                        self.assertIn("%s.%s belongs to E2B's service" % (cls, name), str(caught.exception))
                        self.assertIsInstance(caught.exception, cellbox.SandboxException)
            with self.assertRaises(AttributeError) as caught:
                unmade.no_such_member
            self.assertNotIsInstance(caught.exception, cellbox.SandboxException)

    def test_chart_classes_exist_in_the_charts_module(self):
        names = [n for n, v in _classes(e2b_charts).items() if v.__module__ == e2b_charts.__name__]
        self.assertIn("BarChart", names)
        for name in names:
            with self.subTest(name):
                self.assertTrue(hasattr(cellbox.charts, name), "cellbox.charts has no %s" % name)


class SignatureTests(unittest.TestCase):
    def assert_accepts(self, ours, theirs, where):
        """Every parameter of `theirs` is taken by `ours`: by name (or by **kwargs), and a
        positional one at the same position (or by *args past ours)."""
        ours_params = list(inspect.signature(ours).parameters.values())
        by_name = {p.name: p for p in ours_params}
        takes_kwargs = any(p.kind is p.VAR_KEYWORD for p in ours_params)
        takes_rest = any(p.kind is p.VAR_POSITIONAL for p in ours_params)  # later positions, ignored
        positional = [p.name for p in ours_params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        their_positional = 0
        for param in inspect.signature(theirs).parameters.values():
            if param.kind in (param.VAR_KEYWORD, param.VAR_POSITIONAL):
                continue
            self.assertTrue(param.name in by_name or takes_kwargs, "%s takes no %r" % (where, param.name))
            if param.kind is param.POSITIONAL_OR_KEYWORD and not (takes_rest and their_positional >= len(positional)):
                self.assertEqual(
                    positional[their_positional : their_positional + 1], [param.name], "%s: %r out of place" % (where, param.name)
                )
                their_positional += 1
            if param.name in by_name and param.default is param.empty:
                self.assertIs(by_name[param.name].default, param.empty, "%s: %r is required there" % (where, param.name))

    def assert_same_method(self, ours_cls, theirs_cls, method):
        where = "%s.%s" % (ours_cls.__name__, method)
        theirs = inspect.getattr_static(theirs_cls, method)
        ours = inspect.getattr_static(ours_cls, method, None)
        self.assertIsNotNone(ours, "%s is missing" % where)
        if isinstance(theirs, property):
            self.assertIsInstance(ours, property, "%s: a property there" % where)
            return
        self.assert_accepts(_function(ours), _function(theirs), where)
        self.assertEqual(
            inspect.iscoroutinefunction(_function(ours)),
            inspect.iscoroutinefunction(_function(theirs)),
            "%s: awaited in one and not the other" % where,
        )

    def test_sandbox_methods_take_what_e2b_s_take(self):
        for cls in ("Sandbox", "AsyncSandbox"):
            for method in METHODS:
                with self.subTest(cls=cls, method=method):
                    self.assert_same_method(getattr(cellbox, cls), getattr(e2b, cls), method)

    def test_files_commands_and_their_handles_take_what_e2b_s_take(self):
        for theirs, ours in API_CLASSES:
            methods = [name for name in vars(theirs) if not name.startswith("_")]
            self.assertTrue(methods, "the contract changed: %s has no public methods" % theirs.__name__)
            for method in methods:
                with self.subTest(cls=ours.__name__, method=method):
                    self.assert_same_method(ours, theirs, method)


def _function(member):
    """The plain function behind a method, classmethod, or class-or-instance method."""
    for attribute in ("__func__", "on_instance", "method"):
        inner = getattr(member, attribute, None)
        if callable(inner):
            return _function(inner)
    return member


if __name__ == "__main__":
    unittest.main()
