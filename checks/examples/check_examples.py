#!/usr/bin/env python3
"""checks/examples/check_examples.py: every documented example is a compiled test.

The examples of README.md (every ```cpp block) and of the public headers (the
code block right after a header's title paragraph, in impl/include/turnstile/)
are compiled and run from checks/examples/*.cpp. Each example file holds the
documented code verbatim between two marker lines:

    // doc: README.md                      (or impl/include/turnstile/<h>.hpp)
    ...the block, exactly as documented (indentation may differ as a whole)...
    // end doc

This script fails (exit 1, one line per problem, `file:line: message`) when
  - a marked region differs from every example block of the file it names
    (the doc or the example changed without the other; a diff is shown),
  - a README ```cpp block or a header example block is in no region
    (an example that is not compiled and run),
  - a marker is malformed (no `// end doc`, an unknown doc file).

usage:
  check_examples.py [--root DIR]   check the tree (default: this repository)
  check_examples.py --self-test    prove the check fires: copies of this tree
                                   with one drifted line, and with an example
                                   file removed, must both fail
Stdlib only.
"""

import argparse
import difflib
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))
BEGIN_RE = re.compile(r"^\s*// doc: (\S+)\s*$")
END_RE = re.compile(r"^\s*// end doc\s*$")
FENCE_RE = re.compile(r"^\s*```(\S*)\s*$")


def normalise(lines):
    """Trailing spaces off, blank lines at both ends off, common indentation off."""
    lines = [l.rstrip() for l in lines]
    while lines and not lines[0]:
        lines.pop(0)
    while lines and not lines[-1]:
        lines.pop()
    indents = [len(l) - len(l.lstrip(" ")) for l in lines if l]
    cut = min(indents) if indents else 0
    return tuple(l[cut:] for l in lines)


def readme_blocks(path):
    """(line, block) for every ```cpp fenced block of a markdown file."""
    out, block, start, lang = [], None, 0, None
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            m = FENCE_RE.match(line)
            if block is None and m:
                block, start, lang = [], n + 1, m.group(1)
            elif block is not None and m and not m.group(1):
                if lang in ("cpp", "c++"):
                    out.append((start, normalise(block)))
                block = None
            elif block is not None:
                block.append(line.rstrip("\n"))
    return out


def header_blocks(path):
    """(line, block) for a header's example: the indented comment block right
    after the title paragraph of its leading comment (blank `//` lines inside
    it allowed), unless that block is a bullet list."""
    with open(path, encoding="utf-8") as f:
        lines = [l.rstrip("\n") for l in f]
    lead = []
    for l in lines:
        if not l.startswith("//"):
            break
        lead.append(l)
    i = 0
    while i < len(lead) and lead[i].strip() != "//":  # the title paragraph
        i += 1
    while i < len(lead) and lead[i].strip() == "//":
        i += 1
    start, block = i + 1, []
    while i < len(lead):
        l = lead[i]
        if l.strip() == "//":
            block.append("")
        elif l.startswith("//  "):
            block.append(l[2:])
        else:
            break
        i += 1
    block = normalise(block)
    if not block or block[0].startswith("- "):
        return []
    return [(start, block)]


def doc_blocks(root, rel):
    path = os.path.join(root, rel)
    if rel.endswith(".md"):
        return readme_blocks(path)
    return header_blocks(path)


def regions(path):
    """(line, doc, block) for each marked region of an example file; errors."""
    out, errs = [], []
    with open(path, encoding="utf-8") as f:
        lines = [l.rstrip("\n") for l in f]
    i = 0
    while i < len(lines):
        m = BEGIN_RE.match(lines[i])
        if not m:
            i += 1
            continue
        start, doc, body = i + 1, m.group(1), []
        i += 1
        while i < len(lines) and not END_RE.match(lines[i]):
            body.append(lines[i])
            i += 1
        if i == len(lines):
            errs.append(f"{path}:{start}: '// doc: {doc}' has no '// end doc' line")
            break
        out.append((start, doc, normalise(body)))
        i += 1
    return out, errs


def check(root):
    rel = lambda p: os.path.relpath(p, root)
    errors = []
    docs = ["README.md"] + sorted(
        rel(p) for p in glob.glob(os.path.join(root, "impl/include/turnstile/*.hpp")))
    blocks = {d: doc_blocks(root, d) for d in docs}
    covered = set()
    count = 0
    for ex in sorted(glob.glob(os.path.join(root, "checks/examples/*.cpp"))):
        found, errs = regions(ex)
        errors += [e.replace(ex, rel(ex)) for e in errs]
        for line, doc, body in found:
            count += 1
            where = f"{rel(ex)}:{line}"
            if doc not in blocks:
                errors.append(f"{where}: '// doc: {doc}' names no documented file "
                              f"(README.md or impl/include/turnstile/*.hpp)")
                continue
            match = [(n, b) for n, b in blocks[doc] if b == body]
            if match:
                covered.update((doc, n) for n, _ in match)
                continue
            # The closest documented block, to show what drifted.
            best = max(blocks[doc], default=None,
                       key=lambda nb: difflib.SequenceMatcher(None, nb[1], body).ratio())
            msg = f"{where}: this example differs from every example block of {doc}"
            if best:
                diff = difflib.unified_diff(list(best[1]), list(body),
                                            f"{doc}:{best[0]}", where, lineterm="", n=1)
                msg += "\n    " + "\n    ".join(diff)
            errors.append(msg)
    for doc in docs:
        for n, _ in blocks[doc]:
            if (doc, n) not in covered:
                kind = "```cpp block" if doc.endswith(".md") else "example block"
                errors.append(f"{doc}:{n}: this {kind} is in no example of checks/examples/ "
                              f"(add it between '// doc: {doc}' and '// end doc' lines)")
    for e in errors:
        print(e)
    ndoc = sum(len(b) for b in blocks.values())
    if errors:
        print(f"check_examples: FAILED, {len(errors)} problem(s)")
        return 1
    print(f"check_examples: {count} examples, {ndoc} documented blocks, all in sync")
    return 0


def self_test():
    """The check must fire on drift and on an uncovered block."""
    def copy_tree(dst):
        os.makedirs(os.path.join(dst, "impl/include"), exist_ok=True)
        shutil.copy(os.path.join(REPO, "README.md"), dst)
        shutil.copytree(os.path.join(REPO, "impl/include/turnstile"),
                        os.path.join(dst, "impl/include/turnstile"))
        os.makedirs(os.path.join(dst, "checks"), exist_ok=True)
        shutil.copytree(HERE, os.path.join(dst, "checks/examples"),
                        ignore=shutil.ignore_patterns("__pycache__"))

    def run(root):
        p = subprocess.run([sys.executable, __file__, "--root", root],
                           capture_output=True, text=True)
        return p.returncode, p.stdout

    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        good = os.path.join(tmp, "good")
        copy_tree(good)
        rc, out = run(good)
        if rc != 0:
            print("self-test: the unmodified tree fails:\n" + out)
            failures += 1

        drift = os.path.join(tmp, "drift")
        copy_tree(drift)
        h = os.path.join(drift, "impl/include/turnstile/activation.hpp")
        text = open(h, encoding="utf-8").read()
        assert "std::move(add_item)" in text, "self-test: activation.hpp's example moved"
        open(h, "w", encoding="utf-8").write(text.replace("std::move(add_item)", "add_item", 1))
        rc, out = run(drift)
        if rc == 0 or "activation_example.cpp" not in out or "differs from every" not in out:
            print("self-test: a drifted header example was not reported:\n" + out)
            failures += 1

        gone = os.path.join(tmp, "uncovered")
        copy_tree(gone)
        os.remove(os.path.join(gone, "checks/examples/readme_gcc12_example.cpp"))
        rc, out = run(gone)
        if rc == 0 or not re.search(r"README\.md:\d+: this ```cpp block is in no example", out):
            print("self-test: a README block without an example was not reported:\n" + out)
            failures += 1
    print("check_examples self-test: " + ("FAILED" if failures else "drift and gaps are reported"))
    return 1 if failures else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default=REPO)
    ap.add_argument("--self-test", action="store_true")
    a = ap.parse_args()
    return self_test() if a.self_test else check(a.root)


if __name__ == "__main__":
    sys.exit(main())
