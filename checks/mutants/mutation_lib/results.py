"""3. The run: the mutant ctests' results, read by the shared JUnit reader
(checks/catalogue/catalogue_lib/parse_junit.py), and each mutant's verdict.

A mutant ctest's status is the reader's (passed / failed / not run) or `not built`;
a mutant is caught when every ctest of it passed."""

import os
import re
import shlex
import subprocess
import sys
import tempfile
import time

from .common import die, rel

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "catalogue"))
from catalogue_lib.parse_junit import FAILED, NOT_RUN, PASSED, read_reports  # noqa: E402,F401 (PASSED: for report)

NOT_BUILT = "not built"


def latest_results(paths):
    """test name -> the Result of the newest report that has it."""
    def on_error(path, text):
        print("mutation-score: %s: %s" % (path, text), file=sys.stderr)
    out = {}
    for name, rs in read_reports(paths, on_error).items():
        best = None
        for r in rs:
            if best is None or r.mtime >= best.mtime:
                best = r
        out[name] = best
    return out


def run_ctest(build_dir, jobs, quiet):
    fd, junit = tempfile.mkstemp(prefix="mutation-score-", suffix=".xml")
    os.close(fd)
    os.unlink(junit)
    cmd = ["ctest", "--test-dir", build_dir, "-R", r"\.mutant\.", "-j", str(jobs),
           "--output-on-failure", "--output-junit", junit]
    print("mutation-score: running: %s" % " ".join(shlex.quote(c) for c in cmd), file=sys.stderr)
    t0 = time.time()
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True) as p:
        for line in p.stdout:
            if not quiet or re.match(r"\s*\d+/\d+ Test", line):
                sys.stderr.write("  | " + line)
        rc = p.wait()
    elapsed = time.time() - t0
    if not os.path.exists(junit):
        die("ctest wrote no JUnit report (exit %d)" % rc)
    results = latest_results([junit])
    os.unlink(junit)
    return results, elapsed


def apply_results(tests, results, check_stale, root):
    for t in tests:
        r = results.get(t.name)
        if not t.built:
            t.status = NOT_BUILT
            t.message = "no executable %s" % (rel(t.executable, root) if t.executable
                                               else "(no command)")
            if r:
                t.time = r.seconds
            continue
        if r is None:
            t.status, t.message = NOT_RUN, "no result for this test"
            continue
        t.time = r.seconds
        if check_stale and t.executable and os.path.getmtime(t.executable) > r.mtime:
            t.status, t.message = NOT_RUN, "its result predates its executable: stale report"
        else:
            t.status, t.message = r.status, r.message


def verdict(sw, ran):
    if sw.error:
        return "PATCH FAILS"
    if not sw.tests:
        return "no test"
    if not ran:
        return NOT_BUILT if any(not t.built for t in sw.tests) else "-"
    states = [t.status for t in sw.tests]
    if FAILED in states:
        return "NOT caught"
    if NOT_BUILT in states:
        return NOT_BUILT
    if NOT_RUN in states:
        return NOT_RUN
    return "caught"
