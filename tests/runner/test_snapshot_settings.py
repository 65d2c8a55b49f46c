"""A snapshot carries the shell's settings (%config, %precision, %pprint,
%xmode, %pdb, %alias, %load_ext with autoreload's state) as the magic lines
that make them again, and loading it replays them: a hibernated session wakes
set up as it was left. Each side runs in a process of its own, as a kernel does."""
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
RUNNER = os.path.join(os.path.dirname(os.path.dirname(HERE)), "runner")

SAVE = """
import json, sys
from test_magics_ipython import Kernel
from cellbox_kernel import snapshot
from cellbox_kernel import shell_settings

kernel = Kernel()
for cell in sys.stdin.read().splitlines():
    kernel.stdout(cell)
kernel.executor.namespace["x"] = 41
report = snapshot.save(kernel.executor.namespace, sys.argv[1], "test", shell_settings.lines(kernel.magics.shell))
print(json.dumps({"report": report, "header": snapshot.read_header(sys.argv[1])}))
"""

LOAD = """
import json, sys
from test_magics_ipython import Kernel
from cellbox_kernel import autoreload, pretty, snapshot

kernel = Kernel()
shell = kernel.magics.shell
report = snapshot.load(sys.argv[1], kernel.executor.namespace, shell)
reloader = autoreload._reloader
state = {
    "precision": shell.settings.float_format,
    "figure_format": shell.settings.values[("InlineBackend", "figure_format")],
    "figure_formats": sorted(shell.settings.values[("InlineBackend", "figure_formats")]),
    "cache_size": shell.history.cache_size if hasattr(shell.history, "cache_size") else None,
    "pretty": pretty.enabled,
    "xmode": shell.debug.mode,
    "pdb": shell.debug.automatic_pdb,
    "aliases": {name: alias.command for name, alias in shell.aliases.items()},
    "extensions": sorted(shell.extensions),
    "autoreload": reloader.mode if reloader is not None else None,
    "skipped": sorted(reloader.skipped) if reloader is not None else None,
    "third": kernel.value("1/3"),
    "x": kernel.value("x + 1"),
    "alias_magic": "hello" in kernel.magics.line_table(),
}
print(json.dumps({"report": report, "state": state}))
"""


def _python(code, stdin, path):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join((RUNNER, HERE)))
    done = subprocess.run(
        [sys.executable, "-c", code, path],
        input=textwrap.dedent(stdin),
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    if done.returncode != 0:
        raise AssertionError(done.stderr)
    return json.loads(done.stdout.splitlines()[-1])


class SettingsTest(unittest.TestCase):
    def setUp(self):
        folder = tempfile.TemporaryDirectory()
        self.addCleanup(folder.cleanup)
        self.path = os.path.join(folder.name, "session.snapshot")

    def test_settings_come_back_with_the_variables(self):
        saved = _python(
            SAVE,
            """\
            %precision 3
            %config InlineBackend.figure_format = 'retina'
            %config InlineBackend.figure_formats = ['png', 'svg']
            %xmode Verbose
            %pdb on
            %alias hello echo hi %l
            %load_ext autoreload
            %autoreload 2
            %aimport -json
            %unalias rmdir
            """,
            self.path,
        )
        self.assertEqual(
            saved["header"]["settings"],
            [
                ["config", "InlineBackend.figure_format = 'retina'"],
                ["config", "InlineBackend.figure_formats = ['png', 'svg']"],
                ["precision", "3"],
                ["xmode", "Verbose"],
                ["pdb", "on"],
                ["alias", "hello echo hi %l"],
                ["unalias", "rmdir"],
                ["load_ext", "autoreload"],
                ["autoreload", "2"],
                ["aimport", "-json"],
            ],
        )
        loaded = _python(LOAD, "", self.path)
        report, state = loaded["report"], loaded["state"]
        self.assertEqual(report["failed"], [])
        self.assertEqual(report["restored"], ["x"])
        self.assertEqual(report["settings"][0], "%config InlineBackend.figure_format = 'retina'")
        self.assertEqual(len(report["settings"]), 10)
        self.assertEqual(state["precision"], "%.3f")
        self.assertEqual(state["third"], "0.333")
        self.assertEqual((state["figure_format"], state["figure_formats"]), ("retina", ["png", "svg"]))
        self.assertEqual((state["xmode"], state["pdb"]), ("Verbose", True))
        self.assertEqual(state["aliases"]["hello"], "echo hi %l")
        self.assertNotIn("rmdir", state["aliases"])
        self.assertEqual(state["aliases"]["ll"], "ls -F -o %l")
        self.assertTrue(state["alias_magic"])
        self.assertEqual((state["extensions"], state["autoreload"], state["skipped"]), (["autoreload"], 2, ["json"]))
        self.assertEqual((state["x"], state["pretty"]), ("42", True))

    def test_pprint_off_and_the_size_of_out(self):
        saved = _python(SAVE, "%pprint\n%config InteractiveShell.cache_size = 50\n", self.path)
        self.assertEqual(
            saved["header"]["settings"], [["config", "InteractiveShell.cache_size = 50"], ["pprint", ""]]
        )
        loaded = _python(LOAD, "", self.path)
        self.assertEqual(loaded["report"]["failed"], [])
        self.assertEqual(loaded["report"]["settings"], ["%config InteractiveShell.cache_size = 50", "%pprint"])
        self.assertFalse(loaded["state"]["pretty"])

    def test_a_fresh_shell_writes_no_settings(self):
        saved = _python(SAVE, "", self.path)
        self.assertNotIn("settings", saved["header"])
        loaded = _python(LOAD, "", self.path)
        self.assertEqual((loaded["report"]["settings"], loaded["report"]["failed"]), ([], []))
        self.assertEqual(loaded["state"]["precision"], "%r")

    def test_a_setting_that_fails_is_named_and_the_rest_still_apply(self):
        from cellbox_kernel import shell_settings

        sys.path.insert(0, HERE)
        from test_magics_ipython import Kernel

        kernel = Kernel()
        shell = kernel.magics.shell
        kept, failed = shell_settings.replay(
            shell,
            [
                ["load_ext", "no_such_extension_here"],
                ["no_such_magic", "1"],
                ["config", "Nobody.knows = 1"],
                "not a line",
                ["precision", "2"],
            ],
        )
        self.assertEqual(kept, ["%precision 2"])
        self.assertEqual([entry["name"] for entry in failed][:3], [
            "%load_ext no_such_extension_here", "%no_such_magic 1", "%config Nobody.knows = 1",
        ])
        self.assertIn("ModuleNotFoundError", failed[0]["reason"])
        self.assertEqual(failed[3]["name"], "a setting")
        self.assertEqual(shell.settings.float_format, "%.2f")
        self.assertEqual(kernel.value("1/3"), "0.33")

    def test_a_value_that_cannot_be_compared_still_lets_the_snapshot_be_written(self):
        from cellbox_kernel import shell_settings

        sys.path.insert(0, HERE)
        from test_magics_ipython import Kernel

        class Odd:
            def __eq__(self, other):
                raise ValueError("no single truth value")

            __hash__ = object.__hash__

            def __repr__(self):
                return "Odd()"

        shell = Kernel().magics.shell
        shell.settings.values[("InlineBackend", "rc")] = Odd()
        shell.aliases = None  # a part that cannot be read is left out
        self.assertEqual(shell_settings.lines(shell), [["config", "InlineBackend.rc = Odd()"]])


if __name__ == "__main__":
    unittest.main()
