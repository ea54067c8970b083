#!/usr/bin/env python3
"""impl/bench/plot/bench_plot.py: the scale curves of scale_bench as SVG charts.

usage: bench_plot.py --out DIR [--table FILE] [--note TEXT]... RESULTS.json...

Reads Google Benchmark JSON (--benchmark_format=json; the median aggregate of a
benchmark wins over its single runs, as in ci/bench) and writes into DIR:
  scale_lanes.svg     ns per item vs lanes (log x): StateLane and asio::strand,
                      one pair of lines per carrier count
  scale_carriers.svg  ns per item vs carriers (log x): run() round trip and
                      try_post throughput, each beside its strand peer
  scale_depth.svg     ns per get / capture vs `where` depth (log x, log y)
  ratios.md           the ratio at every point (turnstile / strand; a depth curve
                      / its own depth-1 point) and, with --table, the table ci/bench
                      printed, verbatim
Cost per item is 1e9 / items_per_second: wall time for the rows that cross threads
(UseRealTime), CPU time for the single-thread depth rows. Every series of every chart
must be present with every point, none in error: otherwise nothing is written, the
missing pieces are listed on stderr and the exit status is 1. Python stdlib only.
"""
import argparse
import json
import math
import pathlib
import re
import sys
from xml.sax.saxutils import escape

LANES = [1, 10, 100, 1000, 10000, 100000]
DEPTHS = [1, 10, 100, 1000]
COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf", "#e377c2"]


class Family:
    """Series named by `label` ({g}: the group captured by the pattern), one per group."""

    def __init__(self, label, pattern, color, dashed=False):
        self.label, self.pattern = label, re.compile(pattern + "$")
        self.color, self.dashed = color, dashed


class Chart:
    def __init__(self, name, title, xlabel, ylabel, families, xs=None, ylog=False, pairs=(),
                 vs_first=False):
        self.name, self.title, self.xlabel, self.ylabel = name, title, xlabel, ylabel
        self.families, self.xs, self.ylog = families, xs, ylog
        self.pairs, self.vs_first = pairs, vs_first  # ratio table: (num, den) family indices


CHARTS = [
    Chart("scale_lanes", "Cost per item vs number of lanes (100,000 items per round, round robin)",
          "lanes (log)", "ns per item (wall)",
          [Family("StateLane, {g} carrier{s}",
                  r"BM_Scale_Lanes/lanes:(?P<x>\d+)/carriers:(?P<g>\d+)/real_time", "g"),
           Family("asio::strand, {g} thread{s}",
                  r"BM_Scale_StrandLanes/lanes:(?P<x>\d+)/threads:(?P<g>\d+)/real_time", "g", True)],
          xs=LANES, pairs=[(0, 1)]),
    Chart("scale_carriers", "Cost per item vs carriers (one lane; 1, 2 and the machine's cores)",
          "carriers (log)", "ns per item (wall)",
          [Family("StateLane run() round trip",
                  r"BM_Scale_LaneRoundTrip/carriers:(?P<x>\d+)/real_time", 0),
           Family("asio::strand round trip",
                  r"BM_Scale_StrandRoundTrip/threads:(?P<x>\d+)/real_time", 0, True),
           Family("StateLane try_post", r"BM_Scale_LanePost/carriers:(?P<x>\d+)/real_time", 1),
           Family("asio::strand post", r"BM_Scale_StrandPost/threads:(?P<x>\d+)/real_time", 1, True)],
          pairs=[(0, 1), (2, 3)]),
    Chart("scale_depth", "FiberLocal get (outermost key) and capture vs where depth",
          "bindings in the chain (log)", "ns per operation (CPU, log)",
          [Family("get, plain thread", r"BM_Scale_Get/thread/depth:(?P<x>\d+)", 0),
           Family("get, in a fiber", r"BM_Scale_Get/fiber/depth:(?P<x>\d+)", 0, True),
           Family("capture, plain thread", r"BM_Scale_Capture/thread/depth:(?P<x>\d+)", 1),
           Family("capture, in a fiber", r"BM_Scale_Capture/fiber/depth:(?P<x>\d+)", 1, True)],
          xs=DEPTHS, ylog=True, vs_first=True),
]


def load(paths):
    """name -> {"ns": cost per item} or {"error": message}; the first context, with the
    largest repetition count seen added as context["repetitions"]."""
    rows, context, reps = {}, {}, 1
    for path in paths:
        data = json.loads(pathlib.Path(path).read_text())
        context = context or data.get("context", {})
        for b in data.get("benchmarks", []):
            name = b.get("run_name", b["name"])
            reps = max(reps, int(b.get("repetitions", 1)))
            if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
                continue
            if b.get("run_type") == "iteration" and name in rows:
                continue  # a median row, when present, wins over a single run
            if b.get("error_occurred"):
                rows[name] = {"error": b.get("error_message", "error")}
            elif not b.get("items_per_second"):
                rows[name] = {"error": "no items_per_second counter"}
            else:
                rows[name] = {"ns": 1e9 / b["items_per_second"]}
    context["repetitions"] = reps
    return rows, context


def collect(chart, rows, problems):
    """[(family index, group, label, {x: ns})], checked complete; problems appended."""
    found = {}  # (family, group) -> {x: row}
    for name, row in rows.items():
        for i, fam in enumerate(chart.families):
            m = fam.pattern.match(name)
            if m:
                g = m.groupdict().get("g") or ""
                if "error" in row:
                    problems.append(f"{chart.name}: {name} reported an error: {row['error']}")
                else:
                    found.setdefault((i, g), {})[int(m["x"])] = row["ns"]
    groups = sorted({g for _, g in found}, key=lambda g: int(g or 0))
    xs = chart.xs or sorted({x for pts in found.values() for x in pts})
    if not groups or len(xs) < 2:
        problems.append(f"{chart.name}: no data (at least two points per series are needed)")
        return []
    series = []
    for i, fam in enumerate(chart.families):
        for g in groups:
            label = fam.label.format(g=g, s="" if g == "1" else "s")
            pts = found.get((i, g))
            if pts is None:
                problems.append(f"{chart.name}: missing series '{label}'")
                continue
            lacking = [x for x in xs if x not in pts]
            if lacking:
                problems.append(f"{chart.name}: series '{label}' lacks x = {lacking}")
                continue
            series.append((i, g, label, {x: pts[x] for x in xs}))
    return series


def fmt(v):
    if v >= 1000 and float(v).is_integer() and v % 1000 == 0:
        return f"{v / 1000:g}k"
    return f"{v:g}"


def fmt_y(v):
    return f"{v:,g}"


def nice_step(span):
    raw = span / 5
    mag = 10 ** math.floor(math.log10(raw))
    return next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)


def svg(chart, series, subtitle):
    W, H, L, R, T, B = 860, 460, 80, 250, 56, 56  # size and margins (legend on the right)
    pw, ph = W - L - R, H - T - B
    xs = sorted({x for *_, pts in series for x in pts})
    ys = [y for *_, pts in series for y in pts.values()]
    lx0, lx1 = math.log10(xs[0]), math.log10(xs[-1])
    pad = 0.06 * (lx1 - lx0)
    lx0, lx1 = lx0 - pad, lx1 + pad
    px = lambda x: L + (math.log10(x) - lx0) / (lx1 - lx0) * pw
    if chart.ylog:
        y0, y1 = math.floor(math.log10(min(ys))), math.ceil(math.log10(max(ys)))
        y1 = y1 if y1 > y0 else y0 + 1
        py = lambda y: T + ph - (math.log10(y) - y0) / (y1 - y0) * ph
        yticks = [10.0 ** k for k in range(y0, y1 + 1)]
    else:
        step = nice_step(max(ys) * 1.05)
        top = step * math.ceil(max(ys) * 1.05 / step)
        py = lambda y: T + ph - y / top * ph
        yticks = [step * k for k in range(int(round(top / step)) + 1)]
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" '
           f'font-family="sans-serif" font-size="12">',
           f'<rect width="{W}" height="{H}" fill="white"/>',
           f'<text class="title" x="{L}" y="22" font-size="15" font-weight="bold">{escape(chart.title)}</text>',
           f'<text class="subtitle" x="{L}" y="40" font-size="11" fill="#555">{escape(subtitle)}</text>',
           '<g class="axes" stroke="#000">',
           f'<line x1="{L}" y1="{T + ph}" x2="{L + pw}" y2="{T + ph}"/>',
           f'<line x1="{L}" y1="{T}" x2="{L}" y2="{T + ph}"/>', '</g>']
    for x in xs:
        out.append(f'<g class="xtick"><line x1="{px(x):.1f}" y1="{T}" x2="{px(x):.1f}" y2="{T + ph + 5}" '
                   f'stroke="#ddd"/><text x="{px(x):.1f}" y="{T + ph + 19}" text-anchor="middle">{fmt(x)}</text></g>')
    for y in yticks:
        out.append(f'<g class="ytick"><line x1="{L - 5}" y1="{py(y):.1f}" x2="{L + pw}" y2="{py(y):.1f}" '
                   f'stroke="#ddd"/><text x="{L - 8}" y="{py(y) + 4:.1f}" text-anchor="end">{fmt_y(y)}</text></g>')
    out += [f'<text class="xlabel" x="{L + pw / 2}" y="{H - 12}" text-anchor="middle">{escape(chart.xlabel)}</text>',
            f'<text class="ylabel" transform="translate(18 {T + ph / 2}) rotate(-90)" '
            f'text-anchor="middle">{escape(chart.ylabel)}</text>']
    colors = {}
    for k, (i, g, label, pts) in enumerate(series):
        fam = chart.families[i]
        key = g if fam.color == "g" else fam.color
        color = colors.setdefault(key, COLORS[len(colors) % len(COLORS)])
        dash = ' stroke-dasharray="6 4"' if fam.dashed else ""
        coords = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in pts.items())
        out.append(f'<g class="series" data-label="{escape(label)}" fill="{color}">')
        out.append(f'<polyline points="{coords}" fill="none" stroke="{color}" stroke-width="2"{dash}/>')
        for x, y in pts.items():
            out.append(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="3" data-x="{x}" data-y="{y:.6g}">'
                       f'<title>{escape(label)}: x={fmt(x)}, {y:.4g} ns</title></circle>')
        ly = T + 10 + 20 * k
        out += ['</g>', f'<g class="legend-entry"><line x1="{L + pw + 14}" y1="{ly}" x2="{L + pw + 44}" y2="{ly}" '
                f'stroke="{color}" stroke-width="2"{dash}/><text x="{L + pw + 50}" y="{ly + 4}">{escape(label)}</text></g>']
    out.append("</svg>")
    return "\n".join(out) + "\n"


def ratio_rows(chart, series):
    """Markdown rows: curve, x, value, baseline, ratio."""
    rows = []
    by = {(i, g): (label, pts) for i, g, label, pts in series}
    for num, den in chart.pairs:
        for (i, g), (label, pts) in by.items():
            if i != num or (den, g) not in by:
                continue
            peer, ppts = by[(den, g)]
            rows += [f"| {label} / {peer} | {fmt(x)} | {y:.1f} | {ppts[x]:.1f} | {y / ppts[x]:.2f} |"
                     for x, y in pts.items()]
    if chart.vs_first:
        for _, _, label, pts in series:
            first = next(iter(pts.values()))
            rows += [f"| {label} / its depth {fmt(next(iter(pts)))} | {fmt(x)} | {y:.1f} | {first:.1f} | "
                     f"{y / first:.2f} |" for x, y in pts.items()]
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, type=pathlib.Path)
    ap.add_argument("--table", type=pathlib.Path, help="ci/bench's printed table, copied into ratios.md")
    ap.add_argument("--note", action="append", default=[], help="a line for ratios.md (command, load)")
    ap.add_argument("results", nargs="*")
    args = ap.parse_args(argv)
    if not args.results:
        print("bench_plot: no results file (did --filter exclude scale_bench?)", file=sys.stderr)
        return 1
    rows, context = load(args.results)
    problems, charts = [], []
    for chart in CHARTS:
        charts.append((chart, collect(chart, rows, problems)))
    if problems:
        print("bench_plot: cannot draw the scale curves:\n  " + "\n  ".join(problems), file=sys.stderr)
        return 1
    load_avg = ", ".join(f"{v:.2f}" for v in context.get("load_avg", []))
    subtitle = (f"{context.get('num_cpus', '?')} CPUs, load avg {load_avg or '?'} at start, "
                f"{context.get('date', '')}; medians of {context['repetitions']} repetitions")
    args.out.mkdir(parents=True, exist_ok=True)
    md = ["# ci/bench scale curves", ""] + [f"- {n}" for n in args.note] + [f"- host: {subtitle}", ""]
    for chart, series in charts:
        (args.out / f"{chart.name}.svg").write_text(svg(chart, series, subtitle))
        md += [f"## {chart.title}", "", f"![{chart.name}]({chart.name}.svg)", "",
               "| curve | x | ns per item | baseline ns | ratio |", "|---|---|---|---|---|"]
        md += ratio_rows(chart, series) + [""]
    if args.table:
        md += ["## ci/bench table", "", "```", args.table.read_text().rstrip(), "```", ""]
    (args.out / "ratios.md").write_text("\n".join(md))
    print(f"bench_plot: wrote {', '.join(c.name + '.svg' for c in CHARTS)} and ratios.md in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
