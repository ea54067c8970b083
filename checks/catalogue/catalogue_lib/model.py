"""The catalogue's data: kinds of evidence, rules, tests, cells, rows and diagnostics."""

from dataclasses import dataclass, field

from .parse_junit import FAILED, NOT_RUN, PASSED

# Kinds of evidence, in the order of the catalogue's columns. `compile` is a check
# the compiler makes (a test whose only checks are static_asserts, a `static_assert`
# with a `spec:` line, a compile-fail case): it proves a shape, not runtime behaviour.
# `static` is turnstile-lint's samples (checks/lint/): a good and a bad file per lint rule.
KINDS = ("unit", "compile", "property", "model", "conformance", "static")

# Where tests live (relative to the repository root), by the kind a test there has
# unless it is a compile-time check. `compile` has no directory of its own.
KIND_ROOTS = {
    "unit": "impl/tests",
    "property": "property_tests",
    "model": "model",
    "conformance": "checks/conformance",
    "static": "checks/lint",
}
HOMES = tuple(KIND_ROOTS)

# ctest name prefix of a non-gtest test derived from its path (see spec/README.md).
KIND_CTEST_PREFIX = {
    "unit": "",
    "property": "property.",
    "model": "model.",
    "conformance": "conformance.",
    "static": "static.lint.",
}

# A directory whose files are compile-fail cases: their kind is `compile`.
COMPILE_FAIL_DIR = "compile_fail"

SOURCE_EXTS = {".cpp", ".cc", ".cxx", ".hpp", ".h", ".js", ".mjs", ".cjs", ".py"}
CPP_EXTS = {".cpp", ".cc", ".cxx", ".hpp", ".h"}
HEADER_EXTS = {".hpp", ".h"}
SKIP_DIRS = {"__pycache__", "node_modules", ".git"}

# ctest tests that are not rule evidence and need no `spec:` line (mutant checks,
# static analysis, the install and consumer checks, the documented examples run).
# Extended with --ignore-ctest.
DEFAULT_IGNORED_CTESTS = ("*.mutant.*", "static.*", "install.*", "examples.*")


@dataclass
class Rule:
    id: str
    slug: str
    note: str            # the heading's annotations, e.g. "non-goal", "deferred"
    withdrawn: bool
    summary: str
    verify: list
    file: str            # spec/<file>.md
    line: int            # for diagnostics only; never rendered into CATALOGUE.md
    anchor: str


@dataclass
class Contract:
    file: str
    title: str
    prefix: str
    rules: list = field(default_factory=list)


@dataclass
class Test:
    """One piece of evidence. Its identity is (file, name): `line` and the lines in
    `ids` serve diagnostics and the HTML page, never spec/CATALOGUE.md."""
    kind: str            # one of KINDS
    name: str            # Suite.Name for gtest, the ctest name (or pattern), or static_assert(...)
    file: str
    line: int            # the TEST line, the static_assert line, or the file's first `spec:` line
    ids: dict            # rule ID -> line of the `spec:` line citing it
    gtest: bool
    suite: str = ""
    case: str = ""
    home: str = ""       # the kind of the directory it lives in (HOMES); ctest names follow it
    static: bool = False  # a static_assert outside any test: it ran when its file's tests ran
    results: list = field(default_factory=list)  # junit statuses: passed / failed / not run

    def status(self, have_junit):
        if not have_junit:
            return "untested"
        if FAILED in self.results:
            return FAILED
        if PASSED in self.results:
            return PASSED
        return NOT_RUN

    def key(self):
        """The order of tests in a cell: by file and name, so moving a test within its
        file changes nothing."""
        return (self.file, self.name)


@dataclass
class Cell:
    kind: str
    required: bool
    tests: list
    state: str      # none | missing | passed | failed | not run | untested
    allowed: bool = False   # a missing kind that is allowed (not an error)


@dataclass
class Row:
    rule: Rule
    cells: dict
    verdict: str    # passed | failed | missing | not run | untested | withdrawn


class Diagnostics:
    def __init__(self):
        self.errors = []
        self.warnings = []

    def error(self, where, msg):
        self.errors.append(f"{where}: {msg}" if where else msg)

    def warn(self, where, msg):
        self.warnings.append(f"{where}: {msg}" if where else msg)
