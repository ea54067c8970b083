"""The output: the table, the per-contract counts, the problems and warnings, the JSON."""

from .common import CONTRACTS, ID_CONTRACT, TARGET_PER_CONTRACT, rel
from .results import FAILED, NOT_BUILT, NOT_RUN, PASSED, verdict


def fmt_time(s):
    if s is None:
        return "-"
    return "%.2fs" % s if s < 10 else "%.0fs" % s


def render_table(switches, ran):
    order = sorted(switches.values(),
                   key=lambda s: (CONTRACTS.index(s.contract) if s.contract in CONTRACTS else 9,
                                  s.name))
    rows = []
    for sw in order:
        if sw.patch:
            where = sw.patch
        else:
            where = "%s:%d" % (sw.primary["file"], sw.primary["line"])
        breaks = " ".join(sw.breaks) if sw.breaks else "(none cited)"
        tests = sw.tests or [None]
        total = sum(t.time or 0 for t in sw.tests) if ran and sw.tests else None
        for k, t in enumerate(tests):
            if t is None:
                by = "-"
            else:
                by = t.name
                if ran and t.status != PASSED:
                    by += " (%s)" % t.status
                elif not ran and not t.built:
                    by += " (not built)"
            if k == 0:
                rows.append([sw.short, sw.contract, breaks, by, fmt_time(total),
                             verdict(sw, ran), where])
            else:
                rows.append(["", "", "", by, "", "", ""])
    head = ["mutant", "contract", "breaks", "caught by", "time", "verdict", "where"]
    widths = [max(len(r[i]) for r in rows + [head]) for i in range(len(head))]
    out = []
    line = lambda r: "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip()
    out.append(line(head))
    out.append("  ".join("-" * w for w in widths))
    out += [line(r) for r in rows]
    return out


def summarize(switches, tests, ran):
    per = {c: {"mutants": 0, "caught": 0, "with_test": 0} for c in CONTRACTS}
    for sw in switches.values():
        c = per.setdefault(sw.contract, {"mutants": 0, "caught": 0, "with_test": 0})
        c["mutants"] += 1
        c["with_test"] += 1 if sw.tests else 0
        c["caught"] += 1 if verdict(sw, ran) == "caught" else 0
    problems = []
    for sw in sorted(switches.values(), key=lambda s: s.name):
        v = verdict(sw, ran)
        if sw.error:
            problems.append("%s: its patch does not apply, so its ctests fail: %s" % (sw.name, sw.error))
            continue
        for n in sw.missing:
            problems.append("%s: its declared ctest %s is not in this build dir (is its suite "
                            "built? does the suite call turnstile_mutant_tests?)" % (sw.name, n))
        if v == "no test" and not sw.missing:
            problems.append("%s (%s) has no mutant ctest" % (sw.name, sw.primary["file"]))
        elif ran and v != "caught":
            for t in sw.tests:
                if t.status != PASSED:
                    what = {FAILED: "failed: the mutant is NOT caught",
                            NOT_BUILT: "was not built", NOT_RUN: "did not run"}[t.status]
                    problems.append("%s: %s %s%s" % (sw.name, t.name, what,
                                                     " (%s)" % t.message if t.message else ""))
    for t in tests:
        if not t.switch:
            problems.append("%s is declared by no mutant (a `.mutant.` ctest needs a "
                            "turnstile_mutant(... CAUGHT_BY %s ...) in "
                            "checks/mutants/CMakeLists.txt)" % (t.name, t.name))
    warnings = []
    for sw in sorted(switches.values(), key=lambda s: s.name):
        if not sw.breaks:
            warnings.append("%s cites no rule or invariant ID" % sw.name)
        elif sw.contract in CONTRACTS and \
                sw.contract not in {ID_CONTRACT.get(i.split("-", 1)[0]) for i in sw.breaks}:
            warnings.append("%s is declared in contract %s but breaks no rule of it (%s)"
                            % (sw.name, sw.contract, " ".join(sw.breaks)))
    short = [c for c in CONTRACTS if per[c]["mutants"] < TARGET_PER_CONTRACT]
    return per, problems, warnings, short


def json_doc(switches, tests, ran, mode, elapsed, build_dir, root, per, problems, warnings, ok):
    """The --json document."""
    doc = {
        "build_dir": rel(build_dir, root), "mode": mode, "ok": ok,
        "target_per_contract": TARGET_PER_CONTRACT,
        "elapsed": elapsed,
        "mutants": [{
            "mutant": sw.name, "contract": sw.contract,
            "breaks": sw.breaks, "description": sw.description,
            "patch": sw.patch, "files": sw.files, "library": sw.library,
            "patch_error": sw.error or None, "locations": sw.locations,
            "missing_tests": sw.missing,
            "verdict": verdict(sw, ran),
            "time": sum(t.time or 0 for t in sw.tests) if ran and sw.tests else None,
            "tests": [{
                "name": t.name, "registered_at": t.registered_at, "mapped_by": t.mapped_by,
                "executable": rel(t.executable, root) if t.executable else None,
                "built": t.built, "status": t.status, "time": t.time,
                "message": t.message, "command": t.command,
            } for t in sw.tests],
        } for sw in sorted(switches.values(), key=lambda s: s.name)],
        "unmapped_tests": [{"name": t.name, "candidates": t.candidates,
                            "registered_at": t.registered_at}
                           for t in tests if not t.switch],
        "contracts": {c: dict(per[c], shortfall=max(0, TARGET_PER_CONTRACT - per[c]["mutants"]))
                      for c in per},
        "problems": problems, "warnings": warnings,
    }
    return doc



def print_text(switches, tests, ran, mode, elapsed, build_dir, root, per, problems, warnings, short,
               junit_args, ok):
    """The table, the counts per contract, the warnings and problems, the verdict line."""
    how = {"list": "listed, not run", "run": "ran `ctest -R '\\.mutant\\.'`",
           "junit": "results from " + ", ".join(junit_args)}[mode]
    print("mutation score of %s (%s)" % (rel(build_dir, root), how))
    print()
    for l in render_table(switches, ran):
        print(l)
    print()
    print("target: %d per contract" % TARGET_PER_CONTRACT)
    for c in list(CONTRACTS) + [c for c in per if c not in CONTRACTS]:
        n = per[c]
        count = "%2d mutant%s," % (n["mutants"], "" if n["mutants"] == 1 else "s")
        if ran:
            line = "  %-12s %-12s %2d caught" % (c, count, n["caught"])
        else:
            line = "  %-12s %-12s %2d with a ctest" % (c, count, n["with_test"])
        if c in short:
            line += "   (short of the target by %d)" % (TARGET_PER_CONTRACT - n["mutants"])
        print(line)
    if short:
        print("warning: shortfall: %s below %d mutants"
              % (", ".join("%s (%d)" % (c, per[c]["mutants"]) for c in short), TARGET_PER_CONTRACT))
    for w in warnings:
        print("warning: " + w)
    total = len(switches)
    caught = sum(1 for s in switches.values() if verdict(s, ran) == "caught")
    if problems:
        print()
        for p in problems:
            print("error: " + p)
    print()
    if ran:
        tail = " in %.1fs" % elapsed if elapsed is not None else ""
        print("mutation-score: %d/%d mutants caught (%d mutant ctests%s)%s"
              % (caught, total, len(tests), tail, "" if ok else ": FAILED"))
    else:
        with_test = sum(1 for s in switches.values() if s.tests)
        print("mutation-score: %d mutants, %d with a mutant ctest (%d mutant ctests)%s"
              % (total, with_test, len(tests), "" if ok else ": FAILED"))
    return 0 if ok else 1

