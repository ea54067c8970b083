"""Parse ctest JUnit reports (`ctest --output-junit`): ctest name -> statuses."""

import glob
import os
import xml.etree.ElementTree as ET


def read_junit(root, patterns, diags):
    """{ctest name: [status, ...]} over every file matching the patterns."""
    results = {}
    files = []
    for p in patterns:
        full = p if os.path.isabs(p) else os.path.join(root, p)
        matched = sorted(glob.glob(full)) if any(ch in p for ch in "*?[") else [full]
        if not matched or not all(os.path.exists(x) for x in matched):
            diags.error(p, "JUnit report not found (run ctest with --output-junit)")
            continue
        files += matched
    for path in files:
        try:
            tree = ET.parse(path)
        except (ET.ParseError, OSError) as e:
            diags.error(path, f"cannot read JUnit report: {e}")
            continue
        for tc in tree.getroot().iter("testcase"):
            name = tc.get("name", "")
            status = tc.get("status")
            if status == "run":
                s = "pass"
            elif status == "fail":
                s = "fail"
            elif status in ("notrun", "disabled"):
                s = "notrun"
            elif tc.find("failure") is not None or tc.find("error") is not None:
                s = "fail"
            elif tc.find("skipped") is not None:
                s = "notrun"
            else:
                s = "pass"
            results.setdefault(name, []).append(s)
    return results, files

