"""Parse spec/*.md: contracts (one per file of the README's table) and their rules.

A rule is a level-3 heading `### [ID] slug (notes)`, a paragraph (its summary is the
first sentence) and one `verify:` line naming kinds of evidence (model.KINDS).
"""

import os
import re

from .model import KINDS, Contract, Rule

ID_RE = re.compile(r"^[A-Z][A-Z0-9]*-\d+\.\d+$")
RULE_HEADING_RE = re.compile(r"^###\s+\[([^\]]*)\]\s*(.*?)\s*#*\s*$")
ANY_ID_HEADING_RE = re.compile(r"^(#{1,6})\s+\[([A-Z][A-Z0-9]*-[^\]]*)\]")
HEADING_RE = re.compile(r"^(#{1,6})\s")
VERIFY_RE = re.compile(r"^\s*verify\s*:(.*)$")
FENCE_RE = re.compile(r"^\s*(```|~~~)")
README_ROW_RE = re.compile(r"^\|\s*`([^`]+\.md)`\s*\|.*\|\s*`([A-Z][A-Z0-9]*)-`\s*\|\s*$")


def github_anchor(text):
    a = text.strip().lower()
    a = re.sub(r"[^\w\- ]", "", a)
    return a.replace(" ", "-")


def first_sentence(text):
    """The first sentence of `text` (whitespace collapsed); `code` spans are opaque."""
    text = " ".join(text.split())
    in_code = False
    i = 0
    while i < len(text):
        c = text[i]
        if c == "`":
            in_code = not in_code
        elif not in_code and c in ".!?":
            rest = text[i + 1:]
            if rest == "" or (rest[0] == " " and (len(rest) == 1 or not rest[1].islower())):
                word = text[:i].rsplit(" ", 1)[-1].lower()
                if word not in ("e.g", "i.e", "etc", "vs", "cf"):
                    return text[: i + 1]
        i += 1
    return text


SUMMARY_MAX = 200


def shorten(sentence, limit=SUMMARY_MAX):
    """`sentence`, cut to about `limit` characters (at a clause or a word, never inside
    a `code` span) with an ellipsis; the full text is in the spec."""
    if len(sentence) <= limit:
        return sentence
    in_code = False
    clause = word = None
    for i, c in enumerate(sentence[:limit]):
        if c == "`":
            in_code = not in_code
        elif not in_code and c in ";:" and i >= limit // 2:
            clause = i
        elif not in_code and c == " ":
            word = i
    cut = clause if clause is not None else word
    if cut is None:
        return sentence
    return sentence[:cut].rstrip(" ,;:") + " \u2026"


def read_readme_prefixes(root):
    prefixes = {}
    path = os.path.join(root, "spec", "README.md")
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            for line in f:
                m = README_ROW_RE.match(line.strip())
                if m:
                    prefixes[m.group(1)] = m.group(2)
    return prefixes


def parse_spec_file(root, rel, readme_prefixes, diags):
    with open(os.path.join(root, rel), encoding="utf-8") as f:
        lines = f.read().split("\n")
    title = ""
    rules = []
    cur = None       # [rule fields..., body lines]
    in_fence = False

    def finish(c):
        if c is None:
            return
        r, body, verify_line = c
        if verify_line is None and not r.withdrawn:
            diags.error(f"{rel}:{r.line}", f"rule [{r.id}] has no `verify:` line "
                        f"(e.g. `verify: unit, model`)")
        paragraph = []
        for b in body:
            if not b.strip():
                if paragraph:
                    break
                continue
            if FENCE_RE.match(b):
                break
            paragraph.append(b.strip())
        r.summary = shorten(first_sentence(" ".join(paragraph)))
        rules.append(r)

    for n, line in enumerate(lines, 1):
        if FENCE_RE.match(line):
            in_fence = not in_fence
        if in_fence:
            if cur:
                cur[1].append(line)
            continue
        if not title and line.startswith("# "):
            title = line[2:].strip()
        hm = HEADING_RE.match(line)
        if hm:
            m = RULE_HEADING_RE.match(line)
            if m or ANY_ID_HEADING_RE.match(line):
                finish(cur)
                cur = None
                if not m:
                    diags.error(f"{rel}:{n}", f"a rule heading must be level 3 (`### [ID] slug`): {line.strip()}")
                    continue
                rid, rest = m.group(1).strip(), m.group(2)
                if not ID_RE.match(rid):
                    diags.error(f"{rel}:{n}", f"malformed rule ID [{rid}] (want <PREFIX>-<section>.<item>, "
                                f"e.g. [RT-4.2])")
                    continue
                withdrawn = "(withdrawn)" in rest.lower()
                notes = re.findall(r"\(([^)]*)\)", rest)
                slug = re.sub(r"\([^)]*\)", "", rest).strip()
                if not slug:
                    diags.error(f"{rel}:{n}", f"rule [{rid}] has no slug after its ID")
                cur = [Rule(rid, slug, ", ".join(notes), withdrawn, "", [], rel, n,
                            github_anchor(line.lstrip("#").strip())), [], None]
            else:
                finish(cur)
                cur = None
            continue
        if cur is None:
            continue
        vm = VERIFY_RE.match(line)
        if vm:
            r = cur[0]
            if cur[2] is not None:
                diags.error(f"{rel}:{n}", f"rule [{r.id}] has a second `verify:` line")
                continue
            cur[2] = n
            kinds = [k.strip() for k in vm.group(1).split(",") if k.strip()]
            if not kinds and not r.withdrawn:
                diags.error(f"{rel}:{n}", f"rule [{r.id}]: empty `verify:` line")
            for k in kinds:
                if k not in KINDS:
                    diags.error(f"{rel}:{n}", f"rule [{r.id}]: unknown evidence kind '{k}' "
                                f"(kinds: {', '.join(KINDS)})")
                elif k not in r.verify:
                    r.verify.append(k)
            continue
        cur[1].append(line)
    finish(cur)

    base = os.path.basename(rel)
    prefix = readme_prefixes.get(base)
    if prefix is None and rules:
        prefix = rules[0].id.split("-")[0]
    for r in rules:
        if prefix and r.id.split("-")[0] != prefix:
            diags.error(f"{rel}:{r.line}", f"rule [{r.id}] does not carry this file's prefix {prefix}-")
    return Contract(rel, title or base, prefix or "", rules)


def load_rules(root, diags):
    readme_prefixes = read_readme_prefixes(root)
    contracts = []
    spec_dir = os.path.join(root, "spec")
    if not os.path.isdir(spec_dir):
        diags.error("spec/", "no spec/ directory")
        return contracts, {}
    for name in sorted(os.listdir(spec_dir)):
        if not name.endswith(".md") or name in ("README.md", "CATALOGUE.md"):
            continue
        contract = parse_spec_file(root, f"spec/{name}", readme_prefixes, diags)
        # A document with no rules that the README's contract table does not list
        # (trace-format.md, porting.md) is not a contract: it cites rules, it has none.
        if contract.rules or name in readme_prefixes:
            contracts.append(contract)
    # Contracts in the README table's order first, then the rest by name.
    order = list(readme_prefixes)
    contracts.sort(key=lambda c: (order.index(os.path.basename(c.file))
                                  if os.path.basename(c.file) in order else len(order), c.file))
    by_id = {}
    for c in contracts:
        for r in c.rules:
            if r.id in by_id:
                other = by_id[r.id]
                diags.error(f"{r.file}:{r.line}", f"duplicate rule ID [{r.id}] "
                            f"(also {other.file}:{other.line}); IDs are never reused")
            else:
                by_id[r.id] = r
    return contracts, by_id

