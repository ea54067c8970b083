#!/usr/bin/env python3
"""Unit tests of catalogue_lib.render and render_html: the catalogue is keyed by names
(ctest static.catalogue_render). They test the tool, not a rule: no `spec:` lines."""

import io
import os
import sys
import tempfile
import unittest

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from catalogue_lib import check, render, render_html  # noqa: E402
from catalogue_lib.model import KINDS, Contract, Diagnostics, Rule, Test  # noqa: E402

ROOT = "/nonexistent-root"   # evaluate() only asks whether kind directories exist


def tree(line_shift=0):
    """A contract with a unit test, a compile-time check and a model, their lines
    shifted by `line_shift` (as when a test moves within its file)."""
    s = line_shift
    rules = [Rule("DM-1.1", "first", "", False, "It holds.", ["unit", "compile"], "spec/demo.md", 3,
                  "dm-11-first"),
             Rule("DM-1.2", "gone", "withdrawn", True, "", [], "spec/demo.md", 9, "dm-12-gone")]
    c = Contract("spec/demo.md", "Demo (DM)", "DM", rules)
    tests = [Test("unit", "S.Zed", "impl/tests/a_test.cpp", 10 + s, {"DM-1.1": 9 + s}, True, "S", "Zed",
                  home="unit"),
             Test("unit", "S.Alpha", "impl/tests/a_test.cpp", 40 - s, {"DM-1.1": 39 - s}, True, "S", "Alpha",
                  home="unit"),
             Test("compile", "static_assert(a || b)", "impl/tests/a_test.cpp", 2 + s, {"DM-1.1": 1 + s},
                  False, home="unit", static=True),
             Test("model", "model.demo", "model/demo_model.cpp", 4 + s, {"DM-1.1": 4 + s}, False,
                  home="model")]
    rows = check.evaluate([c], tests, False, set(), ROOT)
    return [c], rows


class Markdown(unittest.TestCase):
    def test_tests_are_file_and_name_without_lines(self):
        md = render.render_markdown(*tree())
        row = [l for l in md.splitlines() if l.startswith("| [DM-1.1]")][0]
        cells = row.split(" | ")
        self.assertEqual(cells[3], "[impl/tests/a_test.cpp](../impl/tests/a_test.cpp) `S.Alpha`<br>"
                                   "[impl/tests/a_test.cpp](../impl/tests/a_test.cpp) `S.Zed`")
        self.assertEqual(cells[4], "[impl/tests/a_test.cpp](../impl/tests/a_test.cpp) "
                                   "`static_assert(a \\|\\| b)`")
        self.assertNotRegex(md, r"#L\d|\.cpp:\d")

    def test_moving_tests_within_their_files_renders_the_same_bytes(self):
        self.assertEqual(render.render_markdown(*tree(0)), render.render_markdown(*tree(17)))

    def test_columns_and_withdrawn_rows(self):
        md = render.render_markdown(*tree())
        self.assertIn("| rule | summary | verify | unit | compile | property | model | conformance | static | mapping |",
                      md)
        self.assertIn("| [DM-1.2](demo.md#dm-12-gone)<br>`gone` (withdrawn) | *withdrawn* |", md)
        self.assertIn("| [DM](demo.md) Demo (DM) | 1 | 1 | 0 |", md)

    def test_a_required_kind_without_tests_is_marked_missing(self):
        contracts, rows = tree()
        contracts[0].rules[0].verify.append("property")
        rows = check.evaluate(contracts, [t for r in rows for k in KINDS for t in r.cells[k].tests],
                              False, set(), ROOT)
        row = [l for l in render.render_markdown(contracts, rows).splitlines()
               if l.startswith("| [DM-1.1]")][0]
        self.assertIn("| **missing** |", row)
        self.assertTrue(row.endswith("| missing: property |"))


class Table(unittest.TestCase):
    def test_one_column_per_kind(self):
        out = io.StringIO()
        render.print_table(*tree(), False, out)
        lines = out.getvalue().splitlines()
        self.assertRegex(lines[0], r"^rule +slug +unit +compile +property +model +conformance +static +verdict$")
        self.assertRegex(lines[2], r"^DM-1\.1 +first +2 +1 +- +\(1\) +- +- +untested$")


class Html(unittest.TestCase):
    def test_page_links_lines_and_has_a_compile_column(self):
        contracts, rows = tree(5)
        page = render_html.render_html(contracts, rows, False, [], Diagnostics(), ROOT + "/spec", ROOT, "s")
        self.assertIn("<th>compile</th>", page)
        self.assertIn('href="../impl/tests/a_test.cpp#L15"', page)   # S.Zed's TEST line
        self.assertIn('href="../impl/tests/a_test.cpp#L7"', page)    # the static_assert's line
        self.assertIn('href="../model/demo_model.cpp#L9"', page)     # the model's spec: line

    def test_page_links_the_conformance_matrix_when_the_tree_has_one(self):
        contracts, rows = tree(5)
        with tempfile.TemporaryDirectory() as root:
            page = render_html.render_html(contracts, rows, False, [], Diagnostics(), root + "/spec", root, "s")
            self.assertNotIn("conformance matrix", page)
            os.makedirs(os.path.join(root, "checks", "conformance", "peers"))
            open(os.path.join(root, "checks", "conformance", "peers", "MATRIX.md"), "w").close()
            page = render_html.render_html(contracts, rows, False, [], Diagnostics(), root + "/spec", root, "s")
            self.assertIn('<a href="../checks/conformance/peers/MATRIX.md">conformance matrix</a>', page)

if __name__ == "__main__":
    unittest.main(verbosity=2)
