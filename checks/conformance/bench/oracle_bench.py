#!/usr/bin/env python3
"""oracle_bench.py: the oracle benchmark of ci/bench (issue 14).

For clean lane traces of 10k, 100k and 1M events (written by lane_trace_gen.py,
kept in OUT_DIR), runs `turnstile-oracle check` and the baseline, a Python loop
of json.loads over the same lines (json_loop.py), each REPS times alternately,
and prints per size the medians of CPU time (user + sys of the process), wall
time, events per second and peak resident memory (/usr/bin/time's %M),
and the ratio oracle / Python on CPU time. Goals: ratio <= 0.25 and peak
memory <= 64 MB at 1M events ("met" / "MISSED"; for reading, not a gate).
Exit 1 if the oracle does not pass a trace (it is clean by construction).

usage: oracle_bench.py ORACLE OUT_DIR [REPS] [SIZES...]
"""
import os
import statistics
import subprocess
import time
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
RATIO_GOAL = 0.25
MEMORY_GOAL_MB = 64


def measure(cmd):
    """(exit code, cpu s, wall s, peak RSS MB) of one run of `cmd`. The peak is
    /usr/bin/time's %M (a child forked from this Python process would report
    Python's RSS as its own peak); cpu and wall come from wait4 on /usr/bin/time,
    whose usage includes the command it waited for (microseconds, not %U's 10 ms)."""
    out = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"oracle_bench.{os.getpid()}.time")
    start = time.monotonic()
    with open(os.devnull, "wb") as null:
        proc = subprocess.Popen(["/usr/bin/time", "-f", "%x %M", "-o", out] + cmd, stdout=null, stderr=null)
        _, _, usage = os.wait4(proc.pid, 0)
    wall = time.monotonic() - start
    proc.returncode = 0  # reaped by wait4
    with open(out) as f:
        status, rss_kb = f.read().split()[-2:]
    os.remove(out)
    return int(status), usage.ru_utime + usage.ru_stime, wall, int(rss_kb) / 1024.0


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    oracle, out_dir = sys.argv[1], sys.argv[2]
    reps = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    sizes = [int(s) for s in sys.argv[4:]] or [10_000, 100_000, 1_000_000]
    os.makedirs(out_dir, exist_ok=True)
    rows, failed = [], False
    for n in sizes:
        path = os.path.join(out_dir, f"lane_{n}.jsonl")
        if not os.path.exists(path):
            subprocess.run([sys.executable, os.path.join(HERE, "lane_trace_gen.py"), str(n), path], check=True)
        with open(path, "rb") as f:
            events = sum(1 for _ in f)
        runs = {"oracle": [], "python": []}
        for _ in range(reps):  # alternate, so both see the same machine
            code, *fig = measure([oracle, "check", path])
            if code != 0:
                print(f"oracle_bench: turnstile-oracle check {path} exited {code}", file=sys.stderr)
                failed = True
            runs["oracle"].append(fig)
            code, *fig = measure([sys.executable, os.path.join(HERE, "json_loop.py"), path])
            runs["python"].append(fig)
        med = {k: [statistics.median(x[i] for x in v) for i in range(3)] for k, v in runs.items()}
        rows.append((n, events, med))

    print(f"\noracle: `turnstile-oracle check` on a clean lane trace vs a Python json.loads loop "
          f"(medians of {reps}; cpu = user + sys)")
    print(f"{'events':>9} {'who':7} {'cpu s':>8} {'wall s':>8} {'events/s':>10} {'peak MB':>8}"
          f" {'ratio':>6}  note")
    for n, events, med in rows:
        o, p = med["oracle"], med["python"]
        ratio = o[0] / p[0] if p[0] > 0 else float("nan")
        big = n >= 1_000_000
        note = f"target <= {RATIO_GOAL}" + (" met" if ratio <= RATIO_GOAL else " MISSED")
        mem = f"memory <= {MEMORY_GOAL_MB} MB" + (" met" if o[2] <= MEMORY_GOAL_MB else " MISSED")
        for who, fig, r, text in (("oracle", o, f"{ratio:6.3f}", note + ("; " + mem if big else "")),
                                  ("python", p, "", "")):
            rate = events / fig[0] if fig[0] > 0 else float("inf")
            print(f"{events:>9} {who:7} {fig[0]:8.3f} {fig[1]:8.3f} {rate / 1e6:9.2f}M {fig[2]:8.1f}"
                  f" {r:>6}  {text}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
