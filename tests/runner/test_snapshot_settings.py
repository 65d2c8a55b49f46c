"""A snapshot carries the shell's settings (%config, %precision, %pprint,
%xmode, %pdb, %alias, %load_ext with autoreload's state) as the magic lines
that make them again, and loading it replays them: a hibernated session wakes
set up as it was left. Each side runs in a process of its own, as a kernel does."""
import json
import os
import pickle
import sys
import tempfile
import types
import unittest
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)  # the shared helpers, when run by path
import test_snapshot  # noqa: E402
from cellbox_kernel import pretty, shell_settings  # noqa: E402
from test_magics_ipython import Kernel  # noqa: E402

SAVE = """
import json, sys
from test_magics_ipython import Kernel
from cellbox_kernel import snapshot
kernel = Kernel()
for cell in sys.stdin.read().splitlines():
    kernel.stdout(cell)
kernel.executor.namespace["x"] = 41
report = snapshot.save(kernel.executor.namespace, sys.argv[1], "test", kernel.magics.shell)
print(json.dumps({"report": report, "header": snapshot.read_header(sys.argv[1])}))
"""

LOAD = """
import json, sys
from test_magics_ipython import Kernel
from cellbox_kernel import autoreload, mpl, pretty, snapshot

kernel = Kernel()
shell = kernel.magics.shell
report = snapshot.load(sys.argv[1], kernel.executor.namespace, shell)
reloader = autoreload._reloader
state = {
    "precision": shell.settings.float_format,
    "figure_format": shell.settings.values[("InlineBackend", "figure_format")],
    "figure_formats": sorted(shell.settings.values[("InlineBackend", "figure_formats")]),
    "formats": mpl.settings["formats"],
    "rc": repr(shell.settings.values[("InlineBackend", "rc")]),
    "precision_text": shell.settings.precision_text,
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
checks = sys.stdin.read().strip()
scope = dict(kernel.executor.namespace)
scope["autoreload"] = autoreload
print(json.dumps({"report": report, "state": state, "checks": repr(eval(checks, scope)) if checks else None}))
"""


def _python(code, stdin, path, extra_path=None):
    """Run `code` in a process of its own on `path`, `stdin` its input; its JSON answer."""
    return test_snapshot._python(code, stdin, path, (HERE,) + ((extra_path,) if extra_path else ()))


class SettingsTest(unittest.TestCase):
    def setUp(self):
        folder = tempfile.TemporaryDirectory()
        self.addCleanup(folder.cleanup)
        self.folder = folder.name
        self.path = os.path.join(folder.name, "session.snapshot")

    def round_trip(self, cells):
        saved = _python(SAVE, cells, self.path)
        return saved, _python(LOAD, "", self.path)

    def test_settings_come_back_with_the_variables(self):
        saved, loaded = self.round_trip(
            """\
            %precision 3
            %config InlineBackend.figure_format = 'retina'
            %xmode Verbose
            %pdb on
            %alias hello echo hi %l
            %unalias rmdir
            %load_ext autoreload
            %autoreload 2
            %aimport -json
            """
        )
        self.assertEqual(
            saved["header"]["settings"],
            [
                ["load_ext", "autoreload"],
                ["autoreload", "2"],
                ["aimport", "-json"],
                ["config", "InlineBackend.figure_format = 'retina'"],
                ["precision", "3"],
                ["xmode", "Verbose"],
                ["pdb", "on"],
                ["alias", "hello echo hi %l"],
                ["unalias", "rmdir"],
            ],
        )
        report, state = loaded["report"], loaded["state"]
        self.assertEqual((report["failed"], report["restored"]), ([], ["x"]))
        # Extensions come back before the variables, the rest after them.
        self.assertEqual(report["settings"][:3], ["%load_ext autoreload", "%autoreload 2", "%aimport -json"])
        self.assertEqual(len(report["settings"]), 9)
        self.assertEqual((state["precision"], state["third"]), ("%.3f", "0.333"))
        self.assertEqual((state["figure_format"], state["formats"]), ("retina", ["retina"]))
        self.assertEqual((state["xmode"], state["pdb"]), ("Verbose", True))
        self.assertEqual(state["aliases"]["hello"], "echo hi %l")
        self.assertNotIn("rmdir", state["aliases"])
        self.assertEqual(state["aliases"]["ll"], "ls -F -o %l")
        self.assertTrue(state["alias_magic"])
        self.assertEqual((state["extensions"], state["autoreload"], state["skipped"]), (["autoreload"], 2, ["json"]))
        self.assertEqual((state["x"], state["pretty"]), ("42", True))

    def test_pprint_off_the_size_of_out_and_a_precision_format(self):
        saved, loaded = self.round_trip("%pprint\n%config InteractiveShell.cache_size = 50\n%precision %.4f\n")
        self.assertEqual(
            saved["header"]["settings"],
            [["config", "InteractiveShell.cache_size = 50"], ["precision", "%.4f"], ["pprint", ""]],
        )
        self.assertEqual(loaded["report"]["failed"], [])
        self.assertEqual(loaded["state"]["pretty"], False)
        self.assertEqual((loaded["state"]["precision"], loaded["state"]["precision_text"]), ("%.4f", "%.4f"))

    def test_what_a_later_magic_undid_stays_undone(self):
        saved, loaded = self.round_trip(
            """\
            %config InteractiveShell.xmode = 'Verbose'
            %config InteractiveShell.pdb = True
            %xmode Plain
            %pdb off
            %config InlineBackend.figure_formats = ['png', 'svg']
            %config InlineBackend.figure_format = 'retina'
            """
        )
        self.assertEqual(loaded["report"]["failed"], [])
        self.assertEqual((loaded["state"]["xmode"], loaded["state"]["pdb"]), ("Plain", False))
        self.assertEqual(loaded["state"]["formats"], ["retina"])
        self.assertNotIn(["xmode", "Verbose"], saved["header"]["settings"])

    def test_a_config_value_that_is_not_a_literal_is_evaluated_among_the_users_names(self):
        saved, loaded = self.round_trip(
            "from fractions import Fraction\n%config InlineBackend.rc = {'lines.linewidth': Fraction(3, 2)}\n"
        )
        self.assertIn(["config", "InlineBackend.rc = {'lines.linewidth': Fraction(3, 2)}"], saved["header"]["settings"])
        self.assertEqual(loaded["report"]["failed"], [])
        self.assertEqual(loaded["state"]["rc"], "{'lines.linewidth': Fraction(3, 2)}")

    def test_a_setting_too_long_to_keep_is_named_and_the_snapshot_still_loads(self):
        big = "{%s}" % ", ".join("'k%d': %d" % (n, n) for n in range(5000))
        saved, loaded = self.round_trip("%%config InlineBackend.rc = %s\n%%precision 2\n" % big)
        self.assertEqual(saved["header"]["settings"], [["precision", "2"]])
        [skipped] = saved["report"]["skipped"]
        self.assertTrue(skipped["name"].startswith("%config InlineBackend.rc = {'k0': 0"), skipped)
        self.assertIn("too long to keep", skipped["reason"])
        self.assertEqual((loaded["report"]["restored"], loaded["report"]["failed"]), (["x"], []))
        self.assertEqual(loaded["state"]["third"], "0.33")

    def test_a_fresh_shell_writes_no_settings(self):
        saved, loaded = self.round_trip("")
        self.assertNotIn("settings", saved["header"])
        self.assertEqual((loaded["report"]["settings"], loaded["report"]["failed"]), ([], []))
        self.assertEqual(loaded["state"]["precision"], "%r")

    def test_figure_formats_come_back_as_last_set_even_at_their_default(self):
        for cells, formats in (
            ("%config InlineBackend.figure_formats = ['svg']\n%config InlineBackend.figure_format = 'png'\n", ["png"]),
            (
                "%config InlineBackend.figure_format = 'svg'\n%config InlineBackend.figure_formats = ['svg', 'png']\n",
                ["png", "svg"],
            ),
            ("%config InlineBackend.figure_formats = ['svg', 'png']\n%config InlineBackend.figure_format = 'svg'\n", ["svg"]),
        ):
            with self.subTest(cells=cells):
                _saved, loaded = self.round_trip(cells)
                self.assertEqual((loaded["report"]["failed"], loaded["state"]["formats"]), ([], formats))

    def test_extensions_load_before_the_values_and_aimport_leaves_the_values_alone(self):
        with open(os.path.join(self.folder, "sees_the_values.py"), "w") as handle:
            handle.write("def load_ipython_extension(shell):\n    shell.user_ns['x_at_load'] = 'x' in shell.user_ns\n")
        saved = _python(SAVE, "%load_ext sees_the_values\n%load_ext autoreload\n%aimport json\njson = 'mine'\n", self.path, self.folder)
        self.assertIn(["aimport", "json"], saved["header"]["settings"])
        loaded = _python(LOAD, "x_at_load, json, sorted(autoreload._reloader.explicit)", self.path, self.folder)
        self.assertEqual(loaded["report"]["failed"], [])
        self.assertEqual(loaded["checks"], "(False, 'mine', ['json'])")
        self.assertEqual(loaded["state"]["cache_size"], 1000)

    def test_characters_json_escapes_count_as_written_and_the_file_still_loads(self):
        wide = "\U0001F600" * 3000  # 12 bytes each once escaped in the header
        cells = "".join("%%alias wide%d echo %s\n" % (n, wide) for n in range(8)) + "%alias short echo ok\n"
        cells += "%config InteractiveShell.cache_size = 50\n"
        saved, loaded = self.round_trip(cells)
        skipped = saved["report"]["skipped"]
        self.assertEqual([entry["name"][:12] for entry in skipped], ["%%alias wide%d" % n for n in range(8)])
        self.assertIn("too long to keep", skipped[0]["reason"])
        self.assertLess(len(json.dumps(saved["header"])), 1 << 16)
        self.assertEqual((loaded["report"]["restored"], loaded["report"]["failed"]), (["x"], []))
        self.assertEqual((loaded["state"]["aliases"]["short"], loaded["state"]["cache_size"]), ("echo ok", 50))

    def test_what_goes_over_the_total_is_named_first_settings_kept(self):
        line = "y" * 3000
        cells = "%load_ext autoreload\n%autoreload 2\n" + "".join("%%alias a%02d echo %s\n" % (n, line) for n in range(12))
        saved, loaded = self.round_trip(cells)
        kept = saved["header"]["settings"]
        self.assertEqual(kept[:2], [["load_ext", "autoreload"], ["autoreload", "2"]])
        left = saved["report"]["skipped"]
        self.assertTrue(left and all("at most 32 KiB" in entry["reason"] for entry in left), left)
        self.assertEqual(len(kept) - 2 + len(left), 12)
        self.assertEqual((loaded["report"]["failed"], loaded["state"]["autoreload"]), ([], 2))


class ReplayTest(unittest.TestCase):
    """What a file's settings may ask for, replayed in a kernel of this process."""

    def setUp(self):
        self.kernel = Kernel()
        self.shell = self.kernel.magics.shell
        self.addCleanup(setattr, pretty, "enabled", True)

    def replay(self, made):
        early = shell_settings.replay(self.shell, made, shell_settings.EARLY)
        late = shell_settings.replay(self.shell, made, shell_settings.LATE, name_the_others=True)
        return early[0] + late[0], early[1] + late[1]

    def test_a_setting_that_fails_is_named_and_the_rest_still_apply(self):
        folder = tempfile.TemporaryDirectory()
        self.addCleanup(folder.cleanup)
        with open(os.path.join(folder.name, "leaves_at_once.py"), "w") as handle:
            handle.write("import sys\ndef load_ipython_extension(shell):\n    sys.exit(3)\n")
        sys.path.insert(0, folder.name)
        self.addCleanup(sys.path.remove, folder.name)
        kept, failed = self.replay(
            [
                ["load_ext", "no_such_extension_here"],
                ["load_ext", "leaves_at_once"],
                ["config", "Nobody.knows = 1"],
                "not a line",
                ["precision", "2"],
            ]
        )
        self.assertEqual(kept, ["%precision 2"])
        names = [entry["name"] for entry in failed]
        self.assertEqual(names, ["%load_ext no_such_extension_here", "%load_ext leaves_at_once", "%config Nobody.knows = 1", "a setting"])
        self.assertIn("ModuleNotFoundError", failed[0]["reason"])
        self.assertEqual(failed[1]["reason"], "SystemExit: 3")
        self.assertEqual(self.kernel.value("1/3"), "0.33")

    def test_only_the_settings_magics_are_replayed(self):
        self.kernel.executor.namespace["kept"] = 1
        kept, failed = self.replay([["reset", "-f"], ["sx", "touch nothing-here"], ["pprint", ""], ["pprint", ""]])
        self.assertEqual(kept, ["%pprint", "%pprint"])
        self.assertEqual([entry["reason"] for entry in failed], ["not a setting a snapshot keeps"] * 2)
        self.assertEqual(self.kernel.executor.namespace["kept"], 1)
        self.assertFalse(pretty.enabled)  # a toggle replayed twice is still off
        self.assertEqual(self.replay("not a list"), ([], []))

    def test_a_value_that_cannot_be_read_is_named_and_the_snapshot_still_written(self):
        class Odd:
            def __eq__(self, other):
                raise ValueError("no single truth value")

            __hash__ = object.__hash__

            def __repr__(self):
                return "Odd()"

        self.shell.settings.values[("InlineBackend", "rc")] = Odd()
        self.shell.aliases = None  # a part that cannot be read is named
        made, skipped = shell_settings.collect(self.shell)
        self.assertEqual(made, [["config", "InlineBackend.rc = Odd()"]])
        self.assertEqual([entry["name"] for entry in skipped], ["%alias"])
        self.assertIn("could not be read", skipped[0]["reason"])


class DamagedFileTest(unittest.TestCase):
    """A file that passes its checks yet cannot be loaded is the request's error, not the kernel's end."""

    def answer(self, content):
        from cellbox_kernel import main

        folder = tempfile.TemporaryDirectory()
        self.addCleanup(folder.cleanup)
        path = os.path.join(folder.name, "bad.snapshot")
        with open(path, "wb") as handle:
            handle.write(content)
        request = types.SimpleNamespace(id="s1", file=None, restore=True, path=path, version="test")
        kernel = Kernel()
        return main._snapshot_answer(request, kernel.executor.namespace, kernel.magics.shell, None)

    def test_a_payload_of_the_wrong_shape_with_a_right_checksum(self):
        from cellbox_kernel import snapshot_file

        payload = pickle.dumps([("a",)])
        header = {
            "format": 2, "python": snapshot_file.PYTHON, "implementation": sys.implementation.name,
            "payload_bytes": len(payload), "payload_crc32": zlib.crc32(payload),
        }  # fmt: skip
        frame = self.answer(snapshot_file.MAGIC + json.dumps(header).encode() + b"\n" + payload)
        self.assertTrue(frame["error"].startswith("cannot restore from ") and "ValueError" in frame["error"], frame)

    def test_a_header_nested_too_deeply(self):
        from cellbox_kernel import snapshot_file

        frame = self.answer(snapshot_file.MAGIC + b"[" * 50000 + b"\n")
        self.assertIn("its header is incomplete", frame["error"])


if __name__ == "__main__":
    unittest.main()
