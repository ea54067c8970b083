#!/usr/bin/env python3
"""End-to-end tests of checks/catalogue/catalogue on fixture trees (ctest
static.catalogue_selftest). Most run the command's main() in this process (fast);
the HTML tests run the `catalogue` script itself, as ci/test does.

These test the tool, not a rule of spec/: they carry no `spec:` lines, and the
catalogue does not scan checks/catalogue/.
"""

import contextlib
import io
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
TOOL = os.path.join(HERE, "catalogue")
sys.dont_write_bytecode = True
sys.path.insert(0, HERE)

from catalogue_lib import cli  # noqa: E402

README = """\
# spec conventions

| file | contract | ID prefix |
|---|---|---|
| `demo.md` | the demo contract | `DM-` |
"""

DEMO = """\
# The demo contract (DM)

## 1. Things

### [DM-1.1] first-rule
The first rule holds, e.g. always. A second sentence.
verify: unit

### [DM-1.2] second-rule (deferred)
`Foo::bar()` returns. More text.
verify: unit, property

### [DM-1.3] old-rule (withdrawn)
Replaced by DM-1.2.

### [DM-2.1] modelled
A model checks it.
verify: model
"""

UNIT = """\
// a unit suite
#include <gtest/gtest.h>

// spec: [DM-1.1]
TEST(Demo, FirstHolds) {}

// Checks the second rule.
// spec: [DM-1.2] [DM-1.1]
TEST_F(DemoFixture,
       SecondReturns) {}

// spec: [DM-1.2]
TEST_P(DemoParam, Works) {}
"""

PROPS = """\
// spec: [DM-1.2]
RC_GTEST_PROP(DemoProperty, SecondAlwaysReturns, ()) {}
"""

MODEL = """\
// model/demo_model.cpp
//
// spec: [DM-2.1] the model's claim
int main() { return 0; }
"""

COMPILE_FAIL = """\
// Must not compile.
// ctest: unit.compile_fail.demo
// spec: [DM-1.1]
int x = ;
"""


def junit(cases):
    rows = "\n".join(f'  <testcase name="{n}" classname="{n}" time="0.1" status="{s}"/>'
                     for n, s in cases)
    return f'<?xml version="1.0" encoding="UTF-8"?>\n<testsuite name="x" tests="{len(cases)}">\n{rows}\n</testsuite>\n'


ALL_PASS = [
    ("Demo.FirstHolds", "run"),
    ("DemoFixture.SecondReturns", "run"),
    ("Inst/DemoParam.Works/0", "run"),
    ("Inst/DemoParam.Works/1", "run"),
    ("property.DemoProperty.SecondAlwaysReturns", "run"),
    ("model.demo", "run"),
    ("model.demo.mutant.broken", "run"),
    ("unit.compile_fail.demo", "run"),
    ("static.catalogue", "run"),
]


class TreeFiles:
    """A temporary tree at self.root (made by the test's setUp), removed by tearDown;
    write(rel, text) creates a file in it (dedented)."""

    def tearDown(self):
        shutil.rmtree(self.root)

    def write(self, rel, text):
        path = os.path.join(self.root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(textwrap.dedent(text))


class Fixture(TreeFiles, unittest.TestCase):
    def setUp(self):
        self.root = tempfile.mkdtemp(prefix="catalogue-test-")
        self.write("spec/README.md", README)
        self.write("spec/demo.md", DEMO)
        self.write("impl/tests/demo_test.cpp", UNIT)
        self.write("impl/tests/test_support.hpp", "// helpers, no tests\n")
        self.write("impl/tests/compile_fail/demo.cpp", COMPILE_FAIL)
        self.write("property_tests/demo_props.cpp", PROPS)
        self.write("model/demo_model.cpp", MODEL)
        self.write("model/model_main.hpp", "// shared main\n")

    def edit(self, rel, old, new):
        path = os.path.join(self.root, rel)
        with open(path, encoding="utf-8") as f:
            text = f.read()
        self.assertIn(old, text)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text.replace(old, new))

    def assertCheckFailsAfterEdit(self, rel, old, new, expected):
        """edit(rel, old, new), regenerate the catalogue, then `--check` fails with `expected`."""
        self.edit(rel, old, new)
        self.generate()
        return self.assertFails(expected, "--check")

    def run_tool(self, *args):
        """(exit status, output) of `catalogue --root <fixture> --no-html ARGS`."""
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            try:
                rc = cli.main(["--root", self.root, "--no-html", *args])
            except SystemExit as e:
                rc = e.code
        return rc, out.getvalue()

    def generate(self):
        rc, out = self.run_tool("--write")
        return out

    def assertFails(self, expected, *args):
        rc, out = self.run_tool(*args)
        self.assertEqual(rc, 1, out)
        self.assertRegex(out, expected)
        return out

    def assertPasses(self, *args):
        rc, out = self.run_tool(*args)
        self.assertEqual(rc, 0, out)
        return out


class CleanTree(Fixture):
    def test_write_then_check_passes(self):
        self.generate()
        out = self.assertPasses("--check")
        self.assertIn("catalogue: 3 rules, 0 passed, 0 failed, 0 missing, 3 untested", out)
        self.assertIn("1 withdrawn", out)

    def test_catalogue_lists_rules_and_tests_by_file_and_name(self):
        self.generate()
        with open(os.path.join(self.root, "spec/CATALOGUE.md"), encoding="utf-8") as f:
            md = f.read()
        self.assertIn("[DM-1.1](demo.md#dm-11-first-rule)", md)
        self.assertIn("The first rule holds, e.g. always.", md)
        self.assertNotIn("A second sentence", md)
        self.assertIn("[impl/tests/demo_test.cpp](../impl/tests/demo_test.cpp) `Demo.FirstHolds`", md)
        self.assertIn("[impl/tests/demo_test.cpp](../impl/tests/demo_test.cpp) `DemoFixture.SecondReturns`", md)
        self.assertNotRegex(md, r"#L\d|\.cpp:\d")
        self.assertIn("`model.demo`", md)
        self.assertIn("`unit.compile_fail.demo`", md)
        self.assertIn("`DemoProperty.SecondAlwaysReturns`", md)
        self.assertIn("*withdrawn*", md)

    def test_long_first_sentence_is_cut_outside_code(self):
        long = ("The rule says that `a_fairly_long_function_name(with, several, arguments)` "
                + "does the thing it does " * 12 + "and stops here. Second sentence.")
        self.edit("spec/demo.md", "A model checks it.", long)
        self.generate()
        with open(os.path.join(self.root, "spec/CATALOGUE.md"), encoding="utf-8") as f:
            row = [l for l in f if l.startswith("| [DM-2.1]")][0]
        summary = row.split(" | ")[1]
        self.assertTrue(summary.endswith(" \u2026"), summary)
        self.assertLessEqual(len(summary), 202)
        self.assertEqual(summary.count("`") % 2, 0, summary)

    def test_catalogue_is_deterministic(self):
        self.generate()
        with open(os.path.join(self.root, "spec/CATALOGUE.md"), encoding="utf-8") as f:
            first = f.read()
        self.generate()
        with open(os.path.join(self.root, "spec/CATALOGUE.md"), encoding="utf-8") as f:
            self.assertEqual(first, f.read())

    def test_junit_all_pass(self):
        self.generate()
        self.write("build/j.xml", junit(ALL_PASS))
        out = self.assertPasses("--junit", "build/j.xml")
        self.assertIn("catalogue: 3 rules, 3 passed, 0 failed, 0 missing", out)

    def test_junit_glob_merges_reports(self):
        self.generate()
        self.write("build/a/ctest-junit-unit.xml", junit(ALL_PASS[:4] + ALL_PASS[7:]))
        self.write("build/a/ctest-junit-rest.xml", junit(ALL_PASS[4:7]))
        out = self.assertPasses("--junit", "build/*/ctest-junit-*.xml")
        self.assertIn("3 passed, 0 failed", out)

    def test_the_script_keeps_its_exit_codes(self):
        def script(*args):
            return subprocess.run([sys.executable, TOOL, "--root", self.root, "--no-html", *args],
                                  capture_output=True, text=True)
        r = script("--check")
        self.assertEqual(r.returncode, 1, r.stdout)        # no spec/CATALOGUE.md yet
        self.assertEqual(script("--write").returncode, 0)
        r = script("--check", "--quiet")
        self.assertEqual((r.returncode, r.stderr), (0, ""), r.stdout)
        self.assertRegex(r.stdout, r"^catalogue: 3 rules, .*: ok\n$")
        r = script("--allow-missing", "fuzz")
        self.assertEqual(r.returncode, 2)                  # bad usage
        self.assertIn("the kind must be one of unit, compile, property, model, conformance", r.stderr)

    def test_html_page_is_self_contained(self):
        self.generate()
        self.write("build/j.xml", junit(ALL_PASS))
        page = os.path.join(self.root, "out", "page.html")
        r = subprocess.run([sys.executable, TOOL, "--root", self.root, "--junit", "build/j.xml",
                            "--html", page], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stdout)
        with open(page, encoding="utf-8") as f:
            text = f.read()
        self.assertIn('href="../impl/tests/demo_test.cpp#L5"', text)
        self.assertIn("s-pass", text)
        self.assertNotRegex(text, r"(src|href)=\"https?:")
        self.assertNotIn("<script src", text)
        self.assertNotIn("<link", text)


class Errors(Fixture):
    # More: the tests made from BROKEN_EDITS (below).
    def test_spec_line_separated_by_a_blank_line(self):
        out = self.assertCheckFailsAfterEdit("impl/tests/demo_test.cpp", "// spec: [DM-1.1]\nTEST(Demo",
                                             "// spec: [DM-1.1]\n\nTEST(Demo",
                                             r"gtest test Demo\.FirstHolds has no `// spec: \[ID\]` line")
        self.assertRegex(out, r"warning: .*demo_test\.cpp:4: `spec:` line is not directly above a test")

    def test_missing_kind(self):
        out = self.assertCheckFailsAfterEdit("property_tests/demo_props.cpp", "[DM-1.2]", "[DM-1.1]",
                                             r"rule \[DM-1\.2\] second-rule: verify asks for property, but no "
                                             r"property test cites it")
        self.assertRegex(out, r"DM-1\.2 +second-rule +2 +- +MISSING +- +- +- +missing")

    def test_missing_kind_allowed_by_switch(self):
        self.edit("property_tests/demo_props.cpp", "[DM-1.2]", "[DM-1.1]")
        self.generate()
        out = self.assertPasses("--check", "--allow-missing", "property")
        self.assertRegex(out, r"warning: .*no property test yet \(allowed: --allow-missing\)")
        self.assertPasses("--check", "--allow-missing", "DM:property")
        self.assertFails(r"verify asks for property", "--check", "--allow-missing", "XX:property")

    def test_conformance_required_only_once_its_directory_exists(self):
        self.edit("spec/demo.md", "verify: model", "verify: model, conformance")
        self.generate()
        out = self.assertPasses("--check")
        self.assertRegex(out, r"no conformance test yet \(allowed: no checks/conformance/ yet\)")
        self.write("checks/conformance/README.md", "cases arrive later\n")
        self.assertFails(r"rule \[DM-2\.1\] modelled: verify asks for conformance", "--check")
        self.write("checks/conformance/demo.mjs", "// spec: [DM-2.1]\nexport default 1;\n")
        self.generate()
        out = self.assertPasses("--check")
        with open(os.path.join(self.root, "spec/CATALOGUE.md"), encoding="utf-8") as f:
            self.assertIn("`conformance.demo`", f.read())

    def test_stale_catalogue(self):
        self.generate()
        self.edit("impl/tests/demo_test.cpp", "TEST(Demo, FirstHolds) {}", "TEST(Demo, FirstHolds) {}\n\n"
                  "// spec: [DM-1.1]\nTEST(Demo, AlsoHolds) {}")
        out = self.assertFails(r"spec/CATALOGUE\.md: out of date", "--check")
        self.assertIn("checks/catalogue/catalogue --write", out)
        self.assertIn("+", out)
        self.generate()
        self.assertPasses("--check")

    def test_missing_catalogue(self):
        self.assertFails(r"spec/CATALOGUE\.md: missing; generate it with `checks/catalogue/catalogue --write`",
                         "--check")

    def test_failed_test_in_junit(self):
        self.generate()
        cases = [(n, "fail" if n == "Inst/DemoParam.Works/1" else s) for n, s in ALL_PASS]
        self.write("build/j.xml", junit(cases))
        out = self.assertFails(r"DM-1\.2 +second-rule +1/2 FAIL", "--junit", "build/j.xml")
        self.assertIn("error: ctest: test Inst/DemoParam.Works/1 failed", out)
        self.assertIn("2 passed, 1 failed", out)

    def test_not_run_in_junit(self):
        self.generate()
        cases = [(n, s) for n, s in ALL_PASS if n != "model.demo"]
        self.write("build/j.xml", junit(cases))
        self.assertFails(r"rule \[DM-2\.1\]: its required evidence did not run \(model\)", "--junit", "build/j.xml")

    def test_unmapped_ctest(self):
        self.generate()
        self.write("build/j.xml", junit(ALL_PASS + [("lane.something_new", "run")]))
        self.assertFails(r"test lane\.something_new maps to no `spec:` line", "--junit", "build/j.xml")
        self.assertPasses("--junit", "build/j.xml", "--ignore-ctest", "lane.*")

    def test_missing_junit_file(self):
        self.generate()
        self.assertFails(r"JUnit report not found", "--junit", "build/none.xml")


# Errors.test_<name>: one edit of the fixture tree (file, old text, new text), after
# which `--check` fails with the message `expected` (assertCheckFailsAfterEdit).
BROKEN_EDITS = {
    "unknown_id_cited": ("impl/tests/demo_test.cpp", "// spec: [DM-1.1]\nTEST(Demo", "// spec: [DM-9.9]\nTEST(Demo",
                         r"demo_test\.cpp:4: Demo\.FirstHolds cites \[DM-9\.9\], which is no rule of spec/"),
    "missing_spec_line": ("impl/tests/demo_test.cpp", "// spec: [DM-1.1]\nTEST(Demo", "TEST(Demo",
                          r"demo_test\.cpp:4: gtest test Demo\.FirstHolds has no `// spec: \[ID\]` line"),
    "property_without_spec_line": ("property_tests/demo_props.cpp", "// spec: [DM-1.2]\n", "",
                                   r"RapidCheck property DemoProperty\.SecondAlwaysReturns has no "
                                   r"`// spec: \[ID\]`"),
    "withdrawn_id_cited": ("property_tests/demo_props.cpp", "[DM-1.2]", "[DM-1.2] [DM-1.3]",
                           r"demo_props\.cpp:1: DemoProperty\.SecondAlwaysReturns cites \[DM-1\.3\], "
                           r"which is withdrawn"),
    "model_without_spec_line": ("model/demo_model.cpp", "// spec: [DM-2.1] the model's claim\n", "",
                                r"model/demo_model\.cpp: model has no `// spec: \[ID\]` line"),
    "rule_without_verify_line": ("spec/demo.md", "A model checks it.\nverify: model\n", "A model checks it.\n",
                                 r"spec/demo\.md:\d+: rule \[DM-2\.1\] has no `verify:` line"),
    "duplicate_id": ("spec/demo.md", "### [DM-2.1] modelled", "### [DM-1.1] modelled",
                     r"duplicate rule ID \[DM-1\.1\]"),
    "malformed_id": ("spec/demo.md", "### [DM-2.1] modelled", "### [DM-2] modelled",
                     r"spec/demo\.md:\d+: malformed rule ID \[DM-2\]"),
    "wrong_prefix": ("spec/demo.md", "### [DM-2.1] modelled", "### [XX-2.1] modelled",
                     r"rule \[XX-2\.1\] does not carry this file's prefix DM-"),
    "unknown_kind": ("spec/demo.md", "verify: model", "verify: model, fuzz", r"unknown evidence kind 'fuzz'"),
    "malformed_id_on_a_spec_line": ("impl/tests/demo_test.cpp", "// spec: [DM-1.1]\nTEST(Demo",
                                    "// spec: [DM-1.1] [DM-I2]\nTEST(Demo",
                                    r"malformed rule ID \[DM-I2\] on a `spec:` line"),
}


def _broken_edit_test(rel, old, new, expected):
    def test(self):
        self.assertCheckFailsAfterEdit(rel, old, new, expected)
    return test


for _name, _edit in BROKEN_EDITS.items():
    setattr(Errors, "test_" + _name, _broken_edit_test(*_edit))


if __name__ == "__main__":
    unittest.main(verbosity=2)
