#!/usr/bin/env python3
"""checks/lint/run_sample.py: runs turnstile-lint on one sample and checks its verdict.

  run_sample.py TURNSTILE_LINT SAMPLE [COMPILER FLAGS...]

A sample marks each line that must be flagged with a trailing comment
`// expect: [LINT-x.y]` (several IDs allowed). Passes when the findings are
exactly those (file:line and rule ID, in the lint's output format) and the exit
status is 1 when any is expected, 0 when none is. Prints the differences otherwise.
"""
import os
import re
import subprocess
import sys

FINDING_RE = re.compile(r"^(.+?):(\d+):(\d+): \[(LINT-\d+\.\d+)\] \S")
EXPECT_RE = re.compile(r"//\s*expect:\s*((?:\[LINT-\d+\.\d+\]\s*)+)")


def main():
    lint, sample, flags = sys.argv[1], os.path.abspath(sys.argv[2]), sys.argv[3:]
    expected = set()
    with open(sample, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            m = EXPECT_RE.search(line)
            if m:
                expected |= {(n, rid) for rid in re.findall(r"LINT-\d+\.\d+", m.group(1))}
    p = subprocess.run([sys.executable, lint, sample, "--"] + flags, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True)
    sys.stdout.write(p.stdout)
    sys.stderr.write(p.stderr)
    got, errors = set(), []
    for line in p.stdout.splitlines():
        m = FINDING_RE.match(line)
        if not m:
            errors.append(f"not in the format file:line:col: [ID] message: {line!r}")
            continue
        if os.path.abspath(m.group(1)) != sample:
            errors.append(f"finding names another file: {line!r}")
        got.add((int(m.group(2)), m.group(4)))
    want_rc = 1 if expected else 0
    if p.returncode != want_rc:
        errors.append(f"exit status {p.returncode}, expected {want_rc}")
    for n, rid in sorted(expected - got):
        errors.append(f"{sample}:{n}: expected [{rid}], not reported")
    for n, rid in sorted(got - expected):
        errors.append(f"{sample}:{n}: [{rid}] reported, not expected")
    for e in errors:
        print("FAIL: " + e)
    if not errors:
        print(f"ok: {len(expected)} finding(s) as expected in {os.path.basename(sample)}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
