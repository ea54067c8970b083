#!/usr/bin/env python3
"""Unit tests of catalogue_lib.check: citations, results per test, verdicts, staleness
(ctest static.catalogue_check). They test the tool, not a rule: no `spec:` lines."""

import os
import sys
import tempfile
import unittest

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from catalogue_lib import check  # noqa: E402
from catalogue_lib.model import Contract, Diagnostics, Rule, Test  # noqa: E402


def rule(rid, verify, withdrawn=False):
    return Rule(rid, rid.lower(), "", withdrawn, "", list(verify), "spec/demo.md", 3, rid.lower())


def gtest(name, ids, kind="unit", home=None, file="impl/tests/a_test.cpp", line=1):
    suite, case = name.split(".")
    return Test(kind, name, file, line, {i: line - 1 for i in ids}, True, suite, case,
                home=home or kind)


class Citations(unittest.TestCase):
    def test_unknown_and_withdrawn_ids(self):
        d = Diagnostics()
        by_id = {"DM-1.1": rule("DM-1.1", ["unit"]), "DM-1.3": rule("DM-1.3", [], withdrawn=True)}
        check.check_citations([gtest("S.N", ["DM-1.1", "DM-9.9", "DM-1.3"], line=8)], by_id, d)
        self.assertEqual(d.errors, [
            "impl/tests/a_test.cpp:7: S.N cites [DM-9.9], which is no rule of spec/",
            "impl/tests/a_test.cpp:7: S.N cites [DM-1.3], which is withdrawn (spec/demo.md:3); "
            "cite the rule that replaced it"])


class Results(unittest.TestCase):
    def setUp(self):
        self.d = Diagnostics()
        self.unit = gtest("S.N", ["DM-1.1"])
        self.prop = gtest("S.N", ["DM-1.1"], kind="property", file="property_tests/p.cpp")
        self.shape = gtest("Shape.Only", ["DM-1.1"], kind="compile", home="unit")
        self.model = Test("model", "model.demo", "model/demo_model.cpp", 1, {"DM-1.1": 1}, False, home="model")
        self.static = Test("compile", "static_assert(x)", "impl/tests/a_test.cpp", 3, {"DM-1.1": 2},
                           False, home="unit", static=True)
        self.tests = [self.unit, self.prop, self.shape, self.model, self.static]

    def test_names_map_by_form_and_prefix(self):
        check.attach_results(self.tests, {"Inst/S.N/0": ["passed"], "property.S.N": ["failed"],
                                          "Shape.Only": ["passed"], "model.demo": ["passed"]}, (), self.d)
        self.assertEqual(self.unit.results, ["passed"])
        self.assertEqual(self.prop.results, ["failed"])
        self.assertEqual(self.shape.results, ["passed"])     # a compile gtest maps by its home, unit
        self.assertEqual(self.model.results, ["passed"])
        self.assertEqual(self.d.errors, ["ctest: test property.S.N failed"])

    def test_static_assert_takes_its_files_results(self):
        check.attach_results(self.tests, {"S.N": ["passed"], "Shape.Only": ["passed"]}, (), self.d)
        self.assertEqual(sorted(self.static.results), ["passed", "passed"])
        other = Test("compile", "static_assert(y)", "impl/tests/b_test.cpp", 1, {"DM-1.1": 1}, False,
                     home="unit", static=True)
        check.attach_results([other], {"S.N": ["passed"]}, (), Diagnostics())
        self.assertEqual(other.status(True), "not run")

    def test_unmapped_unless_ignored(self):
        check.attach_results(self.tests, {"lane.new": ["passed"], "x.mutant.y": ["passed"]},
                             ("*.mutant.*",), self.d)
        self.assertEqual(len(self.d.errors), 1)
        self.assertIn("ctest: test lane.new maps to no `spec:` line", self.d.errors[0])


class Verdicts(unittest.TestCase):
    def evaluate(self, verify, tests, have_junit=False, allow=()):
        c = Contract("spec/demo.md", "Demo", "DM", [rule("DM-1.1", verify)])
        with tempfile.TemporaryDirectory() as root:
            os.makedirs(os.path.join(root, "impl/tests"))
            rows = check.evaluate([c], tests, have_junit, set(allow), root)
            d = Diagnostics()
            check.check_rows(rows, have_junit, root, d)
        return rows[0], d

    def test_compile_evidence_is_not_unit_evidence(self):
        row, d = self.evaluate(["unit"], [gtest("Shape.Only", ["DM-1.1"], kind="compile", home="unit")])
        self.assertEqual(row.verdict, "missing")
        self.assertEqual(row.cells["compile"].state, "untested")
        self.assertEqual(d.errors, ["spec/demo.md:3: rule [DM-1.1] dm-1.1: verify asks for unit, "
                                    "but no unit test cites it"])
        row, d = self.evaluate(["compile"], [gtest("Shape.Only", ["DM-1.1"], kind="compile", home="unit")])
        self.assertEqual((row.verdict, d.errors), ("untested", []))

    def test_cells_order_tests_by_file_and_name_not_line(self):
        a = gtest("S.Zed", ["DM-1.1"], line=5)
        b = gtest("S.Alpha", ["DM-1.1"], line=50)
        row, _ = self.evaluate(["unit"], [a, b])
        self.assertEqual([t.name for t in row.cells["unit"].tests], ["S.Alpha", "S.Zed"])

    def test_junit_verdicts(self):
        t = gtest("S.N", ["DM-1.1"])
        t.results = ["passed"]
        self.assertEqual(self.evaluate(["unit"], [t], True)[0].verdict, "passed")
        t.results = ["passed", "failed"]
        self.assertEqual(self.evaluate(["unit"], [t], True)[0].verdict, "failed")
        t.results = []
        row, d = self.evaluate(["unit"], [t], True)
        self.assertEqual(row.verdict, "not run")
        self.assertIn("its required evidence did not run (unit)", d.errors[0])

    def test_allowed_missing_kinds(self):
        row, d = self.evaluate(["unit", "model"], [gtest("S.N", ["DM-1.1"])])
        self.assertTrue(row.cells["model"].allowed)         # no model/ directory in this tree
        self.assertEqual(d.errors, [])
        self.assertIn("allowed: no model/ yet", d.warnings[0])
        row, d = self.evaluate(["unit", "compile"], [gtest("S.N", ["DM-1.1"])])
        self.assertFalse(row.cells["compile"].allowed)      # compile has no directory to wait for
        row, d = self.evaluate(["unit", "compile"], [gtest("S.N", ["DM-1.1"])], allow=["DM:compile"])
        self.assertEqual(d.errors, [])


class Staleness(unittest.TestCase):
    MD = "# c\n\n| [DM-1.1](demo.md#x) | a |\n| [DM-1.2](demo.md#y) | b |\n"

    def test_same_content_passes_whatever_the_line_endings(self):
        d = Diagnostics()
        self.assertTrue(check.check_staleness(self.MD.replace("\n", "\r\n"), self.MD, d))
        self.assertEqual(d.errors, [])

    def test_a_difference_names_the_rows_and_where(self):
        d = Diagnostics()
        self.assertFalse(check.check_staleness(self.MD, self.MD.replace("| b |", "| c |"), d))
        self.assertIn("Rows that changed: DM-1.2.", d.errors[0])
        self.assertIn("- ", d.errors[0])
        self.assertIn("+ ", d.errors[0])

    def test_missing_catalogue(self):
        d = Diagnostics()
        self.assertFalse(check.check_staleness(None, self.MD, d))
        self.assertIn("missing; generate it", d.errors[0])


if __name__ == "__main__":
    unittest.main(verbosity=2)
