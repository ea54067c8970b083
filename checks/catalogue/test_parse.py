#!/usr/bin/env python3
"""Unit tests of catalogue_lib's parse modules: parse_spec, parse_tests, parse_junit
(ctest static.catalogue_parse). They test the tool, not a rule: no `spec:` lines."""

import os
import sys
import tempfile
import unittest

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from catalogue_lib import parse_junit, parse_spec, parse_tests  # noqa: E402
from catalogue_lib.model import Diagnostics  # noqa: E402
from test_catalogue import TreeFiles  # noqa: E402


class Tree(TreeFiles, unittest.TestCase):
    def setUp(self):
        self.root = tempfile.mkdtemp(prefix="catalogue-parse-")
        self.diags = Diagnostics()

    def scan(self, rel, text, home="unit"):
        self.write(rel, text)
        return parse_tests.scan_file(self.root, home, rel, self.diags)


class ParseSpec(Tree):
    def test_rules_summary_anchor_and_verify_kinds(self):
        self.write("spec/demo.md", """\
            # Demo (DM)
            ### [DM-1.1] shape-only (deferred)
            The API has no `set()`. More.
            verify: compile, unit
            ```
            ### [DM-9.9] not-a-heading-inside-a-fence
            ```
            """)
        c = parse_spec.parse_spec_file(self.root, "spec/demo.md", {}, self.diags)
        self.assertEqual(self.diags.errors, [])
        self.assertEqual([r.id for r in c.rules], ["DM-1.1"])
        r = c.rules[0]
        self.assertEqual((r.slug, r.note, r.summary), ("shape-only", "deferred", "The API has no `set()`."))
        self.assertEqual(r.verify, ["compile", "unit"])
        self.assertEqual(r.anchor, "dm-11-shape-only-deferred")
        self.assertEqual(c.prefix, "DM")

    def test_unknown_kind_and_missing_verify_are_errors_with_lines(self):
        self.write("spec/demo.md", "### [DM-1.1] a\ntext\nverify: fuzz\n### [DM-1.2] b\ntext\n")
        parse_spec.parse_spec_file(self.root, "spec/demo.md", {}, self.diags)
        self.assertRegex(self.diags.errors[0], r"^spec/demo\.md:3: rule \[DM-1\.1\]: unknown evidence kind 'fuzz'")
        self.assertRegex(self.diags.errors[1], r"^spec/demo\.md:4: rule \[DM-1\.2\] has no `verify:` line")

    def test_shorten_never_cuts_inside_code(self):
        s = "word " * 30 + "`a; b; c`" + " tail" * 40
        cut = parse_spec.shorten(s, 160)
        self.assertTrue(cut.endswith("\u2026"))
        self.assertEqual(cut.count("`") % 2, 0)


class MaskAndBodies(unittest.TestCase):
    def test_mask_blanks_comments_and_literals_keeping_offsets(self):
        src = 'a = "}{"; // }\nb = 1\'000\'000; /* { */ c = \'{\'; d = R"x(})x";\n'
        code = parse_tests.mask_cpp(src)
        self.assertEqual(len(code), len(src))
        self.assertEqual(code.count("\n"), src.count("\n"))
        self.assertNotIn("{", code)
        self.assertNotIn("}", code)
        self.assertIn("1'000'000", code)   # digit separators are not char literals

    def test_body_of_a_test_with_braces_in_strings(self):
        src = 'TEST(S, N) {\n  f("}");\n  if (x) { g(); }\n}\nTEST(S, M) {}\n'
        code = parse_tests.mask_cpp(src)
        start, end = parse_tests.test_body(code, src.index("("))
        self.assertEqual(src[start:end + 1], '{\n  f("}");\n  if (x) { g(); }\n}')

    def test_compile_time_check_needs_a_static_assert_and_no_runtime_check(self):
        f = parse_tests.is_compile_time_check
        self.assertTrue(f("{\n  static_assert(A);\n  SUCCEED();\n}"))
        self.assertFalse(f("{\n  static_assert(A);\n  EXPECT_TRUE(b());\n}"))
        self.assertFalse(f("{\n  static_assert(A);\n  RC_ASSERT(b());\n}"))
        self.assertFalse(f("{\n  SUCCEED();\n}"))


class ScanFile(Tree):
    def test_gtests_are_named_and_classified(self):
        tests = self.scan("impl/tests/x_test.cpp", """\
            // spec: [DM-1.1]
            TEST(Shape, OnlyStatic) {
              static_assert(sizeof(int) > 1);  // EXPECT_TRUE(x) in a comment is no check
              SUCCEED();
            }

            // spec: [DM-1.2] [DM-1.1]
            TEST_F(Fix,
                   Runtime) {
              static_assert(true);
              EXPECT_EQ(1, 1);
            }
            """)
        self.assertEqual(self.diags.errors, [])
        self.assertEqual([(t.kind, t.name, t.line, t.ids) for t in tests],
                         [("compile", "Shape.OnlyStatic", 2, {"DM-1.1": 1}),
                          ("unit", "Fix.Runtime", 8, {"DM-1.2": 7, "DM-1.1": 7})])
        self.assertEqual({t.home for t in tests}, {"unit"})

    def test_property_with_only_static_asserts_stays_a_property(self):
        tests = self.scan("property_tests/p_props.cpp",
                          "// spec: [DM-1.1]\nRC_GTEST_PROP(P, Q, ()) { static_assert(true); }\n", "property")
        self.assertEqual(tests[0].kind, "property")

    def test_cited_static_assert_outside_a_test(self):
        tests = self.scan("impl/tests/shape_test.cpp", """\
            // The key cannot be copied.
            // spec: [DM-2.1]
            static_assert(!std::is_copy_constructible_v<Key>,
                          "no copies");
            static_assert(true);  // no spec line: not evidence

            // spec: [DM-1.1]
            TEST(S, N) { EXPECT_TRUE(true); }
            """)
        self.assertEqual([(t.kind, t.name, t.static, t.line) for t in tests],
                         [("unit", "S.N", False, 8),
                          ("compile", 'static_assert(!std::is_copy_constructible_v<Key>, "no copies")', True, 3)])
        self.assertEqual(self.diags.warnings, [])

    def test_compile_fail_case_is_compile_evidence_named_by_its_path(self):
        tests = self.scan("impl/tests/lane/compile_fail/bad_body.cpp", "// spec: [DM-1.1]\nint x = ;\n")
        self.assertEqual([(t.kind, t.name, t.home) for t in tests],
                         [("compile", "lane.compile_fail.bad_body", "unit")])

    def test_model_and_ctest_lines(self):
        tests = self.scan("model/lane_model.cpp", "// spec: [DM-1.1]\nint main() {}\n", "model")
        self.assertEqual([(t.kind, t.name) for t in tests], [("model", "model.lane")])
        tests = self.scan("checks/conformance/run.py", "# ctest: conformance.a*\n# spec: [DM-1.1]\n",
                          "conformance")
        self.assertEqual([t.name for t in tests], ["conformance.a*"])

    def test_errors_name_file_and_line(self):
        self.scan("impl/tests/y_test.cpp", "TEST(S, N) {}\n// spec: [DM-I2]\n")
        self.assertIn("impl/tests/y_test.cpp:1: gtest test S.N has no `// spec: [ID]` line directly above it",
                      self.diags.errors)
        self.assertTrue(any(e.startswith("impl/tests/y_test.cpp:2: malformed rule ID [DM-I2]")
                            for e in self.diags.errors), self.diags.errors)
        self.scan("model/m.cpp", "int main() {}\n", "model")
        self.assertIn("model/m.cpp: model has no `// spec: [ID]` line", self.diags.errors)


class Junit(Tree):
    def test_statuses(self):
        self.write("j.xml", """\
            <testsuite>
              <testcase name="a" status="run"/>
              <testcase name="b" status="fail"/>
              <testcase name="c" status="notrun"/>
              <testcase name="d"><failure/></testcase>
              <testcase name="e"><skipped/></testcase>
            </testsuite>
            """)
        results, files = parse_junit.read_junit(self.root, ["j.xml"], self.diags)
        self.assertEqual(results, {"a": ["passed"], "b": ["failed"], "c": ["not run"], "d": ["failed"],
                                   "e": ["not run"]})
        self.assertEqual(len(files), 1)

    def test_shared_reader_statuses(self):
        # The one reader of both the catalogue and checks/mutants/mutation-score: every
        # shape ctest writes maps to passed / failed / not run, with its time and message.
        self.write("k.xml", """\
            <testsuite>
              <testcase name="ran" status="run" time="1.5"/>
              <testcase name="failed" status="fail" time="2"><failure message="boom"/></testcase>
              <testcase name="errored"><error message="crash"/></testcase>
              <testcase name="skipped" status="notrun"><skipped message="SKIP_REGULAR_EXPRESSION"/></testcase>
              <testcase name="disabled" status="disabled"/>
              <testcase name="bare" time="x"/>
              <testcase name="twice" status="run"/>
              <testcase name="twice" status="fail"/>
            </testsuite>
            """)
        path = os.path.join(self.root, "k.xml")
        got = parse_junit.read_reports([path], self.diags.error)
        self.assertEqual({n: [r.status for r in rs] for n, rs in got.items()},
                         {"ran": ["passed"], "failed": ["failed"], "errored": ["failed"],
                          "skipped": ["not run"], "disabled": ["not run"], "bare": ["passed"],
                          "twice": ["passed", "failed"]})
        self.assertEqual(set(parse_junit.STATUSES), {"passed", "failed", "not run"})
        self.assertEqual((got["ran"][0].seconds, got["ran"][0].message), (1.5, ""))
        self.assertEqual((got["failed"][0].seconds, got["failed"][0].message), (2.0, "boom"))
        self.assertEqual(got["errored"][0].message, "crash")
        self.assertEqual(got["skipped"][0].message, "SKIP_REGULAR_EXPRESSION")
        self.assertEqual(got["disabled"][0].message, "disabled")
        self.assertEqual(got["bare"][0].seconds, 0.0)
        self.assertEqual(got["ran"][0].report, path)
        self.assertEqual(self.diags.errors, [])

    def test_mutation_score_reads_with_the_same_reader(self):
        # mutation_lib takes the newest report's result for a test, in the same words.
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "mutants"))
        from mutation_lib import results
        self.assertIs(results.read_reports, parse_junit.read_reports)
        old = os.path.join(self.root, "old.xml")
        new = os.path.join(self.root, "new.xml")
        self.write("old.xml", '<testsuite><testcase name="m" status="fail"/></testsuite>')
        self.write("new.xml", '<testsuite><testcase name="m" status="run"/></testsuite>')
        os.utime(old, (1000, 1000))
        os.utime(new, (2000, 2000))
        self.assertEqual(results.latest_results([new, old])["m"].status, parse_junit.PASSED)

    def test_missing_and_unreadable_reports(self):
        self.write("bad.xml", "<testsuite>")
        parse_junit.read_junit(self.root, ["none.xml", "bad.xml"], self.diags)
        self.assertIn("none.xml: JUnit report not found (run ctest with --output-junit)", self.diags.errors)
        self.assertTrue(any("cannot read JUnit report" in e for e in self.diags.errors))


if __name__ == "__main__":
    unittest.main(verbosity=2)
