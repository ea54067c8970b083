"""Render spec/catalogue.html: rules down, kinds of evidence across, each cell the tests
citing the rule (linked to their file and line: the page is generated, not committed)
in the colours of a run. Self-contained: no script, no external resource."""

import html
import os
import re

from .model import KINDS
from .parse_junit import FAILED, NOT_RUN, PASSED


STATE_STYLE = {
    # state: (background, border, legend text)
    PASSED: ("#c9efcf", "#2e9e44", "all tests passed"),
    FAILED: ("#f8c4c4", "#c62828", "a test failed"),
    "missing": ("#ffe0a3", "#d98b00", "required, no test yet"),
    NOT_RUN: ("#d6e4f5", "#4a78b0", "tests did not run"),
    "untested": ("#e8eef7", "#8aa0bf", "tests listed, no run read"),
    "none": ("#eeeeee", "#cccccc", "not required, no test"),
}

VERDICT_TEXT = {PASSED: "#1b6e2e", FAILED: "#a31515", "missing": "#7a4a00", NOT_RUN: "#2f5d91",
                "untested": "#4f6685", "none": "#666666"}

VERDICT_CLASS = {PASSED: PASSED, FAILED: FAILED, "missing": "missing", NOT_RUN: NOT_RUN,
                 "untested": "untested", "withdrawn": "none"}

GLYPH = {PASSED: "\u2713", FAILED: "\u2717", NOT_RUN: "\u25cb", "untested": "\u2022"}


def css(state):
    """A state as a CSS class name part (no spaces): `not run` -> `not-run`."""
    return state.replace(" ", "-")


def inline_md(s):
    """Escape for HTML, rendering `code` spans."""
    parts = s.split("`")
    out = []
    for i, p in enumerate(parts):
        out.append(f"<code>{html.escape(p)}</code>" if i % 2 else html.escape(p))
    return "".join(out)


def breakable(name):
    """A test name for a narrow cell: muted `Suite.`, line breaks allowed between words."""
    def words(s):
        return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=_)", "<wbr>", html.escape(s))
    if "." in name:
        suite, rest = name.rsplit(".", 1)
        return f"<span class=\"suite\">{words(suite)}.</span><wbr>{words(rest)}"
    return words(name)


def render_html(contracts, rows, have_junit, junit_files, diags, html_dir, root, summary):
    def link(path, line):
        rel = os.path.relpath(os.path.join(root, path), html_dir).replace(os.sep, "/")
        return f"{html.escape(rel)}#L{line}"

    style = """
body { font: 14px/1.35 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif;
       margin: 20px 24px; color: #1d2329; background: #fff; }
h1 { font-size: 22px; margin: 0 0 4px; }
.sub { color: #56606b; margin: 0 0 12px; }
.summary { font-size: 16px; font-weight: 600; margin: 8px 0 12px; }
.legend { display: flex; flex-wrap: wrap; gap: 14px; margin: 0 0 16px; font-size: 13px; }
.legend span.sw { display: inline-block; width: 22px; height: 14px; border: 1px solid;
                  vertical-align: -2px; margin-right: 5px; }
table { border-collapse: collapse; width: 100%; table-layout: fixed; }
th, td { border: 1px solid #c9ced4; padding: 5px 7px; vertical-align: top; text-align: left; }
thead th { background: #2b3440; color: #fff; position: sticky; top: 0; font-weight: 600; }
col.rule { width: 27%; } col.verdict { width: 7%; }
tr.contract th { background: #dfe5ec; color: #1d2329; font-size: 15px; padding: 8px 7px; }
tr.contract th small { font-weight: 400; color: #56606b; margin-left: 8px; }
td.rule .id { font-weight: 700; font-family: ui-monospace, "DejaVu Sans Mono", monospace; }
td.rule .slug { font-family: ui-monospace, "DejaVu Sans Mono", monospace; color: #34495e; }
td.rule .note { color: #8a5a00; font-size: 12px; }
td.rule .text { color: #3d4650; font-size: 12.5px; margin-top: 2px; }
td.rule .verify { color: #56606b; font-size: 12px; margin-top: 2px; }
td.cell { font-size: 12.5px; line-height: 1.3; }
td.cell a { color: #123c69; text-decoration: none; display: flex; gap: 3px; margin: 0 0 3px;
            align-items: baseline; }
td.cell a:hover { text-decoration: underline; }
td.cell a .n { overflow-wrap: anywhere; min-width: 0; }
td.cell a .n .suite { color: #56606b; }
td.cell .g { flex: none; width: 1em; font-weight: 700; }
td.cell a.t-passed .g { color: #2e7d32; } td.cell a.t-failed .g { color: #c62828; }
td.cell a.t-failed .n { font-weight: 700; } td.cell a.t-not-run .g { color: #4a78b0; }
td.cell .empty { color: #777; }
td.cell .req { font-weight: 700; color: #7a4d00; }
td.verdict { font-weight: 700; text-transform: uppercase; font-size: 12.5px; }
code { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 92%;
       background: rgba(0,0,0,.05); padding: 0 2px; border-radius: 2px; }
.problems { margin-top: 20px; }
.problems li { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 12.5px; }
.problems .err { color: #b71c1c; } .problems .warn { color: #8a5a00; }
"""
    style += f"col.kind {{ width: {66 / len(KINDS):.1f}%; }}\n"
    for state, (bg, border, _) in STATE_STYLE.items():
        style += f".s-{css(state)} {{ background: {bg}; }}\n"
        style += f".legend .sw.s-{css(state)} {{ border-color: {border}; }}\n"
        style += f"td.verdict.s-{css(state)} {{ color: {VERDICT_TEXT.get(state, border)}; }}\n"

    def shown(f):
        rel = os.path.relpath(f, root)
        return f if rel.startswith("..") else rel

    source = ("results of " + ", ".join(html.escape(shown(f)) for f in junit_files)
              if have_junit else "sources only: no ctest JUnit report given (--junit), so no pass/fail")
    h = ["<!DOCTYPE html>", "<html lang=\"en\"><head><meta charset=\"utf-8\">",
         "<title>turnstile: spec catalogue</title>", f"<style>{style}</style></head><body>",
         "<h1>turnstile: the spec catalogue</h1>",
         f"<p class=\"sub\">Every rule of <code>spec/</code> (down) against the kinds of evidence "
         f"(across); each cell lists the tests citing the rule, linked to their file and line. "
         f"Generated by <code>checks/catalogue/catalogue</code> from {source}.</p>",
         f"<p class=\"summary\">{html.escape(summary)}</p>"]
    # The same rules across implementations (turnstile, its ports, real
    # libraries): the conformance matrix the peers' ctests generate.
    matrix = os.path.join(root, "checks", "conformance", "peers", "MATRIX.md")
    if os.path.exists(matrix):
        rel_matrix = os.path.relpath(matrix, html_dir).replace(os.sep, "/")
        h.append(f"<p class=\"sub\">How other implementations fare on the rules a trace shows: the "
                 f"<a href=\"{html.escape(rel_matrix)}\">conformance matrix</a> (rule &times; implementation: "
                 f"turnstile, the Node port, asio::strand, CAF, p-queue, async-mutex, AsyncLocalStorage), "
                 f"generated from the peers' ctests by <code>checks/conformance/peers/make_matrix.mjs</code>.</p>")
    h.append("<div class=\"legend\">")
    for state, (_, _, text) in STATE_STYLE.items():
        if state == "untested" and have_junit or state == NOT_RUN and not have_junit:
            continue
        h.append(f"<span><span class=\"sw s-{css(state)}\"></span>{html.escape(text)}</span>")
    h.append("</div>")
    h.append("<table><colgroup><col class=\"rule\">" + "<col class=\"kind\">" * len(KINDS)
             + "<col class=\"verdict\"></colgroup>")
    h.append("<thead><tr><th>rule</th>" + "".join(f"<th>{k}</th>" for k in KINDS)
             + "<th>verdict</th></tr></thead><tbody>")
    by_id = {row.rule.id: row for row in rows}
    for c in contracts:
        rs = [by_id[r.id] for r in c.rules if r.id in by_id]
        counts = {}
        for row in rs:
            counts[row.verdict] = counts.get(row.verdict, 0) + 1
        cnt = ", ".join(f"{v} {k}" for k, v in sorted(counts.items()))
        h.append(f"<tr class=\"contract\"><th colspan=\"{len(KINDS) + 2}\">{html.escape(c.title)}"
                 f"<small><code>{html.escape(c.file)}</code> &middot; {len(rs)} rules &middot; "
                 f"{html.escape(cnt)}</small></th></tr>")
        for row in rs:
            r = row.rule
            rel_spec = os.path.relpath(os.path.join(root, r.file), html_dir).replace(os.sep, "/")
            note = f" <span class=\"note\">({html.escape(r.note)})</span>" if r.note else ""
            h.append(f"<tr id=\"{html.escape(r.id)}\"><td class=\"rule\">"
                     f"<a class=\"id\" href=\"{html.escape(rel_spec)}#{html.escape(r.anchor)}\">"
                     f"{html.escape(r.id)}</a> <span class=\"slug\">{html.escape(r.slug)}</span>{note}"
                     f"<div class=\"text\">{inline_md(r.summary) if not r.withdrawn else '<i>withdrawn</i>'}</div>"
                     + (f"<div class=\"verify\">verify: {html.escape(', '.join(r.verify))}</div>"
                        if r.verify else "") + "</td>")
            for k in KINDS:
                cell = row.cells[k]
                items = []
                for t in cell.tests:
                    line = t.line if t.gtest or t.static else t.ids[r.id]
                    st = t.status(have_junit)
                    items.append(f"<a class=\"t-{css(st)}\" href=\"{link(t.file, line)}\" title=\"{html.escape(t.file)}:{line} "
                                 f"({st})\"><span class=\"g\">{GLYPH[st]}</span><span class=\"n\">{breakable(t.name)}</span></a>")
                if not items:
                    if cell.state == "missing":
                        items.append("<span class=\"req\">required, no test"
                                     + (" (allowed for now)" if cell.allowed else "") + "</span>")
                    else:
                        items.append("<span class=\"empty\">&mdash;</span>")
                h.append(f"<td class=\"cell s-{css(cell.state)}\">{''.join(items)}</td>")
            vc = VERDICT_CLASS[row.verdict]
            h.append(f"<td class=\"verdict s-{css(vc)}\">{html.escape(row.verdict)}</td></tr>")
    h.append("</tbody></table>")
    if diags.errors or diags.warnings:
        h.append("<div class=\"problems\"><h2>Problems</h2><ul>")
        for e in diags.errors:
            h.append(f"<li class=\"err\">error: {html.escape(e)}</li>")
        for w in diags.warnings:
            h.append(f"<li class=\"warn\">warning: {html.escape(w)}</li>")
        h.append("</ul></div>")
    h.append("</body></html>")
    return "\n".join(h) + "\n"

