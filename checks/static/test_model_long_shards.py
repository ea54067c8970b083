#!/usr/bin/env python3
"""checks/static/test_model_long_shards.py: ci/model-long's --shard split and --merge.

The split must be a partition (every run in exactly one shard, for every N), the
same on every call, and --merge must fail on a failed run or a missing shard. No
model runs here: --list prints a shard's runs without running them.
"""
import os
import pathlib
import subprocess
import sys
import tempfile
import unittest

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "ci" / "model-long"


def run(*args):
    return subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True,
                          cwd=ROOT, env={**os.environ, "TURNSTILE_MODEL_LONG_ITERATIONS": "5000000"})


def shard_runs(k, n):
    p = run("--shard", f"{k}/{n}", "--list")
    assert p.returncode == 0, p.stderr
    return [" ".join(line.split()[:4]) for line in p.stdout.splitlines()[1:]]


class Shards(unittest.TestCase):
    def test_every_n_is_a_partition_and_deterministic(self):
        everything = shard_runs(1, 1)
        self.assertGreater(len(everything), 20)
        for n in range(2, 7):
            parts = [shard_runs(k, n) for k in range(1, n + 1)]
            flat = [r for p in parts for r in p]
            self.assertEqual(sorted(flat), sorted(everything), f"N={n}")
            self.assertEqual(len(set(flat)), len(flat), f"N={n}: a run in two shards")
            self.assertTrue(all(parts), f"N={n}: an empty shard")
            self.assertEqual(parts, [shard_runs(k, n) for k in range(1, n + 1)])

    def test_bad_shard_arguments_are_refused(self):
        for bad in ("0/2", "3/2", "x/2", "2"):
            p = run("--shard", bad, "--list")
            self.assertEqual(p.returncode, 2, bad)
            self.assertIn("--shard", p.stderr)


class Merge(unittest.TestCase):
    def write(self, d, name, text):
        path = pathlib.Path(d) / name
        path.write_text(text)
        return str(path)

    def test_merge_passes_only_when_every_shard_passed(self):
        with tempfile.TemporaryDirectory() as d:
            a = self.write(d, "1.tsv", "# shards 2 shard 1\n1\tlane\tsubmitters\tbound\tcontext bound 2\t12\tok\n")
            b = self.write(d, "2.tsv", "# shards 2 shard 2\n2\tframe\tfifo\tfull\tfull search\t3\tok\n")
            p = run("--merge", a, b)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            self.assertIn("all 2 runs of 2 shard(s) passed", p.stdout)
            # A missing shard fails.
            p = run("--merge", a)
            self.assertEqual(p.returncode, 1)
            self.assertIn("shard 2/2 is missing", p.stderr)
            # A failed run fails.
            c = self.write(d, "3.tsv", "# shards 2 shard 2\n2\tframe\tfifo\tfull\tfull search\t3\tFAILED (exit 1)\n")
            p = run("--merge", a, c)
            self.assertEqual(p.returncode, 1)
            self.assertIn("1 run(s) failed", p.stdout)
            # Not a summary file.
            e = self.write(d, "x.tsv", "hello\n")
            self.assertEqual(run("--merge", e).returncode, 2)


if __name__ == "__main__":
    sys.exit(unittest.main())
