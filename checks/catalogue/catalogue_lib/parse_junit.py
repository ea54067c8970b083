"""Read ctest JUnit reports (`ctest --output-junit`): the one reader and status vocabulary.

Shared by the catalogue (checks/catalogue) and checks/mutants/mutation-score
(checks/mutants/mutation_lib imports this module; this module imports neither).

A testcase is one of three statuses, the same words in both tools' output:
  passed   it ran and succeeded (`status="run"`, or no status and no failure)
  failed   `status="fail"`, or a <failure> / <error> element
  not run  `status="notrun"` / `"disabled"`, or a <skipped> element (and no failure)
"""

import glob
import os
import xml.etree.ElementTree as ET
from typing import NamedTuple

PASSED = "passed"
FAILED = "failed"
NOT_RUN = "not run"
STATUSES = (PASSED, FAILED, NOT_RUN)


class Result(NamedTuple):
    """One testcase of one report."""
    status: str      # PASSED | FAILED | NOT_RUN
    seconds: float
    message: str     # the failure's or skip's message ("" when it passed)
    report: str      # the report's path
    mtime: float     # the report's modification time


def status_of(tc):
    """(status, message) of one <testcase> element."""
    status = tc.get("status", "")
    fail = tc.find("failure")
    if fail is None:
        fail = tc.find("error")
    skip = tc.find("skipped")
    if status == "fail" or fail is not None:
        return FAILED, fail.get("message", "") if fail is not None else ""
    if status in ("notrun", "disabled") or skip is not None:
        return NOT_RUN, skip.get("message", "") if skip is not None else status
    return PASSED, ""


def read_reports(paths, on_error):
    """{ctest name: [Result, ...]} over the reports, in the order given; `on_error(path,
    text)` is told of a report that cannot be read."""
    out = {}
    for path in paths:
        try:
            tree = ET.parse(path)
        except (ET.ParseError, OSError) as e:
            on_error(path, f"cannot read JUnit report: {e}")
            continue
        mtime = os.path.getmtime(path)
        for tc in tree.getroot().iter("testcase"):
            status, message = status_of(tc)
            try:
                secs = float(tc.get("time", "0") or 0)
            except ValueError:
                secs = 0.0
            out.setdefault(tc.get("name", ""), []).append(Result(status, secs, message, path, mtime))
    return out


def read_junit(root, patterns, diags):
    """The catalogue's view: ({ctest name: [status, ...]}, files) over every file matching
    the patterns (relative to `root`); problems go to `diags`."""
    files = []
    for p in patterns:
        full = p if os.path.isabs(p) else os.path.join(root, p)
        matched = sorted(glob.glob(full)) if any(ch in p for ch in "*?[") else [full]
        if not matched or not all(os.path.exists(x) for x in matched):
            diags.error(p, "JUnit report not found (run ctest with --output-junit)")
            continue
        files += matched
    reports = read_reports(files, diags.error)
    return {name: [r.status for r in rs] for name, rs in reports.items()}, files
