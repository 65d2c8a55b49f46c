"""The note a failing package install gets when the sandbox turned the network off."""
import os
import sys
import unittest
from unittest import mock

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "runner"))

from cellbox_kernel.magics import packages  # noqa: E402


class NetworkNoteTest(unittest.TestCase):
    def test_no_note_with_the_network_on_or_unset(self):
        with mock.patch.dict(os.environ, {"CELLBOX_NETWORK": "on"}):
            self.assertEqual(packages.network_note(), "")
        with mock.patch.dict(os.environ, {}, clear=True):
            self.assertEqual(packages.network_note(), "")

    def test_the_note_says_why_and_how_to_allow_it(self):
        for mode in ("off", "localhost"):
            with mock.patch.dict(os.environ, {"CELLBOX_NETWORK": mode}):
                note = packages.network_note()
            self.assertIn("network is off", note)
            self.assertIn(mode, note)
            self.assertIn("--network on", note)


if __name__ == "__main__":
    unittest.main()
