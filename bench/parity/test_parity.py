"""Unit tests of the parity harness's normalisation and text picking (no kernel needed).

Run: .venv-test/bin/python -m unittest bench/parity/test_parity.py
"""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import parity  # noqa: E402


class Normalise(unittest.TestCase):
    def test_timings_of_time_and_timeit_in_every_unit_spelling(self):
        text = "CPU times: user 2 μs, sys: 0 ns, total: 2.5 µs\nWall time: 4.05 ms\n"
        self.assertEqual(
            parity.normalise(text, "/w"), "CPU times: user <t>, sys: <t>, total: <t>\nWall time: <t>"
        )
        timeit = "812 µs ± 1e+03 ns per loop (mean ± std. dev. of 2 runs, 3 loops each)"
        self.assertEqual(
            parity.normalise(timeit, "/w"), "<t> ± <t> per loop (mean ± std. dev. of 2 runs, 3 loops each)"
        )

    def test_timeit_slow_run_warning_is_dropped(self):
        text = (
            "The slowest run took 6.84 times longer than the fastest. This could mean that an "
            "intermediate result is being cached.\n1.5 µs ± 1.2 µs per loop (mean ± std. dev. of 2 runs, 2 loops each)"
        )
        self.assertEqual(
            parity.normalise(text, "/w"), "<t> ± <t> per loop (mean ± std. dev. of 2 runs, 2 loops each)"
        )

    def test_numbers_that_are_not_durations_stay(self):
        self.assertEqual(parity.normalise("3 loops, 45 items, v2.5", "/w"), "3 loops, 45 items, v2.5")

    def test_addresses_folder_colours_and_trailing_space(self):
        text = "\x1b[31m<f at 0x7fA0>\x1b[0m in /tmp/run/nb/sub   \n\n"
        self.assertEqual(parity.normalise(text, "/tmp/run/nb"), "<f at 0x…> in <cwd>/sub")

    def test_profile_report_collapses_up_to_the_end_of_its_table(self):
        text = (
            "before\n         1973 function calls (3 primitive calls) in 0.001 seconds\n\n"
            "   Ordered by: internal time\n   List reduced from 4 to 3 due to restriction <3>\n\n"
            "   ncalls  tottime  percall  cumtime  percall filename:lineno(function)\n"
            "   1971/1    0.001    0.000    0.001    0.001 <cell>:1(fib)\n\nafter"
        )
        self.assertEqual(parity.normalise(text, "/w"), "before\n<profile>\nafter")

    def test_cellbox_image_placeholder_matches_ipykernel_rendering(self):
        self.assertEqual(parity.normalise("[image 2: image/png 640×480]", "/w"), "[image]")


class Errors(unittest.TestCase):
    def test_error_line_drops_the_syntax_error_location(self):
        self.assertEqual(parity.error_line("SyntaxError", "invalid syntax (<cell-2>, line 1)"), "SyntaxError: invalid syntax")
        self.assertEqual(parity.error_line("KeyError", "'x'"), "KeyError: 'x'")
        self.assertEqual(parity.error_line("StopIteration", ""), "StopIteration")

    def test_cellbox_output_before_the_traceback_is_kept(self):
        text = "partial\nTraceback (most recent call last):\n  File \"<cell-1>\", line 2\nNameError: name 'u' is not defined\n"
        error = {"ename": "NameError", "evalue": "name 'u' is not defined"}
        self.assertEqual(parity.cellbox_error_text(text, error), "partial\nNameError: name 'u' is not defined\n")


class Displays(unittest.TestCase):
    def test_the_same_preference_as_cellbox(self):
        self.assertEqual(parity.display_text({"image/png": "..", "text/plain": "<Figure>"}), "[image]")
        self.assertEqual(parity.display_text({"text/markdown": "**m**", "text/plain": "<M object>"}), "**m**")
        self.assertEqual(parity.display_text({"text/html": "<b>t</b>", "text/plain": "   a\n0  1"}), "   a\n0  1")
        html = {"text/html": "<p>x</p>", "text/plain": "<IPython.core.display.HTML object>"}
        self.assertEqual(parity.display_text(html), "<p>x</p>")

    def test_result_must_end_the_text_before_what_followed_it(self):
        result = ("{'a': 1,\n 'b': 2}\n", "[image]\n")
        self.assertEqual(parity.result_shown(result, "printed\n{'a': 1,\n 'b': 2}\n[image]", "/w")[0], True)
        same, expected, shown = parity.result_shown(result, "printed\n{'a': 1, 'b': 2}\n[image]", "/w")
        self.assertEqual((same, expected, shown), (False, "{'a': 1,\n 'b': 2}", "printed\n{'a': 1, 'b': 2}"))
        self.assertEqual(parity.result_shown(("<f at 0x7f01>\n", ""), "<f at 0x…>", "/w")[0], True)
        self.assertEqual(parity.result_shown(("x\n", "[image]\n"), "x", "/w")[1:], ("x", "(what follows the result differs)"))

    def test_first_difference(self):
        self.assertEqual(parity.first_difference("a\nb", "a\nc"), ("b", "c"))
        self.assertEqual(parity.first_difference("a\nb", "a"), ("b", "(end)"))


if __name__ == "__main__":
    unittest.main()
