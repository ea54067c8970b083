#!/usr/bin/env python3
"""lane_trace_gen.py: writes a clean lane trace of about N events (format 1).

Items are `run`s of 4 lanes, 8 in flight per lane: each is submitted and accepted
from one of 8 fibers, runs its turn on the lane's worker fiber, and its awaiter
resumes with the turn's outcome: 5 events an item, so 1M events hold 200,000
items. The oracle finds nothing to report in it (ci/bench checks the exit code).

usage: lane_trace_gen.py EVENTS OUT.jsonl
"""
import sys


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    target = int(sys.argv[1])
    lanes, batch = 4, 8
    items = max(1, (target - 2) // 5)
    seq = 0
    with open(sys.argv[2], "w", encoding="utf-8") as out:
        def emit(body: str) -> None:
            nonlocal seq
            seq += 1
            out.write('{"seq":%d,%s}\n' % (seq, body))

        emit('"ev":"trace","format":1,"impl":"lane_trace_gen"')
        done = 0
        while done < items:
            for lane in range(lanes):
                n = min(batch, items - done)
                if n <= 0:
                    break
                ids = [f"i{done + k}" for k in range(n)]
                for k, item in enumerate(ids):
                    f = f"f{k}"
                    emit(f'"ev":"lane.submit","fiber":"{f}","lane":"L{lane}","item":"{item}","op":"run"')
                    emit(f'"ev":"lane.accepted","fiber":"{f}","lane":"L{lane}","item":"{item}"')
                for k, item in enumerate(ids):
                    w = f"w{lane}"
                    emit(f'"ev":"lane.turn_start","fiber":"{w}","lane":"L{lane}","item":"{item}"')
                    emit(f'"ev":"lane.turn_end","fiber":"{w}","lane":"L{lane}","item":"{item}","outcome":"ok"')
                    emit(f'"ev":"lane.resumed","fiber":"f{k}","lane":"L{lane}","item":"{item}","outcome":"ok"')
                done += n
        emit('"ev":"end","status":"quiescent"')
    return 0


if __name__ == "__main__":
    sys.exit(main())
