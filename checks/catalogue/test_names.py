#!/usr/bin/env python3
"""End-to-end tests of checks/catalogue/catalogue (ctest static.catalogue_names): the
catalogue is keyed by file and test name, not line, and compile-time checks are their
own kind of evidence. Fixture trees as in test_catalogue.py."""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from test_catalogue import ALL_PASS, TOOL, Fixture, junit  # noqa: E402


class NamesNotLines(Fixture):
    """spec/CATALOGUE.md is keyed by file and test name: moving a test within its file
    leaves it byte-identical; renaming, adding or re-citing a test does not."""

    def catalogue(self):
        with open(os.path.join(self.root, "spec/CATALOGUE.md"), encoding="utf-8") as f:
            return f.read()

    def page(self):
        page = os.path.join(self.root, "out", "page.html")
        r = subprocess.run([sys.executable, TOOL, "--root", self.root, "--check", "--html", page],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stdout)
        with open(page, encoding="utf-8") as f:
            return f.read()

    def test_moving_a_test_within_its_file_leaves_the_catalogue_unchanged(self):
        # Work on a copy of the fixture tree, as a developer's checkout would be.
        copy = os.path.join(tempfile.mkdtemp(prefix="catalogue-move-"), "tree")
        shutil.copytree(self.root, copy)
        shutil.rmtree(self.root)
        self.root = copy
        self.generate()
        before = self.catalogue()
        self.assertIn('demo_test.cpp#L5"', self.page())
        # Move Demo.FirstHolds (with its spec line) below the other tests, add lines
        # above everything, and move the model's spec line down its file.
        self.edit("impl/tests/demo_test.cpp", "// spec: [DM-1.1]\nTEST(Demo, FirstHolds) {}\n", "")
        self.edit("impl/tests/demo_test.cpp", "// a unit suite\n", "// a unit suite\n// more\n\n\n")
        with open(os.path.join(self.root, "impl/tests/demo_test.cpp"), "a", encoding="utf-8") as f:
            f.write("\n// spec: [DM-1.1]\nTEST(Demo, FirstHolds) {}\n")
        self.edit("model/demo_model.cpp", "// spec: [DM-2.1] the model's claim\n", "")
        self.edit("model/demo_model.cpp", "int main()", "\n// spec: [DM-2.1] the model's claim\nint main()")
        page = self.page()            # the lines really moved: the page links the new ones
        self.assertNotIn('demo_test.cpp#L5"', page)
        self.assertIn('demo_test.cpp#L17"', page)
        self.assertPasses("--check")  # not stale
        self.generate()
        self.assertEqual(before, self.catalogue())
        shutil.rmtree(os.path.dirname(copy))
        self.root = tempfile.mkdtemp()  # for tearDown

    def test_renaming_a_test_makes_the_catalogue_stale(self):
        self.generate()
        self.edit("impl/tests/demo_test.cpp", "TEST(Demo, FirstHolds)", "TEST(Demo, FirstAlwaysHolds)")
        out = self.assertFails(r"spec/CATALOGUE\.md: out of date.*Rows that changed: DM-1\.1\.", "--check")
        self.assertIn("Demo.FirstAlwaysHolds", out)

    def test_citing_another_rule_makes_the_catalogue_stale(self):
        self.generate()
        self.edit("impl/tests/demo_test.cpp", "// spec: [DM-1.2]\nTEST_P", "// spec: [DM-1.2] [DM-1.1]\nTEST_P")
        self.assertFails(r"Rows that changed: DM-1\.1\.", "--check")


class CompileKind(Fixture):
    """Compile-time checks are evidence of kind `compile`, never `unit`."""

    SUCCEED_TEST = ("\n// spec: [DM-2.1]\nTEST(DemoShape, IsChecked) {\n"
                    "  static_assert(sizeof(int) >= 2, \"int\");  // EXPECT_TRUE in a comment\n"
                    "  SUCCEED();\n}\n")

    def add_succeed_test(self, verify):
        """Sets DM-2.1's `verify:` line to `verify`, appends SUCCEED_TEST, regenerates."""
        self.edit("spec/demo.md", "verify: model", f"verify: {verify}")
        with open(os.path.join(self.root, "impl/tests/demo_test.cpp"), "a", encoding="utf-8") as f:
            f.write(self.SUCCEED_TEST)
        self.generate()

    def test_a_test_of_static_asserts_only_is_compile_evidence(self):
        self.add_succeed_test("model, compile")
        out = self.assertPasses("--check")
        self.assertRegex(out, r"DM-2\.1 +modelled +- +1 +- +1 +- +- +untested")
        with open(os.path.join(self.root, "spec/CATALOGUE.md"), encoding="utf-8") as f:
            row = [l for l in f if l.startswith("| [DM-2.1]")][0]
        self.assertEqual(row.split(" | ")[4], "[impl/tests/demo_test.cpp](../impl/tests/demo_test.cpp) "
                         "`DemoShape.IsChecked`")

    def test_compile_evidence_does_not_satisfy_a_unit_rule(self):
        self.add_succeed_test("model, unit")
        self.assertFails(r"rule \[DM-2\.1\] modelled: verify asks for unit, but no unit test cites it",
                         "--check")
        # A runtime check in the same test makes it unit evidence again.
        self.edit("impl/tests/demo_test.cpp", "  SUCCEED();", "  EXPECT_EQ(1, 1);")
        self.generate()
        self.assertPasses("--check")

    def test_a_cited_static_assert_outside_a_test_runs_with_its_file(self):
        self.edit("spec/demo.md", "verify: model", "verify: model, compile")
        self.edit("impl/tests/demo_test.cpp", "// a unit suite\n",
                  "// a unit suite\n// spec: [DM-2.1]\nstatic_assert(std::is_same_v<int,\n   int>);\n")
        self.generate()
        with open(os.path.join(self.root, "spec/CATALOGUE.md"), encoding="utf-8") as f:
            md = f.read()
        self.assertIn("`static_assert(std::is_same_v<int, int>)`", md)
        self.write("build/j.xml", junit(ALL_PASS))
        out = self.assertPasses("--junit", "build/j.xml")
        self.assertRegex(out, r"DM-2\.1 +modelled +- +1 ok +- +1 ok +- +- +pass")
        # Its file's tests did not run: neither did it.
        self.write("build/j.xml", junit([c for c in ALL_PASS if "Demo" not in c[0] or "Property" in c[0]]))
        self.assertFails(r"rule \[DM-2\.1\]: its required evidence did not run \(compile\)",
                         "--junit", "build/j.xml")

    def test_a_compile_fail_case_is_compile_evidence(self):
        self.generate()
        out = self.assertPasses("--check")
        self.assertRegex(out, r"DM-1\.1 +first-rule +2 +\(1\) +- +- +- +- +untested")
        with open(os.path.join(self.root, "spec/CATALOGUE.md"), encoding="utf-8") as f:
            md = f.read()
        self.assertIn("`unit.compile_fail.demo`", md)


if __name__ == "__main__":
    unittest.main(verbosity=2)
