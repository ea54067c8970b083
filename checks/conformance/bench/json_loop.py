#!/usr/bin/env python3
"""json_loop.py: the baseline of the oracle benchmark: json.loads on every line
of a trace, nothing else. usage: json_loop.py TRACE.jsonl"""
import json
import sys

n = 0
with open(sys.argv[1], encoding="utf-8") as f:
    for line in f:
        json.loads(line)
        n += 1
print(n)
