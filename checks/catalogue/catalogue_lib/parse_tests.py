"""Parse the test sources: every piece of evidence, keyed by its file and its name.

- A gtest or RapidCheck test (`TEST`, `TEST_F`, `TEST_P`, `TYPED_TEST[_P]`,
  `RC_GTEST_[FIXTURE_]PROP`, the testing module's `TURNSTILE_EXPLORE_TEST`) is
  `Suite.Name`; its rules are the `spec:` lines in the
  comment lines directly above it. Its kind is its directory's (model.KIND_ROOTS),
  or `compile` when its body checks only with `static_assert` (no gtest or
  RapidCheck assertion): a compile-time check is not evidence of runtime behaviour.
- A `static_assert` outside any test with `spec:` lines directly above it is a
  `compile` test named `static_assert(<its text>)`.
- Any other file's `spec:` lines apply to its ctest tests (`ctest:` lines, or the
  name the path gives); a file under a `compile_fail/` directory is `compile`.

Line numbers are kept for diagnostics only.
"""

import os
import re

from .model import (COMPILE_FAIL_DIR, CPP_EXTS, HEADER_EXTS, HOMES, KIND_CTEST_PREFIX,
                    KIND_ROOTS, SKIP_DIRS, SOURCE_EXTS, Test)
from .parse_spec import ID_RE

IDISH_RE = re.compile(r"^[A-Z][A-Z0-9]*-\S*$")
SPEC_LINE_RE = re.compile(r"^\s*(?://+|#+|/\*+|\*+)\s*spec\s*:(.*)$")
CTEST_LINE_RE = re.compile(r"^\s*(?://+|#+|/\*+|\*+)\s*ctest\s*:(.*)$")
BRACKET_RE = re.compile(r"\[([^\]\s]+)\]")
GTEST_RE = re.compile(
    r"^[ \t]*(TEST|TEST_F|TEST_P|TYPED_TEST|TYPED_TEST_P|RC_GTEST_PROP|RC_GTEST_FIXTURE_PROP"
    r"|TURNSTILE_EXPLORE_TEST)"
    r"\s*\(\s*(\w+)\s*,\s*(\w+)",
    re.M,
)
COMMENT_LINE_RE = re.compile(
    r"^\s*(//|/\*|\*|#(?!\s*(include|define|if|ifdef|ifndef|endif|else|elif|pragma|undef)\b))")
# Comments and literals of C++ source, to blank out before looking at code.
CPP_NOISE_RE = re.compile(
    r'//[^\n]*|/\*.*?\*/|R"([^ ()\\\n]{0,16})\(.*?\)\1"|"(?:\\.|[^"\\\n])*"|(?<![\w\'])\'(?:\\.|[^\'\\\n])+\'',
    re.S)
STATIC_ASSERT_RE = re.compile(r"^[ \t]*static_assert\s*\(", re.M)
# A check made when the test runs (gtest or RapidCheck).
RUNTIME_CHECK_RE = re.compile(
    r"\b(?:(?:EXPECT|ASSERT)_[A-Z0-9_]+|FAIL|ADD_FAILURE(?:_AT)?|GTEST_FAIL|GTEST_SKIP"
    r"|RC_(?:ASSERT\w*|FAIL|SUCCEED_IF|DISCARD|PRE))\s*\(")
STATIC_NAME_MAX = 120
BRACKETS_RE = {"(": re.compile(r"[()]"), "{": re.compile(r"[{}]")}


def iter_test_files(root):
    """(home kind, path relative to root) of every test source, in a fixed order."""
    for home in HOMES:
        base = os.path.join(root, KIND_ROOTS[home])
        if not os.path.isdir(base):
            continue
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith("."))
            for fn in sorted(filenames):
                if os.path.splitext(fn)[1] in SOURCE_EXTS:
                    full = os.path.join(dirpath, fn)
                    yield home, os.path.relpath(full, root).replace(os.sep, "/")


def parse_spec_line(text, where, diags):
    """The rule IDs on one `spec:` line (the text after `spec:`)."""
    text = text.split("*/")[0]
    ids = []
    for tok in BRACKET_RE.findall(text):
        if ID_RE.match(tok):
            ids.append(tok)
        elif IDISH_RE.match(tok):
            diags.error(where, f"malformed rule ID [{tok}] on a `spec:` line "
                        f"(rule IDs are <PREFIX>-<section>.<item>; invariants like [COMP-I2] are not rules)")
    if not ids:
        diags.error(where, "`spec:` line names no rule (write `// spec: [RT-4.2]`)")
    return ids


def convention_ctest_name(home, rel):
    sub = os.path.relpath(rel, KIND_ROOTS[home]).replace(os.sep, "/")
    stem = os.path.splitext(sub)[0]
    stem = re.sub(r"(_model|_tests?|_props?|\.test|\.spec)$", "", stem)
    return KIND_CTEST_PREFIX[home] + stem.replace("/", ".")


def mask_cpp(text):
    """`text` with comments and string/char literals blanked (newlines and offsets kept)."""
    def blank(m):
        return "\n".join(" " * len(part) for part in m.group(0).split("\n"))
    return CPP_NOISE_RE.sub(blank, text)


def matching(code, start, open_ch, close_ch):
    """The index of the bracket closing the one at `start` in masked `code` (or len)."""
    depth = 0
    for m in BRACKETS_RE[open_ch].finditer(code, start):
        depth += 1 if m.group(0) == open_ch else -1
        if depth == 0:
            return m.start()
    return len(code)


def test_body(code, paren):
    """(start, end) of the body of the test whose macro's `(` is at `paren`: the
    offsets of its braces."""
    close = matching(code, paren, "(", ")")
    brace = code.find("{", close)
    if brace < 0:
        return (close, close)
    return (brace, matching(code, brace, "{", "}"))


def is_compile_time_check(body):
    """A test body whose only checks are static_asserts."""
    return bool(STATIC_ASSERT_RE.search(body)) and not RUNTIME_CHECK_RE.search(body)


def specs_above(n, lines, spec_lines, attached):
    """{rule ID: line} of the `spec:` lines in the comment block directly above line n."""
    ids = {}
    k = n - 1
    while k >= 1 and COMMENT_LINE_RE.match(lines[k - 1]) and lines[k - 1].strip():
        if k in spec_lines:
            attached.add(k)
            for i in spec_lines[k]:
                ids.setdefault(i, k)
        k -= 1
    return ids


def static_assert_name(code, text, start):
    """`static_assert(<its text, whitespace collapsed>)`, cut at STATIC_NAME_MAX."""
    paren = code.find("(", start)
    inner = " ".join(text[paren + 1:matching(code, paren, "(", ")")].split())
    if len(inner) > STATIC_NAME_MAX:
        inner = inner[:STATIC_NAME_MAX].rstrip() + "\u2026"
    return f"static_assert({inner})"


def scan_cpp_tests(home, rel, text, lines, spec_lines, diags):
    """The gtest tests and the cited namespace-scope static_asserts of a C++ file, and
    the `spec:` lines they took."""
    tests, attached, bodies = [], set(), []
    code = mask_cpp(text)
    for m in GTEST_RE.finditer(text):
        macro, suite, case = m.groups()
        n = text.count("\n", 0, m.start()) + 1
        ids = specs_above(n, lines, spec_lines, attached)
        start, end = test_body(code, m.start() + m.group(0).index("("))
        bodies.append((m.start(), end))
        compile_only = not macro.startswith("RC_") and is_compile_time_check(code[start:end + 1])
        tests.append(Test("compile" if compile_only else home, f"{suite}.{case}", rel, n, ids,
                          True, suite, case, home=home))
        if not ids:
            what = "RapidCheck property" if macro.startswith("RC_") else "gtest test"
            diags.error(f"{rel}:{n}", f"{what} {suite}.{case} has no `// spec: [ID]` line "
                        f"directly above it")
    for m in STATIC_ASSERT_RE.finditer(code):
        if any(s <= m.start() <= e for s, e in bodies):
            continue
        n = text.count("\n", 0, m.start()) + 1
        ids = specs_above(n, lines, spec_lines, attached)
        if ids:
            tests.append(Test("compile", static_assert_name(code, text, m.end() - 1), rel, n, ids,
                              False, home=home, static=True))
    return tests, attached


def scan_file(root, home, rel, diags):
    with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
        text = f.read()
    lines = text.split("\n")
    ext = os.path.splitext(rel)[1]
    spec_lines = {}     # line number -> [ids]
    ctest_names = []
    for n, line in enumerate(lines, 1):
        m = SPEC_LINE_RE.match(line)
        if m:
            spec_lines[n] = parse_spec_line(m.group(1), f"{rel}:{n}", diags)
            continue
        m = CTEST_LINE_RE.match(line)
        if m:
            ctest_names += [t for t in re.split(r"[\s,]+", m.group(1).split("*/")[0]) if t]

    tests, attached = [], set()
    if ext in CPP_EXTS and (spec_lines or "TEST" in text):
        tests, attached = scan_cpp_tests(home, rel, text, lines, spec_lines, diags)
    if any(t.gtest for t in tests):
        for n in sorted(set(spec_lines) - attached):
            diags.warn(f"{rel}:{n}", "`spec:` line is not directly above a test (no blank line "
                       "between it and the TEST); it maps to nothing")
        if ctest_names:
            diags.warn(rel, "`ctest:` line ignored in a file with gtest tests (they map by Suite.Name)")
        return tests

    # A file without gtest blocks: its other `spec:` lines apply to its ctest tests.
    rest = {n: ids for n, ids in spec_lines.items() if n not in attached}
    is_model = home == "model" and ext not in HEADER_EXTS
    if not rest and not ctest_names:
        if is_model and not tests:
            diags.error(rel, "model has no `// spec: [ID]` line")
        return tests
    if not rest:
        diags.error(rel, "file names ctest tests (`ctest:`) but has no `spec:` line")
        return tests
    if ext in HEADER_EXTS and not ctest_names:
        diags.warn(f"{rel}:{min(rest)}", "`spec:` line in a header without tests maps to nothing "
                   "(put it above a TEST or a static_assert, or name the ctest test with a "
                   "`ctest:` line)")
        return tests
    ids = {}
    for n in sorted(rest):
        for i in rest[n]:
            ids.setdefault(i, n)
    kind = "compile" if COMPILE_FAIL_DIR in rel.split("/")[:-1] else home
    names = ctest_names or [convention_ctest_name(home, rel)]
    return tests + [Test(kind, name, rel, min(rest), dict(ids), False, home=home) for name in names]


def load_tests(root, diags):
    tests = []
    for home, rel in iter_test_files(root):
        tests += scan_file(root, home, rel, diags)
    seen = {}
    for t in tests:
        if t.static:
            continue
        key = (t.home, t.name)
        if key in seen:
            o = seen[key]
            diags.warn(f"{t.file}:{t.line}", f"{t.home} test {t.name} also at {o.file}:{o.line}; "
                       f"ctest results cannot tell them apart")
        else:
            seen[key] = t
    return tests
