"""Shared helpers and constants of mutation-score: contracts, rule IDs, paths."""

import os
import re
import sys

TARGET_PER_CONTRACT = 5
CONTRACTS = ("runtime", "fiber-local", "lane", "turns")

# Rule and invariant ID prefixes -> contract: a declared CONTRACT that none of the
# mutant's IDs belongs to is reported (a warning).
ID_CONTRACT = {
    "RT": "runtime", "COMP": "runtime", "READY": "runtime",
    "FL": "fiber-local", "FRAME": "fiber-local",
    "LANE": "lane",
    "TURN": "turns", "CHAIN": "turns", "WAIT": "turns",
}

ID_RE = re.compile(r"\[([A-Z][A-Z0-9]*-[A-Z0-9]+(?:\.[A-Z0-9]+)*)\]")
def die(msg):
    """An environment or usage problem (not a mutation-score verdict): exit 2."""
    print("mutation-score: " + msg, file=sys.stderr)
    sys.exit(2)


def rel(path, root):
    try:
        r = os.path.relpath(path, root)
    except ValueError:
        return path
    return path if r.startswith("..") else r


def ids_in(text):
    return [m.group(1) for m in ID_RE.finditer(text or "")]


def uniq(seq):
    seen, out = set(), []
    for x in seq:
        if x not in seen:
            seen.add(x)
            out.append(x)
    return out


def contract_of_ids(ids):
    votes = [ID_CONTRACT[i.split("-", 1)[0]] for i in ids if i.split("-", 1)[0] in ID_CONTRACT]
    if not votes:
        return None
    # majority, ties broken by the first cited
    return max(uniq(votes), key=lambda c: (votes.count(c), -votes.index(c)))


def read_lines(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read().splitlines()
    except OSError:
        return []
