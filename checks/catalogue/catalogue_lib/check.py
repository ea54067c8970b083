"""The checks: citations, ctest results per test, the verdict per rule, staleness.

Every function reports into a model.Diagnostics; none reads files except
`check_staleness` (the committed spec/CATALOGUE.md).
"""

import difflib
import fnmatch
import os
import re

from .model import KIND_ROOTS, KINDS, Cell, Row
from .parse_junit import FAILED, NOT_RUN, PASSED

GTEST_NAME_FORMS = (
    re.compile(r"^(?:\w+/)?(\w+)\.(\w+)(?:/.*)?$"),   # Suite.Name, Inst/Suite.Name/Param
    re.compile(r"^(\w+)/\w+\.(\w+)$"),                 # TypedSuite/0.Name
)
ROW_ID_RE = re.compile(r"^[+-]\| \[([A-Z][A-Z0-9]*-\d+\.\d+)\]\(")


def check_citations(tests, by_id, diags):
    """Every cited ID is a rule of spec/, and not a withdrawn one."""
    for t in tests:
        for i, line in t.ids.items():
            r = by_id.get(i)
            if r is None:
                diags.error(f"{t.file}:{line}", f"{t.name} cites [{i}], which is no rule of spec/")
            elif r.withdrawn:
                diags.error(f"{t.file}:{line}", f"{t.name} cites [{i}], which is withdrawn "
                            f"({r.file}:{r.line}); cite the rule that replaced it")


def gtest_candidates(name, gtests):
    """The gtest tests a ctest name (`[PREFIX.]Suite.Name`, with parameter parts) means."""
    parts = name.split(".")
    for i in range(len(parts) - 1):
        prefix, rest = ".".join(parts[:i]), ".".join(parts[i:])
        cands = []
        for form in GTEST_NAME_FORMS:
            m = form.match(rest)
            if m:
                cands += gtests.get(f"{m.group(1)}.{m.group(2)}", [])
        if cands:
            home = prefix.split(".")[0] if prefix else "unit"
            return [t for t in cands if t.home == home] or cands
    return []


def attach_results(tests, results, ignored, diags):
    """Give each test the statuses of its ctest tests; report failed and unmapped ones.
    A static_assert outside any test gets the statuses of its file's gtest tests (it
    compiled into the binary that ran them)."""
    gtests = {}
    for t in tests:
        if t.gtest:
            gtests.setdefault(f"{t.suite}.{t.case}", []).append(t)
    others = [t for t in tests if not t.gtest and not t.static]
    unmapped = []
    for name in sorted(results):
        statuses = results[name]
        hit = [t for t in others if fnmatch.fnmatchcase(name, t.name)] or gtest_candidates(name, gtests)
        for t in hit:
            t.results += statuses
        if not hit:
            unmapped.append(name)
    by_file = {}
    for t in tests:
        if t.gtest:
            by_file.setdefault(t.file, []).extend(t.results)
    for t in tests:
        if t.static:
            t.results = list(by_file.get(t.file, []))
    for name in sorted(results):
        if FAILED in results[name]:
            diags.error("ctest", f"test {name} failed")
    for name in unmapped:
        if any(fnmatch.fnmatchcase(name, g) for g in ignored):
            continue
        diags.error("ctest", f"test {name} maps to no `spec:` line (a gtest needs `// spec:` above its "
                    f"TEST; another test needs a `spec:` line in its source and the ctest name of "
                    f"spec/README.md's convention or a `ctest:` line)")


def kind_has_home(root, kind):
    """False for a kind whose directory does not exist yet (its absence is allowed)."""
    return kind not in KIND_ROOTS or os.path.isdir(os.path.join(root, KIND_ROOTS[kind]))


def evaluate(contracts, tests, have_junit, allow_missing, root):
    """One Row per rule: per kind, its tests (ordered by file and name) and a state."""
    rows = []
    by_rule = {}
    for t in tests:
        for i in t.ids:
            by_rule.setdefault(i, []).append(t)
    for c in contracts:
        for r in c.rules:
            cells = {}
            for k in KINDS:
                ts = sorted((t for t in by_rule.get(r.id, []) if t.kind == k), key=lambda t: t.key())
                req = k in r.verify and not r.withdrawn
                if not ts:
                    state = "missing" if req else "none"
                else:
                    sts = [t.status(have_junit) for t in ts]
                    if FAILED in sts:
                        state = FAILED
                    elif not have_junit:
                        state = "untested"
                    elif PASSED in sts:
                        state = PASSED
                    else:
                        state = NOT_RUN
                cell = Cell(k, req, ts, state)
                if state == "missing":
                    cell.allowed = (k in allow_missing or f"{c.prefix}:{k}" in allow_missing
                                    or not kind_has_home(root, k))
                cells[k] = cell
            rows.append(Row(r, cells, verdict(r, cells, have_junit)))
    return rows


def verdict(rule, cells, have_junit):
    states = [cells[k].state for k in KINDS]
    if rule.withdrawn:
        return "withdrawn"
    if FAILED in states:
        return FAILED
    if "missing" in states:
        return "missing"
    if not have_junit:
        return "untested"
    if any(cells[k].required and cells[k].state != PASSED for k in KINDS):
        return NOT_RUN
    return PASSED


def check_rows(rows, have_junit, root, diags):
    """Report missing evidence (an error unless allowed) and required evidence not run."""
    for row in rows:
        where = f"{row.rule.file}:{row.rule.line}"
        missing = [k for k in KINDS if row.cells[k].state == "missing"]
        hard = [k for k in missing if not row.cells[k].allowed]
        soft = [k for k in missing if row.cells[k].allowed]
        if hard:
            diags.error(where, f"rule [{row.rule.id}] {row.rule.slug}: verify asks for "
                        f"{', '.join(hard)}, but no {'/'.join(hard)} test cites it")
        if soft:
            whys = sorted({"--allow-missing" if kind_has_home(root, k) else f"no {KIND_ROOTS[k]}/ yet"
                           for k in soft})
            diags.warn(where, f"rule [{row.rule.id}] {row.rule.slug}: no {'/'.join(soft)} test yet "
                       f"(allowed: {', '.join(whys)})")
        if have_junit and row.verdict == NOT_RUN:
            diags.error(where, f"rule [{row.rule.id}]: its required evidence did not run ("
                        + ", ".join(k for k in KINDS
                                    if row.cells[k].required and row.cells[k].state != PASSED)
                        + "): no JUnit result for its tests")


def check_staleness(committed, generated, diags):
    """Compare the committed catalogue's content with the generated one (line endings
    aside); on a difference, name the rows that changed and show where."""
    if committed is None:
        diags.error("spec/CATALOGUE.md", "missing; generate it with `checks/catalogue/catalogue --write`")
        return False
    committed = committed.replace("\r\n", "\n")
    if committed == generated:
        return True
    diff = difflib.unified_diff(committed.splitlines(), generated.splitlines(),
                                "spec/CATALOGUE.md (committed)", "spec/CATALOGUE.md (generated)",
                                n=0, lineterm="")
    body = [d for d in diff if d[:1] in "+-" and not d.startswith(("+++", "---"))]
    changed = sorted({m.group(1) for d in body for m in [ROW_ID_RE.match(d)] if m},
                     key=lambda i: [int(x) if x.isdigit() else x for x in re.split(r"[-.]", i)])
    listed = ", ".join(changed[:24]) + (f" and {len(changed) - 24} more" if len(changed) > 24 else "")
    rules_hint = f" Rows that changed: {listed}." if changed else ""
    # Show where each of the first changed lines differs, not just its start.
    olds = [d[1:] for d in body if d[0] == "-"]
    news = [d[1:] for d in body if d[0] == "+"]
    shown = []
    for a, b in zip(olds, news):
        if len(shown) >= 6:
            break
        p = 0
        while p < min(len(a), len(b)) and a[p] == b[p]:
            p += 1
        lo = max(0, p - 40)
        cut = lambda t: ("..." if lo else "") + t[lo:p + 70] + ("..." if len(t) > p + 70 else "")
        shown += [f"- {cut(a)}", f"+ {cut(b)}"]
    for d in (olds[len(news):] + news[len(olds):])[:4]:
        shown.append(d[:150] + ("..." if len(d) > 150 else ""))
    more = len(body) - len(shown)
    diags.error("spec/CATALOGUE.md", "out of date with the spec and the tests; regenerate it with "
                "`checks/catalogue/catalogue --write` and commit it." + rules_hint
                + " Where it differs (- committed, + generated):\n  " + "\n  ".join(shown)
                + (f"\n  ... ({more} more changed lines)" if more > 0 else ""))
    return False


def summarize(rows, n_tests):
    """The summary line's counts: `catalogue: N rules, P passed, ...; T tests`."""
    active = [r for r in rows if not r.rule.withdrawn]
    count = {v: sum(1 for r in active if r.verdict == v)
             for v in (PASSED, FAILED, "missing", NOT_RUN, "untested")}
    summary = (f"catalogue: {len(active)} rules, {count[PASSED]} passed, {count[FAILED]} failed, "
               f"{count['missing']} missing")
    if count[NOT_RUN]:
        summary += f", {count[NOT_RUN]} not run"
    if count["untested"]:
        summary += f", {count['untested']} untested (no --junit)"
    withdrawn = len(rows) - len(active)
    if withdrawn:
        summary += f", {withdrawn} withdrawn"
    return summary + f"; {n_tests} tests"
