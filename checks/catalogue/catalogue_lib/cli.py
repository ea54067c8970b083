"""The command line of checks/catalogue/catalogue: parse, check, render, report.

Exit status: 0 when no check failed, 1 on any error, 2 on bad usage (argparse).
"""

import argparse
import os
import sys

from .check import (attach_results, check_citations, check_rows, check_staleness, evaluate,
                    summarize)
from .model import DEFAULT_IGNORED_CTESTS, KINDS, Diagnostics
from .parse_junit import read_junit
from .parse_spec import load_rules
from .parse_tests import load_tests
from .render import print_table, render_markdown
from .render_html import render_html


def arg_parser(default_root):
    ap = argparse.ArgumentParser(
        prog="checks/catalogue/catalogue",
        description="The spec-mapped test catalogue: rules of spec/*.md <-> `spec:` lines of tests "
                    "<-> ctest results. See spec/README.md, 'The catalogue'.")
    ap.add_argument("--root", default=default_root, help="repository root (default: this checkout)")
    ap.add_argument("--junit", action="append", default=[], metavar="FILE",
                    help="ctest --output-junit report (repeatable; globs allowed, e.g. "
                         "'build/*/ctest-junit-*.xml'; relative paths are from the root)")
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true", help="(re)write spec/CATALOGUE.md")
    mode.add_argument("--check", action="store_true",
                      help="source-only checks (IDs, spec lines, missing kinds, staleness); "
                           "ignores --junit and writes no HTML unless --html is given")
    ap.add_argument("--html", metavar="FILE",
                    help="where to write the HTML page (default: spec/catalogue.html, not with --check)")
    ap.add_argument("--no-html", action="store_true", help="write no HTML page")
    ap.add_argument("--allow-missing", action="append", default=[], metavar="[PREFIX:]KIND",
                    help="a missing KIND of evidence is reported but is not an error (for every "
                         "contract, or only PREFIX's, e.g. LANE:conformance); repeatable")
    ap.add_argument("--ignore-ctest", action="append", default=[], metavar="GLOB",
                    help="ctest names that are not rule evidence, in addition to "
                         + ", ".join(DEFAULT_IGNORED_CTESTS))
    ap.add_argument("--quiet", action="store_true", help="no verdict table, only problems and the summary")
    return ap


def main(argv=None, default_root=None):
    if default_root is None:
        here = os.path.dirname(os.path.abspath(__file__))
        default_root = os.path.normpath(os.path.join(here, "..", "..", ".."))
    ap = arg_parser(default_root)
    args = ap.parse_args(argv)
    for a in args.allow_missing:
        if a.split(":")[-1] not in KINDS:
            ap.error(f"--allow-missing {a}: the kind must be one of {', '.join(KINDS)}")

    # parse
    root = os.path.abspath(args.root)
    diags = Diagnostics()
    contracts, by_id = load_rules(root, diags)
    tests = load_tests(root, diags)
    have_junit = bool(args.junit) and not args.check
    if args.junit and args.check:
        diags.warn("--junit", "ignored with --check (source-only checks)")
    junit_files = []

    # check
    check_citations(tests, by_id, diags)
    if have_junit:
        results, junit_files = read_junit(root, args.junit, diags)
        attach_results(tests, results, DEFAULT_IGNORED_CTESTS + tuple(args.ignore_ctest), diags)
    rows = evaluate(contracts, tests, have_junit, set(args.allow_missing), root)
    check_rows(rows, have_junit, root, diags)

    # render: CATALOGUE.md written, or compared with the committed one
    md = render_markdown(contracts, rows)
    md_path = os.path.join(root, "spec", "CATALOGUE.md")
    if args.write:
        with open(md_path, "w", encoding="utf-8", newline="\n") as f:
            f.write(md)
        print("catalogue: wrote spec/CATALOGUE.md")
    else:
        try:
            with open(md_path, encoding="utf-8", newline="") as f:
                committed = f.read()
        except FileNotFoundError:
            committed = None
        check_staleness(committed, md, diags)
    summary = summarize(rows, len(tests))

    html_path = args.html
    if html_path is None and not args.check and not args.no_html:
        html_path = os.path.join(root, "spec", "catalogue.html")
    if html_path and not args.no_html:
        html_path = os.path.abspath(html_path)
        os.makedirs(os.path.dirname(html_path), exist_ok=True)
        page = render_html(contracts, rows, have_junit, junit_files, diags,
                           os.path.dirname(html_path), root, summary)
        with open(html_path, "w", encoding="utf-8") as f:
            f.write(page)

    report(args, contracts, rows, have_junit, diags, html_path, summary, sys.stdout)
    return 1 if diags.errors else 0


def report(args, contracts, rows, have_junit, diags, html_path, summary, out):
    if not args.quiet:
        print_table(contracts, rows, have_junit, out)
        out.write("\n")
    for w in diags.warnings:
        out.write(f"catalogue: warning: {w}\n")
    for e in diags.errors:
        out.write(f"catalogue: error: {e}\n")
    if html_path and not args.no_html:
        shown = os.path.relpath(html_path, os.getcwd())
        out.write(f"catalogue: HTML page: {html_path if shown.startswith('..') else shown}\n")
    status = "FAILED" if diags.errors else "ok"
    out.write(f"{summary}; {len(diags.errors)} errors, {len(diags.warnings)} warnings: {status}\n")
