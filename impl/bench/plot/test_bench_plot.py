#!/usr/bin/env python3
"""impl/bench/plot/test_bench_plot.py: bench_plot.py on a checked-in Google Benchmark
JSON fixture (fixture_scale.json: a trimmed scale_bench run, medians and means for the
lane rows, single runs for the depth rows).

The charts must be well-formed SVG with exactly the expected series, each point at
1e9 / items_per_second of its benchmark's median (never the mean), x increasing along
the axis; ratios.md must hold the ratios. A missing series, a missing point, a
benchmark in error or no input at all must fail with exit 1 and write no chart.
"""
import json
import pathlib
import subprocess
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ET

HERE = pathlib.Path(__file__).resolve().parent
SCRIPT = HERE / "bench_plot.py"
FIXTURE = json.loads((HERE / "fixture_scale.json").read_text())
NS = {"s": "http://www.w3.org/2000/svg"}
LANES = ["1", "10", "100", "1000", "10000", "100000"]
EXPECTED = {
    "scale_lanes": {
        "StateLane, 1 carrier": "BM_Scale_Lanes/lanes:{x}/carriers:1/real_time",
        "StateLane, 2 carriers": "BM_Scale_Lanes/lanes:{x}/carriers:2/real_time",
        "asio::strand, 1 thread": "BM_Scale_StrandLanes/lanes:{x}/threads:1/real_time",
        "asio::strand, 2 threads": "BM_Scale_StrandLanes/lanes:{x}/threads:2/real_time",
    },
    "scale_carriers": {
        "StateLane run() round trip": "BM_Scale_LaneRoundTrip/carriers:{x}/real_time",
        "asio::strand round trip": "BM_Scale_StrandRoundTrip/threads:{x}/real_time",
        "StateLane try_post": "BM_Scale_LanePost/carriers:{x}/real_time",
        "asio::strand post": "BM_Scale_StrandPost/threads:{x}/real_time",
    },
    "scale_depth": {
        "get, plain thread": "BM_Scale_Get/thread/depth:{x}",
        "get, in a fiber": "BM_Scale_Get/fiber/depth:{x}",
        "capture, plain thread": "BM_Scale_Capture/thread/depth:{x}",
        "capture, in a fiber": "BM_Scale_Capture/fiber/depth:{x}",
    },
}
XS = {"scale_lanes": LANES, "scale_carriers": ["1", "2"], "scale_depth": ["1", "10", "100", "1000"]}


def rate(data, run_name):
    """items_per_second of run_name's median, or of its single run."""
    rows = [b for b in data["benchmarks"] if b["run_name"] == run_name]
    med = [b for b in rows if b.get("aggregate_name") == "median"]
    return (med or rows)[0]["items_per_second"]


def plot(data, *extra):
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="bench_plot_test_"))
    paths = []
    if data is not None:
        (tmp / "scale_bench.json").write_text(json.dumps(data))
        paths = [str(tmp / "scale_bench.json")]
    p = subprocess.run([sys.executable, str(SCRIPT), "--out", str(tmp / "plots"), *extra, *paths],
                       capture_output=True, text=True)
    return p, tmp / "plots"


def without(pred):
    data = json.loads(json.dumps(FIXTURE))
    data["benchmarks"] = [b for b in data["benchmarks"] if not pred(b["run_name"])]
    return data


class Charts(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        table = pathlib.Path(tempfile.mkdtemp()) / "table.txt"
        table.write_text("ratios: turnstile / peer\nBM_X  BM_Y  real  1.00  2.00  0.50\n")
        cls.proc, cls.out = plot(FIXTURE, "--table", str(table), "--note", "command: ci/bench --plot X")

    def test_exit_zero(self):
        self.assertEqual(self.proc.returncode, 0, self.proc.stderr)

    def test_every_chart_has_the_expected_series_and_points(self):
        for chart, series in EXPECTED.items():
            with self.subTest(chart=chart):
                root = ET.parse(self.out / f"{chart}.svg").getroot()  # well-formed XML
                self.assertEqual(root.tag, "{http://www.w3.org/2000/svg}svg")
                for cls in ("title", "subtitle", "xlabel", "ylabel"):
                    self.assertTrue(root.find(f".//s:text[@class='{cls}']", NS).text.strip(), cls)
                self.assertGreaterEqual(len(root.findall(".//s:g[@class='xtick']", NS)), len(XS[chart]))
                self.assertGreaterEqual(len(root.findall(".//s:g[@class='ytick']", NS)), 2)
                groups = root.findall(".//s:g[@class='series']", NS)
                self.assertEqual(sorted(g.get("data-label") for g in groups), sorted(series))
                legend = [e.find("s:text", NS).text for e in root.findall(".//s:g[@class='legend-entry']", NS)]
                self.assertEqual(sorted(legend), sorted(series))
                for g in groups:
                    pattern = series[g.get("data-label")]
                    dots = g.findall("s:circle", NS)
                    self.assertEqual([d.get("data-x") for d in dots], XS[chart])
                    cx = [float(d.get("cx")) for d in dots]
                    self.assertEqual(cx, sorted(cx))
                    self.assertEqual(len(set(cx)), len(cx))
                    self.assertEqual(len(g.find("s:polyline", NS).get("points").split()), len(dots))
                    for d in dots:
                        want = 1e9 / rate(FIXTURE, pattern.format(x=d.get("data-x")))
                        self.assertAlmostEqual(float(d.get("data-y")) / want, 1.0, places=3,
                                               msg=f"{g.get('data-label')} x={d.get('data-x')}")

    def test_ratios_md_holds_the_ratios_and_the_table(self):
        md = (self.out / "ratios.md").read_text()
        lane = 1e9 / rate(FIXTURE, "BM_Scale_Lanes/lanes:1000/carriers:2/real_time")
        strand = 1e9 / rate(FIXTURE, "BM_Scale_StrandLanes/lanes:1000/threads:2/real_time")
        row = f"| StateLane, 2 carriers / asio::strand, 2 threads | 1k | {lane:.1f} | {strand:.1f} | {lane / strand:.2f} |"
        self.assertIn(row, md)
        first = 1e9 / rate(FIXTURE, "BM_Scale_Capture/fiber/depth:1")
        last = 1e9 / rate(FIXTURE, "BM_Scale_Capture/fiber/depth:1000")
        self.assertIn(f"| capture, in a fiber / its depth 1 | 1k | {last:.1f} | {first:.1f} | {last / first:.2f} |", md)
        self.assertIn("BM_X  BM_Y  real  1.00  2.00  0.50", md)
        self.assertIn("command: ci/bench --plot X", md)


class Failures(unittest.TestCase):
    def assert_fails(self, data, message):
        p, out = plot(data)
        self.assertEqual(p.returncode, 1, p.stdout)
        self.assertIn(message, p.stderr)
        self.assertFalse(out.exists() and any(out.iterdir()), "a chart was written")

    def test_missing_series(self):
        self.assert_fails(without(lambda n: n.startswith("BM_Scale_StrandLanes/") and "threads:2" in n),
                          "missing series 'asio::strand, 2 threads'")

    def test_missing_family(self):
        self.assert_fails(without(lambda n: n.startswith("BM_Scale_Capture/fiber/")),
                          "missing series 'capture, in a fiber'")

    def test_missing_point(self):
        self.assert_fails(without(lambda n: n == "BM_Scale_Lanes/lanes:100000/carriers:1/real_time"),
                          "series 'StateLane, 1 carrier' lacks x = [100000]")

    def test_benchmark_in_error(self):
        data = json.loads(json.dumps(FIXTURE))
        for b in data["benchmarks"]:
            if b["run_name"] == "BM_Scale_LanePost/carriers:2/real_time":
                b.update(error_occurred=True, error_message="lost item")
        self.assert_fails(data, "reported an error: lost item")

    def test_no_scale_rows(self):
        self.assert_fails(without(lambda n: "Scale" in n), "no data")

    def test_no_input(self):
        self.assert_fails(None, "no results file")


if __name__ == "__main__":
    unittest.main()
