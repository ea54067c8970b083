#!/usr/bin/env python3
"""Writes the compile database the static checks analyse, from a build directory's.

    compdb.py --root REPO --in BUILD/compile_commands.json --out DIR [--for-clang]

The build's database holds every target: the library, the tests, and the mutant
builds that recompile impl/src with a mutant's patched headers first on the include
path (<build>/mutants/<NAME>/impl/include: planted bugs the model and property
suites must catch, checks/mutants/). The static checks look at the product only:

  - one entry per impl/src/*.cpp, taken from the library's own command (no
    mutant include path);
  - one entry for checks/static/umbrella.cpp (includes turnstile/turnstile.hpp, so
    every public header is analysed, also those no source file includes), compiled
    with the same flags as the library.

It fails (exit 1, with the reason) when the database is stale (a source file of
impl/src that it does not list: re-run `cmake --preset ...`) or when the umbrella
header does not include every header of impl/include/turnstile/. With --for-clang it
also drops the few GCC-only options clang's frontend (clang-tidy) rejects.
"""
import argparse
import json
import os
import re
import shlex
import sys

# GCC-only options that clang rejects as unknown arguments (clang-tidy would report
# them as clang-diagnostic-error). Unknown -W options are handled by the caller with
# -Wno-unknown-warning-option instead.
GCC_ONLY = [
    re.compile(r"^-fconcepts-diagnostics-depth=.*$"),
    re.compile(r"^-fcoroutines$"),
    re.compile(r"^-fno-semantic-interposition$"),
    re.compile(r"^-fstack-clash-protection$"),
]

# A mutant's scratch include directory (checks/mutants/mutants.cmake), as -I<dir> or
# the argument after -I / -isystem.
MUTANT = re.compile(r"(^|/)mutants/[A-Z][A-Z0-9_]*/impl/include/?$")


def entry_args(entry):
    if "arguments" in entry:
        return list(entry["arguments"])
    return shlex.split(entry["command"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", required=True)
    ap.add_argument("--in", dest="src", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--for-clang", action="store_true")
    args = ap.parse_args()

    root = os.path.realpath(args.root)
    src_dir = os.path.join(root, "impl", "src")
    umbrella = os.path.join(root, "checks", "static", "umbrella.cpp")
    try:
        with open(args.src, encoding="utf-8") as f:
            db = json.load(f)
    except (OSError, ValueError) as e:
        print(f"compdb.py: cannot read {args.src}: {e}", file=sys.stderr)
        return 1

    picked = {}
    for entry in db:
        path = os.path.realpath(os.path.join(entry.get("directory", ""), entry["file"]))
        if os.path.dirname(path) != src_dir or not path.endswith(".cpp"):
            continue
        argv = entry_args(entry)
        if any(MUTANT.search(a) for a in argv):
            continue  # a mutant build of the same file: planted bugs, not the product
        picked.setdefault(path, (entry, argv))

    wanted = sorted(os.path.join(src_dir, n) for n in os.listdir(src_dir) if n.endswith(".cpp"))
    missing = [p for p in wanted if p not in picked]
    if missing:
        print("compdb.py: " + args.src + " is stale, it has no library entry for: "
              + ", ".join(os.path.relpath(p, root) for p in missing)
              + "\n  re-run the configure step (e.g. `cmake --preset default`)", file=sys.stderr)
        return 1

    out_entries = []
    for path in wanted:
        entry, argv = picked[path]
        if args.for_clang:
            argv = [a for a in argv if not any(p.match(a) for p in GCC_ONLY)]
        out_entries.append({"directory": entry["directory"], "file": path, "arguments": argv})

    # The umbrella TU: the first library command, with its source and object swapped.
    entry, argv = picked[wanted[0]]
    if args.for_clang:
        argv = [a for a in argv if not any(p.match(a) for p in GCC_ONLY)]
    uargv = []
    skip = False
    for a in argv:
        if skip:
            skip = False
            continue
        if a == "-o":
            uargv += ["-o", os.path.join(os.path.realpath(args.out), "umbrella.cpp.o")]
            skip = True
        elif os.path.realpath(os.path.join(entry["directory"], a)) == wanted[0]:
            uargv.append(umbrella)
        else:
            uargv.append(a)
    out_entries.append({"directory": entry["directory"], "file": umbrella, "arguments": uargv})

    # The umbrella TU reaches every public header only if turnstile.hpp names them all.
    inc_dir = os.path.join(root, "impl", "include", "turnstile")
    with open(os.path.join(inc_dir, "turnstile.hpp"), encoding="utf-8") as f:
        named = set(re.findall(r'#include\s+"turnstile/([^"/]+\.hpp)"', f.read()))
    unnamed = sorted(n for n in os.listdir(inc_dir)
                     if n.endswith(".hpp") and n != "turnstile.hpp" and n not in named)
    if unnamed:
        print("compdb.py: impl/include/turnstile/turnstile.hpp (the umbrella header) does not "
              "include: " + ", ".join(unnamed) + "\n  add them there, so that the static "
              "checks (and users of the umbrella) see them", file=sys.stderr)
        return 1

    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "compile_commands.json"), "w", encoding="utf-8") as f:
        json.dump(out_entries, f, indent=1)
        f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
